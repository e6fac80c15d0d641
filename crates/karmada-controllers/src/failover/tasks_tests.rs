use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::policy::PurgeMode;
use karmada_api::work::{
    AggregatedStatusItem, EVICTION_REASON_APPLICATION_FAILURE, EVICTION_REASON_TAINT_UNTOLERATED,
    ResourceHealth,
};
use karmada_api::{
    GracefulEvictionTask, Placement, ReplicaSchedulingStrategy, ReplicaSchedulingType,
    ResourceBindingSpec, ResourceBindingStatus, TargetCluster,
};

use super::*;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).expect("timestamp")
}

fn divided(total: i32, clusters: &[(&str, i32)]) -> ResourceBindingSpec {
    ResourceBindingSpec {
        replicas: total,
        placement: Some(Placement {
            replica_scheduling: Some(ReplicaSchedulingStrategy {
                replica_scheduling_type: ReplicaSchedulingType::Divided,
                ..Default::default()
            }),
            ..Placement::default()
        }),
        clusters: clusters
            .iter()
            .map(|(n, r)| TargetCluster {
                name: n.to_string(),
                replicas: *r,
                components: vec![],
            })
            .collect(),
        ..Default::default()
    }
}

fn status(health: &[(&str, ResourceHealth)]) -> ResourceBindingStatus {
    ResourceBindingStatus {
        scheduler_observed_generation: 1,
        aggregated_status: health
            .iter()
            .map(|(n, h)| AggregatedStatusItem {
                cluster_name: n.to_string(),
                health: Some(*h),
                applied: true,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn request(cluster: &str, mode: PurgeMode) -> EvictionRequest {
    EvictionRequest {
        from_cluster: cluster.into(),
        reason: EVICTION_REASON_TAINT_UNTOLERATED.into(),
        message: String::new(),
        producer: "TaintManager".into(),
        purge_mode: mode,
        grace_period_seconds: Some(600),
        preserved_label_state: Default::default(),
    }
}

fn task(
    cluster: &str,
    mode: PurgeMode,
    replicas: i32,
    created: Option<i64>,
) -> GracefulEvictionTask {
    let mut spec = divided(replicas, &[(cluster, replicas)]);
    spec =
        evict_cluster(&spec, &request(cluster, mode), at(created.unwrap_or(0))).expect("evicted");
    let mut task = spec.graceful_eviction_tasks.remove(0);
    if created.is_none() {
        task.creation_timestamp = None;
    }
    task
}

#[test]
fn evict_moves_the_cluster_into_a_task() {
    let spec = divided(4, &[("a", 2), ("b", 2)]);
    let out = evict_cluster(&spec, &request("a", PurgeMode::Gracefully), at(0)).expect("evicted");
    assert_eq!(out.clusters.len(), 1);
    assert_eq!(out.clusters[0].name, "b");
    let task = &out.graceful_eviction_tasks[0];
    assert_eq!(task.from_cluster, "a");
    assert_eq!(task.replicas, Some(2));
    assert_eq!(task.purge_mode, Some(PurgeMode::Gracefully));
    assert_eq!(task.grace_period_seconds, Some(600));
    assert_eq!(task.suppress_deletion, None);
    assert_eq!(task.creation_timestamp, Some(Time(at(0))));
    assert_eq!(task.clusters_before_failover, vec!["a", "b"]);
    // Not a target: nothing to do.
    assert!(evict_cluster(&out, &request("a", PurgeMode::Gracefully), at(1)).is_none());
    // Never: suppressDeletion, no grace period; Directly: neither.
    let never = evict_cluster(&spec, &request("a", PurgeMode::Never), at(0)).expect("evicted");
    assert_eq!(
        never.graceful_eviction_tasks[0].suppress_deletion,
        Some(true)
    );
    assert_eq!(never.graceful_eviction_tasks[0].grace_period_seconds, None);
    let directly =
        evict_cluster(&spec, &request("a", PurgeMode::Directly), at(0)).expect("evicted");
    assert_eq!(directly.graceful_eviction_tasks[0].suppress_deletion, None);
    assert_eq!(
        directly.graceful_eviction_tasks[0].grace_period_seconds,
        None
    );
}

#[test]
fn evict_does_not_duplicate_an_open_task() {
    let mut spec = divided(4, &[("a", 2), ("b", 2)]);
    spec.graceful_eviction_tasks
        .push(task("a", PurgeMode::Gracefully, 2, Some(-100)));
    let out = evict_cluster(&spec, &request("a", PurgeMode::Directly), at(0)).expect("evicted");
    assert_eq!(out.graceful_eviction_tasks.len(), 1);
    assert_eq!(
        out.graceful_eviction_tasks[0].creation_timestamp,
        Some(Time(at(-100)))
    );
}

/// `clusters [b=4]; tasks [a created at 0s]`: what a plan leaves in the binding.
fn binding_summary(spec: &ResourceBindingSpec) -> String {
    let clusters: Vec<String> = spec
        .clusters
        .iter()
        .map(|t| format!("{}={}", t.name, t.replicas))
        .collect();
    let tasks: Vec<String> = spec
        .graceful_eviction_tasks
        .iter()
        .map(|t| match &t.creation_timestamp {
            Some(Time(created)) => format!(
                "{} created at {}s",
                t.from_cluster,
                created.as_second() - at(0).as_second()
            ),
            None => format!("{} unstamped", t.from_cluster),
        })
        .collect();
    format!(
        "clusters [{}]; tasks [{}]",
        clusters.join(", "),
        tasks.join(", ")
    )
}

struct Case {
    name: &'static str,
    spec: ResourceBindingSpec,
    status: ResourceBindingStatus,
    task: GracefulEvictionTask,
    member: MemberState,
    still_failing: bool,
    now: i64,
}

#[test]
fn lifecycle_table() {
    use MemberState::*;
    use PurgeMode::*;
    use ResourceHealth::*;
    let moved = divided(4, &[("b", 4)]);
    let not_moved = divided(4, &[("b", 2)]);
    let healthy_b = status(&[("b", Healthy), ("a", Unknown)]);
    let starting_b = status(&[("b", Unknown), ("a", Healthy)]);
    let mut lifted = task("a", Never, 2, Some(0));
    lifted.suppress_deletion = Some(false);
    let mut back = divided(4, &[("a", 2), ("b", 2)]);
    back.graceful_eviction_tasks.clear();
    let mut app = task("a", Gracefully, 2, Some(0));
    app.reason = EVICTION_REASON_APPLICATION_FAILURE.into();
    let cases = vec![
        Case {
            name: "gone",
            spec: moved.clone(),
            status: starting_b.clone(),
            task: task("a", Never, 2, Some(0)),
            member: Gone,
            still_failing: true,
            now: 1,
        },
        Case {
            name: "rescheduled back",
            spec: back,
            status: starting_b.clone(),
            task: task("a", Never, 2, Some(0)),
            member: Reachable,
            still_failing: true,
            now: 1,
        },
        Case {
            name: "unstamped",
            spec: moved.clone(),
            status: healthy_b.clone(),
            task: task("a", Gracefully, 2, None),
            member: Reachable,
            still_failing: true,
            now: 1,
        },
        // Directly: the copy went with the eviction; the task stays to keep the cluster out of scheduling until
        // the replacement is healthy or the timeout ends — reachable or not (nothing is left to delete there).
        Case {
            name: "directly, replacement starting",
            spec: not_moved.clone(),
            status: starting_b.clone(),
            task: task("a", Directly, 2, Some(0)),
            member: Unreachable,
            still_failing: true,
            now: 0,
        },
        Case {
            name: "directly, cluster reachable again but still failing",
            spec: not_moved.clone(),
            status: starting_b.clone(),
            task: task("a", Directly, 2, Some(0)),
            member: Reachable,
            still_failing: true,
            now: 5,
        },
        Case {
            name: "directly, replacement healthy, member unreachable",
            spec: moved.clone(),
            status: healthy_b.clone(),
            task: task("a", Directly, 2, Some(0)),
            member: Unreachable,
            still_failing: true,
            now: 5,
        },
        Case {
            name: "directly, timeout, member unreachable, no healthy copy",
            spec: not_moved.clone(),
            status: starting_b.clone(),
            task: task("a", Directly, 2, Some(0)),
            member: Unreachable,
            still_failing: true,
            now: 601,
        },
        Case {
            name: "suppression lifted",
            spec: not_moved.clone(),
            status: starting_b.clone(),
            task: lifted,
            member: Reachable,
            still_failing: true,
            now: 0,
        },
        Case {
            name: "gracefully, replacement healthy",
            spec: moved.clone(),
            status: healthy_b.clone(),
            task: task("a", Gracefully, 2, Some(0)),
            member: Reachable,
            still_failing: true,
            now: 5,
        },
        Case {
            name: "gracefully, replacement healthy, member unreachable",
            spec: moved.clone(),
            status: healthy_b.clone(),
            task: task("a", Gracefully, 2, Some(0)),
            member: Unreachable,
            still_failing: true,
            now: 5,
        },
        Case {
            name: "gracefully, waiting",
            spec: moved.clone(),
            status: starting_b.clone(),
            task: task("a", Gracefully, 2, Some(0)),
            member: Reachable,
            still_failing: true,
            now: 5,
        },
        Case {
            name: "gracefully, expired, old copy healthy, nothing else healthy",
            spec: moved.clone(),
            status: starting_b.clone(),
            task: task("a", Gracefully, 2, Some(0)),
            member: Reachable,
            still_failing: true,
            now: 601,
        },
        Case {
            name: "gracefully, expired, old copy unhealthy",
            spec: moved.clone(),
            status: status(&[("b", Unknown), ("a", Unhealthy)]),
            task: task("a", Gracefully, 2, Some(0)),
            member: Reachable,
            still_failing: true,
            now: 601,
        },
        Case {
            name: "gracefully, expired, healthy copy left but not covering",
            spec: not_moved.clone(),
            status: status(&[("b", Healthy), ("a", Healthy)]),
            task: task("a", Gracefully, 2, Some(0)),
            member: Reachable,
            still_failing: true,
            now: 601,
        },
        Case {
            name: "gracefully, expired, unreachable",
            spec: moved.clone(),
            status: starting_b.clone(),
            task: task("a", Gracefully, 2, Some(0)),
            member: Unreachable,
            still_failing: true,
            now: 601,
        },
        Case {
            name: "never waits for ever",
            spec: moved.clone(),
            status: starting_b.clone(),
            task: task("a", Never, 2, Some(0)),
            member: Reachable,
            still_failing: true,
            now: 1_000_000,
        },
        Case {
            // Regression: Never used to end once replacements were healthy; it waits for the user
            // (docs/karmada.md, "Graceful eviction").
            name: "never is not ended by healthy replacements",
            spec: moved.clone(),
            status: healthy_b.clone(),
            task: task("a", Never, 2, Some(0)),
            member: Reachable,
            still_failing: true,
            now: 1,
        },
        Case {
            name: "recovered before replacement placed: restore",
            spec: not_moved.clone(),
            status: starting_b.clone(),
            task: task("a", Gracefully, 2, Some(0)),
            member: Reachable,
            still_failing: false,
            now: 5,
        },
        Case {
            name: "recovered but replacement already placed: lifecycle goes on",
            spec: moved.clone(),
            status: starting_b.clone(),
            task: task("a", Never, 2, Some(0)),
            member: Reachable,
            still_failing: false,
            now: 5,
        },
        Case {
            name: "application failure recovers only when healthy",
            spec: not_moved.clone(),
            status: status(&[("b", Unknown), ("a", Unhealthy)]),
            task: app.clone(),
            member: Reachable,
            still_failing: false,
            now: 5,
        },
        Case {
            name: "application failure healthy again: restore",
            spec: not_moved.clone(),
            status: status(&[("b", Unknown), ("a", Healthy)]),
            task: app,
            member: Reachable,
            still_failing: false,
            now: 5,
        },
    ];
    let mut printed = String::new();
    for case in cases {
        let mut spec = case.spec.clone();
        spec.graceful_eviction_tasks = vec![case.task.clone()];
        let input = LifecycleInput {
            spec: &spec,
            status: Some(&case.status),
            generation: 1,
            now: at(case.now),
            default_grace: SignedDuration::from_mins(10),
        };
        let facts = TaskFacts {
            member: case.member,
            still_failing: case.still_failing,
        };
        let plan = plan_tasks(input, |_| facts);
        let [(cluster, action)] = plan.actions.as_slice() else {
            panic!("{}: one action expected, got {:?}", case.name, plan.actions);
        };
        assert_eq!(cluster, "a", "{}", case.name);
        // Keeping a task is the only decision that leaves the binding as it is.
        assert_eq!(
            matches!(action, TaskAction::Keep(_)),
            plan.spec.is_none(),
            "{}",
            case.name
        );
        printed.push_str(&format!(
            "{}\n  {} task ({}), member {:?}, {}, at {}s\n  -> {action:?}; {}\n",
            case.name,
            case.task.reason,
            case.task
                .purge_mode
                .map_or("no purge mode".to_string(), |m| format!("{m:?}")),
            case.member,
            if case.still_failing {
                "still failing"
            } else {
                "recovered"
            },
            case.now,
            plan.spec
                .as_ref()
                .map_or("binding unchanged".to_string(), binding_summary),
        ));
    }
    // Each case's decision and the binding it leaves; UPDATE_EXPECT=1 rewrites the file.
    expect_test::expect_file!["snapshots/lifecycle_table.txt"].assert_eq(&printed);
}

#[test]
fn gracefully_rechecks_at_the_end_of_its_grace_period() {
    let mut spec = divided(4, &[("b", 4)]);
    let mut t = task("a", PurgeMode::Gracefully, 2, Some(0));
    t.grace_period_seconds = Some(30);
    spec.graceful_eviction_tasks = vec![t];
    let st = status(&[("b", ResourceHealth::Unknown)]);
    let input = LifecycleInput {
        spec: &spec,
        status: Some(&st),
        generation: 1,
        now: at(10),
        default_grace: SignedDuration::from_mins(10),
    };
    let plan = plan_tasks(input, |_| TaskFacts {
        member: MemberState::Reachable,
        still_failing: true,
    });
    assert_eq!(plan.recheck_at, Some(at(30)));
}

#[test]
fn legacy_suppress_deletion_means_never() {
    let mut t = task("a", PurgeMode::Gracefully, 1, Some(0));
    t.purge_mode = None;
    assert_eq!(effective_mode(&t), PurgeMode::Gracefully);
    t.suppress_deletion = Some(true);
    assert_eq!(effective_mode(&t), PurgeMode::Never);
}
