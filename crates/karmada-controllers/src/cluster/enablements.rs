//! `status.apiEnablements` and the CompleteAPIEnablements condition from a member's discovery documents.
//!
//! Subresources (`deployments/status`) are not listed. The condition is True/`Complete` when every
//! group/version was discovered, False/`Partial` when some failed, False/`Empty` when nothing was.
//!
//! Pure.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIResourceList, Condition, Time};
use karmada_api::cluster::{
    ApiEnablement, ApiResource, CONDITION_COMPLETE_API_ENABLEMENTS,
    REASON_API_ENABLEMENTS_COMPLETE, REASON_API_ENABLEMENTS_EMPTY, REASON_API_ENABLEMENTS_PARTIAL,
};

/// Enablements sorted by group/version (resources by name), and the condition describing their completeness.
pub fn api_enablements(
    lists: &[APIResourceList],
    failed_group_versions: &[String],
    now: Timestamp,
) -> (Vec<ApiEnablement>, Condition) {
    let mut out: Vec<ApiEnablement> = lists
        .iter()
        .map(|l| {
            let mut resources: Vec<ApiResource> = l
                .resources
                .iter()
                .filter(|r| !r.name.contains('/'))
                .map(|r| ApiResource {
                    name: r.name.clone(),
                    kind: r.kind.clone(),
                })
                .collect();
            resources.sort_by(|a, b| a.name.cmp(&b.name));
            ApiEnablement {
                group_version: l.group_version.clone(),
                resources,
            }
        })
        .collect();
    out.sort_by(|a, b| a.group_version.cmp(&b.group_version));
    let (status, reason, message) = if out.is_empty() {
        (
            "False",
            REASON_API_ENABLEMENTS_EMPTY,
            "collected no API enablements from the cluster".to_string(),
        )
    } else if failed_group_versions.is_empty() {
        (
            "True",
            REASON_API_ENABLEMENTS_COMPLETE,
            "collected complete API enablements from the cluster".to_string(),
        )
    } else {
        (
            "False",
            REASON_API_ENABLEMENTS_PARTIAL,
            format!(
                "collected partial API enablements; failed: {}",
                failed_group_versions.join(", ")
            ),
        )
    };
    let condition = Condition {
        type_: CONDITION_COMPLETE_API_ENABLEMENTS.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message,
        last_transition_time: Time(now),
        observed_generation: None,
    };
    (out, condition)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(gv: &str, names: &[(&str, &str)]) -> APIResourceList {
        let resources: Vec<_> = names
            .iter()
            .map(|(n, k)| json!({"name": n, "kind": k, "namespaced": true, "singularName": "", "verbs": []}))
            .collect();
        serde_json::from_value(json!({"groupVersion": gv, "resources": resources})).unwrap()
    }

    #[test]
    fn completeness_decides_the_condition() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let lists = vec![
            list(
                "v1",
                &[
                    ("pods", "Pod"),
                    ("pods/status", "Pod"),
                    ("configmaps", "ConfigMap"),
                ],
            ),
            list("apps/v1", &[("deployments", "Deployment")]),
        ];
        // (lists, failed, status, reason)
        let table = [
            (
                lists.clone(),
                vec![],
                "True",
                REASON_API_ENABLEMENTS_COMPLETE,
            ),
            (
                lists.clone(),
                vec!["metrics.k8s.io/v1beta1".to_string()],
                "False",
                REASON_API_ENABLEMENTS_PARTIAL,
            ),
            (vec![], vec![], "False", REASON_API_ENABLEMENTS_EMPTY),
        ];
        for (lists, failed, status, reason) in table {
            let (_, c) = api_enablements(&lists, &failed, now);
            assert_eq!((c.status.as_str(), c.reason.as_str()), (status, reason));
        }
        let (e, _) = api_enablements(&lists, &[], now);
        assert_eq!(e[0].group_version, "apps/v1");
        let core: Vec<&str> = e[1].resources.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(core, vec!["configmaps", "pods"]);
    }
}
