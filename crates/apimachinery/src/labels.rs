//! Label selectors: the string form (`app=web,tier in (a,b),!canary`), the structured
//! `metav1.LabelSelector` form, and matching against a label map.
//!
//! Invariants: a parsed [`LabelSelector`] holds only valid keys and values; requirements are
//! kept sorted by key (stable), so [`std::fmt::Display`] is canonical and parses back to an equal
//! selector. The empty selector matches everything.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use serde_json::Value;

use crate::names::{label_value_problems, qualified_name_problems};

mod parser;

/// A selector could not be parsed or built; the message says what is accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SelectorError {
    pub message: String,
}

/// Bad selectors in a request are 400 Bad Request.
impl From<SelectorError> for crate::status::ApiError {
    fn from(error: SelectorError) -> Self {
        crate::status::ApiError::bad_request(error.message)
    }
}

impl SelectorError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    fn parse(detail: impl fmt::Display) -> Self {
        Self::new(format!("unable to parse requirement: {detail}"))
    }
}

/// How a requirement compares a label's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `a=b`
    Equals,
    /// `a==b` (same meaning as `=`, kept so Display reproduces the input)
    DoubleEquals,
    /// `a!=b`: absent or different
    NotEquals,
    /// `a in (x,y)`
    In,
    /// `a notin (x,y)`: absent or not listed
    NotIn,
    /// `a`
    Exists,
    /// `!a`
    DoesNotExist,
}

/// One clause of a selector; all clauses must hold.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: BTreeSet<String>,
}

impl Requirement {
    /// Checks the key, the values and their count for the operator.
    pub fn new(
        key: impl Into<String>,
        operator: Operator,
        values: impl IntoIterator<Item = String>,
    ) -> Result<Self, SelectorError> {
        let key = key.into();
        let values: BTreeSet<String> = values.into_iter().collect();
        let key_problems = qualified_name_problems(&key);
        if let Some(problem) = key_problems.first() {
            return Err(SelectorError::new(format!(
                "key: Invalid value: \"{key}\": {problem}"
            )));
        }
        match operator {
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                return Err(SelectorError::new(format!(
                    "values: Invalid value: {values:?}: exact-match compatibility requires one single value"
                )));
            }
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(SelectorError::new(
                    "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(SelectorError::new(format!(
                    "values: Invalid value: {values:?}: values set must be empty for exists and does not exist"
                )));
            }
            _ => {}
        }
        for (index, value) in values.iter().enumerate() {
            if let Some(problem) = label_value_problems(value).first() {
                return Err(SelectorError::new(format!(
                    "values[{index}][{key}]: Invalid value: \"{value}\": {problem}"
                )));
            }
        }
        Ok(Self {
            key,
            operator,
            values,
        })
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> Operator {
        self.operator
    }

    pub fn values(&self) -> &BTreeSet<String> {
        &self.values
    }

    pub fn matches(&self, labels: &impl Labels) -> bool {
        let value = labels.label(&self.key);
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                value.is_some_and(|v| self.values.contains(v))
            }
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let first = self
            .values
            .iter()
            .next()
            .map(String::as_str)
            .unwrap_or_default();
        let list = || {
            self.values
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(",")
        };
        match self.operator {
            Operator::Equals => write!(f, "{}={first}", self.key),
            Operator::DoubleEquals => write!(f, "{}=={first}", self.key),
            Operator::NotEquals => write!(f, "{}!={first}", self.key),
            Operator::In => write!(f, "{} in ({})", self.key, list()),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, list()),
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
        }
    }
}

/// Something that holds labels: a label map or the JSON `metadata.labels` object.
pub trait Labels {
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<S: std::hash::BuildHasher> Labels for HashMap<String, String, S> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// Non-string values count as absent: they are not valid labels.
impl Labels for serde_json::Map<String, Value> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
}

