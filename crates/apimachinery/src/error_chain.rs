//! One line for an error and its causes.

/// `err` and its causes on one line, each cause once (a refused connection or a certificate an HTTP client
/// rejected hides two or three levels down).
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    struct Layer(&'static str, #[source] Option<Box<Layer>>);

    #[test]
    fn causes_follow_the_error_once_each() {
        let inner = Layer("invalid peer certificate: UnknownIssuer", None);
        let middle = Layer("client error (Connect)", Some(Box::new(inner)));
        let outer = Layer("ServiceError", Some(Box::new(middle)));
        assert_eq!(
            error_chain(&outer),
            "ServiceError: client error (Connect): invalid peer certificate: UnknownIssuer"
        );
        let repeating = Layer("connect: refused", Some(Box::new(Layer("refused", None))));
        assert_eq!(error_chain(&repeating), "connect: refused");
    }
}
