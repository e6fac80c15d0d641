//! Failover end to end (issue 7): `karmada controller-manager --enable-failover` with member-sims whose faults
//! are injected by `karmada member-sim fault`. Cluster failover (an unreachable member is tainted, evicted and its
//! replicas placed elsewhere), application failover (`crash`), each purge mode, and a randomized fault run —
//! with the safety invariants checked on every observation (about every 100 ms while waiting):
//!
//! - the replicas a binding targets never exceed what the policy asks for, and, unless purge mode Directly was
//!   asked for, targets plus the replicas still kept by graceful eviction tasks never drop below it;
//! - nothing is deleted from a member that cannot be reached: every Work that existed for it when it became
//!   unreachable is still there (the control plane has not given up on or forgotten it) until it returns;
//! - a copy is deleted at most once and copies in healthy members are never replaced.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::plane::{Plane, wait_for};

const FAILOVER: &[&str] = &["--enable-failover"];
const PERMANENT_ID: &str = "resourcebinding.karmada.io/permanent-id";

/// What the control plane holds, read in one request.
struct View {
    /// `namespace/name` → ResourceBinding.
    bindings: BTreeMap<String, Value>,
    /// Every Work.
    works: Vec<Value>,
    /// Cluster name → Cluster.
    clusters: BTreeMap<String, Value>,
}

fn view(plane: &Plane) -> Result<View, String> {
    let list = plane.object(&["resourcebindings,works,clusters", "-A"])?;
    let mut out = View {
        bindings: BTreeMap::new(),
        works: Vec::new(),
        clusters: BTreeMap::new(),
    };
    for item in list["items"].as_array().cloned().unwrap_or_default() {
        let name = item["metadata"]["name"].as_str().unwrap_or_default();
        let namespace = item["metadata"]["namespace"].as_str().unwrap_or_default();
        match item["kind"].as_str() {
            Some("ResourceBinding") => {
                out.bindings.insert(format!("{namespace}/{name}"), item);
            }
            Some("Work") => out.works.push(item),
            Some("Cluster") => {
                out.clusters.insert(name.to_string(), item);
            }
            _ => {}
        }
    }
    Ok(out)
}

impl View {
    fn binding(&self, key: &str) -> Result<&Value, String> {
        self.bindings
            .get(key)
            .ok_or_else(|| format!("no binding {key}"))
    }

    /// Names of the Works in `member`'s execution namespace that belong to binding `key`.
    fn works_of(&self, key: &str, member: &str) -> BTreeSet<String> {
        let Some(id) = self
            .bindings
            .get(key)
            .and_then(|b| b["metadata"]["labels"][PERMANENT_ID].as_str())
        else {
            return BTreeSet::new();
        };
        let namespace = format!("karmada-es-{member}");
        self.works
            .iter()
            .filter(|w| {
                w["metadata"]["namespace"] == namespace.as_str()
                    && w["metadata"]["labels"][PERMANENT_ID] == id
            })
            .filter_map(|w| w["metadata"]["name"].as_str().map(String::from))
            .collect()
    }

    /// `namespace/name` of every Work in `member`'s execution namespace.
    fn all_works_in(&self, member: &str) -> BTreeSet<String> {
        let namespace = format!("karmada-es-{member}");
        self.works
            .iter()
            .filter(|w| w["metadata"]["namespace"] == namespace.as_str())
            .filter_map(|w| w["metadata"]["name"].as_str().map(String::from))
            .collect()
    }

    fn work_deleting(&self, member: &str, name: &str) -> bool {
        let namespace = format!("karmada-es-{member}");
        self.works.iter().any(|w| {
            w["metadata"]["namespace"] == namespace.as_str()
                && w["metadata"]["name"] == name
                && !w["metadata"]["deletionTimestamp"].is_null()
        })
    }

    fn has_no_execute_taint(&self, cluster: &str) -> bool {
        self.clusters
            .get(cluster)
            .and_then(|c| c["spec"]["taints"].as_array())
            .is_some_and(|taints| taints.iter().any(|t| t["effect"] == "NoExecute"))
    }

    /// The earliest `timeAdded` of the cluster's NoExecute taints.
    fn no_execute_time_added(&self, cluster: &str) -> Option<jiff::Timestamp> {
        self.clusters
            .get(cluster)?
            .get("spec")?
            .get("taints")?
            .as_array()?
            .iter()
            .filter(|t| t["effect"] == "NoExecute")
            .filter_map(|t| timestamp(&t["timeAdded"]))
            .min()
    }

