//! The (Cluster)ResourceBinding a claimed template produces (docs/karmada.md, "Resource detector" step 9,
//! "Bindings and Works").
//!
//! A template claimed by a PropagationPolicy, or a namespaced template claimed by a ClusterPropagationPolicy,
//! gets a ResourceBinding in its namespace; a cluster-scoped template gets a ClusterResourceBinding. The binding
//! is named by [`crate::names::binding_name`], controlled by the template (ownerReference), carries the
//! binding-controller finalizer and the claim label/annotations, and its spec copies the policy's placement and
//! settings plus the template reference and the interpreter's replicas and requirements.
//!
//! Invariant: [`update_binding`] only overwrites what the detector owns; the scheduler's result
//! (`spec.clusters`), eviction tasks, dependency snapshots, reschedule trigger and status are kept.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use karmada_api::policy::DEFAULT_SCHEDULER_NAME;
use karmada_api::work::{
    self, BindingSchedulePriority, BindingSuspension, ObjectReference, WorkloadAffinityGroups,
};
use karmada_api::{
    ClusterResourceBinding, ConflictResolution, ResourceBinding, ResourceBindingSpec,
};
use karmada_interpreter::{InterpretError, Interpreter};
use serde_json::{Map, Value};

use super::claim::{describe, policy_id};
use super::matching::PolicyRef;
use crate::keys::{
    ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME, ANNOTATION_PROPAGATION_POLICY_NAME,
    ANNOTATION_PROPAGATION_POLICY_NAMESPACE, LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
    LABEL_PROPAGATION_POLICY_PERMANENT_ID,
};
use crate::names::binding_name;

/// Why the detector cannot produce a claim or a binding.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DetectorError {
    #[error(
        "{policy} has no {label} label; it must be created through the API server so admission assigns one"
    )]
    MissingPermanentId { policy: String, label: &'static str },
    #[error("resource template: {0}")]
    InvalidTemplate(String),
    #[error(
        "{policy} cannot claim {template}: a PropagationPolicy only selects templates of its own namespace"
    )]
    NamespaceMismatch { policy: String, template: String },
    #[error("interpreting the template: {0}")]
    Interpret(#[from] InterpretError),
    #[error("encoding the binding: {0}")]
    Encode(String),
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn required<'a>(template: &'a Value, pointer: &str, field: &str) -> Result<&'a str, DetectorError> {
    let value = text(template, pointer);
    if value.is_empty() {
        Err(DetectorError::InvalidTemplate(format!(
            "{field} is required"
        )))
    } else {
        Ok(value)
    }
}

