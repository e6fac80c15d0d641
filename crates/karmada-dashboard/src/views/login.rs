//! The login page: a bearer token, or a pasted kubeconfig whose user carries a token or a client certificate.

use crate::html::esc;

/// The form, with a message (why the user is here) or an error (why the last try failed).
pub fn form(notice: Option<&str>, error: Option<&str>) -> String {
    let notice = notice
        .map(|n| format!("<p class=\"notice\" id=\"notice\">{}</p>", esc(n)))
        .unwrap_or_default();
    let error = error
        .map(|e| format!("<p class=\"error\" id=\"login-error\">{}</p>", esc(e)))
        .unwrap_or_default();
    format!(
        "<h1>Log in</h1>{notice}{error}<form class=\"login\" method=\"post\" action=\"/login\">\
         <label for=\"token\">Bearer token</label><input type=\"password\" id=\"token\" name=\"token\" autocomplete=\"off\">\
         <p class=\"muted\">or paste a kubeconfig whose user has a token or client-certificate-data:</p>\
         <textarea id=\"kubeconfig\" name=\"kubeconfig\" rows=\"6\"></textarea>\
         <p><button type=\"submit\" id=\"login\">Log in</button></p></form>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_escaped() {
        let html = form(None, Some("<bad>"));
        assert!(
            html.contains("&lt;bad&gt;") && html.contains("login-error"),
            "{html}"
        );
    }
}
