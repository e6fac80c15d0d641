//! `metadata.managedFields` entries: reading them from an object and writing them back.

use serde_json::{Map, Value, json};

use super::fieldset::{FieldSet, from_fields_v1, to_fields_v1};

/// Whether a manager's fields came from server-side apply or from an ordinary write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "Apply",
            Self::Update => "Update",
        }
    }
}

/// One `metadata.managedFields` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct ManagedFieldsEntry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    /// RFC 3339, seconds precision.
    pub time: String,
    /// `status`, `scale`, ... when the write went to a subresource.
    pub subresource: Option<String>,
    pub fields: FieldSet,
}

impl ManagedFieldsEntry {
    pub fn to_json(&self) -> Value {
        let mut entry = json!({
            "manager": self.manager,
            "operation": self.operation.as_str(),
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(&self.fields),
        });
        if let (Some(subresource), Value::Object(map)) = (&self.subresource, &mut entry) {
            map.insert(
                "subresource".to_string(),
                Value::String(subresource.clone()),
            );
        }
        entry
    }

    pub(crate) fn from_json(index: usize, value: &Value) -> Result<Self, String> {
        let head = EntryHead::from_json(index, value)?;
        let fields = match value.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(v1) => from_fields_v1(v1)
                .map_err(|e| format!("metadata.managedFields[{index}].fieldsV1: {e}"))?,
        };
        let text = |name: &str| value.get(name).and_then(Value::as_str).map(str::to_string);
        Ok(Self {
            manager: head.manager.to_string(),
            operation: head.operation,
            api_version: text("apiVersion").unwrap_or_default(),
            time: text("time").unwrap_or_default(),
            subresource: head.subresource.map(str::to_string),
            fields,
        })
    }

    pub(crate) fn is(&self, manager: &str, operation: Operation) -> bool {
        self.head().is_at(manager, operation, None)
    }

    /// Whom the entry belongs to.
    pub(crate) fn head(&self) -> EntryHead<'_> {
        EntryHead {
            manager: &self.manager,
            operation: self.operation,
            subresource: self.subresource.as_deref(),
        }
    }
}

/// Who an entry belongs to, read from its JSON without its field set: enough to tell a writer's own entry
/// apart, so entries a write does not touch need not be parsed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EntryHead<'a> {
    pub manager: &'a str,
    pub operation: Operation,
    pub subresource: Option<&'a str>,
}

impl<'a> EntryHead<'a> {
    /// Reads and checks everything of entry `index` but its field set.
    pub(crate) fn from_json(index: usize, value: &'a Value) -> Result<Self, String> {
        let field = |name: &str| format!("metadata.managedFields[{index}].{name}");
        let text = |name: &str| value.get(name).and_then(Value::as_str);
        let operation = match text("operation") {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            other => {
                return Err(format!(
                    "{}: Unsupported value: {other:?}: supported values: \"Apply\", \"Update\"",
                    field("operation")
                ));
            }
        };
        if let Some(fields_type) = text("fieldsType")
            && fields_type != "FieldsV1"
        {
            return Err(format!(
                "{}: Unsupported value: \"{fields_type}\": supported values: \"FieldsV1\"",
                field("fieldsType")
            ));
        }
        Ok(Self {
            manager: text("manager").unwrap_or_default(),
            operation,
            subresource: text("subresource"),
        })
    }

    /// Whether this is `manager`'s entry for `operation` through `subresource` (`None`: the object itself).
    pub(crate) fn is_at(
        &self,
        manager: &str,
        operation: Operation,
        subresource: Option<&str>,
    ) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == subresource
    }
}

/// The entries stored in `object`'s `metadata.managedFields`.
pub fn managed_fields(object: &Value) -> Result<Vec<ManagedFieldsEntry>, String> {
    match object.pointer("/metadata/managedFields") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(entries)) => entries
            .iter()
            .enumerate()
            .map(|(index, entry)| ManagedFieldsEntry::from_json(index, entry))
            .collect(),
        Some(_) => Err("metadata.managedFields: Invalid value: must be a list".to_string()),
    }
}

/// Writes `entries` into `object` (drops the field when there are none).
pub fn set_managed_fields(object: &mut Value, entries: &[ManagedFieldsEntry]) {
    set_managed_fields_json(
        object,
        entries.iter().map(ManagedFieldsEntry::to_json).collect(),
    );
}

/// [`set_managed_fields`] with the entries already as JSON.
pub fn set_managed_fields_json(object: &mut Value, entries: Vec<Value>) {
    let Value::Object(root) = object else {
        return;
    };
    let metadata = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(metadata) = metadata else {
        return;
    };
    if entries.is_empty() {
        metadata.retain(|key, _| key != "managedFields");
    } else {
        metadata.insert("managedFields".to_string(), Value::Array(entries));
    }
}
