//! Field-level rules shared by the built-in kinds' validations: numbers, ports, int-or-percent
//! values, config keys, IANA service names, cron schedules. Messages are Kubernetes' wording.

use serde_json::{Map, Value};

use apimachinery::FieldError;

pub const IMMUTABLE: &str = "field is immutable";
pub const IMMUTABLE_WHEN_SET: &str = "field is immutable when `immutable` is set";
pub const NON_NEGATIVE: &str = "must be greater than or equal to 0";
pub const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
const CONFIG_KEY_MAX_LEN: usize = 253;
const IANA_SERVICE_NAME_MAX_LEN: usize = 15;

/// `<path>.<field>` must be a non-negative integer when present.
pub fn non_negative(
    object: &Map<String, Value>,
    path: &str,
    field: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(value) = object.get(field).filter(|v| !v.is_null()) else {
        return;
    };
    match value.as_i64() {
        Some(n) if n >= 0 => {}
        Some(_) => errors.push(FieldError::invalid(
            format!("{path}.{field}"),
            value.clone(),
            NON_NEGATIVE,
        )),
        None => errors.push(FieldError::invalid(
            format!("{path}.{field}"),
            value.clone(),
            "must be an integer",
        )),
    }
}

/// A port number in 1..=65535. Absent, null or 0 means "not set": an error only when `required`.
pub fn port_number(
    value: Option<&Value>,
    path: &str,
    required: bool,
    errors: &mut Vec<FieldError>,
) {
    let value = match value {
        None | Some(Value::Null) => None,
        Some(v) if v.as_i64() == Some(0) => None,
        Some(v) => Some(v),
    };
    match value {
        None if required => errors.push(FieldError::required(path, "")),
        None => {}
        Some(v) => match v.as_i64() {
            Some(n) if (1..=65535).contains(&n) => {}
            Some(_) => errors.push(FieldError::invalid(path, v.clone(), PORT_RANGE)),
            None => errors.push(FieldError::invalid(path, v.clone(), "must be an integer")),
        },
    }
}

