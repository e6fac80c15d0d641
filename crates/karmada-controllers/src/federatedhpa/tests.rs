//! Table-driven tests of the pure core, and a property test of the replica calculation against a
//! straightforward model of kube's HPA algorithm.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::autoscaling::v2::{
    HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscalerBehavior,
};
use karmada_api::autoscaling::FederatedHPA;
use proptest::prelude::*;
use serde_json::json;

use super::evaluate::{EvaluationConfig, Observation, PodUsage, evaluate, pods_metric_key};
use super::normalize::{self, Bounds, History};
use super::replica_calculator::*;

fn now() -> Timestamp {
    "2026-06-01T12:00:00Z".parse().expect("time")
}

/// A running pod, ready since ten minutes ago, requesting `request` millicores.
fn pod(name: &str, request: i64) -> PodSample {
    PodSample {
        name: name.into(),
        phase: "Running".into(),
        deleting: false,
        ready: Some((true, now() - SignedDuration::from_mins(10))),
        start_time: Some(now() - SignedDuration::from_mins(11)),
        containers: vec![ContainerRequests {
            name: "main".into(),
            requests: BTreeMap::from([("cpu".to_string(), request)]),
        }],
    }
}

fn metric(value: i64) -> PodMetric {
    PodMetric {
        value,
        timestamp: now(),
        window: SignedDuration::from_secs(15),
    }
}

fn inputs<'a>(
    current: i32,
    pods: &'a [PodSample],
    metrics: &'a BTreeMap<String, PodMetric>,
    calibration: f64,
) -> MetricInputs<'a> {
    MetricInputs {
        current_replicas: current,
        pods,
        metrics,
        resource: "cpu",
        container: None,
        calibration,
        now: now(),
    }
}