/// The desired binding for `template` claimed by `policy`, as JSON (`work.karmada.io/v1alpha2`
/// ResourceBinding or ClusterResourceBinding). `schedule_priority` is the value of the PriorityClass named by
/// the policy's `schedulePriority`, resolved by the caller (0 when it does not exist).
pub fn desired_binding(
    template: &Value,
    policy: PolicyRef<'_>,
    interpreter: &Interpreter,
    schedule_priority: Option<i32>,
) -> Result<Value, DetectorError> {
    let api_version = required(template, "/apiVersion", "apiVersion")?;
    let kind = required(template, "/kind", "kind")?;
    let name = required(template, "/metadata/name", "metadata.name")?;
    let namespace = text(template, "/metadata/namespace");
    if !policy.is_cluster() && policy.namespace() != namespace {
        return Err(DetectorError::NamespaceMismatch {
            policy: describe(policy),
            template: format!("{kind} {namespace}/{name}"),
        });
    }
    let id = policy_id(policy)?;
    let mut labels = BTreeMap::new();
    let mut annotations = BTreeMap::new();
    if policy.is_cluster() {
        labels.insert(
            LABEL_CLUSTER_PROPAGATION_POLICY_PERMANENT_ID.to_string(),
            id.to_string(),
        );
        annotations.insert(
            ANNOTATION_CLUSTER_PROPAGATION_POLICY_NAME.to_string(),
            policy.name().to_string(),
        );
    } else {
        labels.insert(
            LABEL_PROPAGATION_POLICY_PERMANENT_ID.to_string(),
            id.to_string(),
        );
        annotations.insert(
            ANNOTATION_PROPAGATION_POLICY_NAMESPACE.to_string(),
            policy.namespace().to_string(),
        );
        annotations.insert(
            ANNOTATION_PROPAGATION_POLICY_NAME.to_string(),
            policy.name().to_string(),
        );
    }
    let cluster_scoped = namespace.is_empty();
    let metadata = ObjectMeta {
        name: Some(binding_name(kind, name)),
        namespace: (!cluster_scoped).then(|| namespace.to_string()),
        labels: Some(labels),
        annotations: Some(annotations),
        owner_references: Some(vec![OwnerReference {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            name: name.to_string(),
            uid: text(template, "/metadata/uid").to_string(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]),
        finalizers: Some(vec![if cluster_scoped {
            work::FINALIZER_CLUSTER_RESOURCE_BINDING_CONTROLLER.to_string()
        } else {
            work::FINALIZER_BINDING_CONTROLLER.to_string()
        }]),
        ..ObjectMeta::default()
    };
    let spec = binding_spec(
        template,
        policy,
        interpreter,
        schedule_priority,
        cluster_scoped,
    )?;
    let encoded = if cluster_scoped {
        serde_json::to_value(ClusterResourceBinding {
            api_version: format!("{}/{}", work::GROUP, work::BINDING_VERSION),
            kind: "ClusterResourceBinding".into(),
            metadata,
            spec,
            status: None,
        })
    } else {
        serde_json::to_value(ResourceBinding {
            api_version: format!("{}/{}", work::GROUP, work::BINDING_VERSION),
            kind: "ResourceBinding".into(),
            metadata,
            spec,
            status: None,
        })
    };
    encoded.map_err(|e| DetectorError::Encode(e.to_string()))
}

fn binding_spec(
    template: &Value,
    policy: PolicyRef<'_>,
    interpreter: &Interpreter,
    schedule_priority: Option<i32>,
    cluster_scoped: bool,
) -> Result<ResourceBindingSpec, DetectorError> {
    let spec = policy.spec();
    let replicas = interpreter.get_replicas(template)?;
    let placement = spec.placement.clone();
    let workload_affinity_groups = if cluster_scoped {
        None
    } else {
        affinity_groups(template, &placement)
    };
    let suspension = spec.suspension.as_ref().map(|s| BindingSuspension {
        dispatching: s.dispatching,
        dispatching_on_clusters: s.dispatching_on_clusters.clone(),
        scheduling: None,
    });
    Ok(ResourceBindingSpec {
        resource: ObjectReference {
            api_version: text(template, "/apiVersion").to_string(),
            kind: text(template, "/kind").to_string(),
            namespace: text(template, "/metadata/namespace").to_string(),
            name: text(template, "/metadata/name").to_string(),
            uid: text(template, "/metadata/uid").to_string(),
            resource_version: text(template, "/metadata/resourceVersion").to_string(),
        },
        propagate_deps: spec.propagate_deps,
        replica_requirements: replicas.requirements,
        replicas: replicas.replicas,
        placement: Some(placement),
        scheduler_name: if spec.scheduler_name.is_empty() {
            DEFAULT_SCHEDULER_NAME.to_string()
        } else {
            spec.scheduler_name.clone()
        },
        failover: spec.failover.clone(),
        conflict_resolution: Some(
            spec.conflict_resolution
                .unwrap_or(ConflictResolution::Abort),
        ),
        suspension,
        preserve_resources_on_deletion: spec.preserve_resources_on_deletion,
        schedule_priority: spec
            .schedule_priority
            .as_ref()
            .map(|_| BindingSchedulePriority {
                priority: schedule_priority.unwrap_or(0),
            }),
        workload_affinity_groups,
        ..ResourceBindingSpec::default()
    })
}

fn affinity_groups(
    template: &Value,
    placement: &karmada_api::Placement,
) -> Option<WorkloadAffinityGroups> {
    let affinity = placement.workload_affinity.as_ref()?;
    let group = |key: Option<&str>| {
        key.and_then(|key| {
            template
                .pointer("/metadata/labels")
                .and_then(|labels| labels.get(key))
                .and_then(Value::as_str)
                .map(|value| format!("{key}={value}"))
        })
        .unwrap_or_default()
    };
    let groups = WorkloadAffinityGroups {
        affinity_group: group(
            affinity
                .affinity
                .as_ref()
                .map(|a| a.group_by_label_key.as_str()),
        ),
        anti_affinity_group: group(
            affinity
                .anti_affinity
                .as_ref()
                .map(|a| a.group_by_label_key.as_str()),
        ),
    };
    (!groups.affinity_group.is_empty() || !groups.anti_affinity_group.is_empty()).then_some(groups)
}

/// Spec fields the detector owns; everything else in an existing binding's spec is kept on update.
const DETECTOR_SPEC_FIELDS: &[&str] = &[
    "resource",
    "propagateDeps",
    "replicaRequirements",
    "replicas",
    "placement",
    "schedulerName",
    "failover",
    "conflictResolution",
    "suspension",
    "preserveResourcesOnDeletion",
    "schedulePriority",
    "workloadAffinityGroups",
];

/// Puts back in `updated` the template resourceVersion `existing` records (`spec.resource.resourceVersion`):
/// for a template not edited since, a newer version means only status or bookkeeping moved, which Karmada's
/// detector ignores, so the binding is not rewritten for it.
pub fn keep_recorded_resource_version(updated: &mut Value, existing: &Value) {
    if let (Some(recorded), Some(resource)) = (
        existing.pointer("/spec/resource/resourceVersion"),
        updated
            .pointer_mut("/spec/resource")
            .and_then(Value::as_object_mut),
    ) {
        resource.insert("resourceVersion".into(), recorded.clone());
    }
}

/// `existing` updated to `desired`: the detector's spec fields replaced (removed when the desired binding has
/// none), claim labels/annotations, owner references and finalizers merged; everything else kept.
pub fn update_binding(existing: &Value, desired: &Value) -> Value {
    let mut updated = existing.clone();
    let Some(root) = updated.as_object_mut() else {
        return desired.clone();
    };
    let desired_spec = desired
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let spec = root
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(spec) = spec.as_object_mut() {
        for field in DETECTOR_SPEC_FIELDS {
            match desired_spec.get(*field) {
                Some(value) => {
                    spec.insert((*field).to_string(), value.clone());
                }
                None => {
                    spec.remove(*field);
                }
            }
        }
    }
    let metadata = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(metadata) = metadata.as_object_mut() {
        for key in ["labels", "annotations"] {
            let Some(wanted) = desired
                .pointer(&format!("/metadata/{key}"))
                .and_then(Value::as_object)
            else {
                continue;
            };
            let mut merged = metadata
                .get(key)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for (k, v) in wanted {
                merged.insert(k.clone(), v.clone());
            }
            metadata.insert(key.into(), Value::Object(merged));
        }
        for key in ["ownerReferences", "finalizers"] {
            let wanted = desired
                .pointer(&format!("/metadata/{key}"))
                .and_then(Value::as_array)
                .cloned();
            let mut merged = metadata
                .get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for item in wanted.into_iter().flatten() {
                if !merged.contains(&item) {
                    merged.push(item);
                }
            }
            if !merged.is_empty() {
                metadata.insert(key.into(), Value::Array(merged));
            }
        }
    }
    updated
}

#[cfg(test)]
mod tests {
    use karmada_api::{ClusterPropagationPolicy, PropagationPolicy};
    use serde_json::json;

    use super::*;

    fn seed_template() -> Value {
        let mut template = test_fixtures::document("seed-001/nginx-deploy.yaml");
        template["metadata"]["uid"] = json!("tmpl-uid");
        template["metadata"]["resourceVersion"] = json!("17");
        template
    }

    fn seed_policy() -> PropagationPolicy {
        let mut policy: PropagationPolicy =
            serde_json::from_value(test_fixtures::document("seed-001/propagation-policy.yaml"))
                .expect("seed policy");
        policy.metadata.labels = Some(BTreeMap::from([(
            LABEL_PROPAGATION_POLICY_PERMANENT_ID.to_string(),
            "pp-id".to_string(),
        )]));
        policy
    }

    #[test]
    fn seed_binding() {
        let policy = seed_policy();
        let binding = desired_binding(
            &seed_template(),
            PolicyRef::Namespaced(&policy),
            &Interpreter::native(),
            None,
        )
        .expect("binding");
        let expected_metadata = json!({
            "name": "nginx-ha-deployment",
            "namespace": "production",
            "labels": {"propagationpolicy.karmada.io/permanent-id": "pp-id"},
            "annotations": {"propagationpolicy.karmada.io/name": "nginx-ha-policy",
                            "propagationpolicy.karmada.io/namespace": "production"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx-ha", "uid": "tmpl-uid",
                                 "controller": true, "blockOwnerDeletion": true}],
            "finalizers": ["karmada.io/binding-controller"]
        });
        assert_eq!(binding["kind"], json!("ResourceBinding"));
        assert_eq!(binding["apiVersion"], json!("work.karmada.io/v1alpha2"));
        assert_eq!(binding["metadata"], expected_metadata);
        assert_eq!(
            binding["spec"]["resource"],
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "production", "name": "nginx-ha",
                   "uid": "tmpl-uid", "resourceVersion": "17"})
        );
        assert_eq!(binding["spec"]["replicas"], json!(6));
        assert_eq!(
            binding["spec"]["replicaRequirements"],
            json!({"resourceRequest": {"cpu": "100m", "memory": "128Mi"}, "namespace": "production"})
        );
        assert_eq!(binding["spec"]["schedulerName"], json!("default-scheduler"));
        assert_eq!(binding["spec"]["conflictResolution"], json!("Abort"));
        assert_eq!(
            binding["spec"]["placement"],
            serde_json::to_value(&policy.spec.placement).expect("placement")
        );
        assert_eq!(binding["spec"].get("clusters"), None);
        let decoded: ResourceBinding =
            serde_json::from_value(binding).expect("decodes as a ResourceBinding");
        assert_eq!(decoded.spec.replicas, 6);
    }

    #[test]
    fn cluster_policy_bindings_by_scope() {
        let policy: ClusterPropagationPolicy = serde_json::from_value(json!({
            "metadata": {"name": "global", "labels": {"clusterpropagationpolicy.karmada.io/permanent-id": "cpp-id"}},
            "spec": {"resourceSelectors": [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}],
                     "conflictResolution": "Overwrite", "preserveResourcesOnDeletion": true,
                     "suspension": {"dispatching": true}, "schedulePriority": {"priorityClassName": "high"}}
        }))
        .expect("cpp");
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:foo", "uid": "u"}});
        let binding = desired_binding(
            &role,
            PolicyRef::Cluster(&policy),
            &Interpreter::native(),
            Some(1000),
        )
        .expect("crb");
        assert_eq!(binding["kind"], json!("ClusterResourceBinding"));
        assert_eq!(binding["metadata"]["name"], json!("system.foo-clusterrole"));
        assert_eq!(binding["metadata"].get("namespace"), None);
        assert_eq!(
            binding["metadata"]["finalizers"],
            json!(["karmada.io/cluster-resource-binding-controller"])
        );
        assert_eq!(
            binding["metadata"]["annotations"],
            json!({"clusterpropagationpolicy.karmada.io/name": "global"})
        );
        assert_eq!(binding["spec"]["conflictResolution"], json!("Overwrite"));
        assert_eq!(binding["spec"]["preserveResourcesOnDeletion"], json!(true));
        assert_eq!(binding["spec"]["suspension"], json!({"dispatching": true}));
        assert_eq!(
            binding["spec"]["schedulePriority"],
            json!({"priority": 1000})
        );
        assert_eq!(binding["spec"].get("replicas"), None);

        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "apps"}});
        let binding = desired_binding(
            &config_map,
            PolicyRef::Cluster(&policy),
            &Interpreter::native(),
            None,
        )
        .expect("rb");
        assert_eq!(binding["kind"], json!("ResourceBinding"));
        assert_eq!(binding["metadata"]["namespace"], json!("apps"));
    }

    #[test]
    fn pp_of_another_namespace_is_rejected() {
        let policy = seed_policy();
        let mut template = seed_template();
        template["metadata"]["namespace"] = json!("staging");
        let error = desired_binding(
            &template,
            PolicyRef::Namespaced(&policy),
            &Interpreter::native(),
            None,
        )
        .expect_err("namespace mismatch");
        assert!(error.to_string().contains("own namespace"), "{error}");
    }

    #[test]
    fn update_keeps_the_scheduling_result() {
        let policy = seed_policy();
        let desired = desired_binding(
            &seed_template(),
            PolicyRef::Namespaced(&policy),
            &Interpreter::native(),
            None,
        )
        .expect("binding");
        let existing = json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "nginx-ha-deployment", "namespace": "production", "resourceVersion": "9",
                         "labels": {"resourcebinding.karmada.io/permanent-id": "rb-id"}},
            "spec": {"replicas": 3, "clusters": [{"name": "cluster-aws", "replicas": 2}, {"name": "cluster-gcp", "replicas": 1}],
                     "failover": {"cluster": {}}},
            "status": {"schedulerObservedGeneration": 1}
        });
        let updated = update_binding(&existing, &desired);
        assert_eq!(updated["spec"]["replicas"], json!(6));
        assert_eq!(updated["spec"]["clusters"], existing["spec"]["clusters"]);
        assert_eq!(
            updated["spec"].get("failover"),
            None,
            "policy has no failover any more"
        );
        assert_eq!(updated["status"], existing["status"]);
        assert_eq!(updated["metadata"]["resourceVersion"], json!("9"));
        assert_eq!(
            updated["metadata"]["labels"]["resourcebinding.karmada.io/permanent-id"],
            json!("rb-id")
        );
        assert_eq!(
            updated["metadata"]["labels"]["propagationpolicy.karmada.io/permanent-id"],
            json!("pp-id")
        );
        assert_eq!(
            updated["metadata"]["finalizers"],
            json!(["karmada.io/binding-controller"])
        );
    }

    #[test]
    fn a_recorded_template_version_is_kept_when_asked() {
        let existing =
            json!({"spec": {"resource": {"name": "web", "resourceVersion": "7"}, "replicas": 2}});
        let cases = [
            (
                "newer version",
                json!({"spec": {"resource": {"name": "web", "resourceVersion": "9"}, "replicas": 2}}),
                json!({"spec": {"resource": {"name": "web", "resourceVersion": "7"}, "replicas": 2}}),
            ),
            (
                "other fields still move",
                json!({"spec": {"resource": {"name": "web", "resourceVersion": "9"}, "replicas": 3}}),
                json!({"spec": {"resource": {"name": "web", "resourceVersion": "7"}, "replicas": 3}}),
            ),
            (
                "no resource: nothing to keep",
                json!({"spec": {"replicas": 3}}),
                json!({"spec": {"replicas": 3}}),
            ),
        ];
        for (name, mut updated, expected) in cases {
            keep_recorded_resource_version(&mut updated, &existing);
            assert_eq!(updated, expected, "{name}");
        }
    }
}
