//! State preservation (`failover.{application,cluster}.statePreservation.rules`): each rule copies one value from
//! the failed copy's status (as `aggregatedStatus` reflects it) into the eviction task's `preservedLabelState`
//! under `aliasLabelName`, so the replacement can be started with it.
//!
//! `jsonPath` is evaluated against `.status`, in the simple JSONPath that Karmada's users write: `{.a.b}`,
//! `.a.b`, `$.a.b`, with `[n]` indexes and `['key']` / `["key"]` members. Strings are taken as they are, other
//! scalars as their JSON text. A rule whose path finds nothing (or finds an object or array) is an error: the
//! eviction is not done without the state it must carry (Karmada does the same), and the error says which rule.

use std::collections::BTreeMap;

use karmada_api::policy::StatePreservationRule;
use serde_json::Value;

/// Why the preserved state could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PreservationError {
    #[error(
        "statePreservation rule {alias:?}: jsonPath {path:?} is not a supported JSONPath: {why}"
    )]
    BadPath {
        alias: String,
        path: String,
        why: String,
    },
    #[error(
        "statePreservation rule {alias:?}: jsonPath {path:?} finds no scalar value in the status"
    )]
    NotFound { alias: String, path: String },
}

#[derive(Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

fn parse(path: &str) -> Result<Vec<Step>, String> {
    let mut text = path.trim();
    if let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        text = inner.trim();
    }
    text = text.strip_prefix('$').unwrap_or(text);
    let mut steps = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && chars[end] != '.' && chars[end] != '[' {
                    end += 1;
                }
                if end == start {
                    return Err("empty member name".into());
                }
                steps.push(Step::Key(chars[start..end].iter().collect()));
                i = end;
            }
            '[' => {
                let close = chars[i..]
                    .iter()
                    .position(|c| *c == ']')
                    .map(|p| p + i)
                    .ok_or("unclosed '['")?;
                let inner: String = chars[i + 1..close].iter().collect();
                let inner = inner.trim();
                let quoted = inner
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
                match quoted {
                    Some(key) => steps.push(Step::Key(key.to_string())),
                    None => steps.push(Step::Index(
                        inner.parse().map_err(|_| format!("bad index {inner:?}"))?,
                    )),
                }
                i = close + 1;
            }
            other => return Err(format!("unexpected {other:?}")),
        }
    }
    if steps.is_empty() {
        return Err("empty path".into());
    }
    Ok(steps)
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The label state the rules extract from `status` (the failed copy's reflected status).
pub fn preserved_label_state(
    rules: &[StatePreservationRule],
    status: Option<&Value>,
) -> Result<BTreeMap<String, String>, PreservationError> {
    let mut out = BTreeMap::new();
    for rule in rules {
        let steps = parse(&rule.json_path).map_err(|why| PreservationError::BadPath {
            alias: rule.alias_label_name.clone(),
            path: rule.json_path.clone(),
            why,
        })?;
        let found = status.and_then(|status| {
            steps.iter().try_fold(status, |value, step| match step {
                Step::Key(key) => value.get(key.as_str()),
                Step::Index(index) => value.get(*index),
            })
        });
        let Some(text) = found.and_then(scalar) else {
            return Err(PreservationError::NotFound {
                alias: rule.alias_label_name.clone(),
                path: rule.json_path.clone(),
            });
        };
        out.insert(rule.alias_label_name.clone(), text);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(alias: &str, path: &str) -> StatePreservationRule {
        StatePreservationRule {
            alias_label_name: alias.into(),
            json_path: path.into(),
        }
    }

    #[test]
    fn paths() {
        let status = json!({"replicas": 3, "leader": "pod-1", "ok": true,
                            "members": [{"name": "m0"}, {"name": "m1"}], "odd.key": {"v": "x"}});
        let cases = [
            ("{.replicas}", Ok("3")),
            (".leader", Ok("pod-1")),
            ("$.ok", Ok("true")),
            ("{ .members[1].name }", Ok("m1")),
            ("['odd.key'].v", Ok("x")),
            (".missing", Err("no scalar")),
            (".members", Err("no scalar")),
            ("replicas", Err("not a supported")),
            (".members[x]", Err("not a supported")),
            ("", Err("not a supported")),
        ];
        for (path, expected) in cases {
            let got = preserved_label_state(&[rule("a", path)], Some(&status));
            match expected {
                Ok(value) => assert_eq!(
                    got.expect(path).get("a").map(String::as_str),
                    Some(value),
                    "{path}"
                ),
                Err(text) => assert!(got.expect_err(path).to_string().contains(text), "{path}"),
            }
        }
    }

    #[test]
    fn no_rules_no_state_and_no_status_is_an_error() {
        assert!(preserved_label_state(&[], None).expect("empty").is_empty());
        assert!(matches!(
            preserved_label_state(&[rule("a", ".x")], None),
            Err(PreservationError::NotFound { .. })
        ));
    }
}
