//! Asking every Ready member cluster at once, as karmada-metrics-adapter does for the control
//! plane's metrics APIs (`metrics_adapter`, `custom_metrics_adapter`): each member through the
//! credentials of the Cluster `proxy` subresource, each within a deadline. A member that fails or
//! is late is reported with its error, and the callers leave it out of their answer.

use std::future::Future;
use std::time::Duration;

use apimachinery::ApiError;
use serde_json::Value;

use crate::handlers::read::list_items;
use crate::server::ApiServer;

/// Karmada's annotation naming the member an item came from.
pub const QUERY_SOURCE_ANNOTATION: &str = karmada_api::cluster::ANNOTATION_QUERY_FROM_CLUSTER;

/// How long one member may take to answer.
pub const MEMBER_DEADLINE: Duration = Duration::from_secs(5);

/// The names of the Ready clusters among `clusters` (Cluster objects).
pub fn ready_clusters(clusters: &[Value]) -> Vec<String> {
    clusters
        .iter()
        .filter(|c| {
            c.pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
        })
        .filter_map(|c| c.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// Names `cluster` in `item`'s annotations (an item without metadata gets one for it; an item
/// that is not an object is left alone).
pub fn name_member(item: &mut Value, cluster: &str) {
    // Indexing would panic on anything but an object (or null).
    if !item.is_object() {
        return;
    }
    let metadata = &mut item["metadata"];
    if !metadata.is_object() {
        *metadata = serde_json::json!({});
    }
    if !metadata["annotations"].is_object() {
        metadata["annotations"] = serde_json::json!({});
    }
    metadata["annotations"][QUERY_SOURCE_ANNOTATION] = serde_json::json!(cluster);
}

/// Why one member's answer is missing.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    /// The member answered with an error Status.
    #[error("{0}")]
    Api(#[from] kube::Error),
    #[error("no answer within {}s", MEMBER_DEADLINE.as_secs())]
    Late,
    #[error("{0}")]
    Other(String),
}

impl MemberError {
    /// Whether the member answered 404 (it serves no such thing).
    pub fn is_not_found(&self) -> bool {
        matches!(self, MemberError::Api(kube::Error::Api(status)) if status.code == 404)
    }
}

/// `ask` run against every Ready member at once, with each member's answer by name.
pub async fn ask_ready_members<T, F, Fut>(
    server: &ApiServer,
    ask: F,
) -> Result<Vec<(String, Result<T, MemberError>)>, ApiError>
where
    F: Fn(kube::Client) -> Fut,
    Fut: Future<Output = Result<T, MemberError>>,
{
    let cluster_def = server
        .registry()
        .lookup(
            karmada_api::cluster::GROUP,
            karmada_api::cluster::VERSION,
            "clusters",
        )
        .ok_or_else(|| ApiError::internal("clusters are not served"))?;
    let clusters = ready_clusters(&list_items(server, &cluster_def, None).await?);
    let ask = &ask;
    let answers = futures::future::join_all(clusters.iter().map(|cluster| async move {
        let client = crate::proxy::member_client(server, cluster)
            .await
            .map_err(|e| MemberError::Other(e.to_string()))?;
        tokio::time::timeout(MEMBER_DEADLINE, ask(client))
            .await
            .map_err(|_| MemberError::Late)?
    }))
    .await;
    Ok(clusters.into_iter().zip(answers).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_ready_clusters_are_asked() {
        let clusters = vec![
            json!({"metadata": {"name": "a"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
            json!({"metadata": {"name": "b"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
            json!({"metadata": {"name": "c"}}),
        ];
        assert_eq!(ready_clusters(&clusters), ["a"]);
    }

    #[test]
    fn items_without_metadata_get_it_to_name_their_member() {
        let mut value = json!({"describedObject": {"name": "web-1"}, "value": "5"});
        name_member(&mut value, "member1");
        assert_eq!(
            value["metadata"]["annotations"][QUERY_SOURCE_ANNOTATION],
            "member1"
        );
        assert_eq!(value["value"], "5");
        let mut odd = json!("not an object");
        name_member(&mut odd, "member1");
        assert_eq!(odd, json!("not an object"));
    }
}
