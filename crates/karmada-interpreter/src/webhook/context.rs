//! The `ResourceInterpreterContext` sent to a webhook and the checks of its answer, with Karmada's field names.

use base64::Engine;
use karmada_api::ReplicaRequirements;
use karmada_api::work::AggregatedStatusItem;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{DependentObjectReference, Operation};

/// apiVersion of the context object.
pub const CONTEXT_API_VERSION: &str = "config.karmada.io/v1alpha1";
/// kind of the context object.
pub const CONTEXT_KIND: &str = "ResourceInterpreterContext";
/// The context version this control plane sends; a webhook lists it in `interpreterContextVersions`.
pub const CONTEXT_VERSION: &str = "v1alpha1";

/// What one call asks.
pub(crate) struct Ask<'a> {
    pub operation: Operation,
    /// The template (or the desired object for Retain, the member object for InterpretStatus and
    /// InterpretHealth).
    pub object: &'a Value,
    /// The member's object (Retain only).
    pub observed: Option<&'a Value>,
    /// The replica count to revise to (ReviseReplica only).
    pub replicas: Option<i32>,
    /// The members' statuses (AggregateStatus only).
    pub aggregated: Option<&'a [AggregatedStatusItem]>,
}

/// The context object POSTed to the webhook.
pub(crate) fn request(uid: &str, ask: &Ask<'_>) -> Value {
    let text = |pointer: &str| {
        ask.object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let (group, version) = match text("/apiVersion").rsplit_once('/') {
        Some((group, version)) => (group, version),
        None => ("", text("/apiVersion")),
    };
    let mut request = json!({
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": text("/kind")},
        "name": text("/metadata/name"),
        "operation": ask.operation.as_str(),
        "object": ask.object,
    });
    let namespace = text("/metadata/namespace");
    if !namespace.is_empty() {
        request["namespace"] = json!(namespace);
    }
    if let Some(observed) = ask.observed {
        request["observedObject"] = observed.clone();
    }
    if let Some(replicas) = ask.replicas {
        request["replicas"] = json!(replicas);
    }
    if let Some(items) = ask.aggregated {
        request["aggregatedStatus"] = json!(items);
    }
    json!({"apiVersion": CONTEXT_API_VERSION, "kind": CONTEXT_KIND, "request": request})
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RequestStatus {
    #[serde(default)]
    message: String,
    #[serde(default)]
    code: i32,
}

/// The webhook's answer, checked.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Answer {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    successful: bool,
    #[serde(default)]
    status: Option<RequestStatus>,
    /// A JSON Patch, base64 as Go encodes bytes.
    #[serde(default)]
    patch: Option<String>,
    #[serde(default)]
    patch_type: Option<String>,
    #[serde(default)]
    pub replica_requirements: Option<ReplicaRequirements>,
    #[serde(default)]
    pub replicas: Option<i32>,
    #[serde(default)]
    pub dependencies: Option<Vec<DependentObjectReference>>,
    #[serde(default)]
    pub raw_status: Option<Value>,
    #[serde(default)]
    pub healthy: Option<bool>,
}

/// Reads the `response` of a context answered for `uid`: it must be present, carry the same uid and be
/// successful, and a patch must say it is a JSONPatch.
pub(crate) fn answer(uid: &str, context: Value) -> Result<Answer, String> {
    let Some(response) = context.get("response").filter(|r| r.is_object()) else {
        return Err(
            "the answer has no response (expected a ResourceInterpreterContext with .response)"
                .into(),
        );
    };
    let answer: Answer = serde_json::from_value(response.clone())
        .map_err(|e| format!("the response does not decode: {e}"))?;
    if answer.uid != uid {
        return Err(format!(
            "the response's uid {:?} is not the request's {uid:?} (copy request.uid into response.uid)",
            answer.uid
        ));
    }
    if !answer.successful {
        let status = answer.status.unwrap_or_default();
        return Err(format!(
            "the webhook answered unsuccessful (code {}): {}",
            status.code, status.message
        ));
    }
    if answer.patch.as_deref().is_some_and(|p| !p.is_empty())
        && answer.patch_type.as_deref() != Some("JSONPatch")
    {
        return Err(format!(
            "the response's patchType is {:?}; only JSONPatch is accepted",
            answer.patch_type.as_deref().unwrap_or_default()
        ));
    }
    Ok(answer)
}

impl Answer {
    /// `object` with the answer's patch applied (unchanged without one).
    pub fn patched(&self, object: &Value) -> Result<Value, String> {
        let Some(encoded) = self.patch.as_deref().filter(|p| !p.is_empty()) else {
            return Ok(object.clone());
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| format!("the response's patch is not base64: {e}"))?;
        let patch: json_patch::Patch = serde_json::from_slice(&bytes)
            .map_err(|e| format!("the response's patch is not a JSON Patch (RFC 6902): {e}"))?;
        let mut patched = object.clone();
        json_patch::patch(&mut patched, &patch)
            .map_err(|e| format!("the response's patch does not apply: {e}"))?;
        Ok(patched)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(patch: &Value) -> String {
        base64::engine::general_purpose::STANDARD.encode(patch.to_string())
    }

    #[test]
    fn the_request_carries_karmadas_fields() {
        let object = json!({"apiVersion": "workload.example.io/v1alpha1", "kind": "Workload",
                            "metadata": {"name": "web", "namespace": "apps"}});
        let body = request(
            "u-1",
            &Ask {
                operation: Operation::ReviseReplica,
                object: &object,
                observed: None,
                replicas: Some(3),
                aggregated: None,
            },
        );
        assert_eq!(body["apiVersion"], CONTEXT_API_VERSION);
        assert_eq!(body["kind"], CONTEXT_KIND);
        assert_eq!(
            body["request"],
            json!({
            "uid": "u-1", "kind": {"group": "workload.example.io", "version": "v1alpha1", "kind": "Workload"},
            "name": "web", "namespace": "apps", "operation": "ReviseReplica", "object": object, "replicas": 3})
        );
        let core = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let body = request(
            "u-2",
            &Ask {
                operation: Operation::Retain,
                object: &core,
                observed: Some(&core),
                replicas: None,
                aggregated: None,
            },
        );
        assert_eq!(
            body["request"]["kind"],
            json!({"group": "", "version": "v1", "kind": "ConfigMap"})
        );
        assert_eq!(body["request"]["observedObject"], core);
        assert!(body["request"].get("namespace").is_none());
    }

    #[test]
    fn answers_are_checked() {
        let ok = |response: Value| answer("u", json!({"response": response}));
        assert!(ok(json!({"uid": "u", "successful": true})).is_ok());
        let cases = [
            (json!({"uid": "other", "successful": true}), "uid"),
            (
                json!({"uid": "u", "successful": false, "status": {"message": "no such kind", "code": 400}}),
                "no such kind",
            ),
            (
                json!({"uid": "u", "successful": true, "patch": encoded(&json!([])), "patchType": "MergePatch"}),
                "JSONPatch",
            ),
        ];
        for (response, expected) in cases {
            let err = ok(response.clone()).expect_err("refused");
            assert!(err.contains(expected), "{response}: {err}");
        }
        let err = answer("u", json!({"request": {}})).expect_err("no response");
        assert!(err.contains(".response"), "{err}");
    }

    #[test]
    fn patches_apply_as_json_patch() {
        let object = json!({"spec": {"replicas": 1}});
        let answer = answer(
            "u",
            json!({"response": {"uid": "u", "successful": true, "patchType": "JSONPatch",
            "patch": encoded(&json!([{"op": "replace", "path": "/spec/replicas", "value": 4}]))}}),
        )
        .expect("answer");
        assert_eq!(
            answer.patched(&object),
            Ok(json!({"spec": {"replicas": 4}}))
        );
        let broken = super::answer("u", json!({"response": {"uid": "u", "successful": true, "patchType": "JSONPatch",
            "patch": encoded(&json!([{"op": "replace", "path": "/spec/missing/deep", "value": 4}]))}})).expect("answer");
        assert!(
            broken
                .patched(&object)
                .expect_err("does not apply")
                .contains("does not apply")
        );
    }
}
