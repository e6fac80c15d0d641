//! One evaluation of one FederatedHPA, pure: from what the controller observed (the template's
//! replicas, the members' pods and their metrics), the remembered history and `now`, to the replicas
//! to set and the status (current metrics, Karmada's AbleToScale, ScalingActive and ScalingLimited
//! conditions). The controller writes both; a failed write keeps the old history.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::autoscaling::v2::{
    ContainerResourceMetricStatus, HorizontalPodAutoscalerCondition, HorizontalPodAutoscalerStatus,
    MetricIdentifier, MetricSpec, MetricStatus, MetricValueStatus, PodsMetricStatus,
    ResourceMetricStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::autoscaling::FederatedHPA;

use super::normalize::{self, Bounds, History};
use super::replica_calculator::{
    CalculatorConfig, MetricInputs, PodMetric, PodSample, Proposal, average_value_replicas,
    pods_metric_replicas, utilization_replicas,
};

/// The controller's tunables.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EvaluationConfig {
    pub calculator: CalculatorConfig,
    /// `--horizontal-pod-autoscaler-downscale-stabilization` (5 minutes).
    pub downscale_stabilization: SignedDuration,
}

impl Default for EvaluationConfig {
    fn default() -> Self {
        Self {
            calculator: CalculatorConfig::default(),
            downscale_stabilization: SignedDuration::from_mins(5),
        }
    }
}

/// A pod's usage as metrics.k8s.io reported it: per container, per resource, thousandths.
#[derive(Clone, Debug, PartialEq)]
pub struct PodUsage {
    pub timestamp: Timestamp,
    pub window: SignedDuration,
    pub containers: Vec<(String, BTreeMap<String, i64>)>,
}

/// What the controller saw for one FederatedHPA.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observation {
    /// The template's `spec.replicas`; `None` when the target could not be read.
    pub template_replicas: Option<i32>,
    /// Why the target could not be read (with `template_replicas: None`).
    pub target_error: Option<String>,
    /// The members' total `spec.replicas` of the target (0: no member reported it).
    pub member_replicas: i32,
    /// Every member's pods of the target, names unique across members.
    pub pods: Vec<PodSample>,
    /// Usage by pod name.
    pub usage: BTreeMap<String, PodUsage>,
    /// The control plane's custom metrics for each `Pods` metric, by [`pods_metric_key`]: each
    /// pod's value by pod name, or why they could not be read.
    pub custom_metrics: BTreeMap<PodsMetricKey, Result<BTreeMap<String, PodMetric>, String>>,
}

/// A `Pods` metric as asked of `custom.metrics.k8s.io`: its name and metric label selector
/// (query form, empty for none).
pub type PodsMetricKey = (String, String);

/// The key of a `Pods` metric's identifier; an unusable selector is the error's text.
pub fn pods_metric_key(metric: &MetricIdentifier) -> Result<PodsMetricKey, String> {
    let selector = match &metric.selector {
        None => String::new(),
        Some(selector) => {
            let value = serde_json::to_value(selector).map_err(|e| e.to_string())?;
            apimachinery::LabelSelector::from_label_selector(&value)
                .map_err(|e| format!("the metric's selector: {e}"))?
                .to_string()
        }
    };
    Ok((metric.name.clone(), selector))
}

/// What to do.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The template's new replicas, when they change.
    pub scale_to: Option<i32>,
    /// Why (the Event's reason text).
    pub reason: String,
    pub status: HorizontalPodAutoscalerStatus,
    /// A problem to report (an Event), even when scaling proceeds.
    pub problem: Option<(&'static str, String)>,
}

/// Sets a condition, moving its transition time only when its status changes.
pub fn set_condition(
    conditions: &mut Vec<HorizontalPodAutoscalerCondition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: String,
    now: Timestamp,
) {
    let status = if status { "True" } else { "False" }.to_string();
    let index = match conditions.iter().position(|c| c.type_ == type_) {
        Some(i) => i,
        None => {
            conditions.push(HorizontalPodAutoscalerCondition {
                type_: type_.to_string(),
                ..Default::default()
            });
            conditions.len() - 1
        }
    };
    let condition = &mut conditions[index];
    if condition.status != status {
        condition.last_transition_time = Some(Time(now));
    }
    condition.status = status;
    condition.reason = Some(reason.to_string());
    condition.message = Some(message);
}