#[test]
fn utilization_proposals_follow_kubes_algorithm() {
    struct Case {
        name: &'static str,
        pods: Vec<PodSample>,
        usage: Vec<(&'static str, i64)>,
        current: i32,
        calibration: f64,
        expected: Result<(i32, i32), CalculationError>,
    }
    let pending = PodSample {
        phase: "Pending".into(),
        ..pod("c", 500)
    };
    let failed = PodSample {
        phase: "Failed".into(),
        ..pod("c", 500)
    };
    let just_started = PodSample {
        // Started a minute ago, ready 5 s ago: a 15 s sample taken now began before it was ready.
        ready: Some((true, now() - SignedDuration::from_secs(5))),
        start_time: Some(now() - SignedDuration::from_mins(1)),
        ..pod("c", 500)
    };
    let cases = vec![
        Case {
            name: "80% of a 50% target doubles... and rounds up",
            pods: vec![pod("a", 500), pod("b", 500)],
            usage: vec![("a", 400), ("b", 400)],
            current: 2,
            calibration: 1.0,
            expected: Ok((4, 80)),
        },
        Case {
            name: "within the tolerance nothing changes",
            pods: vec![pod("a", 500), pod("b", 500)],
            usage: vec![("a", 260), ("b", 260)],
            current: 2,
            calibration: 1.0,
            expected: Ok((2, 52)),
        },
        Case {
            name: "low usage scales down",
            pods: vec![pod("a", 500), pod("b", 500)],
            usage: vec![("a", 100), ("b", 100)],
            current: 2,
            calibration: 1.0,
            expected: Ok((1, 20)),
        },
        Case {
            name: "a missing pod counts as idle when scaling up, which lands within the tolerance",
            pods: vec![pod("a", 500), pod("b", 500), pod("c", 500)],
            usage: vec![("a", 400), ("b", 400)],
            current: 3,
            calibration: 1.0,
            expected: Ok((3, 80)),
        },
        Case {
            name: "a missing pod counts as at its request when scaling down",
            pods: vec![pod("a", 500), pod("b", 500), pod("c", 500)],
            usage: vec![("a", 50), ("b", 50)],
            current: 3,
            calibration: 1.0,
            // (50 + 50 + 500) / 1500 = 40% → 0.8 × 3 = 2.4 → 3: no change after all.
            expected: Ok((3, 10)),
        },
        Case {
            name: "a pending pod counts as idle when scaling up",
            pods: vec![pod("a", 500), pod("b", 500), pending],
            usage: vec![("a", 500), ("b", 500)],
            current: 3,
            calibration: 1.0,
            // 1000 / 1500 = 66% → 1.33 × 3 = 4.
            expected: Ok((4, 100)),
        },
        Case {
            name: "a failed pod is ignored",
            pods: vec![pod("a", 500), pod("b", 500), failed],
            usage: vec![("a", 400), ("b", 400), ("c", 5000)],
            current: 3,
            calibration: 1.0,
            expected: Ok((4, 80)),
        },
        Case {
            name: "CPU of a pod still initializing is not trusted",
            pods: vec![pod("a", 500), pod("b", 500), just_started],
            usage: vec![("a", 400), ("b", 400), ("c", 5000)],
            current: 3,
            calibration: 1.0,
            // Without c: 80% → 1.6; c counted idle: 800/1500 = 53% → 1.06, within the tolerance.
            expected: Ok((3, 80)),
        },
        Case {
            name: "a duplicated workload's pods are calibrated by the members' share",
            pods: vec![pod("a", 500), pod("b", 500), pod("c", 500), pod("d", 500)],
            usage: vec![("a", 400), ("b", 400), ("c", 400), ("d", 400)],
            current: 2,
            calibration: 2.0,
            expected: Ok((4, 80)),
        },
        Case {
            name: "no pods",
            pods: vec![],
            usage: vec![("a", 1)],
            current: 2,
            calibration: 1.0,
            expected: Err(CalculationError::NoPods),
        },
        Case {
            name: "no metrics at all",
            pods: vec![pod("a", 500)],
            usage: vec![],
            current: 1,
            calibration: 1.0,
            expected: Err(CalculationError::NoMetrics {
                resource: "cpu".into(),
            }),
        },
        Case {
            name: "only unready pods have metrics",
            pods: vec![PodSample {
                phase: "Pending".into(),
                ..pod("a", 500)
            }],
            usage: vec![("a", 100)],
            current: 1,
            calibration: 1.0,
            expected: Err(CalculationError::NoReadyMetrics),
        },
    ];
    for case in cases {
        let metrics: BTreeMap<String, PodMetric> = case
            .usage
            .iter()
            .map(|(pod, value)| (pod.to_string(), metric(*value)))
            .collect();
        let got = utilization_replicas(
            inputs(case.current, &case.pods, &metrics, case.calibration),
            50,
            &CalculatorConfig::default(),
        )
        .map(|p| (p.replicas, p.utilization.unwrap_or_default()));
        assert_eq!(got, case.expected, "{}", case.name);
    }
}

#[test]
fn a_container_without_a_request_is_an_error_naming_it() {
    let mut bare = pod("a", 500);
    bare.containers[0].requests.clear();
    let metrics = BTreeMap::from([("a".to_string(), metric(100))]);
    let error = utilization_replicas(
        inputs(1, &[bare], &metrics, 1.0),
        50,
        &CalculatorConfig::default(),
    )
    .expect_err("no request");
    assert_eq!(
        error.to_string(),
        "missing request for cpu in container main of Pod a"
    );
}

#[test]
fn average_value_targets_compare_the_average_per_pod() {
    let pods = [pod("a", 500), pod("b", 500)];
    let metrics = BTreeMap::from([
        ("a".to_string(), metric(300)),
        ("b".to_string(), metric(300)),
    ]);
    let proposal = average_value_replicas(
        inputs(2, &pods, &metrics, 1.0),
        100,
        &CalculatorConfig::default(),
    )
    .expect("proposal");
    assert_eq!((proposal.replicas, proposal.average_value), (6, 300));
}

const WINDOW: SignedDuration = SignedDuration::from_mins(5);

#[test]
fn without_behavior_a_scale_down_waits_for_the_stabilization_window() {
    let bounds = Bounds {
        current: 6,
        min: 1,
        max: 10,
    };
    let mut history = History::default();
    normalize::record_initial(&mut history, 6, now());
    let steps = [
        (0, 2, 6, "ScaleDownStabilized"),
        (60, 2, 6, "ScaleDownStabilized"),
        (301, 2, 2, "ReadyForNewScale"),
    ];
    for (after, proposed, expected, reason) in steps {
        let at = now() + SignedDuration::from_secs(after);
        let normalized = normalize::without_behavior(&mut history, bounds, proposed, WINDOW, at);
        assert_eq!(normalized.replicas, expected, "after {after}s");
        assert_eq!(normalized.able_to_scale.0, reason, "after {after}s");
    }
}

#[test]
fn without_behavior_limits_are_min_max_and_twice_the_current_size() {
    let cases = [
        // (current, min, max, proposed) → (replicas, limited, reason)
        ((2, 1, 30, 20), (4, true, "ScaleUpLimit")),
        ((5, 1, 8, 20), (8, true, "TooManyReplicas")),
        ((5, 3, 8, 1), (3, true, "TooFewReplicas")),
        ((5, 1, 10, 7), (7, false, "DesiredWithinRange")),
        ((1, 1, 10, 3), (3, false, "DesiredWithinRange")),
    ];
    for ((current, min, max, proposed), (replicas, limited, reason)) in cases {
        let mut history = History::default();
        let bounds = Bounds { current, min, max };
        let got = normalize::without_behavior(&mut history, bounds, proposed, WINDOW, now());
        assert_eq!(
            (got.replicas, got.limited, got.scaling_limited.0),
            (replicas, limited, reason),
            "{current} → {proposed} in [{min}, {max}]"
        );
    }
}

fn rules(select: &str, window: i32, policies: &[(&str, i32, i32)]) -> HPAScalingRules {
    HPAScalingRules {
        select_policy: Some(select.into()),
        stabilization_window_seconds: Some(window),
        policies: Some(
            policies
                .iter()
                .map(|(type_, value, period)| HPAScalingPolicy {
                    type_: type_.to_string(),
                    value: *value,
                    period_seconds: *period,
                })
                .collect(),
        ),
        ..Default::default()
    }
}

#[test]
fn behavior_policies_bound_the_rate() {
    let defaults =
        normalize::effective_behavior(&HorizontalPodAutoscalerBehavior::default(), WINDOW);
    let down_default = defaults.1.clone();
    let cases = [
        // Karmada's defaults: up by max(4 pods, 100 %) per 15 s.
        (
            "defaults from 2",
            (2, 1, 100, 50),
            defaults.clone(),
            (6, "ScaleUpLimit"),
        ),
        (
            "defaults from 10",
            (10, 1, 100, 50),
            defaults.clone(),
            (20, "ScaleUpLimit"),
        ),
        (
            "Min picks the smaller step",
            (10, 1, 100, 50),
            (
                rules("Min", 0, &[("Pods", 4, 15), ("Percent", 100, 15)]),
                down_default.clone(),
            ),
            (14, "ScaleUpLimit"),
        ),
        (
            "Disabled keeps the size",
            (10, 1, 100, 50),
            (
                rules("Disabled", 0, &[("Pods", 4, 15)]),
                down_default.clone(),
            ),
            (10, "ScaleUpLimit"),
        ),
        (
            "down by at most 1 pod",
            (10, 1, 100, 2),
            (defaults.0.clone(), rules("Max", 0, &[("Pods", 1, 60)])),
            (9, "ScaleDownLimit"),
        ),
        (
            "max wins over the rate",
            (10, 1, 12, 50),
            defaults.clone(),
            (12, "TooManyReplicas"),
        ),
    ];
    for (name, (current, min, max, proposed), (up, down), (replicas, reason)) in cases {
        let mut history = History::default();
        let bounds = Bounds { current, min, max };
        let got = normalize::with_behavior(&mut history, bounds, proposed, (&up, &down), now());
        assert_eq!(
            (got.replicas, got.scaling_limited.0),
            (replicas, reason),
            "{name}"
        );
    }
}

#[test]
fn scale_events_count_against_the_policy_period() {
    let up = rules("Max", 0, &[("Pods", 2, 60)]);
    let down = rules("Max", 0, &[("Percent", 100, 15)]);
    let mut history = History::default();
    normalize::record_scale(&mut history, (&up, &down), 2, 4, now());
    let bounds = Bounds {
        current: 4,
        min: 1,
        max: 20,
    };
    let soon = now() + SignedDuration::from_secs(30);
    let got = normalize::with_behavior(&mut history.clone(), bounds, 10, (&up, &down), soon);
    assert_eq!(
        got.replicas, 4,
        "the period's 2 pods were used by the last scale"
    );
    let later = now() + SignedDuration::from_secs(61);
    let got = normalize::with_behavior(&mut history, bounds, 10, (&up, &down), later);
    assert_eq!(got.replicas, 6, "a new period allows 2 more");
}

fn hpa(min: i32, max: i32) -> FederatedHPA {
    serde_json::from_value(json!({
        "apiVersion": "autoscaling.karmada.io/v1alpha1",
        "kind": "FederatedHPA",
        "metadata": {"name": "web", "namespace": "shop", "generation": 1},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": min,
            "maxReplicas": max,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}],
        },
    }))
    .expect("FederatedHPA")
}

