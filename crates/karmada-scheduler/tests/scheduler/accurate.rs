//! The scheduler with its estimators' answers (Karmada's accurate estimator) and the timings a decision reports.

use std::collections::HashMap;
use std::sync::Arc;

use karmada_api::ResourceBinding;
use karmada_scheduler::framework::Framework;
use karmada_scheduler::placement::prepare;
use karmada_scheduler::plan::default_registry;
use karmada_scheduler::recorder::{Code, ExtensionPoint, Recorder, Step};
use karmada_scheduler::scheduler::{
    AccurateEstimates, ScheduleOutcome, ScheduleRequest, estimator_candidates, schedule,
    schedule_recorded,
};
use karmada_scheduler::snapshot::ClusterSnapshot;
use serde_json::{Value, json};

use super::common::*;

fn aggregated_binding(replicas: i64) -> ResourceBinding {
    serde_json::from_value(json!({
        "metadata": {"name": "web-deployment", "namespace": "default"},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "default", "uid": "u"},
            "replicas": replicas,
            "replicaRequirements": {"resourceRequest": {"cpu": "2"}},
            "placement": {"clusterAffinity": {"clusterNames": ["a", "b", "c"]},
                          "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}
        }
    }))
    .expect("binding")
}

fn snapshots() -> Vec<ClusterSnapshot> {
    ["a", "b", "c", "d"]
        .iter()
        .map(|name| {
            let doc = cluster(name).capacity("6", "64Gi", 100).0;
            ClusterSnapshot::new(serde_json::from_value(doc).expect("cluster")).expect("snapshot")
        })
        .collect()
}

fn decide_with<R: Recorder>(
    binding: &ResourceBinding,
    accurate: Option<&AccurateEstimates>,
    recorder: &mut R,
) -> (ScheduleOutcome, Vec<Arc<str>>) {
    let framework =
        Framework::with_defaults(&default_registry().expect("registry")).expect("framework");
    let placement = binding.spec.placement.clone().expect("placement");
    let prepared = prepare(&placement, "placement").expect("placement");
    let request = ScheduleRequest {
        spec: &binding.spec,
        placement: &placement,
        prepared: &prepared,
        workload: None,
        observed_affinity: None,
        fresh: false,
        keep_empty: false,
        scheduler_name: "default-scheduler",
        accurate,
    };
    let clusters = snapshots();
    let candidates = estimator_candidates(&framework, &request, &clusters).expect("candidates");
    let outcome = schedule_recorded(&framework, &request, &clusters, recorder).expect("schedule");
    (outcome, candidates)
}

fn result(outcome: &ScheduleOutcome) -> Vec<(String, i64)> {
    outcome
        .result
        .as_ref()
        .expect("scheduled")
        .iter()
        .map(|t| (t.name.clone(), t.replicas))
        .collect()
}

#[test]
fn the_lesser_of_both_estimates_counts_and_missing_answers_fall_back() {
    let binding = aggregated_binding(3);
    // General estimate: 3 replicas of 2 cpu in each 6-cpu cluster. Aggregated packs all 3 into one cluster.
    let (general, candidates) = decide_with(&binding, None, &mut ());
    assert_eq!(result(&general), vec![("a".into(), 3)]);
    assert_eq!(
        candidates.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
        ["a", "b", "c"],
        "only the clusters that pass the filters are asked"
    );
    // The estimators know better: a's nodes fit 1, b's 2; c did not answer, and -1 is no answer.
    let answers: AccurateEstimates =
        HashMap::from([("a".into(), 1), ("b".into(), 2), ("c".into(), -1)]);
    let (accurate, _) = decide_with(&binding, Some(&answers), &mut ());
    assert_eq!(
        result(&accurate),
        vec![("c".into(), 3)],
        "c's general estimate holds all 3"
    );
    let tight: AccurateEstimates =
        HashMap::from([("a".into(), 1), ("b".into(), 2), ("c".into(), 1)]);
    let (spread, _) = decide_with(&binding, Some(&tight), &mut ());
    assert_eq!(
        result(&spread),
        vec![("a".into(), 1), ("b".into(), 2)],
        "no cluster gets more than its estimator allows"
    );
    let decision = |name: &str| {
        accurate
            .explanation
            .clusters
            .iter()
            .find(|c| &*c.name == name)
            .expect("decision")
            .clone()
    };
    assert_eq!(decision("a").accurate_estimate, Some(1));
    assert_eq!(decision("a").available_replicas, Some(1));
    assert_eq!(decision("c").accurate_estimate, None, "-1 is no answer");
    assert_eq!(
        decision("c").available_replicas,
        Some(3),
        "the general estimate alone"
    );
    // More than the general estimate never raises it.
    let generous: AccurateEstimates = HashMap::from([("a".into(), 50)]);
    let (outcome, _) = decide_with(&binding, Some(&generous), &mut ());
    let a = outcome
        .explanation
        .clusters
        .iter()
        .find(|c| &*c.name == "a")
        .expect("a");
    assert_eq!(a.available_replicas, Some(3));
}

