//! Karmada's resource-propagation metrics (its controller-manager's and agent's), under Karmada's names, labels
//! and buckets (exponential from 1 ms, doubling, 12 buckets):
//!
//! - `resource_match_policy_duration_seconds`: the detector finding the policy for a template;
//! - `resource_apply_policy_duration_seconds{result}` and `policy_apply_attempts_total{result}`: the detector
//!   applying it (claim and binding);
//! - `policy_preemption_total{result}`: a template taken over by a higher-priority policy;
//! - `binding_sync_work_duration_seconds{result}`: the binding controller syncing a binding's Works;
//! - `work_sync_workload_duration_seconds{result}`: the execution controller syncing a Work to its cluster;
//! - `create_resource_to_cluster{result,apiversion,kind,member_cluster,recreate}`,
//!   `update_resource_to_cluster{result,apiversion,kind,member_cluster,operationResult}` and
//!   `delete_resource_from_cluster{result,apiversion,kind,member_cluster}`: each write to a member.
//!
//! The last three are counters Karmada exposes without the `_total` suffix; OpenMetrics gives every counter one,
//! so they are exposed untyped under Karmada's exact names (rates work the same).
//!
//! Process-wide ([`global`]), as Karmada's are: the controllers record wherever they run, and a component
//! exposes them by [`PropagationMetrics::register`]ing them in the registry it serves.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;

/// `result` label values.
const SUCCESS: &str = "success";
const ERROR: &str = "error";

fn result_label(ok: bool) -> &'static str {
    if ok { SUCCESS } else { ERROR }
}

/// Karmada's propagation latency buckets: 1 ms to ~2 s.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 12))
}

/// A counter exposed untyped, under its name without `_total` (Karmada's member write counters).
#[derive(Clone, Debug, Default)]
pub struct UntypedCounter(Counter);

impl UntypedCounter {
    pub fn inc(&self) {
        self.0.inc();
    }

    pub fn get(&self) -> u64 {
        self.0.get()
    }
}

impl TypedMetric for UntypedCounter {
    const TYPE: MetricType = MetricType::Unknown;
}

