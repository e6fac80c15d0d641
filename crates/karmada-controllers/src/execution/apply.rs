//! One manifest against one member: create, take over or update (conflict resolution, retained member
//! fields), delete, or release on Work deletion (docs/karmada.md, "Execution controller", "Conflict resolution").

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use karmada_interpreter::Interpreter;
use kube::api::{
    DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
use serde_json::{Map, Value, json};

use super::discovery::{DiscoveryError, MemberResources};
use super::drift::covers;
use crate::keys::{
    ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME, ANNOTATION_CONFLICT_RESOLUTION,
    ANNOTATION_MANAGED_ANNOTATIONS, ANNOTATION_MANAGED_LABELS, ANNOTATION_RESOURCE_BINDING_NAME,
    ANNOTATION_RESOURCE_BINDING_NAMESPACE, ANNOTATION_RESOURCE_TEMPLATE_GENERATION,
    ANNOTATION_RESOURCE_TEMPLATE_UID, ANNOTATION_WORK_NAME, ANNOTATION_WORK_NAMESPACE,
    CONFLICT_RESOLUTION_OVERWRITE, LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID, LABEL_MANAGED,
    LABEL_RESOURCE_BINDING_PERMANENT_ID, LABEL_WORK_PERMANENT_ID, MANAGED_VALUE,
};
use crate::metrics::UpdateOutcome;

/// What applying did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    Created,
    Updated,
    Unchanged,
}

/// What execution knows of a manifest's member object before applying it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Never applied from this Work (it has no Applied condition yet): most likely absent, so it is created
    /// straight away, and read only when the member answers that it exists. A new Work then costs one member
    /// request per object instead of a read answered 404 and a create.
    Absent,
    /// Applied before: read it, then update it if it differs.
    Unknown,
}

/// A write to a member, for the metrics.
enum Write {
    Create(bool),
    Update(UpdateOutcome),
    Delete(bool),
}

/// Why applying did not happen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApplyError {
    /// Someone wrote the member object first: retry at once, nothing to report.
    Conflict,
    /// The member refused or could not be reached; the message goes on the Applied condition.
    Failed(String),
}

/// Whether a member object carries Karmada's ownership label.
pub fn is_managed(object: &Value) -> bool {
    object
        .pointer("/metadata/labels")
        .and_then(|l| l.get(LABEL_MANAGED))
        .and_then(Value::as_str)
        == Some(MANAGED_VALUE)
}

fn wants_overwrite(manifest: &Value) -> bool {
    manifest
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION_CONFLICT_RESOLUTION))
        .and_then(Value::as_str)
        == Some(CONFLICT_RESOLUTION_OVERWRITE)
}

/// A readable name of the manifest: `apps/v1, Kind=Deployment default/web`.
pub fn describe(manifest: &Value) -> String {
    let text = |p: &str| {
        manifest
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let namespace = text("/metadata/namespace");
    let name = text("/metadata/name");
    let object = if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    };
    format!("{}, Kind={} {object}", text("/apiVersion"), text("/kind"))
}

fn api_message(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409)
}

fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

fn to_dynamic(value: &Value) -> Result<DynamicObject, ApplyError> {
    serde_json::from_value(value.clone())
        .map_err(|e| ApplyError::Failed(format!("manifest is not a Kubernetes object: {e}")))
}

/// Creates `manifest` in the member as it is: serialized once, without a typed copy, and the member's answer is
/// not parsed (whether it succeeded is all an apply needs). Every new (Work, member) pair comes here; at 100
/// members the typed round trip (a copy, its serialization, parsing the answer) was several percent of the
/// controller-manager's CPU. The outer error is a manifest that is no object; the inner one, the member's
/// answer.
async fn create(
    member: &kube::Client,
    api: &kube::Api<DynamicObject>,
    manifest: &Value,
) -> Result<Result<(), kube::Error>, ApplyError> {
    if !manifest.is_object() {
        return Err(ApplyError::Failed(
            "manifest is not a Kubernetes object: expected a JSON object".into(),
        ));
    }
    let body = serde_json::to_vec(manifest)
        .map_err(|e| ApplyError::Failed(format!("manifest is not a Kubernetes object: {e}")))?;
    let mut request =
        match kube::core::Request::new(api.resource_url()).create(&PostParams::default(), body) {
            Ok(request) => request,
            Err(e) => return Ok(Err(kube::Error::BuildRequest(e))),
        };
    request.extensions_mut().insert("create");
    Ok(member.request_text(request).await.map(drop))
}

