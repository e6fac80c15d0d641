//! Name and label syntax rules (DNS-1123 labels and subdomains, qualified names, label values)
//! and `generateName` suffixes. Messages use Kubernetes' wording because clients and users
//! compare them; the checks are plain character scans, no regex engine.

use serde_json::Value;

use crate::field::FieldError;

/// Longest DNS-1123 label (namespace names, most `metadata.name`s of label-like kinds).
pub const DNS1123_LABEL_MAX_LEN: usize = 63;
/// Longest DNS-1123 subdomain (most `metadata.name`s).
pub const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;
/// Longest name part of a qualified name (label keys) and longest label value.
pub const QUALIFIED_NAME_MAX_LEN: usize = 63;
/// Longest label value.
pub const LABEL_VALUE_MAX_LEN: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

/// Alphabet of generated suffixes: no vowels (no accidental words) and no look-alike characters.
const GENERATE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Random characters appended to a `generateName` prefix.
pub const GENERATED_SUFFIX_LEN: usize = 5;
/// Generated names never exceed a DNS-1123 label, so the prefix is cut to leave room for the suffix.
pub const MAX_GENERATE_PREFIX_LEN: usize = DNS1123_LABEL_MAX_LEN - GENERATED_SUFFIX_LEN;

fn max_len_message(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn is_dns1123_label_syntax(value: &str) -> bool {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            is_lower_alnum(first)
                && is_lower_alnum(last)
                && bytes.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// Problems with `value` as a DNS-1123 label; empty when valid.
pub fn dns1123_label_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LEN {
        problems.push(max_len_message(DNS1123_LABEL_MAX_LEN));
    }
    if !is_dns1123_label_syntax(value) {
        problems.push(format!(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '{DNS1123_LABEL_FMT}')"
        ));
    }
    problems
}

/// Problems with `value` as a DNS-1123 subdomain; empty when valid.
pub fn dns1123_subdomain_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LEN {
        problems.push(max_len_message(DNS1123_SUBDOMAIN_MAX_LEN));
    }
    if !value.split('.').all(is_dns1123_label_syntax) {
        problems.push(format!(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '{DNS1123_SUBDOMAIN_FMT}')"
        ));
    }
    problems
}

/// `metadata.name`-style check: one [`FieldError`] per problem, empty when valid.
pub fn validate_dns1123_subdomain(field: &str, value: &str) -> Vec<FieldError> {
    to_field_errors(field, value, dns1123_subdomain_problems(value))
}

/// Namespace-name-style check: one [`FieldError`] per problem, empty when valid.
pub fn validate_dns1123_label(field: &str, value: &str) -> Vec<FieldError> {
    to_field_errors(field, value, dns1123_label_problems(value))
}

/// Label-key-style check (`[prefix/]name`): one [`FieldError`] per problem, empty when valid.
pub fn validate_qualified_name(field: &str, value: &str) -> Vec<FieldError> {
    to_field_errors(field, value, qualified_name_problems(value))
}

/// Label-value check: one [`FieldError`] per problem, empty when valid.
pub fn validate_label_value(field: &str, value: &str) -> Vec<FieldError> {
    to_field_errors(field, value, label_value_problems(value))
}

fn to_field_errors(field: &str, value: &str, problems: Vec<String>) -> Vec<FieldError> {
    problems
        .into_iter()
        .map(|detail| FieldError::invalid(field, Value::String(value.to_string()), detail))
        .collect()
}

fn is_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, which is also a non-empty label value.
fn is_qualified_name_part(value: &str) -> bool {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            is_alnum(first)
                && is_alnum(last)
                && bytes
                    .iter()
                    .all(|&c| is_alnum(c) || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Problems with `value` as a qualified name (`[dns-subdomain/]name`, the label key syntax).
pub fn qualified_name_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_string());
            } else {
                problems.extend(
                    dns1123_subdomain_problems(prefix)
                        .into_iter()
                        .map(|p| format!("prefix part {p}")),
                );
            }
            *name
        }
        _ => {
            problems.push(format!(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME_FMT}') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
            return problems;
        }
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LEN {
        problems.push(format!(
            "name part {}",
            max_len_message(QUALIFIED_NAME_MAX_LEN)
        ));
    }
    if !name.is_empty() && !is_qualified_name_part(name) {
        problems.push(format!(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME_FMT}')"
        ));
    }
    problems
}

