//! karmada-metrics-adapter in process: the control plane's `metrics.k8s.io/v1beta1` (PodMetrics and
//! NodeMetrics), aggregated over the Ready member clusters (asked as `member_fanout` asks them); a
//! member that fails or is late is left out of the answer, as Karmada's adapter leaves it. Every item carries the
//! annotation `resource.karmada.io/query-from-cluster` naming its member (Karmada's key, which
//! `karmadactl top` prints as the CLUSTER column).

use std::sync::Arc;

use apimachinery::{ApiError, ResourceDef};
use async_trait::async_trait;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::{Value, json};

pub use crate::member_fanout::QUERY_SOURCE_ANNOTATION;
use crate::member_fanout::{MemberError, ask_ready_members};
use crate::provided::ProvidedResources;
use crate::server::ApiServer;

/// The provider; register it in `ApiServerOptions::provided`.
pub struct MetricsAdapter;

impl MetricsAdapter {
    pub fn new() -> Arc<Self> {
        Arc::new(Self)
    }
}

/// `item` as served by the control plane: its kind and apiVersion set, its member named.
pub fn from_member(mut item: Value, def: &ResourceDef, cluster: &str) -> Value {
    item["apiVersion"] = json!(def.api_version());
    item["kind"] = json!(def.kind);
    crate::member_fanout::name_member(&mut item, cluster);
    item
}

/// One member's items of `def` in `namespace`.
async fn member_items(
    client: kube::Client,
    def: &ResourceDef,
    namespace: Option<&str>,
) -> Result<Vec<DynamicObject>, MemberError> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&def.group, &def.version, &def.kind),
        &def.plural,
    );
    let api: Api<DynamicObject> = match namespace {
        Some(namespace) => Api::namespaced_with(client, namespace, &resource),
        None => Api::all_with(client, &resource),
    };
    Ok(api.list(&ListParams::default()).await?.items)
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
        let answers =
            ask_ready_members(server, |client| member_items(client, def, namespace)).await?;
        let mut items = Vec::new();
        for (cluster, answer) in answers {
            match answer {
                Ok(found) => {
                    for item in found {
                        match serde_json::to_value(item) {
                            Ok(value) => items.push(from_member(value, def, &cluster)),
                            Err(error) => {
                                tracing::info!(cluster, %error, "a member's metrics item left out");
                            }
                        }
                    }
                }
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
