//! Strategic merge patch: a merge patch whose lists merge by key and which carries `$`
//! directives (`$patch`, `$retainKeys`, `$setElementOrder/<f>`, `$deleteFromPrimitiveList/<f>`).
//!
//! Rules beyond the directives themselves:
//! * A patch value added where the document has nothing is still processed, so directives
//!   inside it never reach the result.
//! * `$setElementOrder/<f>`: elements named by the directive come first, in its order; every
//!   other element follows, in the order it has after merging (server order, then elements the
//!   patch appended). Names that match no element are ignored.
//! * A merged or primitive-set list left empty by deletions is removed, as Kubernetes' typed
//!   objects omit empty lists.

use serde_json::{Map, Value};

use super::{ListStrategy, PatchError, PatchMeta};

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// Applies a strategic merge `patch` to a copy of `document`; `meta` says how lists merge.
pub fn strategic_merge(
    document: &Value,
    patch: &Value,
    meta: &dyn PatchMeta,
) -> Result<Value, PatchError> {
    let Value::Object(patch) = patch else {
        return Err(malformed("a strategic merge patch must be a JSON object"));
    };
    let original = match document {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let merger = Merger { meta };
    Ok(Value::Object(
        merger
            .merge_map(original, patch, &mut Vec::new())?
            .unwrap_or_default(),
    ))
}

fn malformed(message: impl Into<String>) -> PatchError {
    PatchError::Malformed(message.into())
}

fn unprocessable(message: impl Into<String>) -> PatchError {
    PatchError::Unprocessable(message.into())
}

struct Merger<'a> {
    meta: &'a dyn PatchMeta,
}

