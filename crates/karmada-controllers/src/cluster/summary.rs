//! Node and resource summaries of a member, from its nodes and pods.
//!
//! allocatable = Σ node allocatable; allocated = Σ requests of pods bound to a node and not finished (plus one
//! `pods` per such pod); allocating = Σ requests of pods still waiting for a node; allocatableModelings = the
//! number of nodes in each grade of the cluster's resource models. A pod's request is the larger of the sum
//! over its containers and each init container, plus its overhead. Unparsable quantities count as zero: a
//! member's odd value must not stop its status from being reported.
//!
//! Pure.

use std::collections::BTreeMap;

use apimachinery::Quantity;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;
use karmada_api::cluster::{AllocatableModeling, NodeSummary, ResourceModel, ResourceSummary};

type Totals = BTreeMap<String, Quantity>;

fn parse(q: &WireQuantity) -> Quantity {
    Quantity::parse(&q.0).unwrap_or_else(|_| Quantity::zero())
}

fn add_into(totals: &mut Totals, name: &str, q: &Quantity) {
    let entry = totals
        .entry(name.to_string())
        .or_insert_with(Quantity::zero);
    if let Some(sum) = entry.checked_add(q) {
        *entry = sum;
    }
}

fn to_wire(totals: Totals) -> BTreeMap<String, WireQuantity> {
    totals
        .into_iter()
        .map(|(k, v)| (k, WireQuantity(v.to_string())))
        .collect()
}

fn node_is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn allocatable_of(node: &Node) -> Totals {
    node.status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .map(|a| a.iter().map(|(k, v)| (k.clone(), parse(v))).collect())
        .unwrap_or_default()
}

/// Node counts.
pub fn node_summary(nodes: &[Node]) -> NodeSummary {
    NodeSummary {
        total_num: i32::try_from(nodes.len()).unwrap_or(i32::MAX),
        ready_num: i32::try_from(nodes.iter().filter(|n| node_is_ready(n)).count())
            .unwrap_or(i32::MAX),
    }
}

