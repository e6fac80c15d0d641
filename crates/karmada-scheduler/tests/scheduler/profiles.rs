//! Scheduler profiles: selection by schedulerName, enabled/disabled/weights/pluginConfig, defaults.

use karmada_scheduler::framework::{DEFAULT_PLUGINS, Framework, SchedulerProfile};
use karmada_scheduler::plan::default_registry;
use serde_json::{Value, json};

use super::common::*;

fn profile(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "scheduling.karmada.io/v1alpha1", "kind": "SchedulerProfile", "metadata": {"name": name}, "spec": spec})
}

fn plugin_names(spec: Value) -> Result<Vec<(String, i64)>, String> {
    let registry = default_registry().map_err(|e| e.to_string())?;
    let profile = SchedulerProfile::from_value(&profile("p", spec)).map_err(|e| e.to_string())?;
    let framework = Framework::from_profile(&registry, &profile).map_err(|e| e.to_string())?;
    Ok(framework
        .plugins
        .iter()
        .map(|p| (p.plugin.name().to_string(), p.weight))
        .collect())
}

#[test]
fn profile_composition_table() {
    let defaults: Vec<(String, i64)> = DEFAULT_PLUGINS
        .iter()
        .map(|n| ((*n).to_string(), 1))
        .collect();
    type Expected = Result<Vec<(String, i64)>, &'static str>;
    let cases: Vec<(&str, Value, Expected)> = vec![
        (
            "empty spec keeps the defaults",
            json!({}),
            Ok(defaults.clone()),
        ),
        (
            "disable all then enable one",
            json!({"plugins": {"schedule": {"disabled": [{"name": "*"}], "enabled": [{"name": "ClusterAffinity", "weight": 3}]}}}),
            Ok(expect(&[("ClusterAffinity", 3)])),
        ),
        (
            "unknown enabled plugin",
            json!({"plugins": {"schedule": {"enabled": [{"name": "NodeAffinity"}]}}}),
            Err(
                "SchedulerProfile p: spec.plugins.schedule.enabled[0]: plugin \"NodeAffinity\": unknown plugin; known plugins: APIEnablement, AvailableResources, ClusterAffinity, ClusterEviction, ClusterLatency, ClusterLocality, ClusterPorts, SpreadConstraint, TaintToleration",
            ),
        ),
        (
            "unknown disabled plugin",
            json!({"plugins": {"schedule": {"disabled": [{"name": "Nope"}]}}}),
            Err("spec.plugins.schedule.disabled[0]: plugin \"Nope\": unknown plugin"),
        ),
        (
            "negative weight",
            json!({"plugins": {"schedule": {"enabled": [{"name": "ClusterLocality", "weight": -1}]}}}),
            Err("weight: must be 0 or more, got -1"),
        ),
        (
            "misspelt field",
            json!({"plugin": {}}),
            Err("unknown field `plugin`"),
        ),
        (
            "args for a plugin that takes none",
            json!({"pluginConfig": [{"name": "TaintToleration", "args": {"x": 1}}]}),
            Err("plugin TaintToleration: this plugin takes no arguments"),
        ),
        (
            "unknown args field",
            json!({"pluginConfig": [{"name": "ClusterLocality", "args": {"kind": "ClusterLocalityArgs", "availablePercent": 70}}]}),
            Err("invalid args: unknown field `availablePercent`"),
        ),
        (
            "args out of range",
            json!({"pluginConfig": [{"name": "ClusterLocality", "args": {"availablePercentage": 170}}]}),
            Err("availablePercentage must be between 0 and 100, got 170"),
        ),
        (
            "args for a plugin not enabled",
            json!({"pluginConfig": [{"name": "ClusterLatency", "args": {}}]}),
            Err("has args for ClusterLatency, which the profile does not enable"),
        ),
    ];
    for (name, spec, expected) in cases {
        let result = plugin_names(spec);
        match (&result, &expected) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{name}"),
            (Err(got), Err(want)) => assert!(got.contains(want), "{name}: {got}"),
            _ => panic!("{name}: got {result:?}, expected {expected:?}"),
        }
    }
}

#[test]
fn scheduler_name_selects_the_profile_or_fails_clearly() {
    let mut named = policy(json!({}));
    named["spec"]["schedulerName"] = json!("gpu-scheduler");
    let error = try_run(
        &deployment("app", 1, "1", "1Gi"),
        &named,
        &[cluster("a")],
        &[],
    )
    .expect_err("no such profile");
    assert!(
        error.contains("\"gpu-scheduler\" has no SchedulerProfile among the inputs (given: none)"),
        "{error}"
    );
    let profiles = [profile(
        "gpu-scheduler",
        json!({"plugins": {"schedule": {"disabled": [{"name": "TaintToleration"}]}}}),
    )];
    let tainted = [cluster("a").taint("k", "v", "NoSchedule")];
    let plan = try_run(
        &deployment("app", 1, "1", "1Gi"),
        &named,
        &tainted,
        &profiles,
    )
    .expect("plan");
    assert!(plan.success(), "TaintToleration disabled by the profile");
    assert_eq!(plan.explanation.profile, "gpu-scheduler");
}