fn observation(replicas: i32, usage: i64) -> Observation {
    let pods: Vec<PodSample> = (0..replicas)
        .map(|i| pod(&format!("member1/web-{i}"), 500))
        .collect();
    let usage = pods
        .iter()
        .map(|p| {
            (
                p.name.clone(),
                PodUsage {
                    timestamp: now(),
                    window: SignedDuration::from_secs(15),
                    containers: vec![("main".into(), BTreeMap::from([("cpu".to_string(), usage)]))],
                },
            )
        })
        .collect();
    Observation {
        template_replicas: Some(replicas),
        target_error: None,
        member_replicas: replicas,
        pods,
        usage,
        custom_metrics: BTreeMap::new(),
    }
}

fn condition<'a>(decision: &'a super::evaluate::Decision, type_: &str) -> (&'a str, &'a str) {
    let found = decision
        .status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
        .expect("condition set");
    (
        found.status.as_str(),
        found.reason.as_deref().unwrap_or_default(),
    )
}

#[test]
fn a_round_scales_the_template_and_reports_karmadas_conditions() {
    let mut history = History::default();
    let config = EvaluationConfig::default();
    let decision = evaluate(
        &hpa(2, 10),
        &observation(2, 400),
        &mut history,
        &config,
        now(),
    );
    assert_eq!(decision.scale_to, Some(4));
    assert_eq!(
        decision.reason,
        "cpu resource utilization (percentage of request) above target"
    );
    assert_eq!(decision.status.desired_replicas, 4);
    assert_eq!(decision.status.current_replicas, Some(2));
    assert_eq!(
        condition(&decision, "AbleToScale"),
        ("True", "SucceededRescale")
    );
    assert_eq!(
        condition(&decision, "ScalingActive"),
        ("True", "ValidMetricFound")
    );
    assert_eq!(
        condition(&decision, "ScalingLimited"),
        ("False", "DesiredWithinRange")
    );
    let current = &decision.status.current_metrics.as_ref().expect("metrics")[0];
    let resource = current.resource.as_ref().expect("resource");
    assert_eq!(resource.current.average_utilization, Some(80));
    assert_eq!(
        resource
            .current
            .average_value
            .as_ref()
            .map(|q| q.0.as_str()),
        Some("400m")
    );

    let steady = evaluate(
        &hpa(2, 10),
        &observation(2, 260),
        &mut History::default(),
        &config,
        now(),
    );
    assert_eq!(steady.scale_to, None);
    assert_eq!(
        condition(&steady, "AbleToScale"),
        ("True", "ReadyForNewScale")
    );

    let above_max = evaluate(
        &hpa(1, 3),
        &observation(5, 260),
        &mut History::default(),
        &config,
        now(),
    );
    assert_eq!(above_max.scale_to, Some(3));
    assert_eq!(
        above_max.reason,
        "Current number of replicas above Spec.MaxReplicas"
    );
}