impl Merger<'_> {
    /// `None` means the map itself is deleted (`$patch: delete`).
    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        patch: &Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<Option<Map<String, Value>>, PatchError> {
        match patch.get(PATCH) {
            None => {}
            Some(Value::String(directive)) => match directive.as_str() {
                "delete" => return Ok(None),
                "replace" => {
                    let mut rest = patch.clone();
                    rest.remove(PATCH);
                    return self.merge_map(Map::new(), &rest, path);
                }
                "merge" => {}
                other => return Err(unknown_patch_value(other, "a map")),
            },
            Some(other) => return Err(unknown_patch_value(&other.to_string(), "a map")),
        }

        if let Some(retain) = patch.get(RETAIN_KEYS) {
            let retained = retain_keys_list(retain)?;
            for (key, value) in patch {
                if !key.starts_with('$') && !value.is_null() && !retained.contains(&key.as_str()) {
                    return Err(malformed(format!(
                        "$retainKeys {retained:?} must list every field the patch sets, and \"{key}\" is missing"
                    )));
                }
            }
            original.retain(|key, _| retained.contains(&key.as_str()));
        }

        let mut orders: Vec<(&str, &Vec<Value>)> = Vec::new();
        for (key, value) in patch {
            if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                let Value::Array(doomed) = value else {
                    return Err(malformed(format!(
                        "{key} must be a list of values to delete"
                    )));
                };
                if let Some(Value::Array(list)) = original.get_mut(field) {
                    list.retain(|item| !doomed.contains(item));
                    if list.is_empty() {
                        remove_in_order(&mut original, field);
                    }
                }
            } else if let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) {
                let Value::Array(order) = value else {
                    return Err(malformed(format!("{key} must be a list")));
                };
                orders.push((field, order));
            } else if key.starts_with('$') && key != PATCH && key != RETAIN_KEYS {
                return Err(malformed(format!(
                    "unknown strategic merge patch directive \"{key}\"; accepted: $patch, $retainKeys, $setElementOrder/<field>, $deleteFromPrimitiveList/<field>"
                )));
            }
        }

        for (key, value) in patch {
            if key.starts_with('$') {
                continue;
            }
            if value.is_null() {
                remove_in_order(&mut original, key);
                continue;
            }
            path.push(key.clone());
            let current = original.get_mut(key).map(Value::take);
            let merged = self.merge_value(current, value, path);
            path.pop();
            match merged? {
                Some(merged) => {
                    original.insert(key.clone(), merged);
                }
                None => remove_in_order(&mut original, key),
            }
        }

        for (field, order) in orders {
            if let Some(Value::Array(list)) = original.get_mut(field) {
                path.push(field.to_string());
                let strategy = self.strategy(path);
                path.pop();
                reorder(list, order, &strategy);
            }
        }
        Ok(Some(original))
    }

    /// `None` means the field ends up absent.
    fn merge_value(
        &self,
        original: Option<Value>,
        patch: &Value,
        path: &mut Vec<String>,
    ) -> Result<Option<Value>, PatchError> {
        match (original, patch) {
            (Some(Value::Object(original)), Value::Object(patch)) => {
                Ok(self.merge_map(original, patch, path)?.map(Value::Object))
            }
            // A non-object is replaced; the patch still goes through directive processing.
            (_, Value::Object(patch)) => {
                Ok(self.merge_map(Map::new(), patch, path)?.map(Value::Object))
            }
            (original, Value::Array(patch)) => {
                let original = match original {
                    Some(Value::Array(list)) => list,
                    _ => Vec::new(),
                };
                self.merge_list(original, patch, path)
            }
            (_, scalar) => Ok(Some(scalar.clone())),
        }
    }

    fn strategy(&self, path: &[String]) -> ListStrategy {
        let names: Vec<&str> = path.iter().map(String::as_str).collect();
        self.meta.list_strategy(&names)
    }

    fn merge_list(
        &self,
        original: Vec<Value>,
        patch: &[Value],
        path: &mut Vec<String>,
    ) -> Result<Option<Value>, PatchError> {
        let strategy = self.strategy(path);
        let is_replace_marker = |item: &Value| {
            item.as_object().is_some_and(|m| {
                m.len() == 1 && m.get(PATCH).and_then(Value::as_str) == Some("replace")
            })
        };
        let replace_whole = patch.iter().any(is_replace_marker);
        let patch_items: Vec<&Value> = patch
            .iter()
            .filter(|item| !is_replace_marker(item))
            .collect();
        let base = match strategy {
            ListStrategy::Merge { .. } if !replace_whole => original,
            _ => Vec::new(),
        };
        let had_items = !base.is_empty() || !patch_items.is_empty();
        let merged = match &strategy {
            ListStrategy::Atomic => self.clean_items(&patch_items, path)?,
            ListStrategy::Merge { key: None } => {
                let mut set = base;
                for item in patch_items {
                    if item.is_object() {
                        return Err(malformed(format!(
                            "{} is a list of values; {item} is not a value",
                            dotted(path)
                        )));
                    }
                    if !set.contains(item) {
                        set.push(item.clone());
                    }
                }
                set
            }
            ListStrategy::Merge { key: Some(key) } => {
                self.merge_keyed(base, &patch_items, key, path)?
            }
        };
        if merged.is_empty() && had_items && !matches!(strategy, ListStrategy::Atomic) {
            return Ok(None);
        }
        Ok(Some(Value::Array(merged)))
    }

    /// Runs directive processing on list items that merge with nothing.
    fn clean_items(
        &self,
        items: &[&Value],
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, PatchError> {
        let mut cleaned = Vec::with_capacity(items.len());
        for item in items {
            if let Some(value) = self.merge_value(None, item, path)? {
                cleaned.push(value);
            }
        }
        Ok(cleaned)
    }

    fn merge_keyed(
        &self,
        mut list: Vec<Value>,
        patch_items: &[&Value],
        key: &str,
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, PatchError> {
        for item in patch_items {
            let Value::Object(item_map) = item else {
                return Err(malformed(format!(
                    "{} is a list of objects merged by \"{key}\"; {item} is not an object",
                    dotted(path)
                )));
            };
            let Some(key_value) = item_map.get(key) else {
                return Err(unprocessable(format!(
                    "map: {item} does not contain declared merge key: {key} (list {})",
                    dotted(path)
                )));
            };
            let position = list
                .iter()
                .position(|existing| existing.get(key) == Some(key_value));
            // Other `$patch` values are checked by merge_map.
            if item_map.get(PATCH).and_then(Value::as_str) == Some("delete") {
                list.retain(|existing| existing.get(key) != Some(key_value));
                continue;
            }
            match position {
                Some(index) => {
                    let existing = match list.remove(index) {
                        Value::Object(map) => map,
                        _ => Map::new(),
                    };
                    if let Some(merged) = self.merge_map(existing, item_map, path)? {
                        list.insert(index, Value::Object(merged));
                    }
                }
                None => {
                    if let Some(added) = self.merge_map(Map::new(), item_map, path)? {
                        list.push(Value::Object(added));
                    }
                }
            }
        }
        Ok(list)
    }
}

/// Removes `key` keeping the other keys' order (stored objects print in insertion order).
fn remove_in_order(map: &mut Map<String, Value>, key: &str) {
    map.retain(|existing, _| existing != key);
}

fn unknown_patch_value(value: &str, place: &str) -> PatchError {
    malformed(format!(
        "unknown $patch value \"{value}\" on {place}; accepted: \"replace\", \"delete\", \"merge\""
    ))
}

fn retain_keys_list(value: &Value) -> Result<Vec<&str>, PatchError> {
    let error = || malformed("$retainKeys must be a list of field names");
    value
        .as_array()
        .ok_or_else(error)?
        .iter()
        .map(|v| v.as_str().ok_or_else(error))
        .collect()
}

fn dotted(path: &[String]) -> String {
    path.join(".")
}

/// Moves the elements named by `order` to the front, in that order; see the module rules.
fn reorder(list: &mut Vec<Value>, order: &[Value], strategy: &ListStrategy) {
    let identifies = |entry: &Value, item: &Value| match strategy {
        ListStrategy::Merge { key: Some(key) } => entry
            .get(key)
            .is_some_and(|wanted| item.get(key) == Some(wanted)),
        _ => entry == item,
    };
    let mut remaining = std::mem::take(list);
    for entry in order {
        if let Some(index) = remaining.iter().position(|item| identifies(entry, item)) {
            list.push(remaining.remove(index));
        }
    }
    list.extend(remaining);
}

#[cfg(test)]
mod tests;
