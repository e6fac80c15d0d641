//! The scheduler as operators run it, end to end with real processes: the seed's SchedulerProfile applied with
//! kubectl steers live decisions (with the seed's ClusterLatency plugin enabled in it, a policy naming the
//! profile avoids a member made slow with `member-sim fault latency`, the default profile does not), a profile
//! edit applies without a restart, `--plugins=*,-ClusterLocality` changes decisions, `--help` lists Karmada's
//! flags, and `karmadactl plan --from-cluster` answers what the running scheduler decided.

use serde_json::{Value, json};

use crate::harness::{Run, bin};
use crate::plane::{Plane, wait_for};

fn fixture(name: &str) -> String {
    test_fixtures::path_str(name)
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name, "namespace": "apps"},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "web", "image": "nginx",
                                          "resources": {"requests": {"cpu": "100m"}}}]}}}})
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "apps"},
           "data": {"greeting": "hello"}})
}

/// A Deployment `name` in `apps` with `replicas`, and its policy (extra spec fields merged in).
fn workload(plane: &Plane, name: &str, replicas: i64, policy_spec: Value) {
    propagate(plane, deployment(name, replicas), policy_spec);
}

/// `template` (in `apps`) and a PropagationPolicy named like it (extra spec fields merged in).
fn propagate(plane: &Plane, template: Value, policy_spec: Value) {
    let name = template["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (api_version, kind) = (template["apiVersion"].clone(), template["kind"].clone());
    let mut spec = json!({
        "resourceSelectors": [{"apiVersion": api_version, "kind": kind, "name": name}],
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), policy_spec.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    let documents = [
        template,
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
               "metadata": {"name": name, "namespace": "apps"}, "spec": spec}),
    ];
    for document in documents {
        plane
            .karmada
            .kubectl_stdin(&["apply", "-f", "-"], &document.to_string())
            .success();
    }
}

/// The binding of `name` (`name-deployment`, or `name-configmap` when the name says so).
fn binding(plane: &Plane, name: &str) -> Result<Value, String> {
    let kind = if name.ends_with("-config") {
        "configmap"
    } else {
        "deployment"
    };
    plane.object(&["resourcebinding", "-n", "apps", &format!("{name}-{kind}")])
}