/// Problems with `value` as a label value (empty is allowed).
pub fn label_value_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LEN {
        problems.push(max_len_message(LABEL_VALUE_MAX_LEN));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        problems.push(format!(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '{LABEL_VALUE_FMT}')"
        ));
    }
    problems
}

/// `prefix` + five characters chosen by `random` (one byte each), the prefix cut so the result
/// stays within 63 characters. Randomness is an argument so callers (and tests) control it.
pub fn generate_name(prefix: &str, random: [u8; GENERATED_SUFFIX_LEN]) -> String {
    let mut cut = prefix.len().min(MAX_GENERATE_PREFIX_LEN);
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut name = prefix[..cut].to_string();
    for byte in random {
        let index = usize::from(byte) % GENERATE_ALPHABET.len();
        name.push(char::from(GENERATE_ALPHABET[index]));
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns1123_subdomains() {
        let long_ok = format!(
            "{}.{}.{}.{}",
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(61)
        );
        let too_long = format!("{long_ok}x");
        let cases: &[(&str, bool)] = &[
            ("web", true),
            ("example.com", true),
            ("a-b.c-d", true),
            ("0abc", true),
            (long_ok.as_str(), true),
            ("", false),
            ("Web", false),
            ("-web", false),
            ("web-", false),
            ("web..x", false),
            (".web", false),
            ("web_x", false),
            (too_long.as_str(), false),
        ];
        for (value, ok) in cases {
            assert_eq!(
                validate_dns1123_subdomain("metadata.name", value).is_empty(),
                *ok,
                "{value:?}"
            );
        }
        assert_eq!(long_ok.len(), 253);
    }

    #[test]
    fn dns1123_labels() {
        let cases: &[(&str, bool)] = &[
            ("default", true),
            ("kube-system", true),
            ("a", true),
            ("a.b", false),
            ("A", false),
            ("-a", false),
            ("", false),
        ];
        for (value, ok) in cases {
            assert_eq!(
                validate_dns1123_label("metadata.name", value).is_empty(),
                *ok,
                "{value:?}"
            );
        }
        let long = "a".repeat(64);
        let errors = validate_dns1123_label("metadata.name", &long);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].detail, "must be no more than 63 characters");
    }

    #[test]
    fn subdomain_message_wording() {
        let errors = validate_dns1123_subdomain("metadata.name", "Bad_Name");
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].to_string(),
            "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
    }

    #[test]
    fn qualified_names() {
        let cases: &[(&str, usize)] = &[
            ("app", 0),
            ("App_1.x", 0),
            ("example.com/app", 0),
            ("kubernetes.io/hostname", 0),
            ("/app", 1),
            ("example.com/", 1),
            ("Example.com/app", 1),
            ("a/b/c", 1),
            ("-app", 1),
            ("", 1),
        ];
        for (value, count) in cases {
            assert_eq!(
                qualified_name_problems(value).len(),
                *count,
                "{value:?}: {:?}",
                qualified_name_problems(value)
            );
        }
        let long = "a".repeat(64);
        assert_eq!(
            qualified_name_problems(&long),
            vec!["name part must be no more than 63 characters".to_string()]
        );
    }

    #[test]
    fn label_values() {
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("v1", true),
            ("a.b_c-d", true),
            ("-a", false),
            ("a b", false),
        ];
        for (value, ok) in cases {
            assert_eq!(label_value_problems(value).is_empty(), *ok, "{value:?}");
        }
        assert!(!label_value_problems(&"a".repeat(64)).is_empty());
    }

    #[test]
    fn generated_names() {
        assert_eq!(generate_name("cfg-", [0, 1, 2, 26, 27]), "cfg-bcd9b");
        let long_prefix = "p".repeat(70);
        let name = generate_name(&long_prefix, [3; 5]);
        assert_eq!(name.len(), 63);
        assert!(name.starts_with(&"p".repeat(58)));
        assert!(name.ends_with("fffff"));
        // Never splits a multi-byte character.
        let wide = "é".repeat(40);
        assert!(generate_name(&wide, [0; 5]).len() <= 63);
    }
}
