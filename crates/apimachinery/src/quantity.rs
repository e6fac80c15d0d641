//! Kubernetes resource quantities (`100m`, `1.5`, `2Gi`, `500M`, `1e3`): exact parsing into
//! nano-units, arithmetic, comparison and canonical formatting.
//!
//! Invariants: a [`Quantity`] is an exact count of nano-units (`i128`), so `1.5Gi`, `100m` and
//! `1e3` are all exact; digits finer than a nano-unit are rounded away from zero, as Kubernetes
//! rounds. The suffix family of the input (binary, decimal or exponent) is kept for formatting.

use std::cmp::Ordering;
use std::fmt;

const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// Which suffix family a quantity is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuantityFormat {
    /// `Ki`, `Mi`, `Gi`, `Ti`, `Pi`, `Ei`.
    BinarySI,
    /// `n`, `u`, `m`, none, `k`, `M`, `G`, `T`, `P`, `E`.
    DecimalSI,
    /// `e3`, `E-6`, ...
    DecimalExponent,
}

/// A quantity could not be parsed or computed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct QuantityError {
    pub message: String,
}

fn format_error(input: &str) -> QuantityError {
    QuantityError {
        message: format!(
            "quantity \"{input}\" is invalid: expected a decimal number (optionally signed, e.g. 1.5) followed by an optional suffix: Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E, or an exponent such as e3"
        ),
    }
}

fn range_error(input: &str) -> QuantityError {
    QuantityError {
        message: format!("quantity \"{input}\" is out of range"),
    }
}

/// Milli-units of a quantity string, rounded up (`"1.5"` → 1500, `"500m"` → 500): the one reading of a
/// quantity as the integer schedulers and quotas add up.
pub fn parse_milli(input: &str) -> Result<i128, QuantityError> {
    Quantity::parse(input).map(|quantity| quantity.milli_value())
}

/// [`parse_milli`] of a quantity given as a JSON string or number, as objects carry them.
pub fn milli_from_json(value: &serde_json::Value) -> Result<i128, QuantityError> {
    match value {
        serde_json::Value::String(text) => parse_milli(text),
        serde_json::Value::Number(number) => parse_milli(&number.to_string()),
        other => Err(format_error(&other.to_string())),
    }
}

/// An exact amount of some resource.
#[derive(Clone, Copy, Debug, Eq)]
pub struct Quantity {
    nanos: i128,
    format: QuantityFormat,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

/// Equal amounts hash alike whatever their format, matching [`PartialEq`].
impl std::hash::Hash for Quantity {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.nanos.hash(state);
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl Quantity {
    pub fn from_nanos(nanos: i128, format: QuantityFormat) -> Self {
        Self { nanos, format }
    }

    pub fn from_milli(milli: i64, format: QuantityFormat) -> Self {
        Self {
            nanos: i128::from(milli) * 1_000_000,
            format,
        }
    }

    pub fn zero() -> Self {
        Self {
            nanos: 0,
            format: QuantityFormat::DecimalSI,
        }
    }

    pub fn parse(input: &str) -> Result<Self, QuantityError> {
        let text = input.trim();
        let (negative, unsigned) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = unsigned
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(unsigned.len());
        let (number, suffix) = unsigned.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(format_error(input));
        }
        let (format, binary_power, decimal_exponent) =
            parse_suffix(suffix).ok_or_else(|| format_error(input))?;

        let digits = format!("{whole}{fraction}");
        let digits = digits.trim_start_matches('0');
        // Far beyond any representable amount; checked before the digits are multiplied.
        if digits.len() > 38 {
            return Err(range_error(input));
        }
        let mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| format_error(input))?
        };
        let fraction_digits = i32::try_from(fraction.len()).map_err(|_| range_error(input))?;
        let scale = decimal_exponent + 9 - fraction_digits;
        let mut nanos = mantissa
            .checked_mul(1i128 << (10 * binary_power))
            .ok_or_else(|| range_error(input))?;
        if scale >= 0 {
            let factor = pow10(scale).ok_or_else(|| range_error(input))?;
            nanos = nanos
                .checked_mul(factor)
                .ok_or_else(|| range_error(input))?;
        } else {
            // Finer than a nano-unit: round the magnitude up.
            nanos = match pow10(-scale) {
                Some(divisor) => nanos / divisor + i128::from(nanos % divisor != 0),
                None => i128::from(nanos > 0),
            };
        }
        if negative {
            nanos = -nanos;
        }
        Ok(Self { nanos, format })
    }

    pub fn format(&self) -> QuantityFormat {
        self.format
    }

    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    /// Milli-units, rounded up (what CPU requests are compared in).
    pub fn milli_value(&self) -> i128 {
        div_ceil(self.nanos, 1_000_000)
    }

    /// Whole units, rounded up (what memory and counts are compared in).
    pub fn value(&self) -> i128 {
        div_ceil(self.nanos, NANOS_PER_UNIT)
    }

    /// Approximate value as a float (for ratios and display only).
    pub fn as_f64(&self) -> f64 {
        // i128 → f64 loses precision only for astronomically large amounts.
        self.nanos as f64 / 1e9
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// The sum; keeps this quantity's format (or the other's when this one is zero).
    pub fn checked_add(&self, other: &Self) -> Option<Self> {
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        Some(Self {
            nanos: self.nanos.checked_add(other.nanos)?,
            format,
        })
    }

    pub fn checked_sub(&self, other: &Self) -> Option<Self> {
        Some(Self {
            nanos: self.nanos.checked_sub(other.nanos)?,
            format: self.format,
        })
    }
}

