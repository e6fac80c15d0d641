//! StatefulSet, DaemonSet and Job behaviour.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod common;

use common::{Sim, condition, container};
use member_sim::meta;
use member_sim::objects::ObjectKey;
use serde_json::{Value, json};

fn statefulset(name: &str, replicas: i64, policy: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container("100m", "64Mi")]}},
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            }],
        },
    })
}

fn pod_names(sim: &Sim, app: &str) -> Vec<String> {
    sim.pods_with_label("app", app)
        .iter()
        .map(|p| meta::name(p).to_string())
        .collect()
}

#[test]
fn ordered_ready_creates_pods_one_by_one_with_claims() {
    let mut sim = Sim::with_nodes(3, "8", "32Gi");
    sim.create(statefulset("db", 3, "OrderedReady"));
    sim.settle();
    assert_eq!(pod_names(&sim, "db"), vec!["db-0"]);
    let claim = sim.get("PersistentVolumeClaim", "default", "data-db-0");
    assert_eq!(claim["status"]["phase"], "Bound");
    assert_eq!(claim["status"]["capacity"]["storage"], "1Gi");
    assert!(meta::str_at(claim, "/spec/volumeName").starts_with("pvc-"));
    let db0 = sim.get("Pod", "default", "db-0");
    assert_eq!(db0["spec"]["hostname"], "db-0");
    assert_eq!(db0["spec"]["subdomain"], "db");
    assert_eq!(
        db0["spec"]["volumes"][0],
        json!({"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}})
    );
    assert_eq!(
        db0["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"],
        "db-0"
    );
    assert_eq!(
        db0["metadata"]["labels"]["apps.kubernetes.io/pod-index"],
        "0"
    );

    sim.advance(2);
    assert_eq!(pod_names(&sim, "db"), vec!["db-0", "db-1"]);
    sim.advance(2);
    assert_eq!(pod_names(&sim, "db"), vec!["db-0", "db-1", "db-2"]);
    sim.advance(2);
    let db = sim.get("StatefulSet", "default", "db");
    let status = &db["status"];
    let revision = status["updateRevision"]
        .as_str()
        .expect("revision")
        .to_string();
    assert!(revision.starts_with("db-"));
    assert_eq!(status["currentRevision"], revision.as_str());
    for field in [
        "replicas",
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
        "availableReplicas",
    ] {
        assert_eq!(status[field], 3, "{field}");
    }
    assert_eq!(status["observedGeneration"], 1);
    assert!(member_sim::statefulset::rollout_status(db));

    // Scale down: highest ordinal first, claims retained.
    sim.update_spec("StatefulSet", "default", "db", |s| {
        s["spec"]["replicas"] = json!(1)
    });
    sim.settle();
    assert_eq!(pod_names(&sim, "db"), vec!["db-0"]);
    assert!(
        sim.objects
            .get(&ObjectKey::new(
                "PersistentVolumeClaim",
                "default",
                "data-db-2"
            ))
            .is_some()
    );
}

#[test]
fn ordered_ready_waits_for_the_previous_pod() {
    let mut sim = Sim::with_nodes(1, "1", "32Gi");
    let mut sts = statefulset("db", 3, "OrderedReady");
    sts["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] =
        json!("600m");
    sim.create(sts);
    sim.advance(20);
    // db-1 cannot be scheduled, so db-2 is never created.
    assert_eq!(pod_names(&sim, "db"), vec!["db-0", "db-1"]);
    let db = sim.get("StatefulSet", "default", "db");
    assert_eq!(db["status"]["replicas"], 2);
    assert_eq!(db["status"]["readyReplicas"], 1);
}

#[test]
fn parallel_creates_all_at_once_and_rolling_update_goes_in_reverse() {
    let mut sim = Sim::with_nodes(3, "8", "32Gi");
    sim.create(statefulset("db", 3, "Parallel"));
    sim.settle();
    assert_eq!(pod_names(&sim, "db"), vec!["db-0", "db-1", "db-2"]);
    sim.advance(5);
    let old_revision = sim.get("StatefulSet", "default", "db")["status"]["currentRevision"].clone();
    sim.update_spec("StatefulSet", "default", "db", |s| {
        s["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28")
    });
    let mut replaced_order = Vec::new();
    for _ in 0..100 {
        let outcome = member_sim::sim::reconcile_all(
            &sim.objects,
            &sim.config,
            &sim.faults,
            sim.now,
            &mut sim.rng,
        );
        for write in &outcome.writes {
            if let member_sim::objects::Write::Delete(key) = write
                && key.kind == "Pod"
            {
                replaced_order.push(key.name.clone());
            }
            sim.objects.apply(write, sim.now).expect("applies");
        }
        if outcome.writes.is_empty() {
            match outcome.requeue_at {
                Some(at) => sim.now = at,
                None => break,
            }
        }
    }
    assert_eq!(replaced_order, vec!["db-2", "db-1", "db-0"]);
    let db = sim.get("StatefulSet", "default", "db");
    assert!(member_sim::statefulset::rollout_status(db));
    let status = &db["status"];
    assert_ne!(status["updateRevision"], old_revision);
    assert_eq!(status["currentRevision"], status["updateRevision"]);
    assert_eq!(status["updatedReplicas"], 3);
}

#[test]
fn daemonset_runs_one_pod_per_eligible_node() {
    let mut sim = Sim::with_nodes(3, "8", "32Gi");
    sim.update_spec("Node", "", "member-node-2", |n| {
        n["spec"]["taints"] = json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]);
    });
    sim.create(json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [container("50m", "32Mi")]}},
        },
    }));
    sim.advance(5);
    let mut nodes: Vec<String> = sim
        .pods_with_label("app", "agent")
        .iter()
        .map(|p| meta::str_at(p, "/spec/nodeName").to_string())
        .collect();
    nodes.sort();
    assert_eq!(nodes, vec!["member-node-0", "member-node-1"]);
    let status = &sim.get("DaemonSet", "kube-system", "agent")["status"];
    for field in [
        "desiredNumberScheduled",
        "currentNumberScheduled",
        "numberReady",
        "updatedNumberScheduled",
        "numberAvailable",
    ] {
        assert_eq!(status[field], 2, "{field}");
    }
    assert_eq!(status["numberUnavailable"], 0);
    assert_eq!(status["numberMisscheduled"], 0);

    // Update: pods are replaced one at a time (maxUnavailable 1).
    sim.update_spec("DaemonSet", "kube-system", "agent", |d| {
        d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2")
    });
    sim.settle();
    assert!(!member_sim::daemonset::rollout_status(sim.get(
        "DaemonSet",
        "kube-system",
        "agent"
    )));
    let unavailable = sim
        .pods_with_label("app", "agent")
        .iter()
        .filter(|p| meta::condition_status(p, "Ready") != Some("True"))
        .count();
    assert_eq!(unavailable, 1);
    sim.advance(10);
    assert!(member_sim::daemonset::rollout_status(sim.get(
        "DaemonSet",
        "kube-system",
        "agent"
    )));
    let status = &sim.get("DaemonSet", "kube-system", "agent")["status"];
    assert_eq!(status["updatedNumberScheduled"], 2);
    assert_eq!(status["numberAvailable"], 2);
}

