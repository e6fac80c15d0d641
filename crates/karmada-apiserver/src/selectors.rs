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

    /// Whether the labels in the stored bytes already rule the object out, read without
    /// building the whole object: a label-selected LIST or watch over thousands of objects
    /// then decodes only the matches. `false` when unsure (unparsable bytes, no label
    /// selector); [`Filter::matches`] decides then.
    pub fn labels_exclude(&self, stored: &[u8]) -> bool {
        !self.labels.is_empty() && self.stored_labels_match(stored) == Some(false)
    }

    /// Whether the filter selects the stored object, when its labels alone decide that (no field
    /// selector) and they parse: read without building the object. `None` means
    /// [`Filter::matches`] on the decoded object decides.
    pub fn selects_stored(&self, stored: &[u8]) -> Option<bool> {
        if !self.fields.is_empty() {
            return None;
        }
        if self.labels.is_empty() {
            return Some(true);
        }
        self.stored_labels_match(stored)
    }

    fn stored_labels_match(&self, stored: &[u8]) -> Option<bool> {
        let parsed = serde_json::from_slice::<StoredLabels>(stored).ok()?;
        Some(
            self.labels
                .matches(&parsed.metadata.labels.unwrap_or_default()),
        )
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches_object(object)
            && self
                .fields
                .matches_object(object, &self.kind)
                .unwrap_or(false)
    }
}

/// Just `metadata.labels` of a stored object; serde skips every other field without allocating.
#[derive(serde::Deserialize)]
struct StoredLabels {
    #[serde(default)]
    metadata: StoredMetadata,
}

#[derive(serde::Deserialize, Default)]
struct StoredMetadata {
    #[serde(default)]
    labels: Option<std::collections::BTreeMap<String, String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(labels: &str) -> Filter {
        Filter::parse(Some(labels), None, "ConfigMap").expect("selector parses")
    }

    #[test]
    fn stored_labels_rule_out_only_certain_mismatches() {
        let labelled = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"app":"web","tier":"front"}},"data":{"k":"v"}}"#;
        let unlabelled = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}"#;
        let cases: [(&str, &[u8], bool); 7] = [
            ("app=web", labelled, false),
            ("app=api", labelled, true),
            ("app in (api,web),tier!=back", labelled, false),
            ("app", unlabelled, true),
            ("!app", unlabelled, false),
            ("app=web", b"not json", false),
            ("app=web", br#"{"metadata":{"labels":{"app":7}}}"#, false),
        ];
        for (selector, stored, excluded) in cases {
            assert_eq!(
                filter(selector).labels_exclude(stored),
                excluded,
                "{selector} on {}",
                String::from_utf8_lossy(stored)
            );
            // Never contradicts the full match.
            if excluded {
                let object: Value = serde_json::from_slice(stored).expect("json");
                assert!(!filter(selector).matches(&object), "{selector}");
            }
        }
        assert!(!Filter::everything("ConfigMap").labels_exclude(unlabelled));
    }

    #[test]
    fn stored_labels_decide_only_label_selections() {
        let labelled = br#"{"metadata":{"name":"a","labels":{"app":"web"}}}"#;
        let odd = br#"{"metadata":{"name":"a","labels":{"app":7}}}"#;
        let by_name = Filter::parse(None, Some("metadata.name=a"), "ConfigMap").expect("parses");
        let both =
            Filter::parse(Some("app=web"), Some("metadata.name=a"), "ConfigMap").expect("parses");
        let cases: [(&Filter, &[u8], Option<bool>); 7] = [
            (&Filter::everything("ConfigMap"), labelled, Some(true)),
            (&Filter::everything("ConfigMap"), b"not json", Some(true)),
            (&filter("app=web"), labelled, Some(true)),
            (&filter("app!=web"), labelled, Some(false)),
            (&filter("app=web"), odd, None),
            (&by_name, labelled, None),
            (&both, labelled, None),
        ];
        for (index, (filter, stored, decided)) in cases.into_iter().enumerate() {
            assert_eq!(filter.selects_stored(stored), decided, "case {index}");
            if let Some(selected) = decided.filter(|_| stored != b"not json") {
                let object: Value = serde_json::from_slice(stored).expect("json");
                assert_eq!(filter.matches(&object), selected, "case {index}");
            }
        }
    }
}