#[test]
fn a_round_without_members_or_metrics_says_why_and_keeps_the_size() {
    let config = EvaluationConfig::default();
    let no_members = Observation {
        member_replicas: 0,
        ..observation(2, 400)
    };
    let decision = evaluate(
        &hpa(2, 10),
        &no_members,
        &mut History::default(),
        &config,
        now(),
    );
    assert_eq!(decision.scale_to, None);
    assert_eq!(
        condition(&decision, "AbleToScale"),
        ("False", "FailedGetScale")
    );

    let no_metrics = Observation {
        usage: BTreeMap::new(),
        ..observation(2, 400)
    };
    let decision = evaluate(
        &hpa(2, 10),
        &no_metrics,
        &mut History::default(),
        &config,
        now(),
    );
    assert_eq!(decision.scale_to, None);
    assert_eq!(
        condition(&decision, "ScalingActive"),
        ("False", "FailedGetResourceMetric")
    );
    let (reason, message) = decision.problem.expect("reported");
    assert_eq!(reason, "FailedComputeMetricsReplicas");
    assert!(
        message.contains("invalid metrics (1 invalid out of 1)"),
        "{message}"
    );

    let missing = Observation {
        template_replicas: None,
        target_error: Some("deployments.apps \"web\" not found".into()),
        ..Observation::default()
    };
    let decision = evaluate(
        &hpa(2, 10),
        &missing,
        &mut History::default(),
        &config,
        now(),
    );
    assert_eq!(
        condition(&decision, "AbleToScale"),
        ("False", "FailedGetScaleTargetRef")
    );
}