fn div_ceil(value: i128, divisor: i128) -> i128 {
    let quotient = value.div_euclid(divisor);
    if value.rem_euclid(divisor) == 0 {
        quotient
    } else {
        quotient + 1
    }
}

fn pow10(exponent: i32) -> Option<i128> {
    10i128.checked_pow(u32::try_from(exponent).ok()?)
}

/// (format, power of 1024, power of 10).
fn parse_suffix(suffix: &str) -> Option<(QuantityFormat, u32, i32)> {
    let binary = |power| Some((QuantityFormat::BinarySI, power, 0));
    let decimal = |exponent| Some((QuantityFormat::DecimalSI, 0, exponent));
    match suffix {
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "" => decimal(0),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 4
            {
                return None;
            }
            Some((QuantityFormat::DecimalExponent, 0, exponent.parse().ok()?))
        }
    }
}

const DECIMAL_SUFFIXES: &[(i32, &str)] = &[
    (18, "E"),
    (15, "P"),
    (12, "T"),
    (9, "G"),
    (6, "M"),
    (3, "k"),
    (0, ""),
    (-3, "m"),
    (-6, "u"),
    (-9, "n"),
];
const BINARY_SUFFIXES: &[(u32, &str)] = &[
    (6, "Ei"),
    (5, "Pi"),
    (4, "Ti"),
    (3, "Gi"),
    (2, "Mi"),
    (1, "Ki"),
];

impl fmt::Display for Quantity {
    /// Canonical form: the largest suffix of the quantity's family that keeps an integer mantissa.
    /// Binary quantities below 1024 or with a fractional part print in decimal form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let whole_units = self.nanos % NANOS_PER_UNIT == 0;
        let units = self.nanos / NANOS_PER_UNIT;
        if self.format == QuantityFormat::BinarySI && whole_units && units.abs() >= 1024 {
            for (power, suffix) in BINARY_SUFFIXES {
                let divisor = 1i128 << (10 * power);
                if units % divisor == 0 {
                    return write!(f, "{}{suffix}", units / divisor);
                }
            }
            return write!(f, "{units}");
        }
        for (exponent, suffix) in DECIMAL_SUFFIXES {
            let Some(divisor) = pow10(exponent + 9) else {
                continue;
            };
            if self.nanos % divisor == 0 {
                let mantissa = self.nanos / divisor;
                return match self.format {
                    QuantityFormat::DecimalExponent if *exponent != 0 => {
                        write!(f, "{mantissa}e{exponent}")
                    }
                    QuantityFormat::DecimalExponent => write!(f, "{mantissa}"),
                    _ => write!(f, "{mantissa}{suffix}"),
                };
            }
        }
        write!(f, "{}n", self.nanos)
    }
}

