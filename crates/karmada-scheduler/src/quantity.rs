//! Kubernetes resource quantities ("500m", "2Gi", "1.5", "1e3") read as integer milli-units, the unit the
//! general estimator divides in. Parsing is `apimachinery::Quantity`'s; this module only adapts it.
//!
//! Invariant: parsing is exact for every value representable in milli-units; fractions below one milli-unit round
//! up, as Kubernetes' `MilliValue` does. Quantities may arrive as JSON strings or numbers.

use serde_json::Value;

/// A quantity could not be read; the message names the accepted forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid quantity {input:?}: expected a decimal number with an optional suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (e.g. 1e3)"
)]
pub struct QuantityError {
    pub input: String,
}

/// Reads a quantity given as a JSON string or number into milli-units.
pub fn milli_from_value(value: &Value) -> Result<i128, QuantityError> {
    apimachinery::quantity::milli_from_json(value).map_err(|_| QuantityError {
        input: match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        },
    })
}

/// Parses a quantity string into milli-units (rounded up, as Kubernetes' `MilliValue`).
pub fn parse_milli(input: &str) -> Result<i128, QuantityError> {
    apimachinery::quantity::parse_milli(input).map_err(|_| QuantityError {
        input: input.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_common_forms() {
        let cases: &[(&str, i128)] = &[
            ("500m", 500),
            ("1", 1000),
            ("1.5", 1500),
            ("2Gi", 2 * 1024 * 1024 * 1024 * 1000),
            ("128Mi", 128 * 1024 * 1024 * 1000),
            ("1k", 1_000_000),
            ("1e3", 1_000_000),
            ("100n", 1),
            ("-2", -2000),
            ("110", 110_000),
        ];
        for (input, expected) in cases {
            assert_eq!(parse_milli(input), Ok(*expected), "{input}");
        }
    }

    #[test]
    fn rejects_garbage_with_the_accepted_forms() {
        for input in ["", "abc", "1.2.3", "5Xi", "."] {
            let error = parse_milli(input).expect_err(input);
            assert!(
                error.to_string().contains("expected a decimal number"),
                "{input}"
            );
        }
    }
}