/// A pod of the model: its state and, when it has one, its usage.
#[derive(Clone, Debug)]
enum ModelPod {
    Ready(i64),
    Missing,
    Pending,
    Failed(i64),
}

/// kube's algorithm written out directly (utilization target, every pod requesting `request`).
fn model(
    pods: &[ModelPod],
    request: i64,
    target: i32,
    current: i32,
    tolerance: f64,
) -> Option<i32> {
    let ready: Vec<i64> = pods
        .iter()
        .filter_map(|p| match p {
            ModelPod::Ready(u) => Some(*u),
            _ => None,
        })
        .collect();
    if ready.is_empty() {
        return None;
    }
    let utilization = |values: &[i64]| {
        (values.iter().sum::<i64>() * 100 / (request * values.len() as i64)) as i32
    };
    let ratio = f64::from(utilization(&ready)) / f64::from(target);
    let missing = pods
        .iter()
        .filter(|p| matches!(p, ModelPod::Missing))
        .count();
    let pending = pods
        .iter()
        .filter(|p| matches!(p, ModelPod::Pending))
        .count();
    let with_unready = pending > 0 && ratio > 1.0;
    if !with_unready && missing == 0 {
        return Some(if (1.0 - ratio).abs() <= tolerance {
            current
        } else {
            (ratio * ready.len() as f64).ceil() as i32
        });
    }
    let mut all = ready.clone();
    if ratio < 1.0 {
        all.extend(std::iter::repeat_n(
            request * i64::from(target.max(100)) / 100,
            missing,
        ));
    } else if ratio > 1.0 {
        all.extend(std::iter::repeat_n(0, missing));
    }
    if with_unready {
        all.extend(std::iter::repeat_n(0, pending));
    }
    let new_ratio = f64::from(utilization(&all)) / f64::from(target);
    if (1.0 - new_ratio).abs() <= tolerance
        || (ratio < 1.0 && new_ratio > 1.0)
        || (ratio > 1.0 && new_ratio < 1.0)
    {
        return Some(current);
    }
    let replicas = (new_ratio * all.len() as f64).ceil() as i32;
    if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
        return Some(current);
    }
    Some(replicas)
}

fn model_pod() -> impl Strategy<Value = ModelPod> {
    prop_oneof![
        4 => (0i64..3000).prop_map(ModelPod::Ready),
        1 => Just(ModelPod::Missing),
        1 => Just(ModelPod::Pending),
        1 => (0i64..3000).prop_map(ModelPod::Failed),
    ]
}

proptest! {
    #[test]
    fn the_calculator_matches_the_model(
        pods in proptest::collection::vec(model_pod(), 1..12),
        request in 100i64..2000,
        target in 10i32..150,
        current in 1i32..20,
    ) {
        let samples: Vec<PodSample> = pods
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let base = pod(&format!("p{i}"), request);
                match p {
                    ModelPod::Pending => PodSample { phase: "Pending".into(), ..base },
                    ModelPod::Failed(_) => PodSample { phase: "Failed".into(), ..base },
                    _ => base,
                }
            })
            .collect();
        let metrics: BTreeMap<String, PodMetric> = pods
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                ModelPod::Ready(u) | ModelPod::Failed(u) => Some((format!("p{i}"), metric(*u))),
                ModelPod::Pending => Some((format!("p{i}"), metric(1000))),
                ModelPod::Missing => None,
            })
            .collect();
        let config = CalculatorConfig::default();
        let got = utilization_replicas(inputs(current, &samples, &metrics, 1.0), target, &config)
            .ok()
            .map(|p| p.replicas);
        let expected = if metrics.is_empty() { None } else { model(&pods, request, target, current, config.tolerance) };
        prop_assert_eq!(got, expected, "pods {:?}", pods);
    }
}

