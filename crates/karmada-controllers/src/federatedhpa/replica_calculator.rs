//! kube's HPA replica calculation over the pods of every member, as Karmada's FederatedHPA runs
//! it: pods are grouped (ignored: deleting or Failed; unready: Pending, or for CPU not yet
//! trustworthy after start; missing: no metric), the usage ratio is taken over the ready pods,
//! within the tolerance nothing changes, and a scale that unready or missing pods could reverse
//! is damped by assuming the worst for them. `calibration` is the members' total spec replicas
//! over the template's (a Duplicated workload counts every member's pods). `Pods` metrics (custom
//! metrics, an average value per pod) take the same path without CPU's readiness rules.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};

/// One pod of the target, from any member; `name` is unique across members.
#[derive(Clone, Debug, PartialEq)]
pub struct PodSample {
    pub name: String,
    pub phase: String,
    pub deleting: bool,
    /// The PodReady condition: status and last transition.
    pub ready: Option<(bool, Timestamp)>,
    pub start_time: Option<Timestamp>,
    /// Per container, its requests in thousandths (`cpu` in millicores).
    pub containers: Vec<ContainerRequests>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ContainerRequests {
    pub name: String,
    pub requests: BTreeMap<String, i64>,
}

/// One pod's metric value (thousandths), when it was sampled, over which window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PodMetric {
    pub value: i64,
    pub timestamp: Timestamp,
    pub window: SignedDuration,
}

/// The controller's tunables (Karmada's `--horizontal-pod-autoscaler-*` flags).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CalculatorConfig {
    pub tolerance: f64,
    pub cpu_initialization_period: SignedDuration,
    pub initial_readiness_delay: SignedDuration,
}

impl Default for CalculatorConfig {
    fn default() -> Self {
        Self {
            tolerance: 0.1,
            cpu_initialization_period: SignedDuration::from_mins(5),
            initial_readiness_delay: SignedDuration::from_secs(30),
        }
    }
}

/// Why no replica count could be computed; the text is kube's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CalculationError {
    #[error("no pods returned by selector while calculating replica count")]
    NoPods,
    #[error("did not receive metrics for any ready pods")]
    NoReadyMetrics,
    #[error("did not receive metrics for targeted pods (pods might be unready)")]
    NoTargetedMetrics,
    #[error("unable to get metric {metric}: no metrics returned from custom metrics API")]
    NoCustomMetrics { metric: String },
    #[error("missing request for {resource} in container {container} of Pod {pod}")]
    MissingRequest {
        resource: String,
        container: String,
        pod: String,
    },
    #[error("no metrics returned matched known pods")]
    NoMatchingRequests,
    #[error(
        "unable to get metrics for resource {resource}: no metrics returned from resource metrics API"
    )]
    NoMetrics { resource: String },
}

/// A proposal: replicas, and what was observed (utilization percent when the target is one,
/// and the average value in thousandths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proposal {
    pub replicas: i32,
    pub utilization: Option<i32>,
    pub average_value: i64,
}

/// The grouping of `groupPods`.
#[derive(Debug, Default)]
struct Groups {
    ready: usize,
    unready: BTreeSet<String>,
    missing: BTreeSet<String>,
    ignored: BTreeSet<String>,
}

fn group_pods(
    pods: &[PodSample],
    metrics: &BTreeMap<String, PodMetric>,
    is_cpu: bool,
    config: &CalculatorConfig,
    now: Timestamp,
) -> Groups {
    let mut groups = Groups::default();
    for pod in pods {
        if pod.deleting || pod.phase == "Failed" {
            groups.ignored.insert(pod.name.clone());
            continue;
        }
        if pod.phase == "Pending" {
            groups.unready.insert(pod.name.clone());
            continue;
        }
        let Some(metric) = metrics.get(&pod.name) else {
            groups.missing.insert(pod.name.clone());
            continue;
        };
        if is_cpu {
            let unready = match (pod.ready, pod.start_time) {
                (Some((ready, transition)), Some(start)) => {
                    if start + config.cpu_initialization_period > now {
                        // Within the initialization period: only a sample taken wholly after the
                        // pod became ready counts.
                        !ready || metric.timestamp < transition + metric.window
                    } else {
                        !ready && start + config.initial_readiness_delay > transition
                    }
                }
                _ => true,
            };
            if unready {
                groups.unready.insert(pod.name.clone());
                continue;
            }
        }
        groups.ready += 1;
    }
    groups
}

