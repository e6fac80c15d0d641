//! Server-side apply and field ownership (`metadata.managedFields`), as pure functions.
//!
//! Model (a documented subset of structured-merge-diff):
//! * A manager owns the field paths it set ([`fieldset`]); lists merge per [`PatchMeta`]
//!   (keyed lists by their merge key, primitive sets by value, everything else atomically).
//! * [`apply`]: a path the applier sets that another manager owns with a different live value
//!   is a conflict, unless `force` moves the ownership. Paths the applier owned before and now
//!   omits are removed from the object unless someone else still owns them (or something under
//!   them). Then the applied object is merged into the live one, like a strategic merge patch.
//!   `null`s in the applied object set nothing.
//! * [`record_update`]: an ordinary write takes ownership of every path it changed (from every
//!   other manager) and paths it removed are owned by nobody.
//! * An existing object without `managedFields` is first credited to `before-first-apply`.
//! * Ownership by another manager under the same name but a different operation (a manager's
//!   own `Update` entry) never conflicts.

pub mod fieldset;
mod managed;

use jiff::Timestamp;
use serde_json::{Map, Value};

use crate::patch::{PatchError, PatchMeta, strategic_merge};
use crate::status::{ApiError, StatusCause, StatusDetails};
use crate::time::format_timestamp;
pub use fieldset::{FieldPath, FieldSet, PathElement, fields_of};
pub use managed::{
    ManagedFieldsEntry, Operation, managed_fields, set_managed_fields, set_managed_fields_json,
};

/// The manager Kubernetes credits with the fields of an object that had no managed fields.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// A field the applier wants that another manager owns with a different value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub manager: String,
    /// The API version the other manager wrote with.
    pub api_version: String,
    /// Printed path, e.g. `.spec.replicas`.
    pub field: String,
}

/// Why an apply or update could not be recorded.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ApplyError {
    #[error("{}", conflicts_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The applied object or the stored managed fields are malformed.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Patch(#[from] PatchError),
}

impl ApplyError {
    /// 409 with `FieldManagerConflict` causes for conflicts; 400/422 otherwise.
    pub fn to_api_error(&self) -> ApiError {
        match self {
            Self::Conflicts(conflicts) => {
                let causes = conflicts
                    .iter()
                    .map(|c| {
                        StatusCause::new(
                            "FieldManagerConflict",
                            format!("conflict with \"{}\" using {}", c.manager, c.api_version),
                            &c.field,
                        )
                    })
                    .collect();
                ApiError::conflict_with(self.to_string(), StatusDetails::with_causes(causes))
            }
            Self::Invalid(message) => ApiError::bad_request(message.clone()),
            Self::Patch(error) => error.to_api_error(),
        }
    }
}

impl From<ApplyError> for ApiError {
    fn from(error: ApplyError) -> Self {
        error.to_api_error()
    }
}

/// `Apply failed with 1 conflict: conflict with "m" using apps/v1: .spec.replicas`; several
/// conflicts are listed per manager, one path a line.
fn conflicts_message(conflicts: &[Conflict]) -> String {
    let count = conflicts.len();
    let noun = if count == 1 { "conflict" } else { "conflicts" };
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with \"{}\" using {}: {}",
            only.manager, only.api_version, only.field
        );
    }
    let mut groups: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for conflict in conflicts {
        match groups
            .iter_mut()
            .find(|(m, v, _)| *m == conflict.manager && *v == conflict.api_version)
        {
            Some((_, _, fields)) => fields.push(&conflict.field),
            None => groups.push((
                &conflict.manager,
                &conflict.api_version,
                vec![&conflict.field],
            )),
        }
    }
    let mut message = format!("Apply failed with {count} {noun}:");
    for (manager, api_version, fields) in groups {
        let noun = if fields.len() == 1 {
            "conflict"
        } else {
            "conflicts"
        };
        message.push_str(&format!(" {noun} with \"{manager}\" using {api_version}:"));
        for field in fields {
            message.push_str(&format!("\n- {field}"));
        }
    }
    message
}