/// `pods_metric_replicas` over `pods` with these values (thousandths) of metric `name`.
fn pods_proposal(
    name: &str,
    pods: &[PodSample],
    values: &[(&str, i64)],
    current: i32,
    calibration: f64,
    target: i64,
) -> Result<(i32, i64), CalculationError> {
    let metrics: BTreeMap<String, PodMetric> = values
        .iter()
        .map(|(pod, value)| (pod.to_string(), metric(*value)))
        .collect();
    let inputs = MetricInputs {
        resource: name,
        ..inputs(current, pods, &metrics, calibration)
    };
    pods_metric_replicas(inputs, target, &CalculatorConfig::default())
        .map(|p| (p.replicas, p.average_value))
}

#[test]
fn pods_metric_proposals_follow_kubes_plain_metric_algorithm() {
    let pending = PodSample {
        phase: "Pending".into(),
        ..pod("c", 500)
    };
    let just_started = PodSample {
        ready: Some((true, now() - SignedDuration::from_secs(5))),
        start_time: Some(now() - SignedDuration::from_mins(1)),
        ..pod("c", 500)
    };
    let two = [pod("a", 500), pod("b", 500)];
    let three = [pod("a", 500), pod("b", 500), pod("c", 500)];
    let four = [pod("a", 500), pod("b", 500), pod("c", 500), pod("d", 500)];
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a [PodSample],
        Vec<(&'a str, i64)>,
        i32,
        f64,
        Result<(i32, i64), CalculationError>,
    );
    let with_pending = [pod("a", 500), pod("b", 500), pending.clone()];
    let with_new = [pod("a", 500), pod("b", 500), just_started];
    let cases: Vec<Case<'_>> = vec![
        (
            "twice the target doubles",
            "rps",
            &two,
            vec![("a", 100_000), ("b", 100_000)],
            2,
            1.0,
            Ok((4, 100_000)),
        ),
        (
            "within the tolerance nothing changes",
            "rps",
            &two,
            vec![("a", 52_000), ("b", 53_000)],
            2,
            1.0,
            Ok((2, 52_500)),
        ),
        (
            "a missing pod is at the target on a scale down",
            "rps",
            &three,
            vec![("a", 10_000), ("b", 10_000)],
            3,
            1.0,
            // (10 + 10 + 50) / 3 = 23.3 → 0.47 × 3 = 1.4 → 2.
            Ok((2, 10_000)),
        ),
        (
            "a missing pod is at zero on a scale up",
            "rps",
            &three,
            vec![("a", 100_000), ("b", 100_000)],
            3,
            1.0,
            // (100 + 100 + 0) / 3 = 66.7 → 1.33 × 3 = 4.
            Ok((4, 100_000)),
        ),
        (
            "a pending pod is at zero on a scale up, its value unread",
            "rps",
            &with_pending,
            vec![("a", 100_000), ("b", 100_000), ("c", 900_000)],
            3,
            1.0,
            Ok((4, 100_000)),
        ),
        (
            "CPU's start-up rules do not apply, even to a metric named cpu",
            "cpu",
            &with_new,
            vec![("a", 100_000), ("b", 100_000), ("c", 100_000)],
            3,
            1.0,
            Ok((6, 100_000)),
        ),
        (
            "a duplicated workload's pods are calibrated",
            "rps",
            &four,
            vec![
                ("a", 100_000),
                ("b", 100_000),
                ("c", 100_000),
                ("d", 100_000),
            ],
            2,
            2.0,
            Ok((4, 100_000)),
        ),
        (
            "no values at all",
            "rps",
            &two,
            vec![],
            2,
            1.0,
            Err(CalculationError::NoCustomMetrics {
                metric: "rps".into(),
            }),
        ),
        (
            "only a pending pod has a value",
            "rps",
            std::slice::from_ref(&pending),
            vec![("c", 100_000)],
            1,
            1.0,
            Err(CalculationError::NoTargetedMetrics),
        ),
        (
            "no pods",
            "rps",
            &[],
            vec![("a", 1)],
            1,
            1.0,
            Err(CalculationError::NoPods),
        ),
    ];
    for (name, metric_name, pods, values, current, calibration, expected) in cases {
        let got = pods_proposal(metric_name, pods, &values, current, calibration, 50_000);
        assert_eq!(got, expected, "{name}");
    }
    assert_eq!(
        CalculationError::NoCustomMetrics {
            metric: "rps".into()
        }
        .to_string(),
        "unable to get metric rps: no metrics returned from custom metrics API"
    );
}

