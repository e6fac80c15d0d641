//! Which API resource serves a manifest's kind in a member cluster, found by discovery and cached per
//! (cluster, apiVersion, kind). Only successes are cached: a kind the member lacks is asked again next time, so
//! installing a CRD in the member lets a failed Work converge.

use std::collections::HashMap;
use std::sync::Arc;

use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::Scope;
use serde_json::Value;
use tokio::sync::RwLock;

/// A kind as served by a member.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberResource {
    pub resource: ApiResource,
    pub namespaced: bool,
}

impl MemberResource {
    /// The API of the object named by `manifest` (namespaced kinds default to `default`).
    pub fn api(&self, member: &kube::Client, manifest: &Value) -> kube::Api<DynamicObject> {
        if self.namespaced {
            let namespace = manifest
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|ns| !ns.is_empty())
                .unwrap_or("default");
            kube::Api::namespaced_with(member.clone(), namespace, &self.resource)
        } else {
            kube::Api::all_with(member.clone(), &self.resource)
        }
    }
}

/// Why a manifest's kind could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("manifest has no apiVersion or kind")]
    Malformed,
    #[error(
        "the member cluster does not serve {api_version}, Kind={kind}: no such resource type in cluster {cluster}"
    )]
    MissingKind {
        cluster: String,
        api_version: String,
        kind: String,
    },
    #[error("discovering {api_version}, Kind={kind} in cluster {cluster}: {source}")]
    Api {
        cluster: String,
        api_version: String,
        kind: String,
        source: kube::Error,
    },
}

type Key = (String, String, String);

/// The discovery cache, shared by the execution and work status controllers.
#[derive(Clone, Default)]
pub struct MemberResources {
    cache: Arc<RwLock<HashMap<Key, MemberResource>>>,
}

/// `(apiVersion, kind)` of a manifest.
pub fn type_of(manifest: &Value) -> Option<(&str, &str)> {
    let api_version = manifest.get("apiVersion").and_then(Value::as_str)?;
    let kind = manifest.get("kind").and_then(Value::as_str)?;
    (!api_version.is_empty() && !kind.is_empty()).then_some((api_version, kind))
}

fn gvk(api_version: &str, kind: &str) -> GroupVersionKind {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, kind)
}

impl MemberResources {
    /// The resource serving `manifest`'s kind in `cluster`.
    pub async fn resolve(
        &self,
        cluster: &str,
        member: &kube::Client,
        manifest: &Value,
    ) -> Result<MemberResource, DiscoveryError> {
        let (api_version, kind) = type_of(manifest).ok_or(DiscoveryError::Malformed)?;
        let key = (
            cluster.to_string(),
            api_version.to_string(),
            kind.to_string(),
        );
        if let Some(found) = self.cache.read().await.get(&key) {
            return Ok(found.clone());
        }
        let found = match kube::discovery::pinned_kind(member, &gvk(api_version, kind)).await {
            Ok((resource, capabilities)) => MemberResource {
                resource,
                namespaced: capabilities.scope == Scope::Namespaced,
            },
            Err(err) => {
                let missing = match &err {
                    kube::Error::Discovery(_) => true,
                    kube::Error::Api(s) => s.code == 404,
                    _ => false,
                };
                return Err(if missing {
                    DiscoveryError::MissingKind {
                        cluster: cluster.to_string(),
                        api_version: api_version.to_string(),
                        kind: kind.to_string(),
                    }
                } else {
                    DiscoveryError::Api {
                        cluster: cluster.to_string(),
                        api_version: api_version.to_string(),
                        kind: kind.to_string(),
                        source: err,
                    }
                });
            }
        };
        self.cache.write().await.insert(key, found.clone());
        Ok(found)
    }

    /// Forgets what was learnt about `cluster` (e.g. its client changed).
    pub async fn forget(&self, cluster: &str) {
        self.cache.write().await.retain(|(c, _, _), _| c != cluster);
    }
}
