//! Resource quantities (`500m`, `2`, `32Gi`, `1e3`) as the integers the scheduler adds up,
//! parsed by [`apimachinery::quantity`]. CPU is compared in millicores and everything else in
//! whole units, both rounded up, as Kubernetes compares requests.

use apimachinery::quantity::Quantity;
pub use apimachinery::quantity::QuantityError;

fn out_of_range(text: &str) -> QuantityError {
    QuantityError {
        message: format!("quantity \"{text}\" is too large for this simulator"),
    }
}

/// The quantity in thousandths of a unit, rounded up (`"1.5"` → 1500, `"1Ki"` → 1_024_000).
pub fn parse_milli(text: &str) -> Result<i128, QuantityError> {
    apimachinery::quantity::parse_milli(text.trim())
}

/// CPU in millicores (`"500m"` → 500, `"2"` → 2000).
pub fn cpu_millis(text: &str) -> Result<i64, QuantityError> {
    i64::try_from(parse_milli(text)?).map_err(|_| out_of_range(text))
}

/// A whole-unit quantity such as memory bytes or a pod count, rounded up (`"1Gi"` → 2^30).
pub fn units(text: &str) -> Result<i64, QuantityError> {
    i64::try_from(Quantity::parse(text.trim())?.value()).map_err(|_| out_of_range(text))
}

/// A quantity given either as a JSON string or a JSON number.
pub fn json_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(text) => Some(text.clone()),
        serde_json::Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_kubernetes_forms() {
        let cases: &[(&str, i128)] = &[
            ("0", 0),
            ("1", 1000),
            ("500m", 500),
            ("0.5", 500),
            ("2.0001", 2001),
            ("1Ki", 1_024_000),
            ("32Gi", 32 * (1 << 30) * 1000),
            ("1G", 1_000_000_000_000),
            ("1e3", 1_000_000),
            ("100n", 1),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_milli(text), Ok(*expected), "{text}");
        }
        assert_eq!(cpu_millis("250m"), Ok(250));
        assert_eq!(units("128Mi"), Ok(128 << 20));
        assert_eq!(units("1500m"), Ok(2));
        assert_eq!(json_text(&serde_json::json!(110)), Some("110".to_string()));
    }

    #[test]
    fn rejects_garbage_with_accepted_forms() {
        for text in ["", "abc", "1.2.3", "5Xi", "m"] {
            let error = parse_milli(text).expect_err(text);
            assert!(error.to_string().contains("Ki, Mi, Gi"), "{error}");
        }
    }
}
