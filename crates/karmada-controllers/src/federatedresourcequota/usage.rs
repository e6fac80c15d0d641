//! What a FederatedResourceQuota's status says, pure: `overall` from the spec, `overallUsed` as the sum over
//! the namespace's scheduled ResourceBindings of what they request (Karmada's enforcement controller counts the
//! same way; [`karmada_api::policy::quota_usage`]), limited to the resources the quota names, and
//! `aggregatedStatus` from what each member's ResourceQuota reports through its Work.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::cluster::ResourceList;
use karmada_api::policy::quota_usage::{add, binding_usage, quantity};
use karmada_api::policy::{
    ClusterQuotaStatus, FederatedResourceQuota, FederatedResourceQuotaStatus,
};
use serde_json::Value;

/// The status of `quota` from the bindings of its namespace and each cluster's reported ResourceQuota status
/// (`cluster → status`).
pub fn status(
    quota: &FederatedResourceQuota,
    bindings: &[Value],
    reported: &BTreeMap<String, Value>,
) -> FederatedResourceQuotaStatus {
    let mut used = BTreeMap::new();
    for binding in bindings {
        add(&mut used, &binding_usage(binding));
    }
    let overall_used: ResourceList = quota
        .spec
        .overall
        .keys()
        .map(|resource| {
            (
                resource.clone(),
                quantity(used.get(resource).copied().unwrap_or(0)),
            )
        })
        .collect();
    let list = |value: Option<&Value>| -> ResourceList {
        value
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), Quantity(s.to_string()))))
                    .collect()
            })
            .unwrap_or_default()
    };
    let aggregated_status = quota
        .spec
        .static_assignments
        .iter()
        .map(|assignment| {
            let reported = reported.get(&assignment.cluster_name);
            ClusterQuotaStatus {
                cluster_name: assignment.cluster_name.clone(),
                hard: reported
                    .map(|s| list(s.get("hard")))
                    .filter(|h| !h.is_empty())
                    .unwrap_or_else(|| assignment.hard.clone()),
                used: list(reported.and_then(|s| s.get("used"))),
            }
        })
        .collect();
    FederatedResourceQuotaStatus {
        overall: quota.spec.overall.clone(),
        overall_used,
        aggregated_status,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn overall_used_sums_scheduled_requests() {
        let binding = |cpu: &str, replicas: &[i64]| {
            let clusters: Vec<Value> = replicas
                .iter()
                .map(|r| json!({"name": "m", "replicas": r}))
                .collect();
            json!({"spec": {"replicaRequirements": {"resourceRequest": {"cpu": cpu}}, "clusters": clusters}})
        };
        let quota: FederatedResourceQuota = serde_json::from_value(json!({
            "metadata": {"name": "team", "namespace": "shop"},
            "spec": {"overall": {"cpu": "4"}, "staticAssignments": [{"clusterName": "member1", "hard": {"cpu": "2"}}]},
        }))
        .expect("quota");
        let bindings = vec![
            binding("500m", &[2, 2]),
            binding("1", &[1]),
            binding("1", &[]),
        ];
        let reported = BTreeMap::from([(
            "member1".to_string(),
            json!({"hard": {"cpu": "2"}, "used": {"cpu": "500m"}}),
        )]);
        let status = status(&quota, &bindings, &reported);
        assert_eq!(
            status.overall_used.get("cpu").map(|q| q.0.as_str()),
            Some("3")
        );
        assert_eq!(status.overall.get("cpu").map(|q| q.0.as_str()), Some("4"));
        assert_eq!(
            status.aggregated_status[0]
                .used
                .get("cpu")
                .map(|q| q.0.as_str()),
            Some("500m")
        );
    }
}
