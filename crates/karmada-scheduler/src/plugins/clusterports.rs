//! ClusterPorts filter (the seed's; not in Karmada): a cluster that cannot offer a port the workload needs is
//! not a candidate.
//!
//! What a workload needs: the `hostPort`s of its pod template's containers and init containers, and the
//! `nodePort`s of a Service. What a cluster cannot offer: the ports listed in its annotation
//! `cluster.karmada.io/unavailable-ports`, a comma-separated list of `PORT`, `FROM-TO` or either with `/PROTOCOL`
//! (protocol defaults to TCP), e.g. `80,443,30000-30100/UDP`. Without the annotation a cluster offers every port.
//! A malformed annotation rejects the cluster with a detail that shows the accepted form (the cluster's owner
//! must fix it; scheduling onto a cluster whose ports are unknown would be a guess).

use serde_json::Value;

use crate::framework::{Plugin, Rejection, SchedulingContext, Verdict};
use crate::snapshot::ClusterSnapshot;

pub const NAME: &str = "ClusterPorts";
/// The cluster annotation listing ports it cannot offer.
pub const ANNOTATION_UNAVAILABLE_PORTS: &str = "cluster.karmada.io/unavailable-ports";

/// A port a workload needs: number and protocol.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NeededPort {
    pub port: i64,
    pub protocol: String,
}

/// The host ports and node ports `workload` needs.
pub fn needed_ports(workload: &Value) -> Vec<NeededPort> {
    let mut needed = Vec::new();
    let protocol = |port: &Value| {
        port.get("protocol")
            .and_then(Value::as_str)
            .unwrap_or("TCP")
            .to_string()
    };
    if workload.get("kind").and_then(Value::as_str) == Some("Service") {
        for port in workload
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(node_port) = port.get("nodePort").and_then(Value::as_i64) {
                needed.push(NeededPort {
                    port: node_port,
                    protocol: protocol(port),
                });
            }
        }
    }
    let pod_spec = workload
        .pointer("/spec/template/spec")
        .or_else(|| workload.pointer("/spec/jobTemplate/spec/template/spec"))
        .or_else(|| {
            (workload.get("kind").and_then(Value::as_str) == Some("Pod"))
                .then(|| workload.get("spec"))
                .flatten()
        });
    if let Some(pod_spec) = pod_spec {
        for list in ["containers", "initContainers"] {
            for container in pod_spec
                .get(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                for port in container
                    .get("ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(host_port) = port.get("hostPort").and_then(Value::as_i64) {
                        needed.push(NeededPort {
                            port: host_port,
                            protocol: protocol(port),
                        });
                    }
                }
            }
        }
    }
    needed.sort();
    needed.dedup();
    needed
}

/// One entry of the unavailable-ports annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PortRange {
    from: i64,
    to: i64,
    protocol: String,
}

fn parse_unavailable(annotation: &str) -> Result<Vec<PortRange>, String> {
    annotation
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let (range, protocol) = entry.split_once('/').unwrap_or((entry, "TCP"));
            let (from, to) = range.split_once('-').unwrap_or((range, range));
            let parse = |text: &str| text.trim().parse::<i64>().ok().filter(|port| (1..=65535).contains(port));
            match (parse(from), parse(to)) {
                (Some(from), Some(to)) if from <= to => Ok(PortRange { from, to, protocol: protocol.trim().to_uppercase() }),
                _ => Err(format!("{ANNOTATION_UNAVAILABLE_PORTS} entry {entry:?} is malformed: expected PORT or FROM-TO (1..65535), optionally /PROTOCOL")),
            }
        })
        .collect()
}

/// See the module documentation.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClusterPorts;

impl Plugin for ClusterPorts {
    fn name(&self) -> &str {
        NAME
    }

    fn filter(
        &self,
        context: &SchedulingContext<'_>,
        cluster: &ClusterSnapshot,
    ) -> Option<Verdict> {
        let reason = "cluster(s) could not offer the port(s) the workload needs";
        let (Some(workload), Some(annotation)) = (
            context.workload,
            cluster.annotation(ANNOTATION_UNAVAILABLE_PORTS),
        ) else {
            return Some(Verdict::Pass);
        };
        let needed = needed_ports(workload);
        if needed.is_empty() {
            return Some(Verdict::Pass);
        }
        let unavailable = match parse_unavailable(annotation) {
            Ok(ranges) => ranges,
            Err(problem) => {
                return Some(Verdict::Reject(Rejection::new(reason).with_detail(problem)));
            }
        };
        let blocked: Vec<String> = needed
            .iter()
            .filter(|need| {
                unavailable.iter().any(|range| {
                    range.protocol == need.protocol.to_uppercase()
                        && (range.from..=range.to).contains(&need.port)
                })
            })
            .map(|need| format!("{}/{}", need.port, need.protocol))
            .collect();
        Some(if blocked.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Reject(
                Rejection::new(reason)
                    .with_detail(format!("port(s) {} unavailable", blocked.join(", "))),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotation_forms_parse_and_garbage_is_described() {
        let ranges = parse_unavailable("80, 30000-30010/udp").expect("valid");
        assert_eq!(
            ranges[1],
            PortRange {
                from: 30000,
                to: 30010,
                protocol: "UDP".into()
            }
        );
        let problem = parse_unavailable("80,http").expect_err("invalid");
        assert!(problem.contains("expected PORT or FROM-TO"));
    }
}
