//! Field selectors (`metadata.name=web,status.phase!=Running`) and the per-kind fields the
//! API server can select on.
//!
//! Invariants: a parsed [`FieldSelector`] holds unescaped values; [`std::fmt::Display`] escapes
//! them again, so display → parse is the identity. Which fields exist is the server's decision:
//! matching takes a lookup closure, and [`standard_field`] is the built-in table.

use std::fmt;

use serde_json::Value;

/// A field selector could not be parsed, or names a field the kind does not support.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FieldSelectorError {
    pub message: String,
}

/// Bad selectors in a request are 400 Bad Request.
impl From<FieldSelectorError> for crate::status::ApiError {
    fn from(error: FieldSelectorError) -> Self {
        crate::status::ApiError::bad_request(error.message)
    }
}

impl FieldSelectorError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// How a field is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `a=b`
    Equals,
    /// `a==b`
    DoubleEquals,
    /// `a!=b`
    NotEquals,
}

impl FieldOperator {
    fn symbol(self) -> &'static str {
        match self {
            Self::Equals => "=",
            Self::DoubleEquals => "==",
            Self::NotEquals => "!=",
        }
    }
}

/// One `field op value` term.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    pub field: String,
    pub operator: FieldOperator,
    pub value: String,
}

impl FieldRequirement {
    /// An absent field compares as the empty string, as Kubernetes' field sets do.
    pub fn matches(&self, actual: Option<&str>) -> bool {
        let equal = actual.unwrap_or_default() == self.value;
        match self.operator {
            FieldOperator::Equals | FieldOperator::DoubleEquals => equal,
            FieldOperator::NotEquals => !equal,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}",
            self.field,
            self.operator.symbol(),
            escape_value(&self.value)
        )
    }
}

