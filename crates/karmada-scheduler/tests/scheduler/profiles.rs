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

#[test]
fn plugins_flag_table() {
    use karmada_scheduler::framework::PluginSelection;
    let registry = default_registry().expect("registry");
    let defaults: Vec<&str> = DEFAULT_PLUGINS.to_vec();
    type Expected<'a> = Result<Vec<&'a str>, &'a str>;
    let without =
        |name: &str| -> Vec<&str> { defaults.iter().copied().filter(|n| *n != name).collect() };
    let cases: Vec<(&str, Expected)> = vec![
        ("*", Ok(defaults.clone())),
        ("*,-ClusterLocality", Ok(without("ClusterLocality"))),
        ("-ClusterEviction,*", Ok(without("ClusterEviction"))),
        (
            "*,ClusterLatency",
            Ok([defaults.clone(), vec!["ClusterLatency"]].concat()),
        ),
        (
            "ClusterAffinity,TaintToleration",
            Ok(vec!["ClusterAffinity", "TaintToleration"]),
        ),
        ("", Ok(vec![])),
        (
            "*,-Nope",
            Err("--plugins -Nope: unknown plugin; known plugins: APIEnablement"),
        ),
        (
            "*,ClusterLatency,-ClusterLatency",
            Err("--plugins ClusterLatency: is both added and removed"),
        ),
    ];
    for (flag, expected) in cases {
        let items: Vec<&str> = flag.split(',').collect();
        let got = PluginSelection::parse(&items, &registry).map_err(|e| e.to_string());
        match (&got, &expected) {
            (Ok(selection), Ok(want)) => {
                assert_eq!(selection.defaults(), want.as_slice(), "{flag}")
            }
            (Err(got), Err(want)) => assert!(got.starts_with(want), "{flag}: {got}"),
            _ => panic!("{flag}: got {got:?}, expected {expected:?}"),
        }
    }
}

#[test]
fn a_profile_starts_from_the_schedulers_plugins_and_cannot_use_removed_ones() {
    use karmada_scheduler::framework::PluginSelection;
    let registry = default_registry().expect("registry");
    let selection = PluginSelection::parse(&["*", "-ClusterLocality"], &registry).expect("flag");
    let names = |spec: Value| {
        let profile = SchedulerProfile::from_value(&profile("p", spec)).expect("profile");
        Framework::from_profile_in(&registry, &selection, &profile).map(|framework| {
            framework
                .plugins
                .iter()
                .map(|p| p.name.to_string())
                .collect::<Vec<_>>()
        })
    };
    let plain = names(json!({})).expect("plain profile");
    assert!(!plain.contains(&"ClusterLocality".to_string()), "{plain:?}");
    let error = names(
        json!({"plugins": {"schedule": {"enabled": [{"name": "ClusterLocality", "weight": 50}]}}}),
    )
    .expect_err("ClusterLocality is off in this scheduler");
    assert_eq!(
        error.path,
        "SchedulerProfile p: spec.plugins.schedule.enabled[0]"
    );
    assert!(
        error
            .message
            .contains("turned off in this scheduler (--plugins has -ClusterLocality)"),
        "{error}"
    );
    let error = names(
        json!({"pluginConfig": [{"name": "ClusterLocality", "args": {"availablePercentage": 70}}]}),
    )
    .expect_err("args for a removed plugin");
    assert_eq!(error.path, "SchedulerProfile p: spec.pluginConfig[0]");
}

#[test]
fn admission_names_the_field_of_each_problem() {
    use karmada_scheduler::framework::admission_problems;
    let registry = default_registry().expect("registry");
    let problems = |spec: Value| -> Vec<(String, Value)> {
        let spec: karmada_api::scheduling::SchedulerProfileSpec =
            serde_json::from_value(spec).expect("spec");
        admission_problems(&registry, &spec)
            .into_iter()
            .map(|p| (p.path, p.value))
            .collect()
    };
    let seed = test_fixtures::document("seed-000/07-scheduler-profile.yaml");
    assert_eq!(
        problems(seed["spec"].clone()),
        vec![],
        "the seed's profile is valid"
    );
    let cases: Vec<(Value, Vec<(&str, Value)>)> = vec![
        (
            json!({"plugins": {"schedule": {"enabled": [{"name": "ClusterAffinity"}, {"name": "NodeAffinity"}],
                                             "disabled": [{"name": "Gone"}]}}}),
            vec![
                ("spec.plugins.schedule.disabled[0].name", json!("Gone")),
                (
                    "spec.plugins.schedule.enabled[1].name",
                    json!("NodeAffinity"),
                ),
            ],
        ),
        (
            json!({"plugins": {"schedule": {"enabled": [{"name": "ClusterLocality"}]}},
                   "pluginConfig": [{"name": "ClusterLocality", "args": {"availablePercentage": "seventy"}}]}),
            vec![(
                "spec.pluginConfig[0].args.availablePercentage",
                json!("seventy"),
            )],
        ),
        (
            json!({"plugins": {"schedule": {"enabled": [{"name": "ClusterLocality"}]}},
                   "pluginConfig": [{"name": "ClusterLocality", "args": {"availablePercentage": 170}}]}),
            vec![(
                "spec.pluginConfig[0].args",
                json!({"availablePercentage": 170}),
            )],
        ),
        (
            json!({"pluginConfig": [{"name": "ClusterLatency", "args": {"thresholdMilliseconds": 50}}]}),
            vec![("spec.pluginConfig[0].name", json!("ClusterLatency"))],
        ),
        (
            json!({"pluginConfig": [{"name": "Nope", "args": {}}]}),
            vec![("spec.pluginConfig[0].name", json!("Nope"))],
        ),
        (
            json!({"plugins": {"schedule": {"enabled": [{"name": "ClusterLatency"}]}},
                   "pluginConfig": [{"name": "ClusterLatency", "args": {"threshold": 5}}]}),
            vec![("spec.pluginConfig[0].args.threshold", json!(5))],
        ),
    ];
    for (spec, expected) in cases {
        let want: Vec<(String, Value)> = expected
            .into_iter()
            .map(|(p, v)| (p.to_string(), v))
            .collect();
        assert_eq!(problems(spec.clone()), want, "{spec}");
    }
}