fn targets(binding: &Value) -> Vec<String> {
    let mut names: Vec<String> = binding["spec"]["clusters"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn explanation(binding: &Value) -> Value {
    binding["metadata"]["annotations"]["scheduling.karmada.io/explanation"]
        .as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null)
}

/// Waits until `name`'s binding is scheduled onto exactly `want` by a decision satisfying `decided`.
#[track_caller]
fn placed_on(plane: &Plane, name: &str, want: &[&str], decided: impl Fn(&Value) -> bool) -> Value {
    wait_for(&format!("{name} on {want:?}"), || {
        let b = binding(plane, name)?;
        let observed = b["status"]["schedulerObservedGeneration"] == b["metadata"]["generation"];
        if targets(&b) == want && observed && decided(&explanation(&b)) {
            Ok(b)
        } else {
            Err(format!(
                "targets {:?}, observed {observed}, explanation {}\nbinding {}\n{}",
                targets(&b),
                explanation(&b),
                json!({"metadata": b["metadata"]["generation"], "spec": b["spec"], "status": b["status"]}),
                plane.logs()
            ))
        }
    })
}

fn api_latency_ms(plane: &Plane, cluster: &str) -> Option<u64> {
    let c = plane.object(&["cluster", cluster]).ok()?;
    c["metadata"]["annotations"]["cluster.karmada.io/api-latency"]
        .as_str()?
        .strip_suffix("ms")?
        .parse()
        .ok()
}

#[test]
fn the_seeds_profile_steers_live_decisions_and_edits_apply_without_restart() {
    let plane = Plane::start(&["member1", "member2"]);
    plane.kubectl(&["create", "namespace", "apps"]).success();
    // The seed's profile as it is, then the seed's custom plugin enabled in it.
    plane
        .kubectl(&[
            "apply",
            "-f",
            &fixture("seed-000/07-scheduler-profile.yaml"),
        ])
        .success();
    plane
        .kubectl(&[
            "patch",
            "schedulerprofile",
            "latency-sensitive",
            "--type=json",
            "-p",
            r#"[{"op": "add", "path": "/spec/plugins/schedule/enabled/-", "value": {"name": "ClusterLatency", "weight": 10}}]"#,
        ])
        .success();
    // member2 answers slowly; the cluster status controller measures it.
    plane.fault("member2", &["latency", "300ms"]);
    wait_for(
        "member2's measured latency above 100ms",
        || match api_latency_ms(&plane, "member2") {
            Some(ms) if ms > 100 => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    let duplicated =
        json!({"placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}});
    let mut latency_policy = duplicated.clone();
    latency_policy["schedulerName"] = json!("latency-sensitive");
    workload(&plane, "fast-path", 1, latency_policy);
    workload(&plane, "anywhere", 1, duplicated);

    let chosen = placed_on(&plane, "fast-path", &["member1"], |e| {
        e["profile"] == "latency-sensitive" && e["profileGeneration"] == 2
    });
    let slow = explanation(&chosen)["clusters"]
        .as_array()
        .and_then(|c| c.iter().find(|d| d["name"] == "member2"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(slow["filteredBy"]["plugin"], "ClusterLatency", "{slow}");
    placed_on(&plane, "anywhere", &["member1", "member2"], |e| {
        e["profile"] == "default"
    });

    // An edit of the live profile (a looser threshold) decides the next decision, no restart.
    plane
        .kubectl(&[
            "patch",
            "schedulerprofile",
            "latency-sensitive",
            "--type=json",
            "-p",
            r#"[{"op": "add", "path": "/spec/pluginConfig/-", "value": {"name": "ClusterLatency", "args": {"thresholdMilliseconds": 5000}}}]"#,
        ])
        .success();
    placed_on(&plane, "fast-path", &["member1", "member2"], |e| {
        e["profileGeneration"] == 3
    });

    // A bad edit is refused at admission with the field, and the live profile stays as it was.
    let refused = plane.kubectl(&[
        "patch",
        "schedulerprofile",
        "latency-sensitive",
        "--type=json",
        "-p",
        r#"[{"op": "replace", "path": "/spec/pluginConfig/1/args/thresholdMilliseconds", "value": -3}]"#,
    ]);
    let err = refused.failure();
    assert!(
        err.contains("spec.pluginConfig[1].args")
            && err.contains("thresholdMilliseconds must be a positive number"),
        "{err}"
    );
}

#[test]
fn plugins_flag_changes_decisions_and_plan_from_cluster_agrees() {
    let mut plane = Plane::start(&["member1", "member2"]);
    plane.kubectl(&["create", "namespace", "apps"]).success();
    // One cluster out of the allowed ones, first member2 alone, then both allowed. For a ConfigMap (no replicas,
    // so no capacity to compare) ClusterLocality keeps the binding where it runs (member2); without it the tie
    // goes to the first name (member1).
    let policy = |clusters: &[&str]| {
        json!({"placement": {
            "clusterAffinity": {"clusterNames": clusters},
            "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}]}})
    };
    propagate(&plane, config_map("sticky-config"), policy(&["member2"]));
    placed_on(&plane, "sticky-config", &["member2"], |_| true);
    propagate(
        &plane,
        config_map("sticky-config"),
        policy(&["member1", "member2"]),
    );
    let stayed = placed_on(&plane, "sticky-config", &["member2"], |e| {
        e["plugins"].to_string().contains("ClusterLocality")
    });
    assert_eq!(
        stayed["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        json!(["member1", "member2"])
    );

    // The what-if against the live control plane (its clusters and sticky's current binding on member2): the
    // default plugins keep it on member2, as the running scheduler did; without ClusterLocality it would go to
    // member1. From the files alone (no current binding) it is member1 either way.
    let policy_doc = json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "sticky-config", "namespace": "apps"},
        "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "sticky-config"}],
                 "placement": policy(&["member1", "member2"])["placement"]}});
    let file = plane.karmada.file(
        "sticky.yaml",
        &format!("{}\n---\n{policy_doc}\n", config_map("sticky-config")),
    );
    let file = file.to_str().expect("utf8");
    let planned = plane.karmadactl(&["plan", "--from-cluster", "-o", "json", "-f", file]);
    assert_eq!(targets(&planned.json()), ["member2"], "{}", planned.stdout);
    let without = plane.karmadactl(&[
        "plan",
        "--from-cluster",
        "--plugins=*,-ClusterLocality",
        "-o",
        "json",
        "-f",
        file,
    ]);
    assert_eq!(targets(&without.json()), ["member1"], "{}", without.stdout);
    let files_only = plane.karmadactl(&["plan", "-o", "json", "-f", file]);
    assert_eq!(
        targets(&files_only.json()),
        ["member1"],
        "{}",
        files_only.stdout
    );
    plane.restart_scheduler_with(&["--plugins=*,-ClusterLocality"]);
    propagate(&plane, config_map("loose-config"), policy(&["member2"]));
    placed_on(&plane, "loose-config", &["member2"], |e| {
        e.is_object() && !e["plugins"].to_string().contains("ClusterLocality")
    });
    propagate(
        &plane,
        config_map("loose-config"),
        policy(&["member1", "member2"]),
    );
    placed_on(&plane, "loose-config", &["member1"], |e| {
        e.is_object() && !e["plugins"].to_string().contains("ClusterLocality")
    });

    // The scheduler without ClusterLocality moves sticky too (a ConfigMap is decided again on every event), as
    // the plan said it would.
    placed_on(&plane, "sticky-config", &["member1"], |e| {
        e.is_object() && !e["plugins"].to_string().contains("ClusterLocality")
    });

    // Clusters in the files and --from-cluster together are refused with what to do.
    let clash = plane
        .karmada
        .file("clash.yaml", "{\"apiVersion\": \"cluster.karmada.io/v1alpha1\", \"kind\": \"Cluster\", \"metadata\": {\"name\": \"x\"}}\n");
    let refused = plane.karmadactl(&[
        "plan",
        "--from-cluster",
        "-f",
        file,
        "-f",
        clash.to_str().expect("utf8"),
    ]);
    assert!(
        refused
            .failure()
            .contains("remove them from the files or drop --from-cluster"),
        "{}",
        refused.stderr
    );
    // A profile by name from the control plane; a missing one says what to do.
    plane
        .kubectl(&[
            "apply",
            "-f",
            &fixture("seed-000/07-scheduler-profile.yaml"),
        ])
        .success();
    let profiled = plane.karmadactl(&[
        "plan",
        "--from-cluster",
        "--profile",
        "latency-sensitive",
        "-f",
        file,
    ]);
    assert!(
        profiled.success().contains("profile latency-sensitive"),
        "{}",
        profiled.stdout
    );
    let missing = plane.karmadactl(&["plan", "--from-cluster", "--profile", "nope", "-f", file]);
    assert!(
        missing
            .failure()
            .contains("no SchedulerProfile \"nope\" in the control plane"),
        "{}",
        missing.stderr
    );
}

#[test]
fn help_lists_karmadas_flags() {
    let help = |component: &str| -> String {
        let out = Run::from(
            std::process::Command::new(bin("karmada"))
                .args([component, "--help"])
                .output()
                .expect("run karmada"),
        );
        out.success().to_string()
    };
    let scheduler = help("scheduler");
    for flag in [
        "--plugins",
        "--enable-scheduler-estimator",
        "--scheduler-estimator-timeout",
        "--scheduler-estimator-port",
        "--scheduler-estimator-service-prefix",
        "--disable-scheduler-estimator-in-pull-mode",
        "--feature-gates",
        "PriorityBasedScheduling=true|false (BETA - default=true)",
        "All built-in plugins: APIEnablement,",
    ] {
        assert!(
            scheduler.contains(flag),
            "scheduler --help lacks {flag}:\n{scheduler}"
        );
    }
    let cm = help("controller-manager");
    for flag in [
        "--controllers",
        "Disabled-by-default controllers: hpaScaleTargetMarker, deploymentReplicasSyncer",
        "--feature-gates",
        "PropagationPolicyPreemption=true|false (ALPHA - default=false)",
        "--skipped-propagating-namespaces",
        "--skipped-propagating-apis",
    ] {
        assert!(
            cm.contains(flag),
            "controller-manager --help lacks {flag}:\n{cm}"
        );
    }
    let estimator = help("scheduler-estimator");
    for flag in [
        "--cluster-name",
        "--server-port",
        "--kubeconfig",
        "--feature-gates",
    ] {
        assert!(
            estimator.contains(flag),
            "scheduler-estimator --help lacks {flag}:\n{estimator}"
        );
    }
    // A bad flag value says what is accepted.
    let bad = Run::from(
        std::process::Command::new(bin("karmada"))
            .args([
                "controller-manager",
                "--kubeconfig",
                "x",
                "--controllers",
                "*,-detector",
            ])
            .output()
            .expect("run karmada"),
    );
    assert!(
        bad.failure()
            .contains("is not in the list of known controllers"),
        "{}",
        bad.stderr
    );
}

#[test]
fn the_preemption_gate_turns_policy_preemption_on() {
    let plane = Plane::start_with(
        &["member1"],
        &["--feature-gates=PropagationPolicyPreemption=true,PriorityBasedScheduling=true"],
    );
    plane.kubectl(&["create", "namespace", "apps"]).success();
    workload(&plane, "web", 1, json!({"placement": {}}));
    let owner = |plane: &Plane| -> Result<String, String> {
        let d = plane.object(&["deployment", "-n", "apps", "web"])?;
        Ok(
            d["metadata"]["annotations"]["propagationpolicy.karmada.io/name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    };
    wait_for("web claimed by its policy", || {
        match owner(&plane)?.as_str() {
            "web" => Ok(()),
            other => Err(other.to_string()),
        }
    });
    // A PriorityClass for the preempting policy's schedulePriority.
    plane
        .karmada
        .kubectl_stdin(
            &["apply", "-f", "-"],
            &json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": {"name": "urgent"}, "value": 1000})
            .to_string(),
        )
        .success();
    plane
        .karmada
        .kubectl_stdin(
            &["apply", "-f", "-"],
            &json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                    "metadata": {"name": "takeover", "namespace": "apps"},
                    "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
                             "priority": 10, "preemption": "Always",
                             "schedulePriority": {"priorityClassSource": "KubePriorityClass", "priorityClassName": "urgent"},
                             "placement": {}}})
            .to_string(),
        )
        .success();
    wait_for("web taken over by the preempting policy", || {
        match owner(&plane)?.as_str() {
            "takeover" => Ok(()),
            other => Err(format!("{other}\n{}", plane.logs())),
        }
    });
    // Its binding carries the PriorityClass's value for the scheduler's queue.
    wait_for("the binding's schedulePriority", || {
        let b = binding(&plane, "web")?;
        if b["spec"]["schedulePriority"]["priority"] == 1000 {
            Ok(())
        } else {
            Err(b["spec"].to_string())
        }
    });
}
