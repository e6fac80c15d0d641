//! Status writes as JSON merge patches of the status subresource.
//!
//! Why: a replace sends the whole object and gets the whole object back — a Work's manifests, a binding's
//! spec — to change a condition or a list of statuses. A merge patch of `status` carries only the fields the
//! controller owns there, and the answer is read as a [`RawObject`] (only its metadata parsed). The patch
//! names the resourceVersion the controller read, so a write over a newer object fails with 409 (a requeue),
//! as the replace did.

use kube::api::{ApiResource, Patch, PatchParams};
use serde_json::{Value, json};

use super::{ControllerError, RawObject, resources};

/// The merge patch writing `fields` into `status`, conditional on `resource_version` when given. A list in
/// `fields` replaces the list stored (merge patches do not merge lists); a field left out is left alone.
pub fn status_patch(fields: Value, resource_version: Option<&str>) -> Value {
    let mut patch = json!({"status": fields});
    if let Some(version) = resource_version {
        patch["metadata"] = json!({"resourceVersion": version});
    }
    patch
}

/// `fields` (a serialized status) with `null` for each of `known` it leaves out, so that merging it replaces
/// those fields exactly: a field serialization skips when empty is removed, as a replace would.
pub fn replacing(mut fields: Value, known: &[&str]) -> Value {
    if let Some(map) = fields.as_object_mut() {
        for key in known {
            map.entry(*key).or_insert(Value::Null);
        }
    }
    fields
}

/// Writes [`status_patch`] to the status of `namespace`/`name` of `resource`.
pub async fn merge_status(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    name: &str,
    resource_version: Option<&str>,
    fields: Value,
) -> Result<RawObject, ControllerError> {
    let api = match namespace {
        Some(namespace) => resources::namespaced_raw(client, resource, namespace),
        None => resources::all_raw(client, resource),
    };
    let patch = status_patch(fields, resource_version);
    Ok(api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_left_out_are_removed() {
        let fields = replacing(
            json!({"conditions": [{"type": "A"}]}),
            &["conditions", "aggregatedStatus"],
        );
        assert_eq!(
            fields,
            json!({"conditions": [{"type": "A"}], "aggregatedStatus": null})
        );
    }

    #[test]
    fn the_patch_is_conditional_on_the_version_read() {
        assert_eq!(
            status_patch(json!({"conditions": []}), Some("12")),
            json!({"metadata": {"resourceVersion": "12"}, "status": {"conditions": []}})
        );
        assert_eq!(
            status_patch(json!({"manifestStatuses": [{"health": "Healthy"}]}), None),
            json!({"status": {"manifestStatuses": [{"health": "Healthy"}]}})
        );
    }
}