fn pods_hpa(metric: serde_json::Value) -> FederatedHPA {
    let mut hpa = hpa(2, 10);
    hpa.spec.metrics =
        vec![serde_json::from_value(json!({
        "type": "Pods",
        "pods": {"metric": metric, "target": {"type": "AverageValue", "averageValue": "50"}},
    }))
    .expect("metric spec")];
    hpa
}

#[test]
fn a_pods_metric_scales_on_the_custom_metrics_of_every_member() {
    let hpa = pods_hpa(json!({"name": "rps", "selector": {"matchLabels": {"verb": "GET"}}}));
    let source = hpa.spec.metrics[0].pods.as_ref().expect("pods");
    let key = pods_metric_key(&source.metric).expect("key");
    assert_eq!(key, ("rps".to_string(), "verb=GET".to_string()));
    let mut seen = observation(2, 0);
    seen.pods.push(pod("member2/web-0", 500));
    seen.member_replicas = 3;
    seen.template_replicas = Some(3);
    // member1's pods at 150 and member2's at 0: 100 on average against 50.
    seen.custom_metrics.insert(
        key.clone(),
        Ok(BTreeMap::from([
            ("member1/web-0".to_string(), metric(150_000)),
            ("member1/web-1".to_string(), metric(150_000)),
            ("member2/web-0".to_string(), metric(0)),
        ])),
    );
    let config = EvaluationConfig::default();
    let decision = evaluate(&hpa, &seen, &mut History::default(), &config, now());
    assert_eq!(decision.scale_to, Some(6), "{decision:?}");
    assert_eq!(decision.reason, "pods metric rps above target");
    assert_eq!(
        condition(&decision, "ScalingActive"),
        ("True", "ValidMetricFound")
    );
    let status = serde_json::to_value(&decision.status.current_metrics).expect("json");
    assert_eq!(
        status,
        json!([{"type": "Pods", "pods": {
            "metric": {"name": "rps", "selector": {"matchLabels": {"verb": "GET"}}},
            "current": {"averageValue": "100"},
        }}])
    );

    // The control plane knows no such metric: ScalingActive says so, the size stays.
    seen.custom_metrics.insert(
        key,
        Err("the server could not find the metric rps for pods".into()),
    );
    let decision = evaluate(&hpa, &seen, &mut History::default(), &config, now());
    assert_eq!(decision.scale_to, None);
    assert_eq!(
        condition(&decision, "ScalingActive"),
        ("False", "FailedGetPodsMetric")
    );
    let message = decision
        .status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "ScalingActive")
        .and_then(|c| c.message.clone())
        .unwrap_or_default();
    assert_eq!(
        message,
        "the HPA was unable to compute the replica count: unable to get metric rps: the server could not find the metric rps for pods"
    );

    // A Value target is refused with the accepted form.
    let mut value_target = pods_hpa(json!({"name": "rps"}));
    value_target.spec.metrics[0]
        .pods
        .as_mut()
        .expect("pods")
        .target
        .type_ = "Value".into();
    let decision = evaluate(
        &value_target,
        &seen,
        &mut History::default(),
        &config,
        now(),
    );
    assert_eq!(
        condition(&decision, "ScalingActive"),
        ("False", "FailedGetPodsMetric")
    );
}