/// A metric value for `status.currentMetrics`: CPU in millicores, others in units.
fn quantity(resource: &str, milli: i64) -> Quantity {
    if resource == "cpu" {
        Quantity(format!("{milli}m"))
    } else if milli % 1000 == 0 {
        Quantity((milli / 1000).to_string())
    } else {
        Quantity(format!("{milli}m"))
    }
}

/// One metric's proposal and status, or `(reason, message)` of the failure.
fn evaluate_metric(
    spec: &MetricSpec,
    observation: &Observation,
    current: i32,
    calibration: f64,
    config: &EvaluationConfig,
    now: Timestamp,
) -> Result<(Proposal, MetricStatus, String), (&'static str, String)> {
    let (resource, container, target, failure) = match spec.type_.as_str() {
        "Resource" => {
            let Some(source) = &spec.resource else {
                return Err((
                    "FailedGetResourceMetric",
                    "the metric has no resource".into(),
                ));
            };
            (
                &source.name,
                None,
                &source.target,
                "FailedGetResourceMetric",
            )
        }
        "ContainerResource" => {
            let Some(source) = &spec.container_resource else {
                return Err((
                    "FailedGetContainerResourceMetric",
                    "the metric has no containerResource".into(),
                ));
            };
            (
                &source.name,
                Some(source.container.as_str()),
                &source.target,
                "FailedGetContainerResourceMetric",
            )
        }
        "Pods" => {
            return evaluate_pods_metric(spec, observation, current, calibration, config, now);
        }
        "Object" => return Err(("FailedGetObjectMetric", unserved("object"))),
        "External" => return Err(("FailedGetExternalMetric", unserved("external"))),
        other => {
            return Err((
                "InvalidMetricSourceType",
                format!(
                    "the HPA was unable to compute the replica count: unknown metric source type \"{other}\""
                ),
            ));
        }
    };
    let metrics = resource_usage(observation, resource, container);
    let inputs = MetricInputs {
        current_replicas: current,
        pods: &observation.pods,
        metrics: &metrics,
        resource,
        container,
        calibration,
        now,
    };
    let computed = match (
        target.type_.as_str(),
        target.average_utilization,
        &target.average_value,
    ) {
        ("Utilization", Some(percent), _) => {
            utilization_replicas(inputs, percent, &config.calculator)
                .map(|p| (p, describe(resource, container, true)))
        }
        ("AverageValue", _, Some(value)) => {
            let milli = apimachinery::Quantity::parse(&value.0)
                .map(|q| i64::try_from(q.milli_value()).unwrap_or(i64::MAX))
                .map_err(|e| {
                    (
                        failure,
                        format!("the HPA was unable to compute the replica count: {e}"),
                    )
                })?;
            average_value_replicas(inputs, milli, &config.calculator)
                .map(|p| (p, describe(resource, container, false)))
        }
        (other, _, _) => {
            return Err((
                failure,
                format!(
                    "the HPA was unable to compute the replica count: target type \"{other}\" needs its value"
                ),
            ));
        }
    };
    let (proposal, name) = computed.map_err(|e| {
        (
            failure,
            format!("the HPA was unable to compute the replica count: {e}"),
        )
    })?;
    let status = resource_metric_status(resource, container, &proposal);
    Ok((proposal, status, name))
}

/// Each pod's usage of `resource` (in `container` only, when named), summed over its containers; pods that
/// report none of it are left out.
fn resource_usage(
    observation: &Observation,
    resource: &str,
    container: Option<&str>,
) -> BTreeMap<String, PodMetric> {
    observation
        .usage
        .iter()
        .filter_map(|(pod, usage)| {
            let mut found = false;
            let value = usage
                .containers
                .iter()
                .filter(|(name, _)| container.is_none_or(|c| c == name))
                .filter_map(|(_, resources)| resources.get(resource))
                .inspect(|_| found = true)
                .fold(0i64, |sum, v| sum.saturating_add(*v));
            found.then(|| {
                (
                    pod.clone(),
                    PodMetric {
                        value,
                        timestamp: usage.timestamp,
                        window: usage.window,
                    },
                )
            })
        })
        .collect()
}

