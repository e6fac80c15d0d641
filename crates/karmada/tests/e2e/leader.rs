//! Two `karmada scheduler` replicas under leader election: one holds the Lease and schedules; SIGKILL it and the
//! standby takes the Lease after the lease duration and schedules what arrives next. The Lease's holder and
//! transitions show that only one replica led at a time.

use serde_json::Value;

use crate::plane::{Plane, wait_for};

fn lease(plane: &Plane) -> Result<Value, String> {
    plane.object(&["lease", "karmada-scheduler", "-n", "karmada-system"])
}

fn holder_pid(lease: &Value) -> Option<u32> {
    lease["spec"]["holderIdentity"]
        .as_str()?
        .rsplit('_')
        .next()?
        .parse()
        .ok()
}

fn schedule_web(plane: &Plane, name: &str) {
    plane
        .kubectl(&[
            "create",
            "deployment",
            name,
            "--image",
            "nginx:1.27",
            "--replicas",
            "2",
        ])
        .success();
    let policy = format!(
        r#"{{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy",
            "metadata":{{"name":"{name}","namespace":"default"}},
            "spec":{{"resourceSelectors":[{{"apiVersion":"apps/v1","kind":"Deployment","name":"{name}"}}],
                     "placement":{{"clusterAffinity":{{"clusterNames":["member1"]}}}}}}}}"#
    );
    let file = plane.karmada.file(&format!("{name}-policy.json"), &policy);
    plane
        .kubectl(&["apply", "-f", file.to_str().expect("utf8")])
        .success();
    wait_for(&format!("{name} scheduled"), || {
        let binding = plane.object(&["resourcebinding", &format!("{name}-deployment")])?;
        if binding["spec"]["clusters"][0]["name"] == "member1" {
            Ok(())
        } else {
            Err(binding["spec"].to_string())
        }
    });
}

#[test]
fn a_standby_scheduler_takes_over_when_the_leader_is_killed() {
    let mut plane = Plane::start(&["member1"]);
    plane.add_scheduler_replica();
    let replicas = plane.component_pids("scheduler");
    assert_eq!(replicas.len(), 2);
    let leader = wait_for("a scheduler holds the lease", || {
        let lease = lease(&plane)?;
        holder_pid(&lease)
            .filter(|pid| replicas.contains(pid))
            .ok_or_else(|| lease.to_string())
    });
    schedule_web(&plane, "before");
    let transitions_before = lease(&plane).expect("lease")["spec"]["leaseTransitions"]
        .as_i64()
        .unwrap_or(0);

    plane.kill_component(leader);
    let standby = *replicas.iter().find(|p| **p != leader).expect("standby");
    wait_for("the standby holds the lease", || {
        let lease = lease(&plane)?;
        if holder_pid(&lease) == Some(standby) {
            Ok(())
        } else {
            Err(lease["spec"].to_string())
        }
    });
    schedule_web(&plane, "after");
    let transitions_after = lease(&plane).expect("lease")["spec"]["leaseTransitions"]
        .as_i64()
        .unwrap_or(0);
    assert_eq!(
        transitions_after,
        transitions_before + 1,
        "exactly one hand-over"
    );
}
