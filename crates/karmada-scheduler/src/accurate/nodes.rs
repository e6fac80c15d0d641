//! A node as the accurate estimator sees it: labels, taints, whether it is cordoned, and what is still free —
//! allocatable minus the requests of the pods bound to it, and the pods it still allows.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod, Taint};

use super::times_fits;
use crate::error::InputError;
use crate::estimator::Resources;
use crate::quantity::parse_milli;

/// One node, digested.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// `status.allocatable` minus the requests of the pods on the node, per resource, in milli-units (may go
    /// negative when a node is overcommitted; counted as 0).
    pub free: Resources,
    /// Pods the node still allows: allocatable pods minus the pods on it (not below 0).
    pub free_pods: i64,
}

/// Whether a pod takes room on its node: bound to one and not finished (the scheduler's cache drops Succeeded
/// and Failed pods).
pub fn pod_occupies_node(pod: &Pod) -> bool {
    let bound = pod
        .spec
        .as_ref()
        .and_then(|spec| spec.node_name.as_deref())
        .is_some_and(|node| !node.is_empty());
    let phase = pod
        .status
        .as_ref()
        .and_then(|status| status.phase.as_deref())
        .unwrap_or_default();
    bound && !matches!(phase, "Succeeded" | "Failed")
}

impl NodeInfo {
    /// Digests `node` with the requests (milli-units) of the pods bound to it.
    pub fn new<'r>(
        node: &Node,
        pods: impl IntoIterator<Item = &'r Resources>,
    ) -> Result<Self, InputError> {
        let name = node.metadata.name.clone().unwrap_or_default();
        let mut allocatable = Resources::new();
        for (resource, quantity) in node
            .status
            .as_ref()
            .and_then(|status| status.allocatable.as_ref())
            .into_iter()
            .flatten()
        {
            let milli = parse_milli(&quantity.0).map_err(|e| {
                InputError::new(
                    format!("Node {name}: status.allocatable.{resource}"),
                    e.to_string(),
                )
            })?;
            allocatable.insert(resource.clone(), milli);
        }
        let allowed_pods =
            i64::try_from(allocatable.remove("pods").unwrap_or(0) / 1000).unwrap_or(0);
        let mut free = allocatable;
        let mut count = 0i64;
        for requests in pods {
            count += 1;
            for (resource, milli) in requests {
                if resource != "pods" {
                    *free.entry(resource.clone()).or_insert(0) -= milli;
                }
            }
        }
        let spec = node.spec.as_ref();
        Ok(Self {
            name,
            labels: node.metadata.labels.clone().unwrap_or_default(),
            taints: spec.and_then(|s| s.taints.clone()).unwrap_or_default(),
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            free,
            free_pods: (allowed_pods - count).max(0),
        })
    }

    /// How many replicas requesting `request` fit here.
    pub fn replicas_of(&self, request: &Resources) -> i64 {
        match times_fits(&self.free, request) {
            Some(fits) => fits.min(self.free_pods),
            None => self.free_pods,
        }
    }
}