/// The labels of an object given as JSON: `metadata.labels`, or none.
pub fn object_labels(object: &Value) -> serde_json::Map<String, Value> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// A conjunction of requirements. Empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self { requirements }
    }

    /// Parses the query-string form, e.g. `app=web, tier in (fe,be), !canary`.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        parser::parse_requirements(input).map(Self::from_requirements)
    }

    /// Builds from a `metav1.LabelSelector` JSON object (`matchLabels` and `matchExpressions`).
    /// `null` and `{}` give the selector that matches everything; callers that need Kubernetes'
    /// "nil selects nothing" rule check for absence themselves.
    pub fn from_label_selector(selector: &Value) -> Result<Self, SelectorError> {
        let object = match selector {
            Value::Null => return Ok(Self::everything()),
            Value::Object(object) => object,
            other => {
                return Err(SelectorError::new(format!(
                    "selector must be an object, got {other}"
                )));
            }
        };
        let mut requirements = Vec::new();
        match object.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                for (key, value) in labels {
                    let Some(value) = value.as_str() else {
                        return Err(SelectorError::new(format!(
                            "matchLabels.{key}: Invalid value: {value}: must be a string"
                        )));
                    };
                    let requirement =
                        Requirement::new(key.clone(), Operator::Equals, [value.to_string()])
                            .map_err(|e| SelectorError::new(format!("matchLabels: {e}")))?;
                    requirements.push(requirement);
                }
            }
            Some(other) => {
                return Err(SelectorError::new(format!(
                    "matchLabels: Invalid value: {other}: must be an object"
                )));
            }
        }
        match object.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(expressions)) => {
                for (index, expression) in expressions.iter().enumerate() {
                    requirements.push(expression_requirement(index, expression)?);
                }
            }
            Some(other) => {
                return Err(SelectorError::new(format!(
                    "matchExpressions: Invalid value: {other}: must be a list"
                )));
            }
        }
        Ok(Self::from_requirements(requirements))
    }

    /// The `metav1.LabelSelector` JSON form: `=`/`==` become `matchLabels` (when a key has a
    /// single such requirement), everything else `matchExpressions` (`!=` as a one-value
    /// `NotIn`). [`Self::from_label_selector`] of the result matches the same label sets.
    pub fn to_label_selector(&self) -> Value {
        let mut match_labels = serde_json::Map::new();
        let mut expressions = Vec::new();
        for requirement in &self.requirements {
            let values = || {
                Value::Array(
                    requirement
                        .values
                        .iter()
                        .cloned()
                        .map(Value::String)
                        .collect(),
                )
            };
            let equality_count = self
                .requirements
                .iter()
                .filter(|r| r.key == requirement.key && is_equality(r.operator))
                .count();
            let (operator, with_values) = match requirement.operator {
                Operator::Equals | Operator::DoubleEquals if equality_count == 1 => {
                    // Equality requirements hold exactly one value (checked in Requirement::new).
                    let value = requirement
                        .values
                        .iter()
                        .next()
                        .cloned()
                        .unwrap_or_default();
                    match_labels.insert(requirement.key.clone(), Value::String(value));
                    continue;
                }
                Operator::Equals | Operator::DoubleEquals | Operator::In => ("In", true),
                Operator::NotEquals | Operator::NotIn => ("NotIn", true),
                Operator::Exists => ("Exists", false),
                Operator::DoesNotExist => ("DoesNotExist", false),
            };
            let mut expression = serde_json::Map::new();
            expression.insert("key".to_string(), Value::String(requirement.key.clone()));
            expression.insert("operator".to_string(), Value::String(operator.to_string()));
            if with_values {
                expression.insert("values".to_string(), values());
            }
            expressions.push(Value::Object(expression));
        }
        let mut selector = serde_json::Map::new();
        if !match_labels.is_empty() {
            selector.insert("matchLabels".to_string(), Value::Object(match_labels));
        }
        if !expressions.is_empty() {
            selector.insert("matchExpressions".to_string(), Value::Array(expressions));
        }
        Value::Object(selector)
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn matches(&self, labels: &impl Labels) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Matches the `metadata.labels` of a JSON object.
    pub fn matches_object(&self, object: &Value) -> bool {
        self.matches(&object_labels(object))
    }
}

fn is_equality(operator: Operator) -> bool {
    matches!(operator, Operator::Equals | Operator::DoubleEquals)
}

fn expression_requirement(index: usize, expression: &Value) -> Result<Requirement, SelectorError> {
    let field = format!("matchExpressions[{index}]");
    let key = expression
        .get("key")
        .and_then(Value::as_str)
        .ok_or_else(|| SelectorError::new(format!("{field}.key: Required value")))?;
    let operator_name = expression
        .get("operator")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let operator = match operator_name {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => {
            return Err(SelectorError::new(format!(
                "{field}.operator: Unsupported value: \"{other}\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\""
            )));
        }
    };
    let values = match expression.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    SelectorError::new(format!(
                        "{field}.values: Invalid value: {v}: must be a string"
                    ))
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(SelectorError::new(format!(
                "{field}.values: Invalid value: {other}: must be a list of strings"
            )));
        }
    };
    match operator {
        Operator::In | Operator::NotIn if values.is_empty() => Err(SelectorError::new(format!(
            "{field}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
        ))),
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
            Err(SelectorError::new(format!(
                "{field}.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )))
        }
        _ => Requirement::new(key, operator, values)
            .map_err(|e| SelectorError::new(format!("{field}.{}", e.message))),
    }
}

impl fmt::Display for LabelSelector {
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

impl std::str::FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests;
