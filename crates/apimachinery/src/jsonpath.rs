//! The JSONPath subset of CRD `additionalPrinterColumns`: `.a.b`, `.a[0].b`, `.a[*].b`,
//! `.a[?(@.type=="Ready")].status`, optionally wrapped in `{...}`.
//!
//! Invariant: evaluation never fails on data: missing fields give no values. Only a malformed
//! path is an error, reported when the path is compiled.

use serde_json::Value;

/// A path could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct JsonPathError {
    pub message: String,
}

fn error(path: &str, detail: &str) -> JsonPathError {
    JsonPathError {
        message: format!(
            "invalid JSONPath {path:?}: {detail}; supported forms are .a.b, .a[0], .a[*] and .a[?(@.field==\"value\")]"
        ),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    /// `[?(@.a.b==value)]`, or `!=`; `value` is a JSON literal or a bare word.
    Filter {
        field: Vec<String>,
        equal: bool,
        value: Value,
    },
}

/// A compiled path.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

impl JsonPath {
    pub fn parse(path: &str) -> Result<Self, JsonPathError> {
        let trimmed = path.trim();
        let inner = trimmed
            .strip_prefix('{')
            .and_then(|p| p.strip_suffix('}'))
            .unwrap_or(trimmed)
            .trim();
        let inner = inner.strip_prefix('$').unwrap_or(inner);
        let mut steps = Vec::new();
        let mut rest = inner;
        while !rest.is_empty() {
            if let Some(after_dot) = rest.strip_prefix('.') {
                let end = after_dot.find(['.', '[']).unwrap_or(after_dot.len());
                let name = &after_dot[..end];
                if name.is_empty() {
                    return Err(error(path, "empty field name"));
                }
                steps.push(Step::Field(name.to_string()));
                rest = &after_dot[end..];
            } else if let Some(after_bracket) = rest.strip_prefix('[') {
                let close =
                    matching_bracket(after_bracket).ok_or_else(|| error(path, "unclosed '['"))?;
                steps.push(parse_bracket(path, after_bracket[..close].trim())?);
                rest = &after_bracket[close + 1..];
            } else {
                return Err(error(
                    path,
                    &format!("unexpected {rest:?}, expected '.' or '['"),
                ));
            }
        }
        Ok(Self { steps })
    }

    /// Every value the path reaches, in document order.
    pub fn values<'a>(&self, document: &'a Value) -> Vec<&'a Value> {
        let mut current = vec![document];
        for step in &self.steps {
            let mut next = Vec::new();
            for value in current {
                match (step, value) {
                    (Step::Field(name), Value::Object(map)) => next.extend(map.get(name)),
                    (Step::Index(index), Value::Array(items)) => {
                        let position = if *index < 0 {
                            usize::try_from(index.unsigned_abs())
                                .ok()
                                .and_then(|back| items.len().checked_sub(back))
                        } else {
                            usize::try_from(*index).ok()
                        };
                        next.extend(position.and_then(|p| items.get(p)));
                    }
                    (Step::All, Value::Array(items)) => next.extend(items.iter()),
                    (Step::All, Value::Object(map)) => next.extend(map.values()),
                    (
                        Step::Filter {
                            field,
                            equal,
                            value: wanted,
                        },
                        Value::Array(items),
                    ) => {
                        next.extend(items.iter().filter(|item| {
                            let actual = field.iter().try_fold(*item, |v, name| v.get(name));
                            actual.is_some_and(|actual| (actual == wanted) == *equal)
                        }));
                    }
                    _ => {}
                }
            }
            current = next;
        }
        current
    }

    /// The printer-column text: values joined with `,`, strings unquoted, other values as JSON.
    pub fn render(&self, document: &Value) -> String {
        self.values(document)
            .into_iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

fn matching_bracket(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (index, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') if depth == 0 => return Some(index),
            (None, ']') => depth -= 1,
            _ => {}
        }
    }
    None
}

fn parse_bracket(path: &str, content: &str) -> Result<Step, JsonPathError> {
    if content == "*" {
        return Ok(Step::All);
    }
    if let Ok(index) = content.parse::<i64>() {
        return Ok(Step::Index(index));
    }
    if let Some(name) = content
        .strip_prefix('\'')
        .and_then(|c| c.strip_suffix('\''))
        .or_else(|| content.strip_prefix('"').and_then(|c| c.strip_suffix('"')))
    {
        return Ok(Step::Field(name.to_string()));
    }
    let filter = content
        .strip_prefix("?(")
        .and_then(|c| c.strip_suffix(')'))
        .ok_or_else(|| error(path, &format!("unsupported subscript [{content}]")))?
        .trim();
    let (left, equal, right) = if let Some((l, r)) = filter.split_once("==") {
        (l, true, r)
    } else if let Some((l, r)) = filter.split_once("!=") {
        (l, false, r)
    } else {
        return Err(error(path, "filters must compare with == or !="));
    };
    let field = left
        .trim()
        .strip_prefix("@.")
        .ok_or_else(|| error(path, "a filter must start with @."))?
        .split('.')
        .map(str::to_string)
        .collect::<Vec<_>>();
    if field.iter().any(String::is_empty) {
        return Err(error(path, "empty field name in filter"));
    }
    let right = right.trim();
    let value = if let Some(single) = right.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        Value::String(single.to_string())
    } else {
        serde_json::from_str(right).unwrap_or_else(|_| Value::String(right.to_string()))
    };
    Ok(Step::Filter {
        field,
        equal,
        value,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment() -> Value {
        json!({
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 3, "paused": false, "template": {"spec": {"containers": [
                {"name": "nginx", "image": "nginx:1.25"}, {"name": "sidecar", "image": "busybox"}
            ]}}},
            "status": {"conditions": [
                {"type": "Available", "status": "True"},
                {"type": "Ready", "status": "False", "reason": "Pending"}
            ]}
        })
    }

    #[test]
    fn render_table() {
        let cases: &[(&str, &str)] = &[
            (".metadata.name", "web"),
            ("{.metadata.name}", "web"),
            ("$.metadata.name", "web"),
            (".spec.replicas", "3"),
            (".spec.paused", "false"),
            (".spec.template.spec.containers[0].image", "nginx:1.25"),
            (".spec.template.spec.containers[-1].name", "sidecar"),
            (".spec.template.spec.containers[*].name", "nginx,sidecar"),
            (".status.conditions[?(@.type==\"Ready\")].status", "False"),
            (".status.conditions[?(@.type=='Available')].status", "True"),
            (".status.conditions[?(@.type!=\"Ready\")].type", "Available"),
            (".metadata.labels['app']", "web"),
            (".metadata.labels", "{\"app\":\"web\"}"),
            (".spec.missing", ""),
            (".spec.template.spec.containers[5].name", ""),
            (".spec.replicas.deeper", ""),
        ];
        for (path, expected) in cases {
            let compiled = JsonPath::parse(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(compiled.render(&deployment()), *expected, "{path}");
        }
    }

    #[test]
    fn malformed_paths_are_rejected() {
        for path in [
            "spec",
            ".a..b",
            ".a[0",
            ".a[?(@.x>1)]",
            ".a[?(x==1)]",
            ".a[foo]",
        ] {
            let e = JsonPath::parse(path).expect_err(path);
            assert!(e.message.contains("supported forms"), "{path}: {e}");
        }
    }
}
