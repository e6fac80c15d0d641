//! Deployment → ReplicaSet → Pod behaviour.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod common;

use common::{Sim, condition, deployment};
use member_sim::deployment::{REVISION_ANNOTATION, rollout_status};
use member_sim::meta;
use serde_json::{Value, json};

fn replica_sets<'a>(sim: &'a Sim, app: &str) -> Vec<&'a Value> {
    let mut list: Vec<&Value> = sim
        .objects
        .list("ReplicaSet")
        .filter(|rs| meta::labels(rs).get("app").and_then(Value::as_str) == Some(app))
        .collect();
    list.sort_by_key(|rs| {
        meta::annotation(rs, REVISION_ANNOTATION).and_then(|r| r.parse::<i64>().ok())
    });
    list
}

#[test]
fn a_deployment_rolls_out_and_rollout_status_completes() {
    let mut sim = Sim::with_nodes(3, "8", "32Gi");
    sim.create(deployment("web", 3, "500m"));
    sim.settle();
    let web = sim.get("Deployment", "default", "web");
    let rs = replica_sets(&sim, "web");
    assert_eq!(rs.len(), 1);
    let rs_name = meta::name(rs[0]).to_string();
    let hash = rs[0]["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .expect("hash")
        .to_string();
    assert_eq!(rs_name, format!("web-{hash}"));
    assert_eq!(meta::annotation(rs[0], REVISION_ANNOTATION), Some("1"));
    assert_eq!(meta::annotation(web, REVISION_ANNOTATION), Some("1"));
    assert_eq!(
        rs[0]["spec"]["selector"]["matchLabels"],
        json!({"app": "web", "pod-template-hash": hash})
    );
    assert_eq!(
        rs[0]["metadata"]["ownerReferences"][0]["kind"],
        "Deployment"
    );
    // Pods exist, are bound, but not yet ready: not complete.
    assert_eq!(rollout_status(web), Ok(false));
    let pods = sim.pods_with_label("app", "web");
    assert_eq!(pods.len(), 3);
    for p in &pods {
        let name = meta::name(p);
        let suffix = name
            .strip_prefix(&format!("{rs_name}-"))
            .expect("rs prefix");
        assert_eq!(suffix.len(), 5, "{name}");
        assert!(!meta::str_at(p, "/spec/nodeName").is_empty());
        assert_eq!(p["metadata"]["labels"]["pod-template-hash"], hash.as_str());
    }
    let progressing = condition(web, "Progressing");
    assert_eq!(progressing["status"], "True");

    sim.advance(2);
    let web = sim.get("Deployment", "default", "web");
    let status = &web["status"];
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(status["replicas"], 3);
    assert_eq!(status["updatedReplicas"], 3);
    assert_eq!(status["readyReplicas"], 3);
    assert_eq!(status["availableReplicas"], 3);
    assert_eq!(status["unavailableReplicas"], 0);
    let available = condition(web, "Available");
    assert_eq!(available["reason"], "MinimumReplicasAvailable");
    assert_eq!(available["message"], "Deployment has minimum availability.");
    let progressing = condition(web, "Progressing");
    assert_eq!(progressing["reason"], "NewReplicaSetAvailable");
    assert_eq!(
        progressing["message"],
        format!("ReplicaSet \"{rs_name}\" has successfully progressed.")
    );
    assert!(progressing.get("lastUpdateTime").is_some());
    assert_eq!(rollout_status(web), Ok(true));
    let rs = sim.get("ReplicaSet", "default", &rs_name);
    assert_eq!(
        rs["status"],
        json!({"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 1})
    );
}

#[test]
fn progressing_reasons_follow_the_rollout() {
    let mut sim = Sim::with_nodes(3, "8", "32Gi");
    sim.create(deployment("web", 2, "100m"));
    let mut reasons = Vec::new();
    for _ in 0..6 {
        let outcome = member_sim::sim::reconcile_all(
            &sim.objects,
            &sim.config,
            &sim.faults,
            sim.now,
            &mut sim.rng,
        );
        for write in &outcome.writes {
            sim.objects.apply(write, sim.now).expect("applies");
        }
        let web = sim.get("Deployment", "default", "web");
        let reason = web
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == "Progressing"))
            .map(|c| c["reason"].clone());
        if let Some(reason) = reason
            && reasons.last() != Some(&reason)
        {
            reasons.push(reason);
        }
    }
    sim.advance(2);
    let last = condition(sim.get("Deployment", "default", "web"), "Progressing")["reason"].clone();
    reasons.push(last);
    assert_eq!(reasons.first(), Some(&json!("NewReplicaSetCreated")));
    assert!(reasons.contains(&json!("ReplicaSetUpdated")), "{reasons:?}");
    assert_eq!(reasons.last(), Some(&json!("NewReplicaSetAvailable")));
}

#[test]
fn a_deployment_that_does_not_fit_says_so() {
    let mut sim = Sim::with_nodes(2, "2", "8Gi");
    sim.create(deployment("big", 3, "1500m"));
    sim.advance(5);
    let big = sim.get("Deployment", "default", "big");
    assert_eq!(big["status"]["replicas"], 3);
    assert_eq!(big["status"]["availableReplicas"], 2);
    assert_eq!(big["status"]["unavailableReplicas"], 1);
    let available = condition(big, "Available");
    assert_eq!(available["status"], "False");
    assert_eq!(available["reason"], "MinimumReplicasUnavailable");
    assert_eq!(
        available["message"],
        "Deployment does not have minimum availability."
    );
    let pending: Vec<&Value> = sim
        .pods_with_label("app", "big")
        .into_iter()
        .filter(|p| p["status"]["phase"] == "Pending")
        .collect();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        condition(pending[0], "PodScheduled")["message"],
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    );
    assert_eq!(rollout_status(big), Ok(false));
    // After the progress deadline (600s) the rollout is reported as stuck.
    sim.advance(601);
    let big = sim.get("Deployment", "default", "big");
    let progressing = condition(big, "Progressing");
    assert_eq!(progressing["status"], "False");
    assert_eq!(progressing["reason"], "ProgressDeadlineExceeded");
    let rs_name = meta::name(replica_sets(&sim, "big")[0]).to_string();
    assert_eq!(
        progressing["message"],
        format!("ReplicaSet \"{rs_name}\" has timed out progressing.")
    );
    assert_eq!(
        rollout_status(big),
        Err("deployment \"big\" exceeded its progress deadline".to_string())
    );
}