/// The result of a successful apply.
#[derive(Clone, Debug, PartialEq)]
pub struct ApplyOutcome {
    /// The new object, `metadata.managedFields` included.
    pub object: Value,
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

/// Server-side apply of `applied` by `manager` onto `live` (`None`: the object is created).
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    meta: &dyn PatchMeta,
    now: Timestamp,
) -> Result<ApplyOutcome, ApplyError> {
    let Value::Object(applied_map) = applied else {
        return Err(ApplyError::Invalid(
            "the applied configuration must be a JSON object".to_string(),
        ));
    };
    let applied = Value::Object(without_nulls(applied_map));
    let live = live.cloned().unwrap_or_else(|| Value::Object(Map::new()));
    let mut entries = managed_fields(&live).map_err(ApplyError::Invalid)?;
    if entries.is_empty() {
        entries.extend(before_first_apply(&live, meta, now));
    }
    let applied_set = fields_of(&applied, meta);

    let mut conflicts = Vec::new();
    for entry in entries.iter_mut().filter(|e| e.manager != manager) {
        let clashing: Vec<FieldPath> = applied_set
            .iter()
            .filter(|path| entry.fields.contains(*path) && !path.ends_in_element())
            .filter(|path| {
                let current = fieldset::value_at(&live, path);
                current.is_some() && current != fieldset::value_at(&applied, path)
            })
            .cloned()
            .collect();
        if force {
            for path in &clashing {
                entry.fields.remove(path);
            }
        } else {
            conflicts.extend(clashing.into_iter().map(|path| Conflict {
                manager: entry.manager.clone(),
                api_version: entry.api_version.clone(),
                field: path.to_string(),
            }));
        }
    }
    if !conflicts.is_empty() {
        return Err(ApplyError::Conflicts(conflicts));
    }

    let previous = entries
        .iter()
        .find(|e| e.is(manager, Operation::Apply))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let mut object = live.clone();
    let mut dropped: Vec<&FieldPath> = previous.difference(&applied_set).collect();
    // Shallowest first: removing a list element takes its fields with it, while an element kept
    // for another owner still loses the fields only this manager had.
    dropped.sort_by_key(|path| path.0.len());
    for path in dropped {
        let still_owned = entries
            .iter()
            .filter(|e| !e.is(manager, Operation::Apply))
            .any(|e| e.fields.iter().any(|owned| owned.starts_with(path)))
            || applied_set.iter().any(|owned| owned.starts_with(path));
        if !still_owned {
            fieldset::remove_at(&mut object, path);
        }
    }

    let mut merge_source = applied.clone();
    if let Some(Value::Object(metadata)) = merge_source.get_mut("metadata") {
        metadata.retain(|key, _| key != "managedFields");
    }
    let mut object = strategic_merge(&object, &merge_source, meta)?;

    let api_version = applied
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mine = ManagedFieldsEntry {
        manager: manager.to_string(),
        operation: Operation::Apply,
        api_version,
        time: format_timestamp(now),
        subresource: None,
        fields: applied_set,
    };
    match entries.iter_mut().find(|e| e.is(manager, Operation::Apply)) {
        Some(existing) => *existing = mine,
        None => entries.push(mine),
    }
    entries.retain(|e| !e.fields.is_empty());
    set_managed_fields(&mut object, &entries);
    Ok(ApplyOutcome {
        object,
        managed_fields: entries,
    })
}

/// Records an ordinary write (create, update, non-apply patch) of `new` by `manager` in
/// `new`'s managed fields and returns the object to store. `old` is `None` on create.
pub fn record_update(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    api_version: &str,
    meta: &dyn PatchMeta,
    now: Timestamp,
) -> Result<Value, ApplyError> {
    record_update_with(old, new, manager, api_version, meta, now, true)
}

/// [`record_update`] writing into `new` itself (no copy of the object), for a write through `subresource`
/// (`status`, ...; `None` for the object itself): as kube-apiserver records them, a manager's writes through a
/// subresource have an entry of their own, which names it. On error `new` is left as it was.
pub fn record_update_in_place(
    old: Option<&Value>,
    new: &mut Value,
    writer: Writer<'_>,
    api_version: &str,
    meta: &dyn PatchMeta,
    now: Timestamp,
) -> Result<(), ApplyError> {
    record_in_place(old, new, writer, api_version, meta, now, true)
}

/// Who made a write, as `metadata.managedFields` tells them apart: the field manager, and the subresource
/// the write went through (`None` for the object itself).
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    pub manager: &'a str,
    pub subresource: Option<&'a str>,
}

impl<'a> Writer<'a> {
    /// `manager` writing the object itself.
    pub fn of(manager: &'a str) -> Self {
        Self {
            manager,
            subresource: None,
        }
    }
}

/// [`record_update`]; `reuse_json` off writes every entry's JSON from its field set (the reference the
/// reused JSON is tested against).
fn record_update_with(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    api_version: &str,
    meta: &dyn PatchMeta,
    now: Timestamp,
    reuse_json: bool,
) -> Result<Value, ApplyError> {
    let mut stored = new.clone();
    record_in_place(
        old,
        &mut stored,
        Writer::of(manager),
        api_version,
        meta,
        now,
        reuse_json,
    )?;
    Ok(stored)
}