impl EncodeMetric for UntypedCounter {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&self.0.get())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Unknown
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CreateLabels {
    result: &'static str,
    apiversion: String,
    kind: String,
    member_cluster: String,
    recreate: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpdateLabels {
    result: &'static str,
    apiversion: String,
    kind: String,
    member_cluster: String,
    #[prometheus(flatten)]
    operation: OperationResult,
}

/// `operationResult` of an update: Karmada's camel-cased label name, which the derive cannot spell.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct OperationResult(&'static str);

impl EncodeLabelSet for OperationResult {
    fn encode(
        &self,
        encoder: &mut prometheus_client::encoding::LabelSetEncoder,
    ) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeLabel;
        ("operationResult", self.0).encode(encoder.encode_label())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeleteLabels {
    result: &'static str,
    apiversion: String,
    kind: String,
    member_cluster: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// What an update of a member object did (`operationResult`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// The object was rewritten.
    Updated,
    /// It already held the manifest.
    Unchanged,
    /// The update failed.
    None,
}

/// The families, shared by every clone.
#[derive(Clone)]
pub struct PropagationMetrics {
    match_policy: Histogram,
    apply_policy: Histograms<ResultLabel>,
    apply_attempts: Family<ResultLabel, Counter>,
    preemption: Family<ResultLabel, Counter>,
    sync_work: Histograms<ResultLabel>,
    sync_workload: Histograms<ResultLabel>,
    create: Family<CreateLabels, UntypedCounter>,
    update: Family<UpdateLabels, UntypedCounter>,
    delete: Family<DeleteLabels, UntypedCounter>,
}

static GLOBAL: LazyLock<PropagationMetrics> = LazyLock::new(|| PropagationMetrics {
    match_policy: latency_histogram(),
    apply_policy: Family::new_with_constructor(latency_histogram),
    apply_attempts: Family::default(),
    preemption: Family::default(),
    sync_work: Family::new_with_constructor(latency_histogram),
    sync_workload: Family::new_with_constructor(latency_histogram),
    create: Family::default(),
    update: Family::default(),
    delete: Family::default(),
});

/// The process's propagation metrics.
pub fn global() -> &'static PropagationMetrics {
    &GLOBAL
}

impl PropagationMetrics {
    /// Exposes every family in `registry` (no prefix: the names are Karmada's). The `result` series start at 0,
    /// so a rate of errors is 0 rather than absent before the first one.
    pub fn register(&self, registry: &mut Registry) {
        for result in [SUCCESS, ERROR] {
            let labels = ResultLabel { result };
            drop(self.apply_policy.get_or_create(&labels));
            drop(self.apply_attempts.get_or_create(&labels));
            drop(self.preemption.get_or_create(&labels));
            drop(self.sync_work.get_or_create(&labels));
            drop(self.sync_workload.get_or_create(&labels));
        }
        registry.register(
            "resource_match_policy_duration_seconds",
            "Duration in seconds to find a matched PropagationPolicy or ClusterPropagationPolicy for a resource template",
            self.match_policy.clone(),
        );
        registry.register(
            "resource_apply_policy_duration_seconds",
            "Duration in seconds to apply a PropagationPolicy or ClusterPropagationPolicy to a resource template, by result",
            self.apply_policy.clone(),
        );
        registry.register(
            "policy_apply_attempts",
            "Number of attempts to apply a PropagationPolicy or ClusterPropagationPolicy, by result",
            self.apply_attempts.clone(),
        );
        registry.register(
            "policy_preemption",
            "Number of preemptions of a resource template by another propagation policy, by result",
            self.preemption.clone(),
        );
        registry.register(
            "binding_sync_work_duration_seconds",
            "Duration in seconds to sync the Works of a ResourceBinding or ClusterResourceBinding, by result",
            self.sync_work.clone(),
        );
        registry.register(
            "work_sync_workload_duration_seconds",
            "Duration in seconds to sync the workload of a Work to its member cluster, by result",
            self.sync_workload.clone(),
        );
        registry.register(
            "create_resource_to_cluster",
            "Number of creations of a resource in a member cluster, by result, API version, kind, cluster and \
             whether it was a re-creation",
            self.create.clone(),
        );
        registry.register(
            "update_resource_to_cluster",
            "Number of updates of a resource in a member cluster, by result, API version, kind, cluster and what \
             the update did (updated, unchanged, none)",
            self.update.clone(),
        );
        registry.register(
            "delete_resource_from_cluster",
            "Number of deletions of a resource from a member cluster, by result, API version, kind and cluster",
            self.delete.clone(),
        );
    }

    pub fn observe_match_policy(&self, took: Duration) {
        self.match_policy.observe(took.as_secs_f64());
    }

    /// One attempt to apply a policy to a template, which took `took`.
    pub fn observe_apply_policy(&self, ok: bool, took: Duration) {
        let labels = ResultLabel {
            result: result_label(ok),
        };
        self.apply_policy
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        self.apply_attempts.get_or_create(&labels).inc();
    }

    pub fn count_preemption(&self, ok: bool) {
        self.preemption
            .get_or_create(&ResultLabel {
                result: result_label(ok),
            })
            .inc();
    }

    pub fn observe_sync_work(&self, ok: bool, took: Duration) {
        self.sync_work
            .get_or_create(&ResultLabel {
                result: result_label(ok),
            })
            .observe(took.as_secs_f64());
    }

    pub fn observe_sync_workload(&self, ok: bool, took: Duration) {
        self.sync_workload
            .get_or_create(&ResultLabel {
                result: result_label(ok),
            })
            .observe(took.as_secs_f64());
    }

    pub fn count_create(&self, ok: bool, api_version: &str, kind: &str, cluster: &str) {
        self.create
            .get_or_create(&CreateLabels {
                result: result_label(ok),
                apiversion: api_version.to_string(),
                kind: kind.to_string(),
                member_cluster: cluster.to_string(),
                recreate: "false",
            })
            .inc();
    }

    pub fn count_update(
        &self,
        outcome: UpdateOutcome,
        api_version: &str,
        kind: &str,
        cluster: &str,
    ) {
        let operation = match outcome {
            UpdateOutcome::Updated => "updated",
            UpdateOutcome::Unchanged => "unchanged",
            UpdateOutcome::None => "none",
        };
        self.update
            .get_or_create(&UpdateLabels {
                result: result_label(outcome != UpdateOutcome::None),
                apiversion: api_version.to_string(),
                kind: kind.to_string(),
                member_cluster: cluster.to_string(),
                operation: OperationResult(operation),
            })
            .inc();
    }

    pub fn count_delete(&self, ok: bool, api_version: &str, kind: &str, cluster: &str) {
        self.delete
            .get_or_create(&DeleteLabels {
                result: result_label(ok),
                apiversion: api_version.to_string(),
                kind: kind.to_string(),
                member_cluster: cluster.to_string(),
            })
            .inc();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn exposition() -> String {
        crate::runtime::metrics::exposition_of(|registry| global().register(registry))
    }

    #[test]
    fn member_writes_keep_karmadas_names_and_labels_without_a_total_suffix() {
        let metrics = global();
        metrics.count_create(true, "apps/v1", "Deployment", "member1");
        metrics.count_update(UpdateOutcome::Unchanged, "apps/v1", "Deployment", "member1");
        metrics.count_update(UpdateOutcome::None, "v1", "ConfigMap", "member2");
        metrics.count_delete(true, "apps/v1", "Deployment", "member1");
        let text = exposition();
        for line in [
            "# TYPE create_resource_to_cluster unknown",
            r#"create_resource_to_cluster{result="success",apiversion="apps/v1",kind="Deployment",member_cluster="member1",recreate="false"} 1"#,
            r#"update_resource_to_cluster{result="success",apiversion="apps/v1",kind="Deployment",member_cluster="member1",operationResult="unchanged"} 1"#,
            r#"update_resource_to_cluster{result="error",apiversion="v1",kind="ConfigMap",member_cluster="member2",operationResult="none"} 1"#,
            r#"delete_resource_from_cluster{result="success",apiversion="apps/v1",kind="Deployment",member_cluster="member1"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
        }
        assert!(!text.contains("create_resource_to_cluster_total"), "{text}");
    }

    #[test]
    fn latencies_use_karmadas_buckets_and_results() {
        let metrics = global();
        metrics.observe_match_policy(Duration::from_micros(300));
        metrics.observe_apply_policy(false, Duration::from_millis(3));
        metrics.observe_sync_work(true, Duration::from_millis(5));
        metrics.observe_sync_workload(true, Duration::from_secs(5));
        metrics.count_preemption(true);
        let text = exposition();
        for line in [
            r#"resource_match_policy_duration_seconds_bucket{le="0.001"} 1"#,
            r#"resource_match_policy_duration_seconds_bucket{le="2.048"} 1"#,
            r#"resource_apply_policy_duration_seconds_count{result="error"} 1"#,
            r#"policy_apply_attempts_total{result="error"} 1"#,
            r#"policy_preemption_total{result="success"} 1"#,
            r#"binding_sync_work_duration_seconds_bucket{le="0.008",result="success"} 1"#,
            // 5 s is past the last bucket (2.048 s).
            r#"work_sync_workload_duration_seconds_bucket{le="2.048",result="success"} 0"#,
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
        }
    }
}
