//! The shape of one simulated member cluster: its nodes, version, topology, address ranges and
//! timings. Defaults match the `karmada member-sim` flags (3 nodes × 8 CPU / 32Gi / 110 pods,
//! Kubernetes v1.30.2).

use jiff::SignedDuration;
use serde::{Deserialize, Serialize};

/// Everything the simulated controllers need to know about the cluster they pretend to be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SimConfig {
    /// The member cluster's name; node names are `<name>-node-<i>`.
    pub name: String,
    pub nodes: u32,
    pub node_cpu: String,
    pub node_memory: String,
    pub node_pods: String,
    pub node_ephemeral_storage: String,
    pub kubernetes_version: String,
    pub region: String,
    pub zone: String,
    pub provider: String,
    pub instance_type: String,
    /// Nodes' InternalIPs are taken in order from this block, from `.2` on.
    pub node_cidr: String,
    /// Each node `i` gets the `/24` number `i` of this block for its pods.
    pub pod_cidr: String,
    pub service_cidr: String,
    /// From binding to Running and Ready.
    #[serde(with = "seconds")]
    pub pod_startup_delay: SignedDuration,
    /// How long a Job's pod runs before it succeeds.
    #[serde(with = "seconds")]
    pub job_run_time: SignedDuration,
    /// Kubelet lease renewal period (Kubernetes: 10s, lease duration 40s).
    #[serde(with = "seconds")]
    pub lease_renew_interval: SignedDuration,
    /// How often an unchanged node status is re-posted (Kubernetes: 5m).
    #[serde(with = "seconds")]
    pub node_status_report_frequency: SignedDuration,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            name: "member".to_string(),
            nodes: 3,
            node_cpu: "8".to_string(),
            node_memory: "32Gi".to_string(),
            node_pods: "110".to_string(),
            node_ephemeral_storage: "100Gi".to_string(),
            kubernetes_version: "v1.30.2".to_string(),
            region: "region-1".to_string(),
            zone: "zone-a".to_string(),
            provider: "member-sim".to_string(),
            instance_type: "sim.large".to_string(),
            node_cidr: "172.18.0.0/16".to_string(),
            pod_cidr: "10.244.0.0/16".to_string(),
            service_cidr: "10.96.0.0/12".to_string(),
            pod_startup_delay: SignedDuration::from_secs(2),
            job_run_time: SignedDuration::from_secs(5),
            lease_renew_interval: SignedDuration::from_secs(10),
            node_status_report_frequency: SignedDuration::from_secs(300),
        }
    }
}

mod seconds {
    use jiff::SignedDuration;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(duration: &SignedDuration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(duration.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SignedDuration, D::Error> {
        let seconds = f64::deserialize(d)?;
        SignedDuration::try_from_secs_f64(seconds).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_round_trips_and_fills_defaults() {
        let config = SimConfig {
            nodes: 7,
            pod_startup_delay: SignedDuration::from_millis(1500),
            ..SimConfig::default()
        };
        let text = serde_json::to_string(&config).expect("serializes");
        assert!(text.contains("\"podStartupDelay\":1.5"), "{text}");
        assert_eq!(
            serde_json::from_str::<SimConfig>(&text).expect("parses"),
            config
        );
        let partial: SimConfig =
            serde_json::from_str(r#"{"name": "edge", "nodeCpu": "4"}"#).expect("parses");
        assert_eq!(partial.name, "edge");
        assert_eq!(partial.node_cpu, "4");
        assert_eq!(partial.nodes, 3);
        assert_eq!(partial.kubernetes_version, "v1.30.2");
        assert!(serde_json::from_str::<SimConfig>(r#"{"jobRunTime": "soon"}"#).is_err());
    }
}