/// kube's plain-metric algorithm written out directly (an AverageValue target `target`).
fn plain_model(pods: &[ModelPod], target: i64, current: i32, tolerance: f64) -> Option<i32> {
    let ready: Vec<i64> = pods
        .iter()
        .filter_map(|p| match p {
            ModelPod::Ready(u) => Some(*u),
            _ => None,
        })
        .collect();
    if ready.is_empty() {
        return None;
    }
    let ratio_of =
        |values: &[i64]| (values.iter().sum::<i64>() / values.len() as i64) as f64 / target as f64;
    let ratio = ratio_of(&ready);
    let count = |wanted: fn(&ModelPod) -> bool| pods.iter().filter(|p| wanted(p)).count();
    let missing = count(|p| matches!(p, ModelPod::Missing));
    let pending = count(|p| matches!(p, ModelPod::Pending));
    let with_unready = pending > 0 && ratio > 1.0;
    if !with_unready && missing == 0 {
        return Some(if (1.0 - ratio).abs() <= tolerance {
            current
        } else {
            (ratio * ready.len() as f64).ceil() as i32
        });
    }
    let mut all = ready.clone();
    if ratio < 1.0 {
        all.extend(std::iter::repeat_n(target, missing));
    } else if ratio > 1.0 {
        all.extend(std::iter::repeat_n(0, missing));
    }
    if with_unready {
        all.extend(std::iter::repeat_n(0, pending));
    }
    let new_ratio = ratio_of(&all);
    if (1.0 - new_ratio).abs() <= tolerance
        || (ratio < 1.0 && new_ratio > 1.0)
        || (ratio > 1.0 && new_ratio < 1.0)
    {
        return Some(current);
    }
    let replicas = (new_ratio * all.len() as f64).ceil() as i32;
    if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
        return Some(current);
    }
    Some(replicas)
}

proptest! {
    #[test]
    fn the_pods_metric_calculation_matches_the_model(
        pods in proptest::collection::vec(model_pod(), 1..12),
        target in 1i64..3000,
        current in 1i32..20,
    ) {
        let samples: Vec<PodSample> = pods
            .iter()
            .enumerate()
            .map(|(i, p)| {
                // Just started: irrelevant to a Pods metric, which has no start-up rules.
                let base = PodSample {
                    ready: Some((true, now() - SignedDuration::from_secs(1))),
                    start_time: Some(now() - SignedDuration::from_secs(2)),
                    ..pod(&format!("p{i}"), 500)
                };
                match p {
                    ModelPod::Pending => PodSample { phase: "Pending".into(), ..base },
                    ModelPod::Failed(_) => PodSample { phase: "Failed".into(), ..base },
                    _ => base,
                }
            })
            .collect();
        let metrics: BTreeMap<String, PodMetric> = pods
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                ModelPod::Ready(u) | ModelPod::Failed(u) => Some((format!("p{i}"), metric(*u))),
                ModelPod::Pending => Some((format!("p{i}"), metric(1000))),
                ModelPod::Missing => None,
            })
            .collect();
        let config = CalculatorConfig::default();
        let inputs = MetricInputs { resource: "rps", ..inputs(current, &samples, &metrics, 1.0) };
        let got = pods_metric_replicas(inputs, target, &config).ok().map(|p| p.replicas);
        let expected = if metrics.is_empty() { None } else { plain_model(&pods, target, current, config.tolerance) };
        prop_assert_eq!(got, expected, "pods {:?}", pods);
    }
}

#[test]
fn custom_metric_items_are_keyed_by_their_cluster_and_pod() {
    let list = json!({"kind": "MetricValueList", "items": [
        {"metadata": {"annotations": {"resource.karmada.io/query-from-cluster": "member1"}},
         "describedObject": {"kind": "Pod", "name": "web-1"}, "value": "1500m",
         "timestamp": "2026-06-01T12:00:00Z", "windowSeconds": 30},
        {"metadata": {"annotations": {"resource.karmada.io/query-from-cluster": "member2"}},
         "describedObject": {"kind": "Pod", "name": "web-1"}, "value": "20",
         "timestamp": "2026-06-01T12:00:00Z"},
        // No cluster: it cannot be matched to a member's pod.
        {"describedObject": {"kind": "Pod", "name": "web-2"}, "value": "20",
         "timestamp": "2026-06-01T12:00:00Z"},
    ]});
    let values = super::controller::custom_metric_values(&list);
    assert_eq!(
        values,
        BTreeMap::from([
            (
                "member1/web-1".to_string(),
                PodMetric {
                    value: 1500,
                    timestamp: now(),
                    window: SignedDuration::from_secs(30)
                }
            ),
            (
                "member2/web-1".to_string(),
                PodMetric {
                    value: 20_000,
                    timestamp: now(),
                    window: SignedDuration::from_mins(1)
                }
            ),
        ])
    );
}
