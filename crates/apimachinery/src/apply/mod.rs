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
use managed::EntryHead;
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
    let (changed, removed) = fieldset::changed_and_removed(old, new, meta);
    let (slots, taken) = entry_slots(old, new, reuse_json)?;
    match renewed_entries(slots, changed, &removed, writer, api_version, now) {
        Ok(stored) => {
            set_managed_fields_json(new, stored);
            Ok(())
        }
        Err(error) => {
            // `new` is left as it came: the entries taken out of it were the stored ones.
            if taken
                && let (Some(slot), Some(stored)) = (
                    new.pointer_mut("/metadata/managedFields"),
                    old.pointer("/metadata/managedFields"),
                )
            {
                *slot = stored.clone();
            }
            Err(error)
        }
    }
}

/// The entries after a write by `writer` that changed `changed` and removed `removed`, as JSON to store.
fn renewed_entries(
    mut slots: Vec<Slot>,
    changed: FieldSet,
    removed: &FieldSet,
    writer: Writer<'_>,
    api_version: &str,
    now: Timestamp,
) -> Result<Vec<Value>, ApplyError> {
    // Only entries holding a path the write changed or removed lose fields: the rest keep their stored
    // JSON, field sets unread (reading every entry's set was most of the bookkeeping of a write).
    let removed_keys: Vec<Vec<String>> = removed.iter().map(fieldset::fields_v1_keys).collect();
    let changed_keys: Vec<Vec<String>> = changed.iter().map(fieldset::fields_v1_keys).collect();
    let mut writers_entry = None;
    for (index, slot) in slots.iter_mut().enumerate() {
        if let Slot::Stored(json) = slot {
            let mine = EntryHead::from_json(index, json)
                .map_err(ApplyError::Invalid)?
                .is_at(writer.manager, Operation::Update, writer.subresource);
            if mine {
                writers_entry.get_or_insert(index);
            }
            let fields = json.get("fieldsV1").unwrap_or(&Value::Null);
            let holds = |keys: &Vec<Vec<String>>| {
                keys.iter()
                    .any(|keys| fieldset::fields_v1_contains(fields, keys))
            };
            if holds(&removed_keys) || (!mine && holds(&changed_keys)) {
                let entry =
                    ManagedFieldsEntry::from_json(index, json).map_err(ApplyError::Invalid)?;
                *slot = Slot::Parsed(entry, None);
            }
        }
        if let Slot::Parsed(entry, json) = slot {
            let before = entry.fields.len();
            entry.fields.retain(|path| !removed.contains(path));
            if entry
                .head()
                .is_at(writer.manager, Operation::Update, writer.subresource)
            {
                writers_entry.get_or_insert(index);
            } else {
                entry.fields.retain(|path| !changed.contains(path));
            }
            if entry.fields.len() != before {
                *json = None;
            }
        }
    }
    if !changed.is_empty() {
        let time = format_timestamp(now);
        match writers_entry {
            Some(index) => {
                let slot = &mut slots[index];
                if let Slot::Stored(json) = slot
                    && !renew_in_place(json, &changed, &time, api_version)
                {
                    let entry =
                        ManagedFieldsEntry::from_json(index, json).map_err(ApplyError::Invalid)?;
                    *slot = Slot::Parsed(entry, None);
                }
                if let Slot::Parsed(entry, json) = slot {
                    entry.time = time;
                    entry.api_version = api_version.to_string();
                    // The entry's stored JSON gains the added paths in place: writing the whole set again
                    // was most of the bookkeeping of a status write that adds a field or two.
                    if let Some(stored) = json
                        && !renew_in_place(stored, &changed, &entry.time, api_version)
                    {
                        *json = None;
                    }
                    entry.fields.extend(changed);
                }
            }
            None => slots.push(Slot::Parsed(
                ManagedFieldsEntry {
                    manager: writer.manager.to_string(),
                    operation: Operation::Update,
                    api_version: api_version.to_string(),
                    time,
                    subresource: writer.subresource.map(str::to_string),
                    fields: changed,
                },
                None,
            )),
        }
    }
    let stored = slots
        .into_iter()
        .filter_map(|slot| match slot {
            Slot::Stored(json) => {
                (!fieldset::fields_v1_is_empty(json.get("fieldsV1"))).then_some(json)
            }
            Slot::Parsed(entry, json) => {
                (!entry.fields.is_empty()).then(|| json.unwrap_or_else(|| entry.to_json()))
            }
        })
        .collect();
    Ok(stored)
}

/// One `managedFields` entry while a write is recorded.
enum Slot {
    /// As stored, its field set not read.
    Stored(Value),
    /// Read; with its JSON while that still matches the entry.
    Parsed(ManagedFieldsEntry, Option<Value>),
}

/// The entries a write starts from: the stored ones when the writer sent them back (or none), taken
/// from `new` rather than copied where it holds them; the writer's own when it rewrote them (kubectl's
/// apply migration), which are then taken at their word. `reuse_json` off reads every entry (the
/// reference the stored JSON is tested against). The flag tells whether they were taken out of `new`.
fn entry_slots(
    old: &Value,
    new: &mut Value,
    reuse_json: bool,
) -> Result<(Vec<Slot>, bool), ApplyError> {
    let old_json = old.pointer("/metadata/managedFields");
    let new_json = new.pointer("/metadata/managedFields");
    let sent_back = new_json.is_none() || new_json == old_json;
    let stored = |json: Vec<Value>| json.into_iter().map(Slot::Stored).collect();
    if sent_back {
        let Some(Value::Array(_)) = old_json else {
            // Absent or null: no entries; anything else is refused as before.
            managed_fields(old).map_err(ApplyError::Invalid)?;
            return Ok((Vec::new(), false));
        };
        if !reuse_json {
            let entries = managed_fields(old).map_err(ApplyError::Invalid)?;
            return Ok((
                entries.into_iter().map(|e| Slot::Parsed(e, None)).collect(),
                false,
            ));
        }
        let taken = new.pointer_mut("/metadata/managedFields").map(Value::take);
        return Ok(match (taken, old_json) {
            (Some(Value::Array(json)), _) => (stored(json), true),
            (_, Some(Value::Array(json))) => (stored(json.clone()), false),
            _ => (Vec::new(), false),
        });
    }
    let old_entries = managed_fields(old).map_err(ApplyError::Invalid)?;
    let new_entries = managed_fields(new).map_err(ApplyError::Invalid)?;
    let slots = if new_entries != old_entries {
        new_entries
            .into_iter()
            .map(|e| Slot::Parsed(e, None))
            .collect()
    } else {
        match old_json {
            Some(Value::Array(json)) if reuse_json && json.len() == old_entries.len() => {
                stored(json.clone())
            }
            _ => old_entries
                .into_iter()
                .map(|e| Slot::Parsed(e, None))
                .collect(),
        }
    };
    Ok((slots, false))
}

/// Renews a writer's stored entry for a write that changed `changed`: its time and API version, and the
/// paths added to its `fieldsV1` in place. False when the JSON is not in the form that allows it.
fn renew_in_place(entry: &mut Value, changed: &FieldSet, time: &str, api_version: &str) -> bool {
    let Value::Object(entry) = entry else {
        return false;
    };
    entry.insert("time".into(), Value::String(time.to_string()));
    entry.insert("apiVersion".into(), Value::String(api_version.to_string()));
    match entry.get_mut("fieldsV1") {
        Some(fields) => changed
            .iter()
            .all(|path| fieldset::add_to_fields_v1(fields, path)),
        None => changed.is_empty(),
    }
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