/// Member objects whose API server stores a form the manifest never matches (a default or normalisation the
/// containment test does not know): after one update that did not converge, the same manifest is not written
/// again until the member object itself changes (its generation, or resourceVersion for kinds without one).
/// This bounds a would-be update loop to one write per outside change.
#[derive(Clone, Default)]
pub struct Settled {
    inner: Arc<Mutex<HashMap<String, (u64, String)>>>,
}

/// Bound on remembered objects; when reached the memory is cleared (costing at most one extra write each).
const SETTLED_KEYS: usize = 65_536;

fn marker(object: &Value) -> String {
    match object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
    {
        Some(generation) => format!("g{generation}"),
        None => format!(
            "rv{}",
            object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ),
    }
}

fn fingerprint(manifest: &Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    manifest.to_string().hash(&mut hasher);
    hasher.finish()
}

impl Settled {
    fn is_settled(&self, key: &str, manifest: &Value, observed: &Value) -> bool {
        self.inner
            .lock()
            .is_ok_and(|m| m.get(key) == Some(&(fingerprint(manifest), marker(observed))))
    }

    fn remember(&self, key: String, manifest: &Value, stored: &Value) {
        if let Ok(mut m) = self.inner.lock() {
            if m.len() >= SETTLED_KEYS {
                m.clear();
            }
            m.insert(key, (fingerprint(manifest), marker(stored)));
        }
    }
}

/// Acts on the manifests of the Works of one member cluster.
pub struct MemberApplier<'a> {
    pub cluster: &'a str,
    pub member: &'a kube::Client,
    pub resources: &'a MemberResources,
    pub interpreter: &'a Interpreter,
    pub settled: &'a Settled,
}