/// A conjunction of field requirements; empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    pub fn everything() -> Self {
        Self::default()
    }

    pub fn from_requirements(requirements: Vec<FieldRequirement>) -> Self {
        Self { requirements }
    }

    /// Parses `field=value[,field!=value...]`. In values, `\,`, `\=` and `\\` stand for the
    /// literal characters; any other backslash sequence, or a bare `,`/`=` in a value, is an error.
    pub fn parse(input: &str) -> Result<Self, FieldSelectorError> {
        let mut requirements = Vec::new();
        for term in split_unescaped(input, ',') {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let Some((field, operator, raw_value)) = split_term(term) else {
                return Err(FieldSelectorError::new(format!(
                    "invalid selector: '{input}'; can't understand '{term}': expected <field>=<value>, <field>==<value> or <field>!=<value>"
                )));
            };
            let field = field.trim();
            if field.is_empty() {
                return Err(FieldSelectorError::new(format!(
                    "invalid selector: '{input}'; can't understand '{term}': the field name is empty"
                )));
            }
            requirements.push(FieldRequirement {
                field: field.to_string(),
                operator,
                value: unescape_value(raw_value)?,
            });
        }
        Ok(Self { requirements })
    }

    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The value an `=`/`==` term requires for `field`, if any (lets the server narrow a list).
    pub fn required_value(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator != FieldOperator::NotEquals)
            .map(|r| r.value.as_str())
    }

    /// `lookup` returns a field's value; `None` compares as the empty string.
    pub fn matches(&self, lookup: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches(lookup(&r.field).as_deref()))
    }

    /// Like [`Self::matches`], but the lookup may reject a field (unknown field selector).
    pub fn try_matches<E>(
        &self,
        lookup: impl Fn(&str) -> Result<Option<String>, E>,
    ) -> Result<bool, E> {
        for requirement in &self.requirements {
            if !requirement.matches(lookup(&requirement.field)?.as_deref()) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Checks every field against [`standard_field`] for `kind` without matching anything; the
    /// server calls this once per request so unknown fields fail even on an empty list.
    pub fn validate_for_kind(&self, kind: &str) -> Result<(), FieldSelectorError> {
        let probe = Value::Object(serde_json::Map::new());
        for requirement in &self.requirements {
            standard_field(&probe, kind, &requirement.field)?;
        }
        Ok(())
    }

    /// Matches a JSON object of `kind` using the built-in field table.
    pub fn matches_object(&self, object: &Value, kind: &str) -> Result<bool, FieldSelectorError> {
        self.try_matches(|field| standard_field(object, kind, field))
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, requirement) in self.requirements.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for FieldSelector {
    type Err = FieldSelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Escapes `\`, `,` and `=` so the value survives [`FieldSelector::parse`].
pub fn escape_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

fn split_unescaped(input: &str, separator: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (index, c) in input.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == separator {
            parts.push(&input[start..index]);
            start = index + c.len_utf8();
        }
    }
    parts.push(&input[start..]);
    parts
}

/// Finds the first unescaped operator; `!=` and `==` win over `=` at the same position.
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    let mut escaped = false;
    for (index, c) in term.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
            continue;
        }
        let rest = &term[index..];
        for (symbol, operator) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::DoubleEquals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(value) = rest.strip_prefix(symbol) {
                return Some((&term[..index], operator, value));
            }
        }
    }
    None
}

fn unescape_value(raw: &str) -> Result<String, FieldSelectorError> {
    let mut value = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(next @ ('\\' | ',' | '=')) => value.push(next),
                Some(next) => {
                    return Err(FieldSelectorError::new(format!(
                        "invalid field selector: invalid escape sequence: \\{next} (only \\\\, \\, and \\= are accepted)"
                    )));
                }
                None => {
                    return Err(FieldSelectorError::new(
                        "invalid field selector: invalid escape sequence: a trailing \\ must be written \\\\",
                    ));
                }
            },
            ',' | '=' => {
                return Err(FieldSelectorError::new(format!(
                    "invalid field selector: unescaped character in value: {c} (write \\{c})"
                )));
            }
            other => value.push(other),
        }
    }
    Ok(value)
}

/// Fields every kind supports.
const COMMON_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];

/// Extra selectable fields of a built-in kind, in the order reported in errors.
pub fn kind_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "Event" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "Pod" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        "Secret" => &["type"],
        "Namespace" => &["status.phase"],
        "Node" => &["spec.unschedulable"],
        "ReplicaSet" | "ReplicationController" => &["status.replicas"],
        "Job" => &["status.successful"],
        _ => &[],
    }
}

/// The value of a selectable field of `object` (a `kind` given as JSON). `Ok(None)` when the
/// field is supported but absent; an error naming the accepted fields when it is unsupported.
pub fn standard_field(
    object: &Value,
    kind: &str,
    field: &str,
) -> Result<Option<String>, FieldSelectorError> {
    let extra = kind_fields(kind);
    if !COMMON_FIELDS.contains(&field) && !extra.contains(&field) {
        let accepted = COMMON_FIELDS
            .iter()
            .chain(extra)
            .map(|f| format!("\"{f}\""))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(FieldSelectorError::new(format!(
            "\"{field}\" is not a known field selector: only {accepted}"
        )));
    }
    let pointer = match (kind, field) {
        ("Event", "source") => "/source/component".to_string(),
        _ => format!("/{}", field.replace('.', "/")),
    };
    let value = object.pointer(&pointer);
    Ok(match (kind, field, value) {
        // Kubernetes' field sets render these with defaults rather than as empty.
        ("Node", "spec.unschedulable", None) | ("Pod", "spec.hostNetwork", None) => {
            Some("false".to_string())
        }
        ("ReplicaSet" | "ReplicationController", "status.replicas", None)
        | ("Job", "status.successful", None) => Some("0".to_string()),
        (_, _, None | Some(Value::Null)) => None,
        (_, _, Some(Value::String(s))) => Some(s.clone()),
        (_, _, Some(other)) => Some(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    type Term<'a> = (&'a str, FieldOperator, &'a str);

    #[test]
    fn parse_table() {
        let cases: &[(&str, &[Term])] = &[
            ("", &[]),
            (
                "metadata.name=web",
                &[("metadata.name", FieldOperator::Equals, "web")],
            ),
            ("a==b", &[("a", FieldOperator::DoubleEquals, "b")]),
            ("a!=b", &[("a", FieldOperator::NotEquals, "b")]),
            ("a=", &[("a", FieldOperator::Equals, "")]),
            (
                "metadata.name=web, status.phase!=Running",
                &[
                    ("metadata.name", FieldOperator::Equals, "web"),
                    ("status.phase", FieldOperator::NotEquals, "Running"),
                ],
            ),
            (r"a=x\,y\=z\\", &[("a", FieldOperator::Equals, r"x,y=z\")]),
            ("a=b,", &[("a", FieldOperator::Equals, "b")]),
        ];
        for (input, expected) in cases {
            let selector = FieldSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            let got: Vec<_> = selector
                .requirements()
                .iter()
                .map(|r| (r.field.as_str(), r.operator, r.value.as_str()))
                .collect();
            assert_eq!(got, *expected, "{input:?}");
        }
    }

    #[test]
    fn parse_errors() {
        let cases: &[(&str, &str)] = &[
            (
                "abc",
                "invalid selector: 'abc'; can't understand 'abc': expected <field>=<value>, <field>==<value> or <field>!=<value>",
            ),
            (
                "=b",
                "invalid selector: '=b'; can't understand '=b': the field name is empty",
            ),
            (
                "a=b=c",
                "invalid field selector: unescaped character in value: = (write \\=)",
            ),
            (
                r"a=\x",
                "invalid field selector: invalid escape sequence: \\x (only \\\\, \\, and \\= are accepted)",
            ),
        ];
        for (input, message) in cases {
            assert_eq!(
                FieldSelector::parse(input).expect_err(input).message,
                *message
            );
        }
    }

    #[test]
    fn matching_with_a_lookup() {
        let lookup = |field: &str| match field {
            "metadata.name" => Some("web".to_string()),
            "spec.nodeName" => None,
            _ => Some("x".to_string()),
        };
        let cases: &[(&str, bool)] = &[
            ("metadata.name=web", true),
            ("metadata.name==db", false),
            ("metadata.name!=db", true),
            ("spec.nodeName=", true),
            ("spec.nodeName!=", false),
            ("metadata.name=web,other=x", true),
            ("metadata.name=web,other=y", false),
            ("", true),
        ];
        for (input, expected) in cases {
            assert_eq!(
                FieldSelector::parse(input).expect("valid").matches(lookup),
                *expected,
                "{input:?}"
            );
        }
    }

    #[test]
    fn standard_fields_per_kind() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1", "restartPolicy": "Always"}, "status": {"phase": "Running", "podIP": "10.0.0.1"}});
        let event = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "uid": "u1"}, "reason": "Started", "type": "Normal", "source": {"component": "kubelet"}});
        let node = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}});
        let cases: &[(&Value, &str, &str, Option<&str>)] = &[
            (&pod, "Pod", "metadata.name", Some("p")),
            (&pod, "Pod", "metadata.namespace", Some("ns")),
            (&pod, "Pod", "spec.nodeName", Some("n1")),
            (&pod, "Pod", "status.phase", Some("Running")),
            (&pod, "Pod", "status.podIP", Some("10.0.0.1")),
            (&pod, "Pod", "spec.schedulerName", None),
            (&pod, "Pod", "spec.hostNetwork", Some("false")),
            (&event, "Event", "involvedObject.kind", Some("Pod")),
            (&event, "Event", "involvedObject.uid", Some("u1")),
            (&event, "Event", "reason", Some("Started")),
            (&event, "Event", "type", Some("Normal")),
            (&event, "Event", "source", Some("kubelet")),
            (&event, "Event", "metadata.namespace", None),
            (&node, "Node", "spec.unschedulable", Some("true")),
            (&json!({}), "Node", "spec.unschedulable", Some("false")),
            (
                &json!({"status": {"replicas": 3}}),
                "ReplicaSet",
                "status.replicas",
                Some("3"),
            ),
            (&json!({}), "Job", "status.successful", Some("0")),
            (&json!({"type": "Opaque"}), "Secret", "type", Some("Opaque")),
            (
                &json!({"status": {"phase": "Active"}}),
                "Namespace",
                "status.phase",
                Some("Active"),
            ),
        ];
        for (object, kind, field, expected) in cases {
            let got = standard_field(object, kind, field)
                .unwrap_or_else(|e| panic!("{kind} {field}: {e}"));
            assert_eq!(got.as_deref(), *expected, "{kind} {field}");
        }
    }

    #[test]
    fn unknown_fields_are_rejected_with_the_accepted_list() {
        let error = standard_field(&json!({}), "ConfigMap", "foo").expect_err("unknown");
        assert_eq!(
            error.message,
            "\"foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        let error = standard_field(&json!({}), "Secret", "data").expect_err("unknown");
        assert_eq!(
            error.message,
            "\"data\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\", \"type\""
        );
        let selector = FieldSelector::parse("status.phase=Running").expect("valid");
        assert!(selector.validate_for_kind("Pod").is_ok());
        assert!(selector.validate_for_kind("ConfigMap").is_err());
        let pod = json!({"status": {"phase": "Running"}});
        assert_eq!(selector.matches_object(&pod, "Pod"), Ok(true));
        assert!(selector.matches_object(&pod, "Deployment").is_err());
    }

    proptest! {
        #[test]
        fn display_parse_round_trip(
            terms in proptest::collection::vec(("[a-z]{1,5}(\\.[a-z]{1,5})?", 0..3usize, "[ -~]{0,8}"), 0..4)
        ) {
            let operators = [FieldOperator::Equals, FieldOperator::DoubleEquals, FieldOperator::NotEquals];
            let requirements: Vec<FieldRequirement> = terms
                .into_iter()
                .map(|(field, op, value)| FieldRequirement { field, operator: operators[op], value: value.trim().to_string() })
                .collect();
            let selector = FieldSelector::from_requirements(requirements);
            let text = selector.to_string();
            let parsed = FieldSelector::parse(&text).map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
            prop_assert_eq!(parsed, selector);
        }
    }
}
