//! A throughput and latency benchmark of the pure core, for the project's benchmark command and
//! docs/benchmarks.md: decisions per second and p50/p99 latency of one scheduling decision (Filter → Score →
//! Select → AssignReplicas with the default plugins) over N candidate clusters, with region and cluster spread
//! constraints and dynamic weights.
//!
//! Invariants: inputs are generated deterministically (a fixed linear congruential sequence), so runs are
//! comparable; parsing, profile building and snapshotting happen once, outside the timed region, as in a live
//! scheduler that keeps a cluster cache. This is the one module that reads the clock.

use std::time::{Duration, Instant};

use karmada_api::{Cluster, Placement, ResourceBindingSpec};
use serde_json::json;

use crate::error::InputError;
use crate::framework::{Framework, Registry};
use crate::placement::prepare;
use crate::scheduler::{ScheduleRequest, schedule};
use crate::snapshot::ClusterSnapshot;

/// What to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchConfig {
    /// Candidate clusters.
    pub clusters: usize,
    /// Timed decisions (after a tenth as many untimed warm-up decisions).
    pub decisions: usize,
    /// Replicas per binding.
    pub replicas: i32,
}

impl BenchConfig {
    /// A configuration whose run takes roughly the same time for any cluster count.
    pub fn for_clusters(clusters: usize) -> Self {
        // About a second of work per count: short runs on a shared machine measure the neighbours.
        let decisions = (2_000_000 / clusters.max(1)).clamp(50, 50_000);
        Self {
            clusters,
            decisions,
            replicas: 60,
        }
    }
}

/// What was measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BenchReport {
    pub clusters: usize,
    pub decisions: usize,
    pub scheduled: usize,
    pub decisions_per_second: f64,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl std::fmt::Display for BenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>5} clusters: {:>9.0} decisions/s, p50 {:>9.1} µs, p99 {:>9.1} µs, max {:>9.1} µs ({} decisions, {} scheduled)",
            self.clusters,
            self.decisions_per_second,
            self.p50.as_secs_f64() * 1e6,
            self.p99.as_secs_f64() * 1e6,
            self.max.as_secs_f64() * 1e6,
            self.decisions,
            self.scheduled
        )
    }
}

struct Sequence(u64);

impl Sequence {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound.max(1)
    }
}

fn invalid(error: serde_json::Error) -> InputError {
    InputError::new("bench input", error.to_string())
}

/// Generates `count` clusters over `count / 10` regions (at least 2) with varied free CPU.
pub fn synthetic_clusters(count: usize) -> Result<Vec<ClusterSnapshot>, InputError> {
    let regions = (count / 10).max(2);
    let mut sequence = Sequence(0x5eed);
    (0..count)
        .map(|index| {
            let cpu = 4 + sequence.next(60);
            let allocated = sequence.next(cpu);
            let value = json!({
                "apiVersion": "cluster.karmada.io/v1alpha1",
                "kind": "Cluster",
                "metadata": {"name": format!("member-{index:05}"), "labels": {"env": if index % 7 == 0 { "dev" } else { "prod" }}},
                "spec": {"syncMode": "Push", "region": format!("region-{:03}", index % regions), "provider": "sim"},
                "status": {
                    "apiEnablements": [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}],
                    "resourceSummary": {
                        "allocatable": {"cpu": cpu.to_string(), "memory": "256Gi", "pods": "110"},
                        "allocated": {"cpu": allocated.to_string(), "memory": "16Gi", "pods": "20"}
                    }
                }
            });
            let cluster: Cluster = serde_json::from_value(value).map_err(invalid)?;
            ClusterSnapshot::new(cluster)
        })
        .collect()
}

/// Runs the benchmark.
pub fn run(config: &BenchConfig) -> Result<BenchReport, InputError> {
    let clusters = synthetic_clusters(config.clusters)?;
    let registry = Registry::in_tree()?;
    let framework = Framework::with_defaults(&registry)?;
    let placement: Placement = serde_json::from_value(json!({
        "clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}},
        "spreadConstraints": [
            {"spreadByField": "region", "minGroups": 2, "maxGroups": 3},
            {"spreadByField": "cluster", "minGroups": 2, "maxGroups": 10}
        ],
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                              "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
    }))
    .map_err(invalid)?;
    let prepared = prepare(&placement, "bench placement")?;
    let specs: Vec<ResourceBindingSpec> = (0..16)
        .map(|variant| {
            serde_json::from_value(json!({
                "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "bench", "name": format!("app-{variant}"), "uid": format!("uid-{variant}")},
                "replicas": config.replicas + variant,
                "replicaRequirements": {"resourceRequest": {"cpu": "250m", "memory": "512Mi"}}
            }))
            .map_err(invalid)
        })
        .collect::<Result<_, _>>()?;
    let decide = |spec: &ResourceBindingSpec| -> Result<bool, InputError> {
        let request = ScheduleRequest {
            spec,
            placement: &placement,
            prepared: &prepared,
            workload: None,
            observed_affinity: None,
            fresh: false,
            keep_empty: false,
            scheduler_name: "default-scheduler",
            accurate: None,
        };
        Ok(schedule(&framework, &request, &clusters)?.result.is_ok())
    };
    for index in 0..config.decisions / 10 {
        decide(&specs[index % specs.len()])?;
    }
    let mut latencies = Vec::with_capacity(config.decisions);
    let mut scheduled = 0;
    let started = Instant::now();
    for index in 0..config.decisions {
        let begin = Instant::now();
        if decide(&specs[index % specs.len()])? {
            scheduled += 1;
        }
        latencies.push(begin.elapsed());
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let percentile = |p: usize| {
        latencies
            .get((latencies.len() * p / 100).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Ok(BenchReport {
        clusters: config.clusters,
        decisions: config.decisions,
        scheduled,
        decisions_per_second: config.decisions as f64
            / elapsed.as_secs_f64().max(f64::MIN_POSITIVE),
        p50: percentile(50),
        p99: percentile(99),
        max: latencies.last().copied().unwrap_or_default(),
    })
}