/// Counts (old pods, new pods, available pods) while a rollout runs pass by pass.
fn roll(sim: &mut Sim, app: &str, passes: usize) -> Vec<(usize, usize, usize)> {
    let mut history = Vec::new();
    for _ in 0..passes {
        let outcome = member_sim::sim::reconcile_all(
            &sim.objects,
            &sim.config,
            &sim.faults,
            sim.now,
            &mut sim.rng,
        );
        for write in &outcome.writes {
            sim.objects.apply(write, sim.now).expect("applies");
        }
        let new_hash = replica_sets(sim, app)
            .last()
            .map(|rs| rs["metadata"]["labels"]["pod-template-hash"].clone());
        let pods = sim.pods_with_label("app", app);
        let new = pods
            .iter()
            .filter(|p| Some(&p["metadata"]["labels"]["pod-template-hash"]) == new_hash.as_ref())
            .count();
        let available = pods
            .iter()
            .filter(|p| meta::condition_status(p, "Ready") == Some("True"))
            .count();
        history.push((pods.len() - new, new, available));
        if outcome.writes.is_empty() {
            match outcome.requeue_at {
                Some(at) if at > sim.now => sim.now = at,
                _ => break,
            }
        }
    }
    history
}

#[test]
fn rolling_update_surges_and_keeps_availability() {
    let mut sim = Sim::with_nodes(3, "8", "32Gi");
    let mut web = deployment("web", 4, "100m");
    web["spec"]["strategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}});
    sim.create(web);
    sim.advance(5);
    assert_eq!(
        rollout_status(sim.get("Deployment", "default", "web")),
        Ok(true)
    );

    sim.update_spec("Deployment", "default", "web", |d| {
        d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28")
    });
    let history = roll(&mut sim, "web", 200);
    for (old, new, available) in &history {
        assert!(
            old + new <= 5,
            "more than replicas+maxSurge pods: {history:?}"
        );
        assert!(
            *available >= 3,
            "fewer than replicas-maxUnavailable available: {history:?}"
        );
    }
    // Kubernetes order: first the new ReplicaSet surges, then old pods go.
    let first_change = history
        .iter()
        .find(|(old, new, _)| (*old, *new) != (4, 0))
        .expect("changes");
    assert_eq!((first_change.0, first_change.1), (4, 1), "{history:?}");
    assert_eq!(history.last().map(|h| (h.0, h.1)), Some((0, 4)));
    sim.settle();
    let web = sim.get("Deployment", "default", "web");
    assert_eq!(rollout_status(web), Ok(true));
    assert_eq!(web["status"]["observedGeneration"], 2);
    assert_eq!(meta::annotation(web, REVISION_ANNOTATION), Some("2"));
    let sets = replica_sets(&sim, "web");
    assert_eq!(sets.len(), 2);
    assert_eq!(sets[0]["spec"]["replicas"], 0);
    assert_eq!(meta::annotation(sets[1], REVISION_ANNOTATION), Some("2"));
}

#[test]
fn recreate_stops_everything_first() {
    let mut sim = Sim::with_nodes(3, "8", "32Gi");
    let mut web = deployment("web", 3, "100m");
    web["spec"]["strategy"] = json!({"type": "Recreate"});
    sim.create(web);
    sim.advance(5);
    sim.update_spec("Deployment", "default", "web", |d| {
        d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28")
    });
    let history = roll(&mut sim, "web", 200);
    for (old, new, _) in &history {
        assert!(
            *old == 0 || *new == 0,
            "old and new pods together under Recreate: {history:?}"
        );
    }
    assert_eq!(history.last().map(|h| (h.0, h.1, h.2)), Some((0, 3, 3)));
    assert_eq!(
        rollout_status(sim.get("Deployment", "default", "web")),
        Ok(true)
    );
}

#[test]
fn rollback_to_an_old_template_reuses_its_replica_set_with_a_new_revision() {
    let mut sim = Sim::with_nodes(3, "8", "32Gi");
    sim.create(deployment("web", 2, "100m"));
    sim.advance(5);
    let first = meta::name(replica_sets(&sim, "web")[0]).to_string();
    sim.update_spec("Deployment", "default", "web", |d| {
        d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28")
    });
    sim.advance(30);
    sim.update_spec("Deployment", "default", "web", |d| {
        d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.27")
    });
    sim.advance(30);
    let sets = replica_sets(&sim, "web");
    assert_eq!(sets.len(), 2);
    assert_eq!(meta::name(sets[1]), first);
    assert_eq!(meta::annotation(sets[1], REVISION_ANNOTATION), Some("3"));
    assert_eq!(sets[1]["spec"]["replicas"], 2);
    assert_eq!(
        meta::annotation(sim.get("Deployment", "default", "web"), REVISION_ANNOTATION),
        Some("3")
    );
}

#[test]
fn scaling_and_min_ready_seconds() {
    let mut sim = Sim::with_nodes(3, "8", "32Gi");
    let mut web = deployment("web", 2, "100m");
    web["spec"]["minReadySeconds"] = json!(30);
    sim.create(web);
    sim.advance(2);
    let web = sim.get("Deployment", "default", "web");
    assert_eq!(web["status"]["readyReplicas"], 2);
    assert_eq!(web["status"]["availableReplicas"], 0);
    sim.advance(30);
    assert_eq!(
        sim.get("Deployment", "default", "web")["status"]["availableReplicas"],
        2
    );
    sim.update_spec("Deployment", "default", "web", |d| {
        d["spec"]["replicas"] = json!(5)
    });
    sim.advance(40);
    let web = sim.get("Deployment", "default", "web");
    assert_eq!(web["status"]["availableReplicas"], 5);
    assert_eq!(sim.pods_with_label("app", "web").len(), 5);
    sim.update_spec("Deployment", "default", "web", |d| {
        d["spec"]["replicas"] = json!(1)
    });
    sim.advance(1);
    assert_eq!(sim.pods_with_label("app", "web").len(), 1);
    assert_eq!(
        rollout_status(sim.get("Deployment", "default", "web")),
        Ok(true)
    );
}

#[test]
fn invalid_strategy_is_reported_not_acted_on() {
    let mut sim = Sim::with_nodes(1, "8", "32Gi");
    let mut web = deployment("web", 2, "100m");
    web["spec"]["strategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}});
    sim.create(web);
    let settled = sim.settle();
    assert_eq!(sim.objects.list("ReplicaSet").count(), 0);
    assert!(
        settled
            .errors
            .iter()
            .any(|e| e.contains("Deployment default/web")
                && e.contains("may not be 0 when `maxSurge` is 0")),
        "{:?}",
        settled.errors
    );
}