/// An int-or-percent value (`3` or `"25%"`): the number and whether it was a percentage, or
/// `None` when absent or invalid (invalid values are reported).
pub fn int_or_percent(
    value: Option<&Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Option<(i64, bool)> {
    let value = value.filter(|v| !v.is_null())?;
    match value {
        Value::Number(number) => match number.as_i64() {
            Some(n) if n >= 0 => Some((n, false)),
            Some(_) => {
                errors.push(FieldError::invalid(path, value.clone(), NON_NEGATIVE));
                None
            }
            None => {
                errors.push(FieldError::invalid(
                    path,
                    value.clone(),
                    "must be an integer or a percentage",
                ));
                None
            }
        },
        Value::String(text) => {
            let digits = text
                .strip_suffix('%')
                .filter(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()));
            match digits.and_then(|d| d.parse::<i64>().ok()) {
                Some(percent) => Some((percent, true)),
                None => {
                    errors.push(FieldError::invalid(
                        path,
                        value.clone(),
                        "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                    ));
                    None
                }
            }
        }
        _ => {
            errors.push(FieldError::invalid(
                path,
                value.clone(),
                "must be an integer or a percentage",
            ));
            None
        }
    }
}

/// Problems with a ConfigMap/Secret data key; empty when valid.
pub fn config_key_problems(key: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if key.len() > CONFIG_KEY_MAX_LEN {
        problems.push(format!(
            "must be no more than {CONFIG_KEY_MAX_LEN} characters"
        ));
    }
    if key.is_empty()
        || !key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        problems.push(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
                .to_string(),
        );
    }
    if key == "." {
        problems.push("must not be '.'".to_string());
    } else if key == ".." {
        problems.push("must not be '..'".to_string());
    } else if key.starts_with("..") {
        problems.push("must not start with '..'".to_string());
    }
    problems
}

/// Problems with a named port (`http`, `metrics`): an IANA service name; empty when valid.
pub fn iana_service_name_problems(name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if name.len() > IANA_SERVICE_NAME_MAX_LEN {
        problems.push(format!(
            "must be no more than {IANA_SERVICE_NAME_MAX_LEN} characters"
        ));
    }
    if !name
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        problems.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if name.contains("--") {
        problems.push("must not contain consecutive hyphens".to_string());
    }
    if !name.bytes().any(|c| c.is_ascii_alphabetic()) {
        problems.push("must contain at least one letter (a-z)".to_string());
    }
    if name.starts_with('-') || name.ends_with('-') {
        problems.push("must not begin or end with a hyphen".to_string());
    }
    problems
}

/// Why a CronJob schedule is unusable, if it is: the standard five fields or a descriptor.
pub fn cron_schedule_problem(schedule: &str) -> Option<String> {
    const DESCRIPTORS: [&str; 7] = [
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
    ];
    let schedule = schedule.trim();
    if schedule.starts_with("TZ=") || schedule.starts_with("CRON_TZ=") {
        return Some(
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead".to_string(),
        );
    }
    if schedule.starts_with('@') {
        let known = DESCRIPTORS.contains(&schedule)
            || schedule
                .strip_prefix("@every ")
                .is_some_and(|d| !d.trim().is_empty());
        return (!known).then(|| format!("unrecognized descriptor: {schedule}"));
    }
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    if fields.len() != 5 {
        return Some(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '*' | '/' | ',' | '-' | '?');
    fields
        .iter()
        .find(|field| !field.chars().all(allowed))
        .map(|field| format!("failed to parse field {field}: unexpected characters"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn config_keys() {
        let cases: [(&str, &[&str]); 7] = [
            ("key.name", &[]),
            ("KEY_NAME-1", &[]),
            ("has space", &["a valid config key"]),
            ("", &["a valid config key"]),
            (".", &["must not be '.'"]),
            ("..", &["must not be '..'"]),
            ("..hidden", &["must not start with '..'"]),
        ];
        for (key, expected) in cases {
            let problems = config_key_problems(key);
            assert_eq!(problems.len(), expected.len(), "{key}: {problems:?}");
            for (problem, prefix) in problems.iter().zip(expected) {
                assert!(problem.starts_with(prefix), "{key}: {problem}");
            }
        }
        assert_eq!(
            config_key_problems(&"k".repeat(254)),
            vec!["must be no more than 253 characters".to_string()]
        );
    }

    #[test]
    fn iana_service_names() {
        assert!(iana_service_name_problems("http-alt").is_empty());
        assert!(iana_service_name_problems("h2c").is_empty());
        let cases = [
            ("8080", "must contain at least one letter (a-z)"),
            (
                "Http",
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            ),
            ("a--b", "must not contain consecutive hyphens"),
            ("-web", "must not begin or end with a hyphen"),
            (
                "a-very-long-port-name",
                "must be no more than 15 characters",
            ),
        ];
        for (name, expected) in cases {
            assert_eq!(
                iana_service_name_problems(name),
                vec![expected.to_string()],
                "{name}"
            );
        }
    }

    #[test]
    fn numbers_ports_and_percentages() {
        let object = json!({"ok": 0, "neg": -1, "text": "3"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut errors = Vec::new();
        for field in ["ok", "neg", "text", "absent"] {
            non_negative(&object, "spec", field, &mut errors);
        }
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            vec![
                "spec.neg: Invalid value: -1: must be greater than or equal to 0",
                "spec.text: Invalid value: \"3\": must be an integer"
            ]
        );

        let mut errors = Vec::new();
        port_number(Some(&json!(0)), "p0", true, &mut errors);
        port_number(Some(&json!(0)), "p1", false, &mut errors);
        port_number(Some(&json!(70000)), "p2", false, &mut errors);
        port_number(Some(&json!(443)), "p3", true, &mut errors);
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            vec![
                "p0: Required value",
                "p2: Invalid value: 70000: must be between 1 and 65535, inclusive"
            ]
        );

        let mut errors = Vec::new();
        assert_eq!(
            int_or_percent(Some(&json!("25%")), "a", &mut errors),
            Some((25, true))
        );
        assert_eq!(
            int_or_percent(Some(&json!(2)), "b", &mut errors),
            Some((2, false))
        );
        assert_eq!(int_or_percent(None, "c", &mut errors), None);
        assert!(errors.is_empty());
        assert_eq!(int_or_percent(Some(&json!("25")), "d", &mut errors), None);
        assert_eq!(int_or_percent(Some(&json!(-1)), "e", &mut errors), None);
        assert_eq!(errors.len(), 2);
        assert!(errors[0].detail.starts_with("a valid percent string"));
    }

    #[test]
    fn cron_schedules() {
        for good in [
            "*/5 * * * *",
            "0 0 * * MON-FRI",
            "@hourly",
            "@every 1h30m",
            "0 12 ? * 1,3",
        ] {
            assert_eq!(cron_schedule_problem(good), None, "{good}");
        }
        let cases = [
            ("* * *", "expected exactly 5 fields, found 3: [* * *]"),
            ("@sometimes", "unrecognized descriptor: @sometimes"),
            (
                "TZ=UTC 0 0 * * *",
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ),
            (
                "0 0 * * $",
                "failed to parse field $: unexpected characters",
            ),
        ];
        for (schedule, expected) in cases {
            assert_eq!(
                cron_schedule_problem(schedule).as_deref(),
                Some(expected),
                "{schedule}"
            );
        }
    }
}