/// The metric's name in the ScalingActive message and the scale Event.
fn describe(resource: &str, container: Option<&str>, utilization: bool) -> String {
    match (container.is_some(), utilization) {
        (false, true) => format!("{resource} resource utilization (percentage of request)"),
        (false, false) => format!("{resource} resource"),
        (true, true) => {
            format!("{resource} container resource utilization (percentage of request)")
        }
        (true, false) => format!("{resource} container resource"),
    }
}

/// `status.currentMetrics` entry of a Resource or ContainerResource metric.
fn resource_metric_status(
    resource: &str,
    container: Option<&str>,
    proposal: &Proposal,
) -> MetricStatus {
    let current_value = MetricValueStatus {
        average_utilization: proposal.utilization,
        average_value: Some(quantity(resource, proposal.average_value)),
        value: None,
    };
    match container {
        None => MetricStatus {
            type_: "Resource".into(),
            resource: Some(ResourceMetricStatus {
                name: resource.to_string(),
                current: current_value,
            }),
            ..Default::default()
        },
        Some(container) => MetricStatus {
            type_: "ContainerResource".into(),
            container_resource: Some(ContainerResourceMetricStatus {
                name: resource.to_string(),
                container: container.to_string(),
                current: current_value,
            }),
            ..Default::default()
        },
    }
}

fn unserved(kind: &str) -> String {
    format!(
        "the HPA was unable to compute the replica count: {kind} metrics are not supported here (only Resource, ContainerResource and Pods metrics are)"
    )
}

/// A `Pods` metric: the average of the pods' custom metric against the target's averageValue.
fn evaluate_pods_metric(
    spec: &MetricSpec,
    observation: &Observation,
    current: i32,
    calibration: f64,
    config: &EvaluationConfig,
    now: Timestamp,
) -> Result<(Proposal, MetricStatus, String), (&'static str, String)> {
    const FAILURE: &str = "FailedGetPodsMetric";
    let fail = |e: String| {
        (
            FAILURE,
            format!("the HPA was unable to compute the replica count: {e}"),
        )
    };
    let Some(source) = &spec.pods else {
        return Err((FAILURE, "the metric has no pods source".into()));
    };
    let name = &source.metric.name;
    let target = match (source.target.type_.as_str(), &source.target.average_value) {
        ("AverageValue", Some(value)) => apimachinery::Quantity::parse(&value.0)
            .map(|q| i64::try_from(q.milli_value()).unwrap_or(i64::MAX))
            .map_err(|e| fail(e.to_string()))?,
        (other, _) => {
            return Err(fail(format!(
                "target type \"{other}\" of pods metric {name}: pods metrics take an AverageValue target"
            )));
        }
    };
    let key = pods_metric_key(&source.metric).map_err(fail)?;
    let metrics = match observation.custom_metrics.get(&key) {
        Some(Ok(metrics)) => metrics,
        Some(Err(error)) => return Err(fail(format!("unable to get metric {name}: {error}"))),
        None => {
            return Err(fail(format!(
                "unable to get metric {name}: it was not read this round"
            )));
        }
    };
    let inputs = MetricInputs {
        current_replicas: current,
        pods: &observation.pods,
        metrics,
        resource: name,
        container: None,
        calibration,
        now,
    };
    let proposal = pods_metric_replicas(inputs, target, &config.calculator)
        .map_err(|e| fail(e.to_string()))?;
    let status = MetricStatus {
        type_: "Pods".into(),
        pods: Some(PodsMetricStatus {
            metric: source.metric.clone(),
            current: MetricValueStatus {
                average_value: Some(quantity("", proposal.average_value)),
                average_utilization: None,
                value: None,
            },
        }),
        ..Default::default()
    };
    Ok((proposal, status, format!("pods metric {name}")))
}

