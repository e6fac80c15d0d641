//! Invariants over random clusters and workloads.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod common;

use std::collections::BTreeMap;

use common::{Sim, container, deployment};
use member_sim::config::SimConfig;
use member_sim::naming::SplitMix64;
use member_sim::objects::Write;
use member_sim::resources::{self, Resources};
use member_sim::{meta, scheduler, sim};
use proptest::prelude::*;
use serde_json::{Value, json};

fn step(sim: &mut Sim) -> Vec<Write> {
    let outcome = sim::reconcile_all(
        &sim.objects,
        &sim.config,
        &sim.faults,
        sim.now,
        &mut sim.rng,
    );
    for write in &outcome.writes {
        sim.objects
            .apply(write, sim.now)
            .expect("writes apply cleanly");
    }
    if outcome.writes.is_empty()
        && let Some(at) = outcome.requeue_at
        && at > sim.now
    {
        sim.now = at;
    }
    outcome.writes
}

fn check_no_overcommit(sim: &Sim) -> Result<(), TestCaseError> {
    let mut used: BTreeMap<String, Resources> = BTreeMap::new();
    for pod in sim
        .objects
        .list("Pod")
        .filter(|p| resources::occupies_node(p))
    {
        let node = meta::str_at(pod, "/spec/nodeName");
        if !node.is_empty() {
            let entry = used.entry(node.to_string()).or_default();
            *entry = *entry + resources::pod_requests(pod);
        }
    }
    for (node, total) in used {
        let allocatable = resources::node_allocatable(sim.get("Node", "", &node));
        prop_assert!(
            total.fits_in(&allocatable),
            "{node}: {total:?} > {allocatable:?}"
        );
    }
    Ok(())
}