/// Each pod's total request of `resource` (only `container` when given).
fn pod_requests(
    pods: &[PodSample],
    resource: &str,
    container: Option<&str>,
) -> Result<BTreeMap<String, i64>, CalculationError> {
    let mut requests = BTreeMap::new();
    for pod in pods {
        let mut total = 0i64;
        for c in &pod.containers {
            if container.is_some_and(|wanted| wanted != c.name) {
                continue;
            }
            let request =
                c.requests
                    .get(resource)
                    .ok_or_else(|| CalculationError::MissingRequest {
                        resource: resource.to_string(),
                        container: c.name.clone(),
                        pod: pod.name.clone(),
                    })?;
            total = total.saturating_add(*request);
        }
        requests.insert(pod.name.clone(), total);
    }
    Ok(requests)
}

/// What the ratio is measured against.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Target<'a> {
    /// Percent of the pods' requests.
    Utilization {
        percent: i32,
        requests: &'a BTreeMap<String, i64>,
    },
    /// Average value per pod, thousandths.
    AverageValue(i64),
}

/// `(ratio, utilization percent, average value)` of `metrics` against `target`.
fn usage_ratio(
    metrics: &BTreeMap<String, i64>,
    target: Target<'_>,
) -> Result<(f64, Option<i32>, i64), CalculationError> {
    match target {
        Target::Utilization { percent, requests } => {
            let (mut used, mut requested, mut counted) = (0i64, 0i64, 0i64);
            for (pod, value) in metrics {
                if let Some(request) = requests.get(pod) {
                    used = used.saturating_add(*value);
                    requested = requested.saturating_add(*request);
                    counted += 1;
                }
            }
            if requested == 0 {
                return Err(CalculationError::NoMatchingRequests);
            }
            let utilization =
                i32::try_from(used.saturating_mul(100) / requested).unwrap_or(i32::MAX);
            Ok((
                f64::from(utilization) / f64::from(percent),
                Some(utilization),
                used / counted,
            ))
        }
        Target::AverageValue(target) => {
            let count = i64::try_from(metrics.len().max(1)).unwrap_or(i64::MAX);
            let average = metrics.values().fold(0i64, |a, v| a.saturating_add(*v)) / count;
            Ok((average as f64 / target as f64, None, average))
        }
    }
}

/// The inputs of one metric's computation.
#[derive(Clone, Copy, Debug)]
pub struct MetricInputs<'a> {
    /// The template's replicas (what the tolerance keeps).
    pub current_replicas: i32,
    pub pods: &'a [PodSample],
    /// Metrics by pod name.
    pub metrics: &'a BTreeMap<String, PodMetric>,
    pub resource: &'a str,
    /// A ContainerResource metric's container.
    pub container: Option<&'a str>,
    pub calibration: f64,
    pub now: Timestamp,
}

/// kube's first checks: some metrics were returned, and the selector found pods.
fn require_metrics_and_pods(inputs: &MetricInputs<'_>) -> Result<(), CalculationError> {
    if inputs.metrics.is_empty() {
        return Err(CalculationError::NoMetrics {
            resource: inputs.resource.to_string(),
        });
    }
    if inputs.pods.is_empty() {
        return Err(CalculationError::NoPods);
    }
    Ok(())
}

/// A Resource (or ContainerResource) metric with a Utilization target of `percent`.
pub fn utilization_replicas(
    inputs: MetricInputs<'_>,
    percent: i32,
    config: &CalculatorConfig,
) -> Result<Proposal, CalculationError> {
    require_metrics_and_pods(&inputs)?;
    let requests = pod_requests(inputs.pods, inputs.resource, inputs.container)?;
    let target = Target::Utilization {
        percent: percent.max(1),
        requests: &requests,
    };
    let fallback =
        |pod: &str| requests.get(pod).copied().unwrap_or(0) * i64::from(percent.max(100)) / 100;
    calculate(inputs, target, fallback, Source::Resource, config)
}