    fn ready(&self, cluster: &str) -> bool {
        self.clusters
            .get(cluster)
            .and_then(|c| c["status"]["conditions"].as_array())
            .is_some_and(|conditions| {
                conditions
                    .iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
    }
}

fn timestamp(value: &Value) -> Option<jiff::Timestamp> {
    value.as_str()?.parse().ok()
}

/// Target cluster → replicas.
fn targets(binding: &Value) -> BTreeMap<String, i64> {
    binding["spec"]["clusters"]
        .as_array()
        .map(|clusters| {
            clusters
                .iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or_default().to_string(),
                        c["replicas"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn tasks(binding: &Value) -> Vec<Value> {
    binding["spec"]["gracefulEvictionTasks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn task_for<'a>(binding: &'a Value, cluster: &str) -> Option<&'a Value> {
    binding["spec"]["gracefulEvictionTasks"]
        .as_array()?
        .iter()
        .find(|t| t["fromCluster"] == cluster)
}

/// The safety invariant on one binding: targets never exceed the desired replicas and, unless `allow_drop`
/// (purge mode Directly), targets plus the replicas kept by eviction tasks never drop below them.
fn check_replicas(key: &str, binding: &Value, allow_drop: bool) -> Result<(), String> {
    let desired = binding["spec"]["replicas"].as_i64().unwrap_or(0);
    let targets = targets(binding);
    let targeted: i64 = targets.values().sum();
    if targeted > desired {
        return Err(format!(
            "{key}: targets {targets:?} exceed the {desired} desired replicas"
        ));
    }
    let kept: i64 = tasks(binding)
        .iter()
        .filter(|t| !targets.contains_key(t["fromCluster"].as_str().unwrap_or_default()))
        .map(|t| t["replicas"].as_i64().unwrap_or(0))
        .sum();
    // An unscheduled binding (no targets yet) is not a move in progress.
    if !allow_drop && !targets.is_empty() && targeted + kept < desired {
        return Err(format!(
            "{key}: targets {targets:?} plus {kept} replicas kept by eviction tasks {:?} are below the {desired} desired",
            tasks(binding)
        ));
    }
    Ok(())
}

/// [`check_replicas`], failing the test.
#[track_caller]
fn safe(key: &str, binding: &Value, allow_drop: bool) {
    if let Err(e) = check_replicas(key, binding, allow_drop) {
        panic!("{e}");
    }
}

/// The uid of a member's Deployment over time: counts deletions and replacements.
#[derive(Default)]
struct CopyTrack {
    last: Option<Option<String>>,
    deletions: u32,
    replacements: u32,
}

impl CopyTrack {
    fn observe(&mut self, uid: Option<String>) {
        if let Some(previous) = &self.last {
            match (previous, &uid) {
                (Some(_), None) => self.deletions += 1,
                (Some(a), Some(b)) if a != b => self.replacements += 1,
                _ => {}
            }
        }
        self.last = Some(uid);
    }
}

/// The Deployment `name` in `member`: `Ok(None)` when NotFound.
fn member_deployment(
    plane: &Plane,
    member: &str,
    ns: &str,
    name: &str,
) -> Result<Option<Value>, String> {
    match plane.member_object(
        member,
        &["deployment", name, "-n", ns, "--request-timeout=5s"],
    ) {
        Ok(object) => Ok(Some(object)),
        Err(e) if e.contains("NotFound") => Ok(None),
        Err(e) => Err(e),
    }
}

fn uid(object: &Option<Value>) -> Option<String> {
    object
        .as_ref()
        .and_then(|o| o["metadata"]["uid"].as_str().map(String::from))
}

fn ready_replicas(object: &Option<Value>) -> i64 {
    object
        .as_ref()
        .and_then(|o| o["status"]["readyReplicas"].as_i64())
        .unwrap_or(0)
}

fn spec_replicas(object: &Option<Value>) -> i64 {
    object
        .as_ref()
        .and_then(|o| o["spec"]["replicas"].as_i64())
        .unwrap_or(0)
}

fn apply_json(plane: &Plane, file: &str, object: &Value) {
    let path = plane.karmada.file(file, &object.to_string());
    plane
        .kubectl(&["apply", "-f", path.to_str().expect("utf8")])
        .success();
}

fn deployment(name: &str, namespace: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
            }
        }
    })
}

fn policy(name: &str, namespace: &str, spec_extra: Value) -> Value {
    let mut spec = json!({
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
        "placement": {
            "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}
        }
    });
    merge(&mut spec, spec_extra);
    json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec
    })
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

/// Waits until every member in `expected` runs its share of `ns/name`, all Ready.
fn wait_placed(plane: &Plane, ns: &str, name: &str, expected: &[(&str, i64)]) {
    for (member, replicas) in expected {
        wait_for(
            &format!("{ns}/{name}: {replicas} ready in {member}"),
            || {
                let object = member_deployment(plane, member, ns, name)?;
                if spec_replicas(&object) == *replicas && ready_replicas(&object) == *replicas {
                    Ok(())
                } else {
                    Err(format!(
                        "{:?}\n{}",
                        object.map(|o| o["status"].clone()),
                        plane.logs()
                    ))
                }
            },
        );
    }
}

/// Seed 001: two members at 2:1, the seed's failover snippets plus a NoExecute toleration of 3 s; cluster-aws
/// becomes unreachable, its replicas end up Ready in cluster-gcp after the failure threshold (2 s) and the
/// toleration; when it returns the stale task and its copy go, once.
#[test]
fn seed_001_unreachable_member_fails_over_safely_and_cleans_up_on_return() {
    const TOLERATION: u64 = 3;
    const FAILURE_THRESHOLD: u64 = 2;
    let plane = Plane::start_with(&["cluster-aws", "cluster-gcp"], FAILOVER);
    plane
        .kubectl(&["create", "namespace", "production"])
        .success();
    let fixture = test_fixtures::path_str("seed-001/nginx-deploy.yaml");
    plane.kubectl(&["apply", "-f", &fixture]).success();
    // The seed's propagation policy with its failover fragments (spread constraint, Divided, application
    // failover with the legacy `Graciously`) and how long a not-ready member is tolerated.
    let seed_policy = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "nginx-ha-policy", "namespace": "production"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx-ha"}],
            "propagateDeps": true,
            "placement": {
                "clusterAffinity": {"clusterNames": ["cluster-aws", "cluster-gcp"]},
                "clusterTolerations": [{"key": "cluster.karmada.io/not-ready", "operator": "Exists",
                                        "effect": "NoExecute", "tolerationSeconds": TOLERATION}],
                "spreadConstraints": [{"maxGroups": 2, "minGroups": 1}],
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"staticWeightList": [
                        {"targetCluster": {"clusterNames": ["cluster-aws"]}, "weight": 2},
                        {"targetCluster": {"clusterNames": ["cluster-gcp"]}, "weight": 1}]}
                }
            },
            "failover": {
                "application": {"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": "Graciously"},
                "cluster": {"purgeMode": "Gracefully"}
            }
        }
    });
    apply_json(&plane, "seed-001-failover.json", &seed_policy);
    let stored = plane
        .object(&["propagationpolicy", "nginx-ha-policy", "-n", "production"])
        .expect("policy");
    assert_eq!(
        stored["spec"]["failover"]["application"]["purgeMode"], "Gracefully",
        "the legacy spelling is stored as Gracefully"
    );
    wait_placed(
        &plane,
        "production",
        "nginx-ha",
        &[("cluster-aws", 4), ("cluster-gcp", 2)],
    );
    let key = "production/nginx-ha-deployment";
    let gcp_uid =
        uid(&member_deployment(&plane, "cluster-gcp", "production", "nginx-ha").expect("gcp"));
    let before = view(&plane).expect("view");
    let aws_works = before.works_of(key, "cluster-aws");
    assert_eq!(aws_works.len(), 1, "one Work for cluster-aws");

    // cluster-aws's copy as it was before the fault (a delete held while it was unreachable would land the
    // moment it returns, before any read here).
    let mut aws_copy = CopyTrack::default();
    aws_copy.observe(uid(&member_deployment(
        &plane,
        "cluster-aws",
        "production",
        "nginx-ha",
    )
    .expect("aws")));
    plane.fault("cluster-aws", &["unreachable"]);
    let fault_at = Instant::now();
    let mut tainted_at = None;
    let mut taint_added = None;
    let mut not_ready_at = None;
    let mut evicted_at = None;
    let mut task_seen = None;
    // Until every replica is Ready in cluster-gcp, and a little beyond (the task must stay while cluster-aws
    // cannot be reached even though the replacement is healthy).
    let mut healthy_at = None;
    wait_for(
        "replicas Ready in cluster-gcp with cluster-aws unreachable",
        || {
            let v = view(&plane)?;
            let binding = v.binding(key)?;
            safe(key, binding, false);
            let works = v.works_of(key, "cluster-aws");
            assert_eq!(
                works, aws_works,
                "cluster-aws's Work went while it was unreachable"
            );
            if tainted_at.is_none() && v.has_no_execute_taint("cluster-aws") {
                tainted_at = Some(fault_at.elapsed());
                taint_added = v.no_execute_time_added("cluster-aws");
            }
            if not_ready_at.is_none() && !v.ready("cluster-aws") {
                not_ready_at = Some(fault_at.elapsed());
            }
            if evicted_at.is_none() && !targets(binding).contains_key("cluster-aws") {
                evicted_at = Some(fault_at.elapsed());
            }
            if let Some(task) = task_for(binding, "cluster-aws") {
                task_seen = Some(task.clone());
            }
            let gcp = member_deployment(&plane, "cluster-gcp", "production", "nginx-ha")?;
            assert_eq!(uid(&gcp), gcp_uid, "the healthy copy was replaced");
            if healthy_at.is_none() && ready_replicas(&gcp) == 6 && spec_replicas(&gcp) == 6 {
                healthy_at = Some(Instant::now());
            }
            match healthy_at {
                Some(at) if at.elapsed() > Duration::from_secs(3) => Ok(()),
                _ => Err(format!("{}\n{}", binding["spec"], plane.logs())),
            }
        },
    );
    let evicted_at = evicted_at.expect("cluster-aws evicted");
    let tainted_at = tainted_at.expect("cluster-aws tainted");
    let moved = healthy_at.expect("healthy").duration_since(fault_at);
    eprintln!(
        "not ready after {not_ready_at:?}, tainted after {tainted_at:?}, evicted after {evicted_at:?}, \
         Ready elsewhere after {moved:?}"
    );
    assert!(
        evicted_at >= Duration::from_millis((FAILURE_THRESHOLD + TOLERATION) * 1000 - 500),
        "evicted after {evicted_at:?}, before the failure threshold and toleration ran out"
    );
    assert!(evicted_at >= tainted_at, "evicted before the taint");
    // Detection itself (probe timeouts, the threshold) stretches on a loaded machine; from the moment
    // cluster-aws was seen not Ready, the toleration plus a few seconds to reschedule and start the pods.
    let detected = not_ready_at.expect("cluster-aws seen not Ready");
    assert!(
        moved <= detected + Duration::from_secs(TOLERATION + 8),
        "Ready elsewhere only after {moved:?} (not Ready after {detected:?})"
    );
    let task = task_seen.expect("an eviction task for cluster-aws");
    assert_eq!(task["reason"], "TaintUntolerated");
    assert_eq!(task["purgeMode"], "Gracefully");
    assert_eq!(task["replicas"], 4);
    // The API's own clocks (whole seconds): the task was created tolerationSeconds after the taint was added.
    let added = taint_added.expect("the taint's timeAdded");
    let created = timestamp(&task["creationTimestamp"]).expect("the task's creationTimestamp");
    let tolerated = created.duration_since(added);
    assert!(
        tolerated >= jiff::SignedDuration::from_secs(TOLERATION as i64 - 1),
        "evicted {tolerated:?} after the taint was added: the toleration of {TOLERATION} s was not honoured"
    );
    let v = view(&plane).expect("view");
    assert!(
        task_for(v.binding(key).expect("binding"), "cluster-aws").is_some(),
        "the task stays while cluster-aws cannot be reached"
    );

    // cluster-aws returns: the stale task goes, its copy is deleted once, cluster-gcp's copy is untouched.
    plane.fault("cluster-aws", &["clear"]);
    let mut settled_at: Option<Instant> = None;
    wait_for("cluster-aws cleaned up after its return", || {
        let v = view(&plane)?;
        let binding = v.binding(key)?;
        safe(key, binding, false);
        let aws = member_deployment(&plane, "cluster-aws", "production", "nginx-ha")?;
        aws_copy.observe(uid(&aws));
        let gcp = member_deployment(&plane, "cluster-gcp", "production", "nginx-ha")?;
        assert_eq!(uid(&gcp), gcp_uid, "the healthy copy was replaced");
        assert!(aws_copy.deletions <= 1, "cluster-aws's copy deleted twice");
        let clean = v.ready("cluster-aws")
            && tasks(binding).is_empty()
            && v.works_of(key, "cluster-aws").is_empty()
            && aws.is_none()
            && ready_replicas(&gcp) == 6;
        if !clean {
            settled_at = None;
            return Err(format!("{}\n{}", binding["spec"], plane.logs()));
        }
        // Stay clean for a while: nothing comes back to be deleted again.
        let at = *settled_at.get_or_insert_with(Instant::now);
        if at.elapsed() > Duration::from_secs(3) {
            Ok(())
        } else {
            Err("settling".into())
        }
    });
    assert_eq!(aws_copy.deletions, 1, "deleted exactly once");
    assert_eq!(aws_copy.replacements, 0);
}

