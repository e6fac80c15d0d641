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

use super::evaluate::{EvaluationConfig, Observation, PodUsage, evaluate};
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
