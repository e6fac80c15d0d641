//! Kubernetes resource quantities ("500m", "2Gi", "1.5", "1e3") read as integer milli-units, the unit the
//! general estimator divides in.
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
    match value {
        Value::String(text) => parse_milli(text),
        Value::Number(number) => parse_milli(&number.to_string()),
        other => Err(QuantityError {
            input: other.to_string(),
        }),
    }
}

/// Parses a quantity string into milli-units.
pub fn parse_milli(input: &str) -> Result<i128, QuantityError> {
    let error = || QuantityError {
        input: input.to_string(),
    };
    let text = input.trim();
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let number_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(number_end);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return Err(error());
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = format!("{whole}{fraction}");
    if digits.len() > 30 {
        return Err(error());
    }
    let mantissa: i128 = digits.parse().map_err(|_| error())?;
    // value = mantissa · 10^(decimal_exponent) · 2^(binary_exponent)
    let mut decimal_exponent: i32 = -(i32::try_from(fraction.len()).map_err(|_| error())?);
    let mut binary_exponent: u32 = 0;
    match suffix {
        "" => {}
        "n" => decimal_exponent -= 9,
        "u" => decimal_exponent -= 6,
        "m" => decimal_exponent -= 3,
        "k" => decimal_exponent += 3,
        "M" => decimal_exponent += 6,
        "G" => decimal_exponent += 9,
        "T" => decimal_exponent += 12,
        "P" => decimal_exponent += 15,
        "E" => decimal_exponent += 18,
        "Ki" => binary_exponent = 10,
        "Mi" => binary_exponent = 20,
        "Gi" => binary_exponent = 30,
        "Ti" => binary_exponent = 40,
        "Pi" => binary_exponent = 50,
        "Ei" => binary_exponent = 60,
        other => {
            let exponent = other.strip_prefix(['e', 'E']).ok_or_else(error)?;
            let exponent: i32 = exponent.parse().map_err(|_| error())?;
            if !(-40..=40).contains(&exponent) {
                return Err(error());
            }
            decimal_exponent += exponent;
        }
    }
    decimal_exponent += 3; // to milli-units
    let mut value = mantissa
        .checked_mul(1i128 << binary_exponent)
        .ok_or_else(error)?;
    if decimal_exponent >= 0 {
        value = value
            .checked_mul(
                10i128
                    .checked_pow(decimal_exponent.unsigned_abs())
                    .ok_or_else(error)?,
            )
            .ok_or_else(error)?;
    } else {
        let divisor = 10i128
            .checked_pow(decimal_exponent.unsigned_abs())
            .ok_or_else(error)?;
        value = (value + divisor - 1) / divisor;
    }
    Ok(if negative { -value } else { value })
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