#[test]
fn job_runs_to_completion_with_parallelism() {
    let mut sim = Sim::with_nodes(2, "8", "32Gi");
    sim.create(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "batch", "namespace": "default"},
        "spec": {
            "parallelism": 2,
            "completions": 3,
            "template": {"metadata": {"labels": {"app": "batch"}}, "spec": {"restartPolicy": "Never", "containers": [container("100m", "32Mi")]}},
        },
    }));
    sim.settle();
    let job = sim.get("Job", "default", "batch");
    assert_eq!(job["status"]["active"], 2);
    assert_eq!(job["status"]["startTime"], "2026-11-29T12:00:00Z");
    assert!(sim.pods_with_label("job-name", "batch").len() == 2);
    // Pods start after 2s and run 5s: two succeed at 7s, the third runs 7s..14s.
    sim.advance(8);
    let job = sim.get("Job", "default", "batch");
    assert_eq!(job["status"]["succeeded"], 2);
    assert_eq!(job["status"]["active"], 1);
    sim.advance(10);
    let job = sim.get("Job", "default", "batch");
    assert_eq!(job["status"]["succeeded"], 3);
    assert_eq!(job["status"]["active"], 0);
    assert_eq!(job["status"]["completionTime"], "2026-11-29T12:00:14Z");
    for type_ in ["SuccessCriteriaMet", "Complete"] {
        let c = condition(job, type_);
        assert_eq!(c["status"], "True");
        assert_eq!(c["reason"], "CompletionsReached");
        assert_eq!(c["message"], "Reached expected number of succeeded pods");
    }
    let succeeded = sim.pods_with_label("job-name", "batch");
    assert_eq!(succeeded.len(), 3);
    for p in succeeded {
        assert_eq!(p["status"]["phase"], "Succeeded");
        assert_eq!(
            p["status"]["containerStatuses"][0]["state"]["terminated"]["reason"],
            "Completed"
        );
        assert_eq!(condition(p, "Ready")["reason"], "PodCompleted");
    }
}

#[test]
fn daemon_pods_survive_a_not_ready_node_but_not_a_lost_selector() {
    let mut sim = Sim::with_nodes(2, "8", "32Gi");
    sim.create(json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "containers": [container("50m", "32Mi")]}},
        },
    }));
    sim.advance(5);
    assert_eq!(sim.pods_with_label("app", "agent").len(), 2);

    sim.faults
        .apply("node-notready member-node-1".parse().expect("fault"));
    sim.advance(1);
    // The not-ready NoSchedule taint stops new daemon pods, but the NoExecute one is tolerated.
    assert_eq!(sim.pods_with_label("app", "agent").len(), 2);
    let status = &sim.get("DaemonSet", "kube-system", "agent")["status"];
    assert_eq!(status["desiredNumberScheduled"], 1);
    assert_eq!(status["numberMisscheduled"], 1);

    sim.update_spec("Node", "", "member-node-0", |n| {
        n["metadata"]["labels"]["kubernetes.io/os"] = json!("windows")
    });
    sim.settle();
    let nodes: Vec<&str> = sim
        .pods_with_label("app", "agent")
        .iter()
        .map(|p| meta::str_at(p, "/spec/nodeName"))
        .collect();
    assert_eq!(nodes, vec!["member-node-1"]);
}