/// The resource requests of one pod.
pub fn pod_requests(pod: &Pod) -> Totals {
    let Some(spec) = pod.spec.as_ref() else {
        return Totals::new();
    };
    let requests_of = |c: &k8s_openapi::api::core::v1::Container| -> Totals {
        c.resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .map(|r| r.iter().map(|(k, v)| (k.clone(), parse(v))).collect())
            .unwrap_or_default()
    };
    let mut total = Totals::new();
    for c in &spec.containers {
        for (k, v) in requests_of(c) {
            add_into(&mut total, &k, &v);
        }
    }
    for c in spec.init_containers.iter().flatten() {
        for (k, v) in requests_of(c) {
            if total.get(&k).is_none_or(|t| *t < v) {
                total.insert(k, v);
            }
        }
    }
    for (k, v) in spec.overhead.iter().flatten() {
        add_into(&mut total, k, &parse(v));
    }
    total
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

fn is_bound(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

/// The grade of one node: the highest grade whose every range minimum the node reaches. `None` when the
/// models are empty or the node is below grade 0 in some resource.
fn grade_of(node: &Totals, models: &[ResourceModel]) -> Option<u32> {
    models
        .iter()
        .filter(|m| {
            m.ranges.iter().all(|r| {
                let have = node.get(&r.name).cloned().unwrap_or_else(Quantity::zero);
                have >= parse(&r.min)
            })
        })
        .map(|m| m.grade)
        .max()
}

/// Resource totals and modelings of a member.
pub fn resource_summary(nodes: &[Node], pods: &[Pod], models: &[ResourceModel]) -> ResourceSummary {
    let mut allocatable = Totals::new();
    let mut counts: BTreeMap<u32, i32> = models.iter().map(|m| (m.grade, 0)).collect();
    for node in nodes {
        let node_alloc = allocatable_of(node);
        for (k, v) in &node_alloc {
            add_into(&mut allocatable, k, v);
        }
        if let Some(grade) = grade_of(&node_alloc, models) {
            *counts.entry(grade).or_default() += 1;
        }
    }
    let mut allocated = Totals::new();
    let mut allocating = Totals::new();
    let one_pod = Quantity::parse("1").unwrap_or_else(|_| Quantity::zero());
    for pod in pods {
        let target = match (is_bound(pod), phase(pod)) {
            (_, "Succeeded" | "Failed") => continue,
            (true, _) => &mut allocated,
            (false, _) => &mut allocating,
        };
        for (k, v) in pod_requests(pod) {
            add_into(target, &k, &v);
        }
        add_into(target, "pods", &one_pod);
    }
    ResourceSummary {
        allocatable: to_wire(allocatable),
        allocated: to_wire(allocated),
        allocating: to_wire(allocating),
        allocatable_modelings: counts
            .into_iter()
            .map(|(grade, count)| AllocatableModeling { grade, count })
            .collect(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use karmada_api::cluster::ResourceModelRange;
    use serde_json::json;

    fn node(cpu: &str, memory: &str, ready: bool) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n"},
            "status": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]
            }
        }))
        .unwrap()
    }

    fn pod(node: Option<&str>, phase: &str, cpu: &str, init_cpu: Option<&str>) -> Pod {
        let mut spec = json!({"containers": [
            {"name": "a", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": cpu}}}
        ]});
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        if let Some(i) = init_cpu {
            spec["initContainers"] = json!([{"name": "i", "resources": {"requests": {"cpu": i}}}]);
        }
        serde_json::from_value(
            json!({"metadata": {"name": "p"}, "spec": spec, "status": {"phase": phase}}),
        )
        .unwrap()
    }

    fn models() -> Vec<ResourceModel> {
        let range = |name: &str, min: &str, max: &str| ResourceModelRange {
            name: name.into(),
            min: WireQuantity(min.into()),
            max: WireQuantity(max.into()),
        };
        vec![
            ResourceModel {
                grade: 0,
                ranges: vec![range("cpu", "0", "2"), range("memory", "0", "4Gi")],
            },
            ResourceModel {
                grade: 1,
                ranges: vec![range("cpu", "2", "8"), range("memory", "4Gi", "32Gi")],
            },
            ResourceModel {
                grade: 2,
                ranges: vec![range("cpu", "8", "1000"), range("memory", "32Gi", "1Ti")],
            },
        ]
    }

    #[test]
    fn nodes_are_counted_and_graded() {
        let nodes = vec![
            node("4", "16Gi", true),
            node("16", "8Gi", false),
            node("1", "2Gi", true),
        ];
        assert_eq!(
            node_summary(&nodes),
            NodeSummary {
                total_num: 3,
                ready_num: 2
            }
        );
        let s = resource_summary(&nodes, &[], &models());
        assert_eq!(s.allocatable["cpu"], WireQuantity("21".into()));
        assert_eq!(s.allocatable["pods"], WireQuantity("330".into()));
        // 16 cpu / 8Gi is grade 1: memory keeps it below grade 2.
        let counts: Vec<(u32, i32)> = s
            .allocatable_modelings
            .iter()
            .map(|m| (m.grade, m.count))
            .collect();
        assert_eq!(counts, vec![(0, 1), (1, 2), (2, 0)]);
    }

    #[test]
    fn pods_split_into_allocated_and_allocating() {
        let pods = vec![
            pod(Some("n"), "Running", "250m", None),
            pod(Some("n"), "Succeeded", "8", None),
            pod(None, "Pending", "1", Some("3")),
        ];
        let s = resource_summary(&[], &pods, &[]);
        assert_eq!(s.allocated["cpu"], WireQuantity("500m".into()));
        assert_eq!(s.allocated["pods"], WireQuantity("1".into()));
        assert_eq!(s.allocated["memory"], WireQuantity("1Gi".into()));
        // The init container's 3 cpu exceeds the containers' 2.
        assert_eq!(s.allocating["cpu"], WireQuantity("3".into()));
        assert!(s.allocatable.is_empty());
    }
}
