//! HTML building: every value from the API passes through [`esc`]; the layout around each view.

use std::fmt::Write;

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

/// Escapes text for HTML element content and double-quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A query-string value (for links carrying a continue token or a name).
pub fn query_value(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// A table: header cells (text), then rows of already-escaped HTML cells.
pub fn table(id: &str, headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!(
        "<div class=\"scroll\"><table id=\"{}\"><thead><tr>",
        esc(id)
    );
    for h in headers {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    if rows.is_empty() {
        let _ = write!(
            out,
            "<tr><td colspan=\"{}\" class=\"muted\">none</td></tr>",
            headers.len().max(1)
        );
    }
    out.push_str("</tbody></table></div>");
    out
}

/// What the layout needs besides the view's content.
pub struct Page<'a> {
    pub title: &'a str,
    /// The user, for the header; `None` on the login page.
    pub user: Option<&'a str>,
    pub csrf: Option<&'a str>,
    /// The server-sent-events URL that tells this view to refresh; `None` for static pages.
    pub live: Option<String>,
}

/// The whole document around `content`.
pub fn layout(page: &Page<'_>, content: &str) -> String {
    let mut nav = String::new();
    if let Some(user) = page.user {
        let csrf = page.csrf.unwrap_or("");
        let _ = write!(
            nav,
            "<nav><a href=\"/\">Overview</a><a href=\"/policies\">Policies</a><a href=\"/overrides\">Overrides</a>\
             <a href=\"/services\">Services</a><a href=\"/failover\">Failover</a><a href=\"/promote\">Promote</a>\
             <span class=\"user\" id=\"user\">{}</span>\
             <form method=\"post\" action=\"/logout\" class=\"inline\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <button type=\"submit\" id=\"logout\">Log out</button></form></nav>",
            esc(user),
            esc(csrf)
        );
    }
    let live = page
        .live
        .as_deref()
        .map(|url| format!(" data-live=\"{}\"", esc(url)))
        .unwrap_or_default();
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · Karmada</title><link rel=\"stylesheet\" href=\"/assets/app.css\">\
         <script src=\"/assets/app.js\" defer></script></head>\
         <body><header><a class=\"brand\" href=\"/\">Karmada</a>{nav}</header>\
         <main id=\"main\"{live}>{content}</main></body></html>",
        title = esc(page.title),
    )
}

/// An HTML response with the headers every page carries: no framing, scripts only from this origin.
pub fn respond(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'; form-action 'self'"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    proptest! {
        #[test]
        fn escaped_text_has_no_markup_characters(text in ".*") {
            let out = esc(&text);
            prop_assert!(!out.contains('<') && !out.contains('>') && !out.contains('"') && !out.contains('\''));
        }
    }

    #[test]
    fn table_escapes_headers_and_says_none_when_empty() {
        let out = table("t", &["<b>"], &[]);
        assert!(out.contains("&lt;b&gt;") && out.contains("none"), "{out}");
    }
}