/// Seed 000's failover policy is rejected as docs/compat-fixtures.md says; its accepted form (application
/// failover, legacy `Immediately`) moves a crashed workload within its tolerationSeconds.
#[test]
fn seed_000_failover_policy_rejected_and_its_accepted_form_moves_a_crashed_workload() {
    const TOLERATION: u64 = 3;
    let plane = Plane::start_with(&["member1", "member2"], FAILOVER);
    let fixture = test_fixtures::path_str("seed-000/06-failover-policy.yaml");
    let refused = plane.kubectl(&["apply", "-f", &fixture]);
    let message = refused.failure().to_string();
    assert!(message.contains("spec.placement.failover"), "{message}");
    assert!(
        message.contains("spec.failover.application") && message.contains("tolerationSeconds"),
        "shows the accepted shape: {message}"
    );
    assert!(
        plane
            .object(&["propagationpolicy", "api-server-propagation"])
            .is_err(),
        "nothing stored"
    );

    apply_json(
        &plane,
        "api-server.json",
        &deployment("api-server", "default", 4),
    );
    let accepted = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "api-server-propagation", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "api-server"}],
            "propagateDeps": true,
            "placement": {
                "clusterAffinity": {"clusterNames": ["member1", "member2"]},
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                      "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
            },
            "failover": {"application": {"decisionConditions": {"tolerationSeconds": TOLERATION},
                                         "purgeMode": "Immediately"}}
        }
    });
    let path = plane.karmada.file("accepted.json", &accepted.to_string());
    let applied = plane.kubectl(&["apply", "-f", path.to_str().expect("utf8")]);
    applied.success();
    let stored = plane
        .object(&["propagationpolicy", "api-server-propagation"])
        .expect("stored");
    assert_eq!(
        stored["spec"]["failover"]["application"]["purgeMode"],
        "Directly"
    );
    wait_placed(
        &plane,
        "default",
        "api-server",
        &[("member1", 2), ("member2", 2)],
    );
    let key = "default/api-server-deployment";
    let member2_uid =
        uid(&member_deployment(&plane, "member2", "default", "api-server").expect("m2"));

    plane.fault("member1", &["crash", "api-server"]);
    let crashed_at = Instant::now();
    let mut evicted_at = None;
    let mut unready_at = None;
    let mut member1_copy = CopyTrack::default();
    wait_for("api-server moved off member1", || {
        let v = view(&plane)?;
        let binding = v.binding(key)?;
        safe(key, binding, true);
        let m1 = member_deployment(&plane, "member1", "default", "api-server")?;
        member1_copy.observe(uid(&m1));
        if unready_at.is_none() && m1.is_some() && ready_replicas(&m1) < 2 {
            unready_at = Some(crashed_at.elapsed());
        }
        if evicted_at.is_none() && !targets(binding).contains_key("member1") {
            evicted_at = Some(crashed_at.elapsed());
        }
        let m2 = member_deployment(&plane, "member2", "default", "api-server")?;
        assert_eq!(uid(&m2), member2_uid, "the healthy copy was replaced");
        if evicted_at.is_some()
            && targets(binding) == BTreeMap::from([("member2".to_string(), 4)])
            && ready_replicas(&m2) == 4
            && m1.is_none()
        {
            Ok(())
        } else {
            Err(format!("{}\n{}", binding["spec"], plane.logs()))
        }
    });
    let evicted_at = evicted_at.expect("evicted");
    let unready_at = unready_at.unwrap_or_default();
    let moved = crashed_at.elapsed();
    eprintln!("unready after {unready_at:?}, evicted after {evicted_at:?}, moved after {moved:?}");
    assert!(
        evicted_at >= unready_at + Duration::from_millis(TOLERATION * 1000 - 700),
        "evicted at {evicted_at:?}, before tolerationSeconds from the crash ({unready_at:?})"
    );
    assert!(
        evicted_at <= unready_at + Duration::from_secs(TOLERATION + 8),
        "evicted only after {evicted_at:?}"
    );
    assert_eq!(
        member1_copy.deletions, 1,
        "Directly removes the crashed copy once"
    );
    // Events are written in the background, a moment after the eviction.
    wait_for("an EvictWorkloadFromClusterSucceed event", || {
        let events = plane.kubectl(&[
            "get",
            "events",
            "-n",
            "default",
            "-o",
            "jsonpath={.items[*].reason}",
        ]);
        if events.stdout.contains("EvictWorkloadFromClusterSucceed") {
            Ok(())
        } else {
            Err(events.stdout)
        }
    });
}

