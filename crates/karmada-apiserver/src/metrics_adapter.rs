//! karmada-metrics-adapter in process: the control plane's `metrics.k8s.io/v1beta1` (PodMetrics and
//! NodeMetrics), aggregated over the Ready member clusters. Each member is asked through the same
//! credentials as the Cluster `proxy` subresource, all at once, each within a deadline; a member that
//! fails or is late is left out of the answer, as Karmada's adapter leaves it. Every item carries the
//! annotation `resource.karmada.io/query-from-cluster` naming its member (Karmada's key, which
//! `karmadactl top` prints as the CLUSTER column).

use std::sync::Arc;
use std::time::Duration;

use apimachinery::{ApiError, ResourceDef};
use async_trait::async_trait;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::{Value, json};

use crate::handlers::read::list_items;
use crate::provided::ProvidedResources;
use crate::server::ApiServer;

/// Karmada's annotation naming the member an item came from.
pub const QUERY_SOURCE_ANNOTATION: &str = "resource.karmada.io/query-from-cluster";

/// How long one member may take to answer.
const MEMBER_DEADLINE: Duration = Duration::from_secs(5);

/// The provider; register it in `ApiServerOptions::provided`.
pub struct MetricsAdapter;

impl MetricsAdapter {
    pub fn new() -> Arc<Self> {
        Arc::new(Self)
    }
}

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

/// `item` as served by the control plane: its kind and apiVersion set, its member named.
pub fn from_member(mut item: Value, def: &ResourceDef, cluster: &str) -> Value {
    item["apiVersion"] = json!(def.api_version());
    item["kind"] = json!(def.kind);
    let metadata = &mut item["metadata"];
    if !metadata["annotations"].is_object() {
        metadata["annotations"] = json!({});
    }
    metadata["annotations"][QUERY_SOURCE_ANNOTATION] = json!(cluster);
    item
}

/// One member's items of `def` in `namespace`.
async fn member_items(
    server: &ApiServer,
    cluster: &str,
    def: &ResourceDef,
    namespace: Option<&str>,
) -> Result<Vec<Value>, String> {
    let client = crate::proxy::member_client(server, cluster)
        .await
        .map_err(|e| e.to_string())?;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&def.group, &def.version, &def.kind),
        &def.plural,
    );
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client, namespace, &resource),
        None => Api::all_with(client, &resource),
    };
    let list = tokio::time::timeout(MEMBER_DEADLINE, api.list(&ListParams::default()))
        .await
        .map_err(|_| format!("no answer within {}s", MEMBER_DEADLINE.as_secs()))?
        .map_err(|e| e.to_string())?;
    list.items
        .into_iter()
        .map(|item| {
            serde_json::to_value(item)
                .map(|v| from_member(v, def, cluster))
                .map_err(|e| e.to_string())
        })
        .collect()
}

#[async_trait]
impl ProvidedResources for MetricsAdapter {
    fn defs(&self) -> Vec<ResourceDef> {
        apiserver_views::metrics_api::resource_defs()
    }

    async fn list(
        &self,
        server: &ApiServer,
        def: &ResourceDef,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>, ApiError> {
        let cluster_def = server
            .registry()
            .lookup(
                karmada_api::cluster::GROUP,
                karmada_api::cluster::VERSION,
                "clusters",
            )
            .ok_or_else(|| ApiError::internal("clusters are not served"))?;
        let clusters = ready_clusters(&list_items(server, &cluster_def, None).await?);
        let answers = futures::future::join_all(
            clusters
                .iter()
                .map(|cluster| member_items(server, cluster, def, namespace)),
        )
        .await;
        let mut items = Vec::new();
        for (cluster, answer) in clusters.iter().zip(answers) {
            match answer {
                Ok(found) => items.extend(found),
                Err(error) => {
                    tracing::info!(cluster, %error, kind = %def.kind, "member metrics left out");
                }
            }
        }
        Ok(items)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
    fn items_name_their_member() {
        let def = &apiserver_views::metrics_api::resource_defs()[0];
        let item = from_member(
            json!({"metadata": {"name": "p", "namespace": "n", "annotations": {"x": "y"}}, "containers": []}),
            def,
            "member1",
        );
        assert_eq!(item["kind"], "PodMetrics");
        assert_eq!(item["apiVersion"], "metrics.k8s.io/v1beta1");
        assert_eq!(
            item["metadata"]["annotations"][QUERY_SOURCE_ANNOTATION],
            "member1"
        );
        assert_eq!(item["metadata"]["annotations"]["x"], "y");
        let bare = from_member(json!({"metadata": {"name": "n1"}}), def, "m2");
        assert_eq!(
            bare["metadata"]["annotations"][QUERY_SOURCE_ANNOTATION],
            "m2"
        );
    }
}