fn int_or_percent() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..4).prop_map(|n| json!(n)),
        (0i64..=100).prop_map(|p| json!(format!("{p}%")))
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_scheduler_never_overcommits_a_node(
        nodes in 1u32..5,
        node_cpu in 1i64..8,
        node_pods in 1i64..12,
        pods in proptest::collection::vec((0i64..3000, 0i64..4096, any::<bool>()), 0..30),
    ) {
        let mut sim = Sim::new(SimConfig {
            nodes,
            node_cpu: node_cpu.to_string(),
            node_memory: "8Gi".into(),
            node_pods: node_pods.to_string(),
            ..SimConfig::default()
        });
        for (index, (cpu, memory, with_selector)) in pods.iter().enumerate() {
            let mut pod = common::pod(&format!("p{index}"), &format!("{cpu}m"));
            pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = json!(format!("{memory}Mi"));
            if *with_selector {
                pod["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": format!("member-node-{}", index as u32 % nodes)});
            }
            sim.create(pod);
        }
        let outcome = scheduler::reconcile(&sim.objects, sim.now);
        for write in &outcome.writes {
            sim.objects.apply(write, sim.now).expect("binds apply");
        }
        check_no_overcommit(&sim)?;
        // Later passes may reword a Pending pod's reason (the nodes filled up meanwhile) but
        // bind nothing that does not fit, and reach a pass with no writes.
        let now = sim.now;
        let settled = sim::settle_with(&mut sim.objects, now, 10, |objects| scheduler::reconcile(objects, now));
        prop_assert!(settled.is_ok(), "{settled:?}");
        check_no_overcommit(&sim)?;
        for pod in sim.pods() {
            let bound = !meta::str_at(pod, "/spec/nodeName").is_empty();
            let unschedulable = meta::condition_status(pod, "PodScheduled") == Some("False");
            prop_assert!(bound != unschedulable, "{pod}");
        }
    }

    #[test]
    fn scale_mode_fit_matches_what_the_scheduler_binds(
        nodes in 1u32..4,
        node_cpu in 1i64..6,
        node_pods in 1i64..15,
        cpu in 0i64..2500,
        memory_mi in 0i64..3000,
        extra in 0i64..3,
    ) {
        let mut sim = Sim::new(SimConfig {
            nodes,
            node_cpu: node_cpu.to_string(),
            node_memory: "4Gi".into(),
            node_pods: node_pods.to_string(),
            ..SimConfig::default()
        });
        let template = |index: i64| {
            let mut pod = common::pod(&format!("p{index}"), &format!("{cpu}m"));
            pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = json!(format!("{memory_mi}Mi"));
            pod
        };
        let nodes_json: Vec<Value> = sim.objects.list("Node").cloned().collect();
        let model = member_sim::scale_mode::CapacityModel::from_nodes(&nodes_json, &[]);
        let fit = model.fit(&resources::pod_requests(&template(0)));
        let replicas = fit + extra;
        prop_assume!(replicas <= 60);
        for index in 0..replicas {
            sim.create(template(index));
        }
        let now = sim.now;
        let settled = sim::settle_with(&mut sim.objects, now, 10, |objects| scheduler::reconcile(objects, now));
        prop_assert!(settled.is_ok(), "{settled:?}");
        let bound = sim.pods().iter().filter(|p| !meta::str_at(p, "/spec/nodeName").is_empty()).count() as i64;
        prop_assert_eq!(bound, fit.min(replicas));
        let mut placing = model.clone();
        prop_assert_eq!(placing.place(&resources::pod_requests(&template(0)), replicas), fit.min(replicas));
    }

    #[test]
    fn rolling_updates_stay_within_surge_and_unavailability(
        replicas in 1i64..7,
        surge in int_or_percent(),
        unavailable in int_or_percent(),
        min_ready in prop_oneof![Just(0i64), Just(5i64)],
    ) {
        let mut web = deployment("web", replicas, "100m");
        web["spec"]["minReadySeconds"] = json!(min_ready);
        web["spec"]["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}});
        let params = member_sim::rollout::rolling_params(&web, replicas);
        prop_assume!(params.is_ok());
        let params = params.expect("checked");
        let mut sim = Sim::with_nodes(3, "8", "32Gi");
        sim.create(web);
        sim.advance(60);
        prop_assert_eq!(member_sim::deployment::rollout_status(sim.get("Deployment", "default", "web")), Ok(true));

        sim.update_spec("Deployment", "default", "web", |d| d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2"));
        let mut passes = 0;
        loop {
            let writes = step(&mut sim);
            let pods = sim.pods_with_label("app", "web");
            let available = pods.iter().filter(|p| member_sim::pods::is_available(p, min_ready, sim.now)).count() as i64;
            prop_assert!(pods.len() as i64 <= replicas + params.max_surge, "{} pods > {replicas}+{}", pods.len(), params.max_surge);
            prop_assert!(available >= replicas - params.max_unavailable, "{available} available < {replicas}-{}", params.max_unavailable);
            passes += 1;
            if member_sim::deployment::rollout_status(sim.get("Deployment", "default", "web")) == Ok(true) && writes.is_empty() {
                break;
            }
            prop_assert!(passes < 500, "rollout did not finish");
        }
    }

    #[test]
    fn statefulset_pods_are_created_in_ordinal_order(replicas in 1i64..7, seed: u64) {
        let mut sim = Sim::with_nodes(2, "8", "32Gi");
        sim.rng = SplitMix64(seed);
        sim.create(json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [container("100m", "64Mi")]}}},
        }));
        let mut created = Vec::new();
        for _ in 0..200 {
            let before: Vec<Value> = sim.pods_with_label("app", "db").into_iter().cloned().collect();
            let writes = step(&mut sim);
            for write in &writes {
                if let Write::Create(object) = write && object["kind"] == "Pod" {
                    let ordinal: i64 = meta::name(object).trim_start_matches("db-").parse().expect("ordinal");
                    // Every lower ordinal was Running and Ready when this one was created.
                    for lower in 0..ordinal {
                        let name = format!("db-{lower}");
                        let previous = before.iter().find(|p| meta::name(p) == name);
                        prop_assert!(previous.is_some_and(|p| p["status"]["phase"] == "Running" && member_sim::pods::is_ready(p)), "{name} not ready before db-{ordinal}");
                    }
                    created.push(ordinal);
                }
            }
        }
        prop_assert_eq!(created, (0..replicas).collect::<Vec<_>>());
    }

    #[test]
    fn controllers_converge_and_then_write_nothing(
        deployments in proptest::collection::vec((1i64..5, 100i64..3000), 0..4),
        statefulsets in proptest::collection::vec(1i64..4, 0..3),
        jobs in proptest::collection::vec((1i64..3, 1i64..4), 0..2),
        with_daemonset: bool,
        crash_first: bool,
        seconds in 0i64..30,
    ) {
        let mut sim = Sim::with_nodes(2, "4", "8Gi");
        for (index, (replicas, cpu)) in deployments.iter().enumerate() {
            sim.create(deployment(&format!("d{index}"), *replicas, &format!("{cpu}m")));
            let mut svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": format!("d{index}"), "namespace": "default"},
                                 "spec": {"selector": {"app": format!("d{index}")}, "ports": [{"port": 80}]}});
            if index == 0 {
                svc["spec"]["clusterIP"] = json!("10.96.0.7");
            }
            sim.create(svc);
        }
        for (index, replicas) in statefulsets.iter().enumerate() {
            sim.create(json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": format!("s{index}"), "namespace": "default"},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": format!("s{index}")}},
                         "template": {"metadata": {"labels": {"app": format!("s{index}")}}, "spec": {"containers": [container("100m", "64Mi")]}},
                         "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}]}}));
        }
        for (index, (parallelism, completions)) in jobs.iter().enumerate() {
            sim.create(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": format!("j{index}"), "namespace": "default", "uid": format!("job-{index}")},
                "spec": {"parallelism": parallelism, "completions": completions,
                         "template": {"spec": {"restartPolicy": "Never", "containers": [container("100m", "64Mi")]}}}}));
        }
        if with_daemonset {
            sim.create(json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "kube-system"},
                "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [container("10m", "16Mi")]}}}}));
        }
        if crash_first && !deployments.is_empty() {
            sim.faults.apply("crash d0".parse().expect("fault"));
        }
        // `advance` settles (panicking if no fixed point within 50 passes) at every wake-up.
        sim.advance(seconds);
        let outcome = sim::reconcile_all(&sim.objects, &sim.config, &sim.faults, sim.now, &mut sim.rng);
        prop_assert!(outcome.writes.is_empty(), "{:?}", outcome.writes);
        check_no_overcommit(&sim)?;
        // The same snapshot and seed give the same decisions.
        let a = sim::reconcile_all(&sim.objects, &sim.config, &sim.faults, sim.now, &mut SplitMix64(1));
        let b = sim::reconcile_all(&sim.objects, &sim.config, &sim.faults, sim.now, &mut SplitMix64(1));
        prop_assert_eq!(a, b);
        // ClusterIPs are unique.
        let ips: Vec<&str> = sim.objects.list("Service").map(|s| meta::str_at(s, "/spec/clusterIP")).collect();
        let unique: std::collections::BTreeSet<&&str> = ips.iter().collect();
        prop_assert_eq!(unique.len(), ips.len());
    }
}
