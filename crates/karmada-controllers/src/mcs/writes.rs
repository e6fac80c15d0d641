//! The writes the MCS controllers make to the control plane, in one place: create, replace with the
//! resourceVersion read (a 409 means re-read and retry), delete with uid and resourceVersion preconditions.

use kube::api::{ApiResource, DeleteParams, DynamicObject, PostParams, Preconditions};
use serde_json::Value;

use crate::runtime::{ControllerError, resources};

fn api(client: &kube::Client, resource: &ApiResource, namespace: &str) -> kube::Api<DynamicObject> {
    resources::namespaced(client, resource, namespace)
}

/// Creates `desired`, or replaces `existing` with it (keeping `existing`'s resourceVersion) unless `same` says
/// nothing would change.
pub async fn upsert(
    client: &kube::Client,
    resource: &ApiResource,
    desired: &Value,
    existing: Option<&Value>,
    same: impl Fn(&Value, &Value) -> bool,
) -> Result<(), ControllerError> {
    let namespace = text(desired, "/metadata/namespace");
    let name = text(desired, "/metadata/name");
    let api = api(client, resource, namespace);
    match existing {
        None => {
            let object: DynamicObject = serde_json::from_value(desired.clone())?;
            api.create(&PostParams::default(), &object).await?;
        }
        Some(existing) if same(existing, desired) => {}
        Some(existing) => {
            let mut replacement = desired.clone();
            replacement["metadata"]["resourceVersion"] = existing
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(Value::Null);
            let object: DynamicObject = serde_json::from_value(replacement)?;
            api.replace(name, &PostParams::default(), &object).await?;
        }
    }
    Ok(())
}

/// Deletes `object` if it is still the one read (a 404 is fine).
pub async fn delete(
    client: &kube::Client,
    resource: &ApiResource,
    object: &Value,
) -> Result<(), ControllerError> {
    let api = api(client, resource, text(object, "/metadata/namespace"));
    let preconditions = Preconditions {
        uid: object
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .map(str::to_string),
        resource_version: object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    let params = DeleteParams::background().preconditions(preconditions);
    match api.delete(text(object, "/metadata/name"), &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(err) => Err(err.into()),
    }
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}