#[test]
fn not_a_workload_asks_no_estimator() {
    let mut binding = aggregated_binding(0);
    binding.spec.replica_requirements = None;
    let (_, candidates) = decide_with(&binding, None, &mut ());
    assert!(candidates.is_empty());
}

#[derive(Default)]
struct Log {
    steps: Vec<Step>,
    points: Vec<(ExtensionPoint, Code)>,
    plugins: Vec<(ExtensionPoint, String, Code)>,
}

impl Recorder for Log {
    type Mark = ();
    fn mark(&mut self) {}
    fn times_plugins(&self) -> bool {
        true
    }
    fn step(&mut self, _: (), step: Step) {
        self.steps.push(step);
    }
    fn extension_point(&mut self, _: (), point: ExtensionPoint, code: Code) {
        self.points.push((point, code));
    }
    fn plugin(&mut self, _: (), point: ExtensionPoint, plugin: &Arc<str>, code: Code) {
        self.plugins.push((point, plugin.to_string(), code));
    }
}

#[test]
fn a_decision_reports_each_step_extension_point_and_plugin_call() {
    let mut log = Log::default();
    decide_with(&aggregated_binding(3), None, &mut log);
    assert_eq!(
        log.steps,
        Step::ALL.to_vec(),
        "Filter, Score, Select, AssignReplicas once each"
    );
    let filters: Vec<Code> = log
        .points
        .iter()
        .filter(|(p, _)| *p == ExtensionPoint::Filter)
        .map(|(_, c)| *c)
        .collect();
    // Four clusters filtered: a, b, c pass; d is outside the affinity.
    assert_eq!(
        filters,
        [
            Code::Success,
            Code::Success,
            Code::Success,
            Code::Unschedulable
        ]
    );
    assert_eq!(
        log.points
            .iter()
            .filter(|(p, _)| *p == ExtensionPoint::Score)
            .count(),
        1,
        "Score runs once over the feasible clusters"
    );
    let rejected: Vec<&(ExtensionPoint, String, Code)> = log
        .plugins
        .iter()
        .filter(|(_, _, code)| *code == Code::Unschedulable)
        .collect();
    assert_eq!(
        rejected,
        [&(
            ExtensionPoint::Filter,
            "ClusterAffinity".to_string(),
            Code::Unschedulable
        )]
    );
    let locality_scores = log
        .plugins
        .iter()
        .filter(|(p, name, _)| *p == ExtensionPoint::Score && name == "ClusterLocality")
        .count();
    assert_eq!(locality_scores, 3, "one score call per feasible cluster");
}

#[test]
fn a_recorded_decision_is_the_same_decision() {
    let binding = aggregated_binding(5);
    let (recorded, _) = decide_with(&binding, None, &mut Log::default());
    let framework =
        Framework::with_defaults(&default_registry().expect("registry")).expect("framework");
    let placement = binding.spec.placement.clone().expect("placement");
    let prepared = prepare(&placement, "placement").expect("placement");
    let request = ScheduleRequest {
        spec: &binding.spec,
        placement: &placement,
        prepared: &prepared,
        workload: None,
        observed_affinity: None,
        fresh: false,
        keep_empty: false,
        scheduler_name: "default-scheduler",
        accurate: None,
    };
    let plain = schedule(&framework, &request, &snapshots()).expect("schedule");
    assert_eq!(
        serde_json::to_value(&plain.explanation).expect("json"),
        serde_json::to_value(&recorded.explanation).expect("json")
    );
    let _: Value = json!(null);
}