/// Evaluates `hpa` once.
pub fn evaluate(
    hpa: &FederatedHPA,
    observation: &Observation,
    history: &mut History,
    config: &EvaluationConfig,
    now: Timestamp,
) -> Decision {
    let old = hpa.status.clone().unwrap_or_default();
    let mut status = HorizontalPodAutoscalerStatus {
        current_replicas: old.current_replicas,
        desired_replicas: old.desired_replicas,
        last_scale_time: old.last_scale_time.clone(),
        current_metrics: old.current_metrics.clone(),
        conditions: Some(old.conditions.clone().unwrap_or_default()),
        observed_generation: hpa.metadata.generation,
    };
    let mut conditions = old.conditions.clone().unwrap_or_default();
    let current = match scale_target_replicas(observation, &mut conditions, now) {
        Ok(current) => current,
        Err(problem) => return decision(status, conditions, None, String::new(), Some(problem)),
    };
    normalize::record_initial(history, current, now);
    let spec = &hpa.spec;
    let min = spec.min_replicas.unwrap_or(1);
    let mut problem = None;
    let mut reason = String::new();
    let mut metric_statuses = old.current_metrics.clone();
    let desired = if current == 0 && min != 0 {
        set_condition(
            &mut conditions,
            "ScalingActive",
            false,
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero".into(),
            now,
        );
        current
    } else if current > spec.max_replicas {
        reason = "Current number of replicas above Spec.MaxReplicas".into();
        spec.max_replicas
    } else if current < min {
        reason = "Current number of replicas below Spec.MinReplicas".into();
        min
    } else {
        match desired_from_metrics(
            hpa,
            observation,
            history,
            config,
            current,
            &mut conditions,
            now,
        ) {
            Ok(outcome) => {
                reason = outcome.reason;
                problem = outcome.problem;
                metric_statuses = Some(outcome.statuses);
                outcome.replicas
            }
            Err(failure) => {
                status.current_replicas = Some(current);
                return decision(status, conditions, None, String::new(), Some(failure));
            }
        }
    };
    status.current_replicas = Some(current);
    status.desired_replicas = desired;
    status.current_metrics = metric_statuses;
    let scale_to = (desired != current && !(current == 0 && min != 0)).then_some(desired);
    if let Some(new) = scale_to {
        status.last_scale_time = Some(Time(now));
        set_condition(
            &mut conditions,
            "AbleToScale",
            true,
            "SucceededRescale",
            format!("the HPA controller was able to update the target scale to {new}"),
            now,
        );
        if let Some(behavior) = &spec.behavior {
            let (up, down) =
                normalize::effective_behavior(behavior, config.downscale_stabilization);
            normalize::record_scale(history, (&up, &down), current, new, now);
        }
    }
    decision(status, conditions, scale_to, reason, problem)
}

