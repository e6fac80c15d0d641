//! What the propagation benchmark propagates: Deployments (a built-in kind, the native interpreter) or OpenKruise
//! CloneSets (a CRD, interpreted by the bundled Lua customization), of the same shape.

use anyhow::Context;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};

use crate::propagation::LABEL;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WorkloadKind {
    Deployment,
    #[value(name = "cloneset")]
    CloneSet,
}

impl WorkloadKind {
    fn gvk(self) -> (GroupVersionKind, &'static str) {
        match self {
            Self::Deployment => (
                GroupVersionKind::gvk("apps", "v1", "Deployment"),
                "deployments",
            ),
            Self::CloneSet => (
                GroupVersionKind::gvk("apps.kruise.io", "v1alpha1", "CloneSet"),
                "clonesets",
            ),
        }
    }

    pub fn resource(self) -> ApiResource {
        let (gvk, plural) = self.gvk();
        ApiResource::from_gvk_with_plural(&gvk, plural)
    }

    pub fn kind(self) -> &'static str {
        match self {
            Self::Deployment => "Deployment",
            Self::CloneSet => "CloneSet",
        }
    }

    pub fn api(self, client: &Client, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(client.clone(), namespace, &self.resource())
    }

    /// One workload of one replica named `name` in the `bench` namespace.
    pub fn object(self, name: &str) -> anyhow::Result<DynamicObject> {
        let resource = self.resource();
        Ok(serde_json::from_value(serde_json::json!({
            "apiVersion": resource.api_version, "kind": resource.kind,
            "metadata": {"name": name, "namespace": "bench", "labels": {LABEL.0: LABEL.1}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}},
                             "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                                      "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
            }
        }))?)
    }

    /// Makes the kind servable by every API in `clients` (CloneSet: its CRD; the kind's API is served a moment
    /// after the CRD is stored, so this waits for a list to answer).
    pub async fn install(self, clients: &[&Client]) -> anyhow::Result<()> {
        let Self::CloneSet = self else { return Ok(()) };
        let crd: serde_json::Value = serde_saphyr::from_str(include_str!(
            "../../../tests/fixtures/interpreter/kruise-cloneset-crd.yaml"
        ))
        .context("the CloneSet CRD fixture")?;
        let crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
            serde_json::from_value(crd)?;
        for client in clients {
            let api: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
                Api::all((*client).clone());
            api.create(&PostParams::default(), &crd).await?;
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        for client in clients {
            let api: Api<DynamicObject> = Api::all_with((*client).clone(), &self.resource());
            while api.list(&Default::default()).await.is_err() {
                anyhow::ensure!(
                    std::time::Instant::now() < deadline,
                    "the CloneSet API was never served"
                );
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }
}
