//! The label + field filter lists, watches and deletecollection apply.
//!
//! Field selectors support `metadata.name` and `metadata.namespace` on every kind plus the
//! usual per-kind fields (`apimachinery::fields`); an unsupported field is a 400 even when the
//! collection is empty, as kube-apiserver answers.

use apimachinery::fields::FieldSelector;
use apimachinery::{ApiError, LabelSelector};
use serde_json::Value;

/// Label and field selectors of one request, for objects of one kind.
#[derive(Clone, Debug)]
pub struct Filter {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    kind: String,
}

impl Filter {
    pub fn parse(
        label_selector: Option<&str>,
        field_selector: Option<&str>,
        kind: &str,
    ) -> Result<Self, ApiError> {
        let labels = match label_selector.filter(|s| !s.trim().is_empty()) {
            Some(s) => LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.message))?,
            None => LabelSelector::everything(),
        };
        let fields = match field_selector.filter(|s| !s.trim().is_empty()) {
            Some(s) => FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.message))?,
            None => FieldSelector::everything(),
        };
        fields
            .validate_for_kind(kind)
            .map_err(|e| ApiError::bad_request(e.message))?;
        Ok(Self {
            labels,
            fields,
            kind: kind.to_string(),
        })
    }

    pub fn everything(kind: &str) -> Self {
        Self {
            labels: LabelSelector::everything(),
            fields: FieldSelector::everything(),
            kind: kind.to_string(),
        }
    }

    /// True when the filter selects every object (no selectors given).
    pub fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches_object(object)
            && self
                .fields
                .matches_object(object, &self.kind)
                .unwrap_or(false)
    }
}
