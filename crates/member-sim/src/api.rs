//! How the async loop talks to the API: the kinds the simulator watches and each [`Write`] as
//! the REST request that performs it. Pure: builds paths and bodies, sends nothing.

use serde_json::{Value, json};

use crate::objects::{ObjectKey, Write};

/// Where a kind lives in the REST API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    pub kind: &'static str,
    /// `""` for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub resource: &'static str,
    pub namespaced: bool,
}

/// Every kind the controllers read or write; the loop lists and watches all of them.
pub const WATCHED: &[ResourceInfo] = &[
    ResourceInfo {
        kind: "Node",
        group: "",
        version: "v1",
        resource: "nodes",
        namespaced: false,
    },
    ResourceInfo {
        kind: "Pod",
        group: "",
        version: "v1",
        resource: "pods",
        namespaced: true,
    },
    ResourceInfo {
        kind: "Service",
        group: "",
        version: "v1",
        resource: "services",
        namespaced: true,
    },
    ResourceInfo {
        kind: "PersistentVolumeClaim",
        group: "",
        version: "v1",
        resource: "persistentvolumeclaims",
        namespaced: true,
    },
    ResourceInfo {
        kind: "Lease",
        group: "coordination.k8s.io",
        version: "v1",
        resource: "leases",
        namespaced: true,
    },
    ResourceInfo {
        kind: "Deployment",
        group: "apps",
        version: "v1",
        resource: "deployments",
        namespaced: true,
    },
    ResourceInfo {
        kind: "ReplicaSet",
        group: "apps",
        version: "v1",
        resource: "replicasets",
        namespaced: true,
    },
    ResourceInfo {
        kind: "StatefulSet",
        group: "apps",
        version: "v1",
        resource: "statefulsets",
        namespaced: true,
    },
    ResourceInfo {
        kind: "DaemonSet",
        group: "apps",
        version: "v1",
        resource: "daemonsets",
        namespaced: true,
    },
    ResourceInfo {
        kind: "Job",
        group: "batch",
        version: "v1",
        resource: "jobs",
        namespaced: true,
    },
    ResourceInfo {
        kind: "EndpointSlice",
        group: "discovery.k8s.io",
        version: "v1",
        resource: "endpointslices",
        namespaced: true,
    },
    ResourceInfo {
        kind: "ServiceImport",
        group: "multicluster.x-k8s.io",
        version: "v1alpha1",
        resource: "serviceimports",
        namespaced: true,
    },
];

pub fn resource_info(kind: &str) -> Option<&'static ResourceInfo> {
    WATCHED.iter().find(|info| info.kind == kind)
}

/// A write for a kind the simulator does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("member-sim does not write {0:?} objects; it writes {known}", known = known_kinds())]
pub struct UnknownKind(pub String);

fn known_kinds() -> String {
    WATCHED
        .iter()
        .map(|i| i.kind)
        .collect::<Vec<_>>()
        .join(", ")
}

impl ResourceInfo {
    /// `/api/v1` or `/apis/<group>/<version>`.
    pub fn prefix(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// The collection path, in `namespace` when the kind is namespaced.
    pub fn collection_path(&self, namespace: &str) -> String {
        if self.namespaced && !namespace.is_empty() {
            format!("{}/namespaces/{namespace}/{}", self.prefix(), self.resource)
        } else {
            format!("{}/{}", self.prefix(), self.resource)
        }
    }
}

/// One REST call.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiRequest {
    pub method: &'static str,
    pub path: String,
    pub body: Option<Value>,
}

fn object_path(key: &ObjectKey) -> Result<String, UnknownKind> {
    let info = resource_info(&key.kind).ok_or_else(|| UnknownKind(key.kind.clone()))?;
    Ok(format!(
        "{}/{}",
        info.collection_path(&key.namespace),
        key.name
    ))
}

impl Write {
    /// The request performing this write. Deletes are immediate (`gracePeriodSeconds=0`): the
    /// simulated kubelet has nothing to shut down.
    pub fn request(&self) -> Result<ApiRequest, UnknownKind> {
        Ok(match self {
            Write::Create(object) => {
                let key = ObjectKey::of(object);
                let info = resource_info(&key.kind).ok_or_else(|| UnknownKind(key.kind.clone()))?;
                ApiRequest {
                    method: "POST",
                    path: info.collection_path(&key.namespace),
                    body: Some(object.clone()),
                }
            }
            Write::Update(object) => ApiRequest {
                method: "PUT",
                path: object_path(&ObjectKey::of(object))?,
                body: Some(object.clone()),
            },
            Write::UpdateStatus(object) => ApiRequest {
                method: "PUT",
                path: format!("{}/status", object_path(&ObjectKey::of(object))?),
                body: Some(object.clone()),
            },
            Write::Bind { pod, node } => ApiRequest {
                method: "POST",
                path: format!("{}/binding", object_path(pod)?),
                body: Some(json!({
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": pod.name, "namespace": pod.namespace},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                })),
            },
            Write::Delete(key) => ApiRequest {
                method: "DELETE",
                path: format!("{}?gracePeriodSeconds=0", object_path(key)?),
                body: None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_become_rest_requests() {
        let pod = json!({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}});
        let node = json!({"kind": "Node", "metadata": {"name": "n1"}});
        let rs = json!({"kind": "ReplicaSet", "metadata": {"name": "web-abc", "namespace": "ns"}});
        let cases: Vec<(Write, &str, &str)> = vec![
            (
                Write::Create(pod.clone()),
                "POST",
                "/api/v1/namespaces/ns/pods",
            ),
            (Write::Update(node.clone()), "PUT", "/api/v1/nodes/n1"),
            (Write::UpdateStatus(node), "PUT", "/api/v1/nodes/n1/status"),
            (
                Write::UpdateStatus(rs),
                "PUT",
                "/apis/apps/v1/namespaces/ns/replicasets/web-abc/status",
            ),
            (
                Write::Bind {
                    pod: ObjectKey::of(&pod),
                    node: "n1".into(),
                },
                "POST",
                "/api/v1/namespaces/ns/pods/p/binding",
            ),
            (
                Write::Delete(ObjectKey::new("EndpointSlice", "ns", "s")),
                "DELETE",
                "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices/s?gracePeriodSeconds=0",
            ),
        ];
        for (write, method, path) in cases {
            let request = write.request().expect("known kind");
            assert_eq!(
                (request.method, request.path.as_str()),
                (method, path),
                "{write:?}"
            );
        }
        let binding = Write::Bind {
            pod: ObjectKey::of(&pod),
            node: "n1".into(),
        }
        .request()
        .expect("known");
        assert_eq!(binding.body.expect("body")["target"]["name"], "n1");
    }

    #[test]
    fn unknown_kinds_are_refused_with_the_known_list() {
        let error = Write::Delete(ObjectKey::new("Secret", "ns", "s"))
            .request()
            .expect_err("unknown");
        assert!(error.to_string().contains("\"Secret\""), "{error}");
        assert!(error.to_string().contains("Pod, Service"), "{error}");
    }
}
