//! Human-readable durations as kubectl shows them in AGE-like columns.
//!
//! The rounding rules live in `apimachinery::time`; this module adapts them to JSON fields.

use jiff::Timestamp;
use serde_json::Value;

/// kubectl's age format (`5s`, `3m20s`, `5h3m`, `3d4h`, `3y12d`; `<invalid>` in the future).
pub fn human_duration(seconds: i64) -> String {
    apimachinery::time::human_duration_seconds(seconds)
}

/// Parses an RFC 3339 timestamp field.
pub fn parse_time(value: &Value) -> Option<Timestamp> {
    value
        .as_str()
        .and_then(|text| text.parse::<Timestamp>().ok())
}

/// Seconds from `from` to `to`.
pub fn seconds_between(from: Timestamp, to: Timestamp) -> i64 {
    to.as_second() - from.as_second()
}

/// The age of a timestamp field at `now`, or `<unknown>` when absent or unparsable.
pub fn since(value: &Value, now: Timestamp) -> String {
    match parse_time(value) {
        Some(then) => human_duration(seconds_between(then, now)),
        None => "<unknown>".into(),
    }
}

/// The AGE cell of `object`: the time since its creation.
pub fn age_of(object: &Value, now: Timestamp) -> Value {
    Value::from(since(&object["metadata"]["creationTimestamp"], now))
}

#[cfg(test)]
mod tests {
    use super::since;
    use serde_json::json;

    #[test]
    fn ages_of_timestamp_fields() {
        let now: jiff::Timestamp = "2026-11-29T18:00:00Z".parse().unwrap();
        let cases = [
            (json!("2026-11-29T17:59:30Z"), "30s"),
            (json!("2026-11-29T15:00:00Z"), "3h"),
            (json!("2026-11-26T14:00:00Z"), "3d4h"),
            (json!("2026-11-29T18:05:00Z"), "<invalid>"),
            (json!("yesterday"), "<unknown>"),
            (json!(null), "<unknown>"),
        ];
        for (field, expected) in cases {
            assert_eq!(since(&field, now), expected, "{field}");
        }
    }
}