/// A Resource metric with an AverageValue target (thousandths per pod).
pub fn average_value_replicas(
    inputs: MetricInputs<'_>,
    target: i64,
    config: &CalculatorConfig,
) -> Result<Proposal, CalculationError> {
    require_metrics_and_pods(&inputs)?;
    calculate(
        inputs,
        Target::AverageValue(target.max(1)),
        |_| target,
        Source::Resource,
        config,
    )
}

/// A `Pods` metric (`inputs.resource` is the metric's name) with an AverageValue target
/// (thousandths per pod): kube's plain-metric calculation, where only Pending pods count as
/// unready and a missing pod is assumed at the target on a scale down, at zero on a scale up.
pub fn pods_metric_replicas(
    inputs: MetricInputs<'_>,
    target: i64,
    config: &CalculatorConfig,
) -> Result<Proposal, CalculationError> {
    if inputs.metrics.is_empty() {
        return Err(CalculationError::NoCustomMetrics {
            metric: inputs.resource.to_string(),
        });
    }
    if inputs.pods.is_empty() {
        return Err(CalculationError::NoPods);
    }
    calculate(
        inputs,
        Target::AverageValue(target.max(1)),
        |_| target,
        Source::Pods,
        config,
    )
}

/// Where a metric comes from: the resource metrics API, or the custom metrics API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Resource,
    Pods,
}

/// `value` rounded up, saturating at `i32::MAX`.
pub fn ceil_replicas(value: f64) -> i32 {
    let ceiled = value.ceil();
    if ceiled >= f64::from(i32::MAX) {
        i32::MAX
    } else {
        ceiled as i32
    }
}

/// The shared body: `fallback` is what a missing pod is assumed to use when scaling down.
fn calculate(
    inputs: MetricInputs<'_>,
    target: Target<'_>,
    fallback: impl Fn(&str) -> i64,
    source: Source,
    config: &CalculatorConfig,
) -> Result<Proposal, CalculationError> {
    let groups = group_pods(
        inputs.pods,
        inputs.metrics,
        source == Source::Resource && inputs.resource == "cpu",
        config,
        inputs.now,
    );
    let known: BTreeSet<&str> = inputs.pods.iter().map(|p| p.name.as_str()).collect();
    let mut values: BTreeMap<String, i64> = inputs
        .metrics
        .iter()
        .filter(|(pod, _)| {
            known.contains(pod.as_str())
                && !groups.ignored.contains(*pod)
                && !groups.unready.contains(*pod)
        })
        .map(|(pod, metric)| (pod.clone(), metric.value))
        .collect();
    if values.is_empty() {
        return Err(match source {
            Source::Resource => CalculationError::NoReadyMetrics,
            Source::Pods => CalculationError::NoTargetedMetrics,
        });
    }
    let (ratio, utilization, average_value) = usage_ratio(&values, target)?;
    let proposal = |replicas| Proposal {
        replicas,
        utilization,
        average_value,
    };
    let current = inputs.current_replicas;
    let scale_up_with_unready = !groups.unready.is_empty() && ratio > 1.0;
    if !scale_up_with_unready && groups.missing.is_empty() {
        if (1.0 - ratio).abs() <= config.tolerance {
            return Ok(proposal(current));
        }
        return Ok(proposal(ceil_replicas(
            ratio * groups.ready as f64 / inputs.calibration,
        )));
    }
    if ratio < 1.0 {
        for pod in &groups.missing {
            values.insert(pod.clone(), fallback(pod));
        }
    } else if ratio > 1.0 {
        for pod in &groups.missing {
            values.insert(pod.clone(), 0);
        }
    }
    if scale_up_with_unready {
        for pod in &groups.unready {
            values.insert(pod.clone(), 0);
        }
    }
    let (new_ratio, _, _) = usage_ratio(&values, target)?;
    let reverses = (ratio < 1.0 && new_ratio > 1.0) || (ratio > 1.0 && new_ratio < 1.0);
    if (1.0 - new_ratio).abs() <= config.tolerance || reverses {
        return Ok(proposal(current));
    }
    let replicas = ceil_replicas(new_ratio * values.len() as f64 / inputs.calibration);
    if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
        return Ok(proposal(current));
    }
    Ok(proposal(replicas))
}