fn decision(
    status: HorizontalPodAutoscalerStatus,
    conditions: Vec<HorizontalPodAutoscalerCondition>,
    scale_to: Option<i32>,
    reason: String,
    problem: Option<(&'static str, String)>,
) -> Decision {
    Decision {
        scale_to,
        reason,
        status: HorizontalPodAutoscalerStatus {
            conditions: Some(conditions),
            ..status
        },
        problem,
    }
}

/// The template's replicas, when the target was read and some member runs it (AbleToScale says which);
/// otherwise the problem to report.
fn scale_target_replicas(
    observation: &Observation,
    conditions: &mut Vec<HorizontalPodAutoscalerCondition>,
    now: Timestamp,
) -> Result<i32, (&'static str, String)> {
    let Some(current) = observation.template_replicas else {
        let error = observation.target_error.clone().unwrap_or_default();
        set_condition(
            conditions,
            "AbleToScale",
            false,
            "FailedGetScaleTargetRef",
            format!("the HPA controller was unable to get the target reference object: {error}"),
            now,
        );
        return Err(("FailedGetScaleTargetRef", error));
    };
    if observation.member_replicas == 0 {
        let error = "failed to get replicas in any of clusters, possibly because all of clusters are not ready".to_string();
        set_condition(
            conditions,
            "AbleToScale",
            false,
            "FailedGetScale",
            format!("the HPA controller was unable to get the target's current scale: {error}"),
            now,
        );
        return Err(("FailedGetScale", error));
    }
    set_condition(
        conditions,
        "AbleToScale",
        true,
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale".into(),
        now,
    );
    Ok(current)
}

/// What the metrics ask for, normalized.
struct MetricsOutcome {
    replicas: i32,
    /// Why the replicas change (empty when they do not).
    reason: String,
    /// `status.currentMetrics`, one per metric (a default one for a metric that failed).
    statuses: Vec<MetricStatus>,
    /// Some metrics failed, but the others still scale.
    problem: Option<(&'static str, String)>,
}

/// Every metric's proposal, the largest kept.
struct Proposals {
    /// The largest proposal and the metric's name.
    best: Option<(i32, String)>,
    statuses: Vec<MetricStatus>,
    /// `(reason, message)` of each metric that failed.
    invalid: Vec<(&'static str, String)>,
}

fn propose(
    hpa: &FederatedHPA,
    observation: &Observation,
    current: i32,
    config: &EvaluationConfig,
    now: Timestamp,
) -> Proposals {
    let calibration = f64::from(observation.member_replicas) / f64::from(current.max(1));
    let mut proposals = Proposals {
        best: None,
        statuses: Vec::new(),
        invalid: Vec::new(),
    };
    for metric in &hpa.spec.metrics {
        match evaluate_metric(metric, observation, current, calibration, config, now) {
            Ok((proposal, metric_status, name)) => {
                proposals.statuses.push(metric_status);
                if proposals
                    .best
                    .as_ref()
                    .is_none_or(|(r, _)| proposal.replicas > *r)
                {
                    proposals.best = Some((proposal.replicas, name));
                }
            }
            Err(failure) => {
                proposals.statuses.push(MetricStatus::default());
                proposals.invalid.push(failure);
            }
        }
    }
    proposals
}

/// The replicas the metrics ask for within the bounds and behavior (ScalingActive, AbleToScale and
/// ScalingLimited say how). Err: scaling stops, because every metric failed or the valid ones would scale
/// down while others could not be read.
fn desired_from_metrics(
    hpa: &FederatedHPA,
    observation: &Observation,
    history: &mut History,
    config: &EvaluationConfig,
    current: i32,
    conditions: &mut Vec<HorizontalPodAutoscalerCondition>,
    now: Timestamp,
) -> Result<MetricsOutcome, (&'static str, String)> {
    let spec = &hpa.spec;
    let Proposals {
        best,
        statuses,
        invalid,
    } = propose(hpa, observation, current, config, now);
    let proposed = best.as_ref().map_or(0, |(r, _)| *r);
    let mut problem = None;
    if let Some((first_reason, first_message)) = invalid.first().cloned() {
        let error = format!(
            "invalid metrics ({} invalid out of {}), first error is: {first_message}",
            invalid.len(),
            spec.metrics.len()
        );
        if invalid.len() >= spec.metrics.len() || proposed < current {
            set_condition(
                conditions,
                "ScalingActive",
                false,
                first_reason,
                first_message,
                now,
            );
            return Err(("FailedComputeMetricsReplicas", error));
        }
        problem = Some(("FailedComputeMetricsReplicas", error));
    }
    let metric_name = best.map(|(_, name)| name).unwrap_or_default();
    set_condition(
        conditions,
        "ScalingActive",
        true,
        "ValidMetricFound",
        format!("the HPA was able to successfully calculate a replica count from {metric_name}"),
        now,
    );
    let reason = if proposed > current {
        format!("{metric_name} above target")
    } else if proposed < current {
        "All metrics below target".into()
    } else {
        String::new()
    };
    let bounds = Bounds {
        current,
        min: spec.min_replicas.unwrap_or(1),
        max: spec.max_replicas,
    };
    let replicas = normalize_proposal(hpa, history, config, bounds, proposed, conditions, now);
    Ok(MetricsOutcome {
        replicas,
        reason,
        statuses,
        problem,
    })
}

/// Applies the bounds, the stabilization window and the behavior's policies to a proposal.
fn normalize_proposal(
    hpa: &FederatedHPA,
    history: &mut History,
    config: &EvaluationConfig,
    bounds: Bounds,
    proposed: i32,
    conditions: &mut Vec<HorizontalPodAutoscalerCondition>,
    now: Timestamp,
) -> i32 {
    let normalized = match &hpa.spec.behavior {
        None => normalize::without_behavior(
            history,
            bounds,
            proposed,
            config.downscale_stabilization,
            now,
        ),
        Some(behavior) => {
            let (up, down) =
                normalize::effective_behavior(behavior, config.downscale_stabilization);
            normalize::with_behavior(history, bounds, proposed, (&up, &down), now)
        }
    };
    let (able_reason, able_message) = normalized.able_to_scale;
    set_condition(
        conditions,
        "AbleToScale",
        true,
        able_reason,
        able_message.into(),
        now,
    );
    let (limit_reason, limit_message) = normalized.scaling_limited;
    set_condition(
        conditions,
        "ScalingLimited",
        normalized.limited,
        limit_reason,
        limit_message.into(),
        now,
    );
    normalized.replicas
}