fn record_in_place(
    old: Option<&Value>,
    new: &mut Value,
    writer: Writer<'_>,
    api_version: &str,
    meta: &dyn PatchMeta,
    now: Timestamp,
    reuse_json: bool,
) -> Result<(), ApplyError> {
    let empty = Value::Object(Map::new());
    let old = old.unwrap_or(&empty);
    let old_json = old.pointer("/metadata/managedFields");
    let new_json = new.pointer("/metadata/managedFields");
    // Writers almost always send back the entries they read (or none): then only the old ones are parsed.
    let sent_back = new_json.is_none() || new_json == old_json;
    let old_entries = managed_fields(old).map_err(ApplyError::Invalid)?;
    // A writer that rewrote managedFields itself (kubectl's apply migration) is taken at its word.
    let (mut entries, client_rewrote) = if sent_back {
        (old_entries, false)
    } else {
        let new_entries = managed_fields(new).map_err(ApplyError::Invalid)?;
        let rewrote = new_entries != old_entries;
        (if rewrote { new_entries } else { old_entries }, rewrote)
    };

    let (changed, removed) = fieldset::changed_and_removed(old, new, meta);

    // Each entry's stored JSON, kept while its field set stays as it was: most writes change one entry (its
    // time, or its fields), and writing every entry's fields again from its set was most of the cost.
    let mut json: Vec<Option<Value>> = match old_json {
        Some(Value::Array(stored))
            if reuse_json && !client_rewrote && stored.len() == entries.len() =>
        {
            stored.iter().cloned().map(Some).collect()
        }
        _ => vec![None; entries.len()],
    };
    for (entry, json) in entries.iter_mut().zip(json.iter_mut()) {
        let before = entry.fields.len();
        entry.fields.retain(|path| !removed.contains(path));
        if !entry.is_at(writer.manager, Operation::Update, writer.subresource) {
            entry.fields.retain(|path| !changed.contains(path));
        }
        if entry.fields.len() != before {
            *json = None;
        }
    }
    if !changed.is_empty() {
        let time = format_timestamp(now);
        match entries
            .iter()
            .position(|e| e.is_at(writer.manager, Operation::Update, writer.subresource))
        {
            Some(index) => {
                let entry = &mut entries[index];
                let added: Vec<FieldPath> = changed
                    .into_iter()
                    .filter(|path| !entry.fields.contains(path))
                    .collect();
                entry.time = time;
                entry.api_version = api_version.to_string();
                if let Some(slot) = json.get_mut(index) {
                    // The entry's stored JSON gains the added paths in place: writing the whole set again
                    // was most of the bookkeeping of a status write that adds a field or two.
                    let kept = match slot {
                        Some(Value::Object(entry_json)) => {
                            entry_json.insert("time".into(), Value::String(entry.time.clone()));
                            entry_json.insert(
                                "apiVersion".into(),
                                Value::String(entry.api_version.clone()),
                            );
                            match entry_json.get_mut("fieldsV1") {
                                Some(fields) => added
                                    .iter()
                                    .all(|path| fieldset::add_to_fields_v1(fields, path)),
                                None => added.is_empty(),
                            }
                        }
                        _ => false,
                    };
                    if !kept {
                        *slot = None;
                    }
                }
                entry.fields.extend(added);
            }
            None => {
                entries.push(ManagedFieldsEntry {
                    manager: writer.manager.to_string(),
                    operation: Operation::Update,
                    api_version: api_version.to_string(),
                    time,
                    subresource: writer.subresource.map(str::to_string),
                    fields: changed,
                });
                json.push(None);
            }
        }
    }
    let stored: Vec<Value> = entries
        .iter()
        .zip(json)
        .filter(|(entry, _)| !entry.fields.is_empty())
        .map(|(entry, json)| json.unwrap_or_else(|| entry.to_json()))
        .collect();
    set_managed_fields_json(new, stored);
    Ok(())
}

/// An existing object nobody is recorded as managing belongs to `before-first-apply`, as in
/// Kubernetes: the first applier then conflicts on values it changes instead of silently
/// taking them, and cannot remove fields it never set.
fn before_first_apply(
    live: &Value,
    meta: &dyn PatchMeta,
    now: Timestamp,
) -> Option<ManagedFieldsEntry> {
    let fields = fields_of(live, meta);
    if fields.is_empty() {
        return None;
    }
    Some(ManagedFieldsEntry {
        manager: BEFORE_FIRST_APPLY.to_string(),
        operation: Operation::Update,
        api_version: live
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        time: format_timestamp(now),
        subresource: None,
        fields,
    })
}

fn without_nulls(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let cleaned = match v {
                Value::Object(inner) => Value::Object(without_nulls(inner)),
                Value::Array(items) => Value::Array(
                    items
                        .iter()
                        .map(|item| match item {
                            Value::Object(inner) => Value::Object(without_nulls(inner)),
                            other => other.clone(),
                        })
                        .collect(),
                ),
                other => other.clone(),
            };
            (k.clone(), cleaned)
        })
        .collect()
}

#[cfg(test)]
mod tests;