/// Each purge mode (docs/karmada.md, "Taint manager" to "Application failover"). Cluster failover with member1
/// unreachable: Directly deletes the old Work at once (it waits, undeleted, for member1 to return) and drops its task
/// once the replacement is healthy, Gracefully keeps the old copy while member1 cannot be reached, a workload with
/// nowhere else to go keeps its last copy and gets member1 back; Never is not a cluster-failover mode (rejected, as in
/// Karmada). Application failover with Never keeps the crashed copy even with a healthy replacement, until the user
/// sets `suppressDeletion: false`.
#[test]
fn each_purge_mode_on_cluster_and_application_failover() {
    let plane = Plane::start_with(&["member1", "member2"], FAILOVER);
    let key = |name: &str| format!("default/{name}-deployment");
    let placement =
        json!({"placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}});

    // Never is for application failover only.
    let mut never = policy("web-never", "default", placement.clone());
    never["spec"]["failover"] = json!({"cluster": {"purgeMode": "Never"}});
    let path = plane.karmada.file("never.json", &never.to_string());
    let refused = plane.kubectl(&["apply", "-f", path.to_str().expect("utf8")]);
    let message = refused.failure().to_string();
    assert!(
        message.contains("spec.failover.cluster.purgeMode")
            && message.contains("Directly")
            && message.contains("Gracefully"),
        "{message}"
    );

    let modes = ["Directly", "Gracefully"];
    let names: Vec<String> = modes
        .iter()
        .map(|m| format!("web-{}", m.to_lowercase()))
        .collect();
    for (mode, name) in modes.iter().zip(&names) {
        apply_json(
            &plane,
            &format!("{name}.json"),
            &deployment(name, "default", 4),
        );
        let mut p = policy(name, "default", placement.clone());
        p["spec"]["failover"] = json!({"cluster": {"purgeMode": mode}});
        apply_json(&plane, &format!("{name}-policy.json"), &p);
    }
    // Only member1 may run this one: evicting it leaves nowhere to go, so its copy must stay.
    apply_json(&plane, "pinned.json", &deployment("pinned", "default", 2));
    apply_json(
        &plane,
        "pinned-policy.json",
        &policy(
            "pinned",
            "default",
            json!({"placement": {"clusterAffinity": {"clusterNames": ["member1"]}},
                   "failover": {"cluster": {"purgeMode": "Gracefully"}}}),
        ),
    );
    for name in &names {
        wait_placed(&plane, "default", name, &[("member1", 2), ("member2", 2)]);
    }
    wait_placed(&plane, "default", "pinned", &[("member1", 2)]);
    let member2_uids: BTreeMap<String, Option<String>> = names
        .iter()
        .map(|n| {
            let object = member_deployment(&plane, "member2", "default", n).expect("member2");
            (n.clone(), uid(&object))
        })
        .collect();
    let works_before = view(&plane).expect("view").all_works_in("member1");
    // Each member1 copy as it was before the fault: a delete held while member1 was unreachable would land the
    // moment it returns, before any read here.
    let mut copies: BTreeMap<String, CopyTrack> = BTreeMap::new();
    for name in names.iter().map(String::as_str).chain(["pinned"]) {
        let object = member_deployment(&plane, "member1", "default", name).expect("member1");
        assert!(object.is_some(), "{name} in member1");
        copies
            .entry(name.to_string())
            .or_default()
            .observe(uid(&object));
    }

    plane.fault("member1", &["unreachable"]);
    let mut directly_work_deleting = false;
    let mut settled: Option<Instant> = None;
    wait_for(
        "the workloads moved to member2 while member1 is unreachable",
        || {
            let v = view(&plane)?;
            let now = v.all_works_in("member1");
            assert!(
                works_before.is_subset(&now),
                "a Work of unreachable member1 went: before {works_before:?}, now {now:?}"
            );
            let mut done = true;
            for (mode, name) in modes.iter().zip(&names) {
                let binding = v.binding(&key(name))?;
                safe(name, binding, *mode == "Directly");
                let m2 = member_deployment(&plane, "member2", "default", name)?;
                assert_eq!(
                    uid(&m2),
                    member2_uids[name],
                    "{name}: the healthy copy was replaced"
                );
                done &= ready_replicas(&m2) == 4 && !targets(binding).contains_key("member1");
            }
            for work in v.works_of(&key("web-directly"), "member1") {
                directly_work_deleting |= v.work_deleting("member1", &work);
            }
            let pinned = v.binding(&key("pinned"))?;
            safe("pinned", pinned, false);
            done &= task_for(pinned, "member1").is_some();
            if !done {
                settled = None;
                return Err(plane.logs());
            }
            // Watch the settled state a little: the Gracefully and pinned tasks must stay while member1 cannot be
            // reached.
            let at = *settled.get_or_insert_with(Instant::now);
            if at.elapsed() < Duration::from_secs(3) {
                return Err("watching".into());
            }
            Ok(())
        },
    );
    let v = view(&plane).expect("view");
    // Directly: the old Work is deleted at once — it waits for member1 — and the task, which kept member1 out of
    // scheduling meanwhile, goes once the replacement on member2 is healthy.
    assert!(
        directly_work_deleting,
        "Directly deletes the old Work at once"
    );
    assert!(task_for(v.binding(&key("web-directly")).expect("b"), "member1").is_none());
    // Gracefully: the task keeps the old copy; its replicas were recorded.
    let gracefully = task_for(v.binding(&key("web-gracefully")).expect("b"), "member1")
        .expect("the Gracefully task stays while member1 is unreachable")
        .clone();
    assert_eq!(gracefully["purgeMode"], "Gracefully");
    assert_eq!(gracefully["replicas"], 2);
    assert_eq!(gracefully["reason"], "TaintUntolerated");
    assert_eq!(gracefully["producer"], "TaintManager");
    let gracefully_works = v.works_of(&key("web-gracefully"), "member1");
    assert!(
        gracefully_works.len() == 1
            && gracefully_works
                .iter()
                .all(|w| !v.work_deleting("member1", w))
    );
    // Nowhere else to go: the last copy is kept (a task, and the Work without a deletion mark).
    let pinned_works = v.works_of(&key("pinned"), "member1");
    assert_eq!(pinned_works.len(), 1);
    assert!(pinned_works.iter().all(|w| !v.work_deleting("member1", w)));

    // member1 returns: the evicted copies go once each, the pinned workload gets its cluster back untouched.
    plane.fault("member1", &["clear"]);
    wait_for("member1 reconciled after its return", || {
        let v = view(&plane)?;
        let mut clean = v.ready("member1");
        for (mode, name) in modes.iter().zip(&names) {
            let binding = v.binding(&key(name))?;
            safe(name, binding, *mode == "Directly");
            let m1 = member_deployment(&plane, "member1", "default", name)?;
            let track = copies.entry(name.clone()).or_default();
            track.observe(uid(&m1));
            assert!(track.deletions <= 1, "{name}: deleted twice");
            clean &= tasks(binding).is_empty()
                && v.works_of(&key(name), "member1").is_empty()
                && m1.is_none();
        }
        let pinned = v.binding(&key("pinned"))?;
        safe("pinned", pinned, false);
        let m1 = member_deployment(&plane, "member1", "default", "pinned")?;
        copies.entry("pinned".into()).or_default().observe(uid(&m1));
        clean &= tasks(pinned).is_empty()
            && targets(pinned) == BTreeMap::from([("member1".to_string(), 2)])
            && ready_replicas(&m1) == 2;
        if clean { Ok(()) } else { Err(plane.logs()) }
    });
    for (name, track) in &copies {
        let expected = if name == "pinned" { 0 } else { 1 };
        assert_eq!(track.deletions, expected, "{name}: deletions");
        assert_eq!(track.replacements, 0, "{name}");
    }

    // Application failover, Never: the crashed copy stays beside its healthy replacement until the user lifts it.
    apply_json(
        &plane,
        "web-never.json",
        &deployment("web-never", "default", 4),
    );
    let mut p = policy("web-never", "default", placement.clone());
    p["spec"]["propagateDeps"] = json!(true);
    p["spec"]["failover"] = json!({"application": {"decisionConditions": {"tolerationSeconds": 2},
                                                   "purgeMode": "Never"}});
    apply_json(&plane, "web-never-policy.json", &p);
    wait_placed(
        &plane,
        "default",
        "web-never",
        &[("member1", 2), ("member2", 2)],
    );
    let crashed_uid =
        uid(&member_deployment(&plane, "member1", "default", "web-never").expect("m1"));
    plane.fault("member1", &["crash", "web-never"]);
    let mut settled: Option<Instant> = None;
    wait_for("web-never moved, its crashed copy kept", || {
        let v = view(&plane)?;
        let binding = v.binding(&key("web-never"))?;
        safe("web-never", binding, false);
        let m1 = member_deployment(&plane, "member1", "default", "web-never")?;
        assert_eq!(uid(&m1), crashed_uid, "Never: the crashed copy was deleted");
        let m2 = member_deployment(&plane, "member2", "default", "web-never")?;
        let moved = ready_replicas(&m2) == 4
            && task_for(binding, "member1").is_some_and(|t| {
                t["purgeMode"] == "Never"
                    && t["suppressDeletion"] == true
                    && t["reason"] == "ApplicationFailure"
            });
        if !moved {
            settled = None;
            return Err(format!("{}\n{}", binding["spec"], plane.logs()));
        }
        // A healthy replacement does not end it.
        let at = *settled.get_or_insert_with(Instant::now);
        if at.elapsed() < Duration::from_secs(3) {
            return Err("watching".into());
        }
        Ok(())
    });
    plane
        .kubectl(&[
            "patch",
            "resourcebinding",
            "web-never-deployment",
            "--type",
            "json",
            "-p",
            r#"[{"op":"replace","path":"/spec/gracefulEvictionTasks/0/suppressDeletion","value":false}]"#,
        ])
        .success();
    let mut crashed_copy = CopyTrack::default();
    wait_for("the crashed copy removed once the user lifts Never", || {
        let v = view(&plane)?;
        let binding = v.binding(&key("web-never"))?;
        safe("web-never", binding, false);
        let m1 = member_deployment(&plane, "member1", "default", "web-never")?;
        crashed_copy.observe(uid(&m1));
        if tasks(binding).is_empty() && m1.is_none() {
            Ok(())
        } else {
            Err(format!("{}\n{}", binding["spec"], plane.logs()))
        }
    });
    assert!(crashed_copy.deletions <= 1);
}

/// A small deterministic RNG (SplitMix64) so a failing run can be replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Clusters flapping, applications crashing and a control-plane restart, at random (seeded; set
/// `FAILOVER_SEED` to replay): the invariants hold on every observation, and once the faults are cleared
/// every workload is whole again with no task left.
#[test]
fn randomized_faults_keep_the_invariants() {
    let seed = std::env::var("FAILOVER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(7)
        });
    let outcome = std::panic::catch_unwind(|| randomized_run(seed));
    if let Err(panic) = outcome {
        eprintln!("randomized failover test failed; replay with FAILOVER_SEED={seed}");
        std::panic::resume_unwind(panic);
    }
}

fn randomized_run(seed: u64) {
    let members = ["member1", "member2", "member3"];
    let mut plane = Plane::start_with(&members, FAILOVER);
    let mut rng = Rng(seed);
    // (name, cluster failover purge mode, application failover purge mode)
    let apps = [
        ("app-a", "Gracefully", "Gracefully"),
        ("app-b", "Directly", "Never"),
        ("app-c", "Gracefully", "Directly"),
    ];
    // Directly may drop below the desired replicas; Never waits for the user (lifted before converging).
    let allow_drop = |name: &str| name != "app-a";
    for (name, cluster_mode, mode) in apps {
        apply_json(
            &plane,
            &format!("{name}.json"),
            &deployment(name, "default", 3),
        );
        let application = if mode == "Gracefully" {
            json!({"decisionConditions": {"tolerationSeconds": 2}, "purgeMode": mode, "gracePeriodSeconds": 30})
        } else {
            json!({"decisionConditions": {"tolerationSeconds": 2}, "purgeMode": mode})
        };
        apply_json(
            &plane,
            &format!("{name}-policy.json"),
            &policy(
                name,
                "default",
                json!({"propagateDeps": true,
                       "placement": {"clusterTolerations": [{"key": "cluster.karmada.io/not-ready",
                           "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 1}]},
                       "failover": {"cluster": {"purgeMode": cluster_mode}, "application": application}}),
            ),
        );
    }
    for (name, _, _) in apps {
        wait_for(&format!("{name} placed and Ready"), || {
            let template = plane.object(&["deployment", name])?;
            if template["status"]["readyReplicas"] == 3 {
                Ok(())
            } else {
                Err(format!("{}\n{}", template["status"], plane.logs()))
            }
        });
    }

    let started = Instant::now();
    let mut unreachable: Option<(&str, BTreeSet<String>)> = None;
    let mut crashed: BTreeSet<&str> = BTreeSet::new();
    let mut restarted = false;
    let mut step = 0;
    let mut observations = 0u32;
    while started.elapsed() < Duration::from_secs(45) {
        step += 1;
        // The restart comes at random after 10 s, and for certain after 30 s: left to chance alone, about one
        // seed in thirty never drew it.
        let choice = if !restarted && started.elapsed() > Duration::from_secs(30) {
            4
        } else {
            rng.below(5)
        };
        match choice {
            // A member goes unreachable (at most one at a time, so a healthy one is always left).
            0 | 1 if unreachable.is_none() => {
                let member = members[rng.below(3) as usize];
                plane.fault(member, &["unreachable"]);
                // Read once the fault holds, and without the Works already being deleted: a removal decided
                // while the member could be reached may have deleted the member's object before the fault,
                // and the Work then goes when its finalizer is lifted a moment later (seed
                // 1796551199358123838: the member returned and was cut off again a second later). A Work not
                // being deleted when the member was cut off must stay: nothing can be deleted there.
                let v = view(&plane).expect("view");
                let works = v
                    .all_works_in(member)
                    .into_iter()
                    .filter(|work| !v.work_deleting(member, work))
                    .collect();
                eprintln!("step {step}: {member} unreachable");
                unreachable = Some((member, works));
            }
            0 | 1 => {
                let (member, _) = unreachable.take().expect("some");
                // `clear` also ends the member's crashes.
                plane.fault(member, &["clear"]);
                crashed.remove(member);
                eprintln!("step {step}: {member} back");
            }
            2 => {
                let member = members[rng.below(3) as usize];
                if unreachable.as_ref().is_none_or(|(m, _)| *m != member) {
                    let app = apps[rng.below(3) as usize].0;
                    plane.fault(member, &["crash", app]);
                    crashed.insert(member);
                    eprintln!("step {step}: {app} crashes in {member}");
                }
            }
            3 => {
                let crashed_members: Vec<&str> = crashed.iter().copied().collect();
                if let Some(member) = crashed_members.first()
                    && unreachable.as_ref().is_none_or(|(m, _)| m != member)
                {
                    plane.fault(member, &["clear"]);
                    crashed.remove(member);
                    eprintln!("step {step}: {member}'s crashes cleared");
                }
            }
            _ if !restarted && started.elapsed() > Duration::from_secs(10) => {
                plane.restart_components_with(FAILOVER);
                restarted = true;
                eprintln!("step {step}: control plane restarted");
            }
            _ => {}
        }
        // Observe for 1–3 s.
        let until = Instant::now() + Duration::from_millis(1000 + rng.below(2000));
        while Instant::now() < until {
            let Ok(v) = view(&plane) else { continue };
            observations += 1;
            for (name, _, _) in apps {
                if let Ok(binding) = v.binding(&format!("default/{name}-deployment"))
                    && let Err(e) = check_replicas(name, binding, allow_drop(name))
                {
                    panic!("seed {seed}, step {step}: {e}\n{}", plane.logs());
                }
            }
            if let Some((member, works)) = &unreachable {
                let now = v.all_works_in(member);
                assert!(
                    works.is_subset(&now),
                    "seed {seed}, step {step}: a Work of unreachable {member} went: {works:?} → {now:?}"
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    assert!(restarted || started.elapsed() < Duration::from_secs(10));
    for member in members {
        plane.fault(member, &["clear"]);
    }
    eprintln!("seed {seed}: {step} steps, {observations} observations; converging");
    for member in members {
        plane.wait_ready(member);
    }
    wait_for("every workload whole again with no task left", || {
        let v = view(&plane)?;
        for (name, _, _) in apps {
            let binding = v.binding(&format!("default/{name}-deployment"))?;
            safe(name, binding, allow_drop(name));
            // The user lifts Never tasks.
            if let Some(i) = tasks(binding)
                .iter()
                .position(|t| t["suppressDeletion"] == true)
            {
                let patch = format!(
                    r#"[{{"op":"replace","path":"/spec/gracefulEvictionTasks/{i}/suppressDeletion","value":false}}]"#
                );
                plane.kubectl(&[
                    "patch",
                    "resourcebinding",
                    &format!("{name}-deployment"),
                    "--type",
                    "json",
                    "-p",
                    &patch,
                ]);
            }
            if !tasks(binding).is_empty() {
                return Err(format!("{name}: tasks {:?}", tasks(binding)));
            }
            let template = plane.object(&["deployment", name])?;
            if template["status"]["readyReplicas"] != 3 {
                return Err(format!("{name}: {}\n{}", template["status"], plane.logs()));
            }
        }
        Ok(())
    });
}
