//! Status aggregation for the kinds beyond workloads: a PodDisruptionBudget, a HorizontalPodAutoscaler and a
//! CronJob propagated to two members get on their template the sum (or the union) of what each member reports.
//! The members' statuses are written by hand: the simulated members run no disruption, autoscaling or cron
//! controllers, so the test plays their part through each member's status subresource.

use serde_json::{Value, json};

use crate::plane::{Plane, wait_for};

const MANIFESTS: &str = r#"
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: default}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: report, image: busybox}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: status-kinds, namespace: default}
spec:
  resourceSelectors:
    - {apiVersion: policy/v1, kind: PodDisruptionBudget, name: web}
    - {apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, name: web}
    - {apiVersion: batch/v1, kind: CronJob, name: report}
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
"#;

/// Writes `status` onto `resource/name` in `member`, once the object has arrived there.
fn set_member_status(plane: &Plane, member: &str, resource: &str, name: &str, status: Value) {
    wait_for(&format!("{resource}/{name} in {member}"), || {
        plane.member_object(member, &[resource, name, "-n", "default"])
    });
    let patch = json!({ "status": status }).to_string();
    plane
        .member_kubectl(
            member,
            &[
                "patch",
                resource,
                name,
                "-n",
                "default",
                "--subresource=status",
                "--type=merge",
                "-p",
                &patch,
            ],
        )
        .success();
}

fn wait_template_status(plane: &Plane, resource: &str, name: &str, expected: &Value) {
    wait_for(&format!("{resource}/{name} status aggregated"), || {
        let object = plane.object(&[resource, name, "-n", "default"])?;
        if &object["status"] == expected {
            Ok(())
        } else {
            Err(format!("status {}\n{}", object["status"], plane.logs()))
        }
    });
}

#[test]
fn pdb_hpa_and_cronjob_status_is_aggregated_from_members() {
    let plane = Plane::start(&["member1", "member2"]);
    plane
        .karmada
        .kubectl_stdin(&["apply", "-f", "-"], MANIFESTS)
        .success();

    for (member, healthy, allowed, pod) in [("member1", 2, 1, "web-a"), ("member2", 1, 0, "web-b")]
    {
        set_member_status(
            &plane,
            member,
            "poddisruptionbudget",
            "web",
            json!({"currentHealthy": healthy, "desiredHealthy": 1, "expectedPods": healthy,
                   "disruptionsAllowed": allowed, "disruptedPods": {pod: "2026-01-01T00:00:00Z"}}),
        );
    }
    wait_template_status(
        &plane,
        "poddisruptionbudget",
        "web",
        &json!({"currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3, "disruptionsAllowed": 1,
                "disruptedPods": {"member1/web-a": "2026-01-01T00:00:00Z", "member2/web-b": "2026-01-01T00:00:00Z"}}),
    );

    for (member, current, desired) in [("member1", 2, 3), ("member2", 1, 1)] {
        set_member_status(
            &plane,
            member,
            "horizontalpodautoscaler",
            "web",
            json!({"currentReplicas": current, "desiredReplicas": desired}),
        );
    }
    wait_template_status(
        &plane,
        "horizontalpodautoscaler",
        "web",
        &json!({"currentReplicas": 3, "desiredReplicas": 4}),
    );

    for (member, job, scheduled) in [
        ("member1", "report-1", "2026-01-01T00:05:00Z"),
        ("member2", "report-2", "2026-01-01T00:10:00Z"),
    ] {
        set_member_status(
            &plane,
            member,
            "cronjob",
            "report",
            json!({"active": [{"kind": "Job", "namespace": "default", "name": job}],
                   "lastScheduleTime": scheduled}),
        );
    }
    wait_template_status(
        &plane,
        "cronjob",
        "report",
        &json!({"active": [{"kind": "Job", "namespace": "default", "name": "report-1"},
                           {"kind": "Job", "namespace": "default", "name": "report-2"}],
                "lastScheduleTime": "2026-01-01T00:10:00Z"}),
    );
}