impl std::str::FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn milli_units_of_strings_and_json_numbers() {
        assert_eq!(parse_milli("1.5"), Ok(1500));
        assert_eq!(parse_milli("500m"), Ok(500));
        assert_eq!(parse_milli("1Ki"), Ok(1_024_000));
        assert_eq!(parse_milli("1n"), Ok(1), "rounded up");
        assert!(parse_milli("1 Gi").is_err());
        assert_eq!(milli_from_json(&serde_json::json!("250m")), Ok(250));
        assert_eq!(milli_from_json(&serde_json::json!(2)), Ok(2000));
        assert_eq!(milli_from_json(&serde_json::json!(0.5)), Ok(500));
        assert!(milli_from_json(&serde_json::json!({"cpu": 1})).is_err());
    }

    #[test]
    fn parse_and_canonical_form() {
        // (input, milli-units, canonical)
        let cases: &[(&str, i128, &str)] = &[
            ("0", 0, "0"),
            ("100m", 100, "100m"),
            ("1.5", 1500, "1500m"),
            ("1000m", 1000, "1"),
            ("2Gi", 2 * 1024 * 1024 * 1024 * 1000, "2Gi"),
            ("1.5Gi", 1536 * 1024 * 1024 * 1000, "1536Mi"),
            ("1024Ki", 1024 * 1024 * 1000, "1Mi"),
            ("0.5Ki", 512_000, "512"),
            ("1500Ki", 1500 * 1024 * 1000, "1500Ki"),
            ("500M", 500_000_000_000, "500M"),
            ("2000", 2_000_000, "2k"),
            ("1e3", 1_000_000, "1e3"),
            ("1.5e3", 1_500_000, "1500"),
            ("1E-3", 1, "1e-3"),
            ("-250m", -250, "-250m"),
            ("+4", 4000, "4"),
            (".5", 500, "500m"),
            ("5.", 5000, "5"),
            ("10n", 1, "10n"),
            ("1u", 1, "1u"),
            ("3E", 3_000_000_000_000_000_000_000, "3E"),
        ];
        for (input, milli, canonical) in cases {
            let q = Quantity::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(q.milli_value(), *milli, "{input}");
            assert_eq!(q.to_string(), *canonical, "{input}");
        }
    }

    #[test]
    fn sub_nano_digits_round_up() {
        assert_eq!(Quantity::parse("0.0000000001").expect("valid").nanos(), 1);
        assert_eq!(
            Quantity::parse("1.0000000001").expect("valid").to_string(),
            "1000000001n"
        );
        assert_eq!(Quantity::parse("-0.0000000001").expect("valid").nanos(), -1);
        let many_digits = format!("0.{}1", "9".repeat(36));
        assert_eq!(
            Quantity::parse(&many_digits).expect("valid").nanos(),
            NANOS_PER_UNIT
        );
    }

    #[test]
    fn invalid_quantities() {
        for input in [
            "",
            "abc",
            "1.2.3",
            "1Qi",
            "1ki",
            "--1",
            "1e",
            "1e+",
            "Gi",
            "1 Gi",
            "1e99999",
            &"9".repeat(60),
        ] {
            let error = Quantity::parse(input).expect_err(input);
            assert!(
                error.message.contains(&format!("\"{input}\"")),
                "{input}: {error}"
            );
        }
        assert!(
            Quantity::parse("1e40")
                .expect_err("too big")
                .message
                .contains("out of range")
        );
    }

    #[test]
    fn arithmetic_and_ordering() {
        let q = |s: &str| Quantity::parse(s).expect("valid");
        assert_eq!(
            q("100m").checked_add(&q("1.9")).expect("fits").to_string(),
            "2"
        );
        assert_eq!(
            q("1Gi").checked_sub(&q("512Mi")).expect("fits").to_string(),
            "512Mi"
        );
        assert_eq!(
            Quantity::zero()
                .checked_add(&q("1Gi"))
                .expect("fits")
                .to_string(),
            "1Gi"
        );
        assert!(q("1Gi") > q("1G"));
        assert!(q("999m") < q("1"));
        assert_eq!(q("1000m"), q("1"));
        assert_eq!(q("1.5").value(), 2);
        assert_eq!(q("-1.5").value(), -1);
        assert!((q("250m").as_f64() - 0.25).abs() < 1e-12);
        assert_eq!(
            Quantity::from_milli(1500, QuantityFormat::DecimalSI).to_string(),
            "1500m"
        );
    }

    fn format_strategy() -> impl Strategy<Value = QuantityFormat> {
        prop_oneof![
            Just(QuantityFormat::BinarySI),
            Just(QuantityFormat::DecimalSI),
            Just(QuantityFormat::DecimalExponent)
        ]
    }

    proptest! {
        #[test]
        fn display_parse_round_trip(nanos in -(1i128 << 80)..(1i128 << 80), format in format_strategy()) {
            let quantity = Quantity::from_nanos(nanos, format);
            let text = quantity.to_string();
            let parsed = Quantity::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert_eq!(parsed.nanos(), nanos);
            prop_assert_eq!(parsed.to_string(), text);
        }

        #[test]
        fn binary_multiples_round_trip(units in -(1i64 << 40)..(1i64 << 40), power in 0u32..4) {
            let nanos = i128::from(units) * (1i128 << (10 * power)) * NANOS_PER_UNIT;
            let quantity = Quantity::from_nanos(nanos, QuantityFormat::BinarySI);
            let parsed = Quantity::parse(&quantity.to_string()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(parsed.nanos(), nanos);
        }
    }
}