impl MemberApplier<'_> {
    /// Counts a write to the member under Karmada's member-write metrics ([`crate::metrics`]).
    fn count(&self, manifest: &Value, write: Write) {
        let text = |pointer: &str| {
            manifest
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let (api_version, kind) = (text("/apiVersion"), text("/kind"));
        let metrics = crate::metrics::global();
        match write {
            Write::Create(ok) => metrics.count_create(ok, api_version, kind, self.cluster),
            Write::Update(outcome) => {
                metrics.count_update(outcome, api_version, kind, self.cluster)
            }
            Write::Delete(ok) => metrics.count_delete(ok, api_version, kind, self.cluster),
        }
    }

    fn failed(&self, manifest: &Value, message: impl std::fmt::Display) -> ApplyError {
        ApplyError::Failed(format!(
            "{} in cluster {}: {message}",
            describe(manifest),
            self.cluster
        ))
    }

    async fn api(&self, manifest: &Value) -> Result<kube::Api<DynamicObject>, ApplyError> {
        match self
            .resources
            .resolve(self.cluster, self.member, manifest)
            .await
        {
            Ok(resource) => Ok(resource.api(self.member, manifest)),
            Err(err @ DiscoveryError::MissingKind { .. }) => {
                Err(ApplyError::Failed(format!("{}: {err}", describe(manifest))))
            }
            Err(err) => Err(ApplyError::Failed(err.to_string())),
        }
    }

    fn name(manifest: &Value) -> &str {
        manifest
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// Creates the object, or updates it when Karmada owns it (or the manifest says overwrite).
    pub async fn apply(&self, manifest: &Value, expect: Expect) -> Result<Applied, ApplyError> {
        let api = self.api(manifest).await?;
        let name = Self::name(manifest);
        if name.is_empty() {
            return Err(self.failed(manifest, "manifest has no metadata.name"));
        }
        if expect == Expect::Absent {
            match create(self.member, &api, manifest).await? {
                Ok(_) => {
                    self.count(manifest, Write::Create(true));
                    return Ok(Applied::Created);
                }
                // It exists (left from before, or someone else's): read it and decide as for any update.
                Err(e) if is_conflict(&e) => {}
                Err(e) => {
                    self.count(manifest, Write::Create(false));
                    return Err(self.failed(manifest, api_message(&e)));
                }
            }
        }
        let observed = api
            .get_opt(name)
            .await
            .map_err(|e| self.failed(manifest, api_message(&e)))?;
        let Some(observed) = observed else {
            let created = create(self.member, &api, manifest).await?;
            self.count(manifest, Write::Create(created.is_ok()));
            return match created {
                Ok(_) => Ok(Applied::Created),
                // Created meanwhile (e.g. by a user): look again on the retry.
                Err(e) if is_conflict(&e) => Err(ApplyError::Conflict),
                Err(e) => Err(self.failed(manifest, api_message(&e))),
            };
        };
        let observed = serde_json::to_value(&observed).map_err(|e| self.failed(manifest, e))?;
        if !is_managed(&observed) && !wants_overwrite(manifest) {
            return Err(self.failed(
                manifest,
                "the resource already exists in the member cluster and is not managed by Karmada; \
                 conflictResolution is Abort (use Overwrite to take it over)",
            ));
        }
        let desired = self
            .interpreter
            .retain(manifest, &observed)
            .map_err(|e| self.failed(manifest, e))?;
        let settled_key = format!("{}/{}", self.cluster, describe(manifest));
        if covers(&observed, &desired) || self.settled.is_settled(&settled_key, manifest, &observed)
        {
            self.count(manifest, Write::Update(UpdateOutcome::Unchanged));
            return Ok(Applied::Unchanged);
        }
        let replaced = api
            .replace(name, &PostParams::default(), &to_dynamic(&desired)?)
            .await;
        self.count(
            manifest,
            Write::Update(if replaced.is_ok() {
                UpdateOutcome::Updated
            } else {
                UpdateOutcome::None
            }),
        );
        match replaced {
            Ok(stored) => {
                if let Ok(stored) = serde_json::to_value(&stored)
                    && !covers(&stored, &desired)
                {
                    tracing::info!(
                        object = %settled_key,
                        "member stores a form the manifest does not match; not rewriting it until it changes"
                    );
                    self.settled.remember(settled_key, manifest, &stored);
                }
                Ok(Applied::Updated)
            }
            Err(e) if is_conflict(&e) => Err(ApplyError::Conflict),
            Err(e) => Err(self.failed(manifest, api_message(&e))),
        }
    }

    /// Deletes the member object of `manifest` if it exists and Karmada owns it.
    pub async fn remove(&self, manifest: &Value) -> Result<(), ApplyError> {
        let api = match self
            .resources
            .resolve(self.cluster, self.member, manifest)
            .await
        {
            Ok(resource) => resource.api(self.member, manifest),
            // A kind the member does not serve has no object to delete.
            Err(DiscoveryError::MissingKind { .. }) => return Ok(()),
            Err(err) => return Err(ApplyError::Failed(err.to_string())),
        };
        let name = Self::name(manifest);
        let observed = match api.get_opt(name).await {
            Ok(Some(o)) => o,
            Ok(None) => return Ok(()),
            Err(e) => return Err(self.failed(manifest, api_message(&e))),
        };
        let value = serde_json::to_value(&observed).map_err(|e| self.failed(manifest, e))?;
        if !is_managed(&value) {
            return Ok(());
        }
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: Some(Preconditions {
                uid: observed.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let deleted = api.delete(name, &params).await;
        self.count(
            manifest,
            Write::Delete(deleted.is_ok() || deleted.as_ref().is_err_and(is_not_found)),
        );
        match deleted {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) if is_conflict(&e) => Err(ApplyError::Conflict),
            Err(e) => Err(self.failed(manifest, api_message(&e))),
        }
    }

    /// Keeps the member object but drops Karmada's ownership labels and annotations
    /// (preserveResourcesOnDeletion).
    pub async fn release(&self, manifest: &Value) -> Result<(), ApplyError> {
        let api = self.api(manifest).await?;
        let name = Self::name(manifest);
        let observed = match api.get_opt(name).await {
            Ok(Some(o)) => o,
            Ok(None) => return Ok(()),
            Err(e) => return Err(self.failed(manifest, api_message(&e))),
        };
        let value = serde_json::to_value(&observed).map_err(|e| self.failed(manifest, e))?;
        if !is_managed(&value) {
            return Ok(());
        }
        let drop_keys = |keys: &[&str]| -> Map<String, Value> {
            keys.iter()
                .map(|k| ((*k).to_string(), Value::Null))
                .collect()
        };
        let patch = json!({"metadata": {
            "resourceVersion": observed.metadata.resource_version,
            "labels": drop_keys(&[LABEL_MANAGED, LABEL_RESOURCE_BINDING_PERMANENT_ID,
                LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID, LABEL_WORK_PERMANENT_ID]),
            "annotations": drop_keys(&[ANNOTATION_WORK_NAMESPACE, ANNOTATION_WORK_NAME,
                ANNOTATION_RESOURCE_BINDING_NAMESPACE, ANNOTATION_RESOURCE_BINDING_NAME,
                ANNOTATION_CLUSTER_RESOURCE_BINDING_NAME, ANNOTATION_RESOURCE_TEMPLATE_UID,
                ANNOTATION_RESOURCE_TEMPLATE_GENERATION, ANNOTATION_CONFLICT_RESOLUTION,
                ANNOTATION_MANAGED_LABELS, ANNOTATION_MANAGED_ANNOTATIONS]),
        }});
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) if is_conflict(&e) => Err(ApplyError::Conflict),
            Err(e) => Err(self.failed(manifest, api_message(&e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ownership_and_conflict_resolution_are_read_from_metadata() {
        let managed = json!({"metadata": {"labels": {"karmada.io/managed": "true"}}});
        assert!(is_managed(&managed));
        assert!(!is_managed(
            &json!({"metadata": {"labels": {"karmada.io/managed": "false"}}})
        ));
        assert!(!is_managed(&json!({})));
        let overwrite = json!({"metadata": {"annotations": {"work.karmada.io/conflict-resolution": "overwrite"}}});
        assert!(wants_overwrite(&overwrite));
        assert!(!wants_overwrite(
            &json!({"metadata": {"annotations": {"work.karmada.io/conflict-resolution": "abort"}}})
        ));
    }

    #[test]
    fn a_settled_object_stays_settled_until_it_or_the_manifest_changes() {
        let settled = Settled::default();
        let manifest = json!({"spec": {"x": 1}});
        let stored = json!({"metadata": {"generation": 2, "resourceVersion": "10"}});
        assert!(!settled.is_settled("k", &manifest, &stored));
        settled.remember("k".into(), &manifest, &stored);
        assert!(settled.is_settled("k", &manifest, &stored));
        // A status update (new resourceVersion, same generation) does not unsettle it.
        let status_only = json!({"metadata": {"generation": 2, "resourceVersion": "11"}});
        assert!(settled.is_settled("k", &manifest, &status_only));
        let edited = json!({"metadata": {"generation": 3, "resourceVersion": "12"}});
        assert!(!settled.is_settled("k", &manifest, &edited));
        assert!(!settled.is_settled("k", &json!({"spec": {"x": 2}}), &stored));
        // Kinds without a generation go by resourceVersion.
        let config_map = json!({"metadata": {"resourceVersion": "5"}});
        settled.remember("c".into(), &manifest, &config_map);
        assert!(settled.is_settled("c", &manifest, &config_map));
        assert!(!settled.is_settled(
            "c",
            &manifest,
            &json!({"metadata": {"resourceVersion": "6"}})
        ));
    }

    #[test]
    fn manifests_are_described_by_type_and_name() {
        let m = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "default", "name": "web"}});
        assert_eq!(describe(&m), "apps/v1, Kind=Deployment default/web");
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}});
        assert_eq!(describe(&ns), "v1, Kind=Namespace prod");
    }
}
