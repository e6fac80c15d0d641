//! The Works that carry an auto-propagated Namespace to every member cluster
//! (docs/karmada.md, "Namespace auto-propagation").
//!
//! One Work per cluster, named [`crate::names::work_name`] with kind `Namespace`, in `karmada-es-<cluster>`,
//! controlled by the Namespace (so deleting it garbage-collects the Works), with only ClusterOverridePolicies
//! applied. The manifest is pruned and carries Karmada's managed label and work annotations; there is no binding,
//! so no binding labels.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use karmada_api::work::{self, WorkSpec, WorkloadTemplate};
use karmada_api::{Cluster, ClusterOverridePolicy, Work};
use serde_json::Value;

use crate::binding::overrides::apply_overrides;
use crate::binding::prune::prune_manifest;
use crate::binding::works::{DesiredWork, DesiredWorks, WorkError, label_manifest};
use crate::keys::{
    ANNOTATION_RESOURCE_TEMPLATE_UID, ANNOTATION_WORK_NAME, ANNOTATION_WORK_NAMESPACE,
    LABEL_MANAGED, MANAGED_VALUE,
};
use crate::names::{execution_namespace, work_name};

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The Works of `namespace` (a Namespace object) in every cluster of `clusters`.
pub fn desired_namespace_works(
    namespace: &Value,
    clusters: &[Cluster],
    cluster_override_policies: &[ClusterOverridePolicy],
) -> Result<DesiredWorks, WorkError> {
    let name = text(namespace, "/metadata/name");
    if name.is_empty() || text(namespace, "/kind") != "Namespace" {
        return Err(WorkError::InvalidTemplate(
            "expected a Namespace object with metadata.name".into(),
        ));
    }
    let uid = text(namespace, "/metadata/uid");
    let name_of_work = work_name("Namespace", name, "");
    let pruned = prune_manifest(namespace);
    let mut result = DesiredWorks::default();
    for cluster in clusters {
        let cluster_name = cluster.metadata.name.clone().unwrap_or_default();
        let overridden = match apply_overrides(&pruned, cluster, cluster_override_policies, &[]) {
            Ok(overridden) => overridden,
            Err(source) => {
                result.failures.push(WorkError::Override {
                    cluster: cluster_name,
                    source,
                });
                continue;
            }
        };
        let execution_ns = execution_namespace(&cluster_name);
        let mut manifest = overridden.manifest.clone();
        label_manifest(
            &mut manifest,
            &BTreeMap::from([(LABEL_MANAGED.to_string(), MANAGED_VALUE.to_string())]),
            &BTreeMap::from([
                (
                    ANNOTATION_RESOURCE_TEMPLATE_UID.to_string(),
                    uid.to_string(),
                ),
                (ANNOTATION_WORK_NAMESPACE.to_string(), execution_ns.clone()),
                (ANNOTATION_WORK_NAME.to_string(), name_of_work.clone()),
            ]),
        );
        let annotations = overridden.annotations();
        let work = Work {
            api_version: format!("{}/{}", work::GROUP, work::WORK_VERSION),
            kind: "Work".into(),
            metadata: ObjectMeta {
                name: Some(name_of_work.clone()),
                namespace: Some(execution_ns),
                annotations: (!annotations.is_empty()).then_some(annotations),
                finalizers: Some(vec![work::FINALIZER_EXECUTION_CONTROLLER.to_string()]),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Namespace".into(),
                    name: name.to_string(),
                    uid: uid.to_string(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                ..ObjectMeta::default()
            },
            spec: WorkSpec {
                workload: WorkloadTemplate {
                    manifests: vec![manifest],
                },
                ..WorkSpec::default()
            },
            status: None,
        };
        result.works.push(DesiredWork {
            cluster: cluster_name,
            work,
        });
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cluster(name: &str, labels: Value) -> Cluster {
        serde_json::from_value(
            json!({"metadata": {"name": name, "labels": labels}, "spec": {"syncMode": "Push"}}),
        )
        .expect("cluster")
    }

    #[test]
    fn one_work_per_cluster_with_cluster_overrides_only() {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": "microservices", "uid": "ns-uid", "resourceVersion": "3"},
                               "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
        let clusters = [
            cluster("member-shanghai", json!({"region": "cn"})),
            cluster("member-singapore", json!({})),
        ];
        let cop: ClusterOverridePolicy = serde_json::from_value(json!({
            "metadata": {"name": "label-cn"},
            "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace"}],
                     "overrideRules": [{"targetCluster": {"labelSelector": {"matchLabels": {"region": "cn"}}},
                                        "overriders": {"labelsOverrider": [{"operator": "add", "value": {"region": "cn"}}]}}]}
        }))
        .expect("cop");
        let result = desired_namespace_works(&namespace, &clusters, &[cop]).expect("works");
        assert!(result.failures.is_empty());
        let expected_name = work_name("Namespace", "microservices", "");
        let summary: Vec<(String, Option<String>, Value)> = result
            .works
            .iter()
            .map(|w| {
                let manifest = &w.work.spec.workload.manifests[0];
                (
                    w.cluster.clone(),
                    w.work.metadata.namespace.clone(),
                    manifest["metadata"]["labels"].clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    "member-shanghai".into(),
                    Some("karmada-es-member-shanghai".into()),
                    json!({"region": "cn", "karmada.io/managed": "true"})
                ),
                (
                    "member-singapore".into(),
                    Some("karmada-es-member-singapore".into()),
                    json!({"karmada.io/managed": "true"})
                ),
            ]
        );
        for work in &result.works {
            assert_eq!(
                work.work.metadata.name.as_deref(),
                Some(expected_name.as_str())
            );
            let owner = &work.work.metadata.owner_references.as_ref().expect("owner")[0];
            assert_eq!(
                (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
                ("Namespace", "microservices", "ns-uid")
            );
            let manifest = &work.work.spec.workload.manifests[0];
            assert_eq!(manifest.get("status"), None);
            assert_eq!(manifest["metadata"].get("resourceVersion"), None);
            assert_eq!(
                manifest["metadata"]["annotations"]["resourcetemplate.karmada.io/uid"],
                json!("ns-uid")
            );
        }
        assert!(desired_namespace_works(&json!({"kind": "ConfigMap"}), &clusters, &[]).is_err());
    }
}
