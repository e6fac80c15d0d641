//! What Karmada's FederatedResourceQuota sync controller keeps in the execution namespaces, pure: one Work per
//! static assignment to an existing cluster, holding a ResourceQuota named as the FederatedResourceQuota in its
//! namespace with the assignment's `hard`; every other Work carrying the quota labels is an orphan to delete.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::policy::FederatedResourceQuota;
use karmada_api::work::{Work, WorkSpec, WorkloadTemplate};
use serde_json::json;

use crate::keys::{LABEL_MANAGED, MANAGED_VALUE};
use crate::names::{execution_namespace, work_name};

/// Karmada's labels on a quota's Works: the FederatedResourceQuota's namespace and name.
pub const NAMESPACE_LABEL: &str = "federatedresourcequota.karmada.io/namespace";
pub const NAME_LABEL: &str = "federatedresourcequota.karmada.io/name";
const EXECUTION_FINALIZER: &str = "karmada.io/execution-controller";

/// The Works `quotas` should have, for the `clusters` that exist.
pub fn desired_works(quotas: &[FederatedResourceQuota], clusters: &BTreeSet<String>) -> Vec<Work> {
    let mut works = Vec::new();
    for quota in quotas {
        if quota.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let namespace = quota.metadata.namespace.clone().unwrap_or_default();
        let name = quota.metadata.name.clone().unwrap_or_default();
        for assignment in &quota.spec.static_assignments {
            if !clusters.contains(&assignment.cluster_name) {
                continue;
            }
            let manifest = json!({
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                // Karmada's ownership label: the execution controller updates only objects it manages.
                "metadata": {"name": name, "namespace": namespace, "labels": {LABEL_MANAGED: MANAGED_VALUE}},
                "spec": {"hard": assignment.hard},
            });
            works.push(Work {
                api_version: "work.karmada.io/v1alpha1".into(),
                kind: "Work".into(),
                metadata: ObjectMeta {
                    name: Some(work_name("ResourceQuota", &name, &namespace)),
                    namespace: Some(execution_namespace(&assignment.cluster_name)),
                    labels: Some(BTreeMap::from([
                        (NAMESPACE_LABEL.to_string(), namespace.clone()),
                        (NAME_LABEL.to_string(), name.clone()),
                    ])),
                    finalizers: Some(vec![EXECUTION_FINALIZER.to_string()]),
                    ..Default::default()
                },
                spec: WorkSpec {
                    workload: WorkloadTemplate {
                        manifests: vec![manifest],
                    },
                    ..Default::default()
                },
                status: None,
            });
        }
    }
    works
}

/// `(namespace, name)` of a Work.
pub fn work_key(work: &Work) -> (String, String) {
    (
        work.metadata.namespace.clone().unwrap_or_default(),
        work.metadata.name.clone().unwrap_or_default(),
    )
}

/// The existing quota Works no quota wants any more.
pub fn orphans<'a>(existing: &'a [Work], desired: &[Work]) -> Vec<&'a Work> {
    let wanted: BTreeSet<(String, String)> = desired.iter().map(work_key).collect();
    existing
        .iter()
        .filter(|work| !wanted.contains(&work_key(work)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(name: &str, assignments: serde_json::Value) -> FederatedResourceQuota {
        serde_json::from_value(json!({
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "FederatedResourceQuota",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"overall": {"cpu": "4"}, "staticAssignments": assignments},
        }))
        .expect("quota")
    }

    #[test]
    fn one_work_per_assignment_to_an_existing_cluster() {
        let quotas = vec![quota(
            "team",
            json!([
                {"clusterName": "member1", "hard": {"cpu": "1"}},
                {"clusterName": "member2", "hard": {"cpu": "3", "memory": "4Gi"}},
                {"clusterName": "gone", "hard": {"cpu": "1"}},
            ]),
        )];
        let clusters = BTreeSet::from(["member1".to_string(), "member2".to_string()]);
        let works = desired_works(&quotas, &clusters);
        let keys: Vec<(String, String)> = works.iter().map(work_key).collect();
        let name = work_name("ResourceQuota", "team", "shop");
        assert_eq!(
            keys,
            vec![
                ("karmada-es-member1".to_string(), name.clone()),
                ("karmada-es-member2".to_string(), name)
            ]
        );
        let manifest = &works[1].spec.workload.manifests[0];
        assert_eq!(manifest["kind"], "ResourceQuota");
        assert_eq!(manifest["metadata"]["name"], "team");
        assert_eq!(manifest["metadata"]["namespace"], "shop");
        assert_eq!(manifest["metadata"]["labels"][LABEL_MANAGED], MANAGED_VALUE);
        assert_eq!(
            manifest["spec"]["hard"],
            json!({"cpu": "3", "memory": "4Gi"})
        );
        let labels = works[0].metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get(NAME_LABEL).map(String::as_str), Some("team"));
        assert_eq!(
            labels.get(NAMESPACE_LABEL).map(String::as_str),
            Some("shop")
        );
    }

    #[test]
    fn works_of_removed_assignments_and_quotas_are_orphans() {
        let clusters = BTreeSet::from(["member1".to_string(), "member2".to_string()]);
        let before = desired_works(
            &[quota(
                "team",
                json!([{"clusterName": "member1", "hard": {"cpu": "1"}}, {"clusterName": "member2", "hard": {"cpu": "1"}}]),
            )],
            &clusters,
        );
        let after = desired_works(
            &[quota(
                "team",
                json!([{"clusterName": "member2", "hard": {"cpu": "2"}}]),
            )],
            &clusters,
        );
        let gone: Vec<(String, String)> =
            orphans(&before, &after).into_iter().map(work_key).collect();
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].0, "karmada-es-member1");
        assert_eq!(
            orphans(&before, &[]).len(),
            2,
            "a deleted quota orphans every Work"
        );
    }
}
