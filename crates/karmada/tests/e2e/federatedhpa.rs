//! FederatedHPA end to end: load set on one member's pods (`karmada member-sim load`) scales the template
//! from 2 up to its maximum, the scheduler divides the new replicas per the policy's static weights, and
//! once the load is gone the workload returns to its minimum after the (shortened) stabilization window.

use serde_json::Value;

use crate::plane::{Plane, wait_for, web_workload};

/// Short HPA periods: a round every second, a 5 s downscale window, CPU trusted a second after start.
pub(crate) const HPA_ARGS: &[&str] = &[
    "--horizontal-pod-autoscaler-sync-period",
    "1s",
    "--horizontal-pod-autoscaler-downscale-stabilization",
    "5s",
    "--horizontal-pod-autoscaler-cpu-initialization-period",
    "1s",
];

/// The documents after the shared workload ([`web_workload`]).
const AUTOSCALER: &str = r#"---
apiVersion: autoscaling.karmada.io/v1alpha1
kind: FederatedHPA
metadata:
  name: web
  namespace: default
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  minReplicas: 2
  maxReplicas: 4
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 50}
"#;

fn member_replicas(plane: &Plane, member: &str) -> Result<i64, String> {
    let object = plane.member_object(member, &["deployment", "web", "-n", "default"])?;
    object["spec"]["replicas"]
        .as_i64()
        .ok_or_else(|| format!("no replicas: {object}"))
}

/// Waits until the template, and each member's share, have these replicas.
pub(crate) fn wait_divided(plane: &Plane, total: i64, shares: &[(&str, i64)]) {
    wait_for(&format!("the template at {total} replicas"), || {
        let template = plane.object(&["deployment", "web", "-n", "default"])?;
        match template["spec"]["replicas"].as_i64() {
            Some(n) if n == total => Ok(()),
            other => Err(format!("{other:?}\n{}", plane.logs())),
        }
    });
    for (member, share) in shares {
        wait_for(
            &format!("{share} replicas in {member}"),
            || match member_replicas(plane, member)? {
                n if n == *share => Ok(()),
                n => Err(format!("{n}")),
            },
        );
    }
}

pub(crate) fn condition(hpa: &Value, type_: &str) -> (String, String) {
    let found = hpa["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_))
        .cloned()
        .unwrap_or_default();
    (
        found["status"].as_str().unwrap_or_default().to_string(),
        found["reason"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn load_on_one_member_scales_out_divides_and_scales_back() {
    let plane = Plane::start_with(&["member1", "member2"], HPA_ARGS);
    plane.apply(
        "web",
        &format!(
            "{}{AUTOSCALER}",
            web_workload(2, Some("500m"), &["member1", "member2"], true)
        ),
    );
    wait_divided(&plane, 2, &[("member1", 1), ("member2", 1)]);
    // Idle: 0 % of a 50 % target wants 1, the minimum keeps 2.
    wait_for("the FederatedHPA to find its metric", || {
        let hpa = plane.object(&["federatedhpa", "web", "-n", "default"])?;
        match condition(&hpa, "ScalingActive") {
            (s, r) if s == "True" && r == "ValidMetricFound" => Ok(hpa),
            other => Err(format!("{other:?}: {}\n{}", hpa["status"], plane.logs())),
        }
    });

    // member1's pods at 1 CPU each (200 % of their request) and member2's idle: 100 % on average.
    plane.load("member1", &["--selector", "app=web", "--cpu", "1"]);
    wait_divided(&plane, 4, &[("member1", 2), ("member2", 2)]);
    let hpa = wait_for("the status to show the maximum reached", || {
        let hpa = plane.object(&["federatedhpa", "web", "-n", "default"])?;
        match condition(&hpa, "ScalingLimited") {
            (s, r) if s == "True" && r == "TooManyReplicas" => Ok(hpa),
            other => Err(format!("{other:?}: {}", hpa["status"])),
        }
    });
    assert_eq!(hpa["status"]["currentReplicas"], 4, "{}", hpa["status"]);
    assert_eq!(
        condition(&hpa, "AbleToScale").0,
        "True",
        "{}",
        hpa["status"]
    );
    assert!(
        hpa["status"]["lastScaleTime"].is_string(),
        "{}",
        hpa["status"]
    );
    // Events are written in the background, a moment after the status.
    wait_for("a SuccessfulRescale event", || {
        let events = plane
            .kubectl(&["get", "events", "-n", "default", "-o", "json"])
            .json();
        let rescaled = events["items"].as_array().into_iter().flatten().any(|e| {
            e["reason"] == "SuccessfulRescale" && e["involvedObject"]["kind"] == "FederatedHPA"
        });
        if rescaled {
            Ok(())
        } else {
            Err(events.to_string())
        }
    });

    // Load gone: the workload goes back to its minimum once the 5 s window has passed.
    plane.load("member1", &["--selector", "app=web", "--cpu", "0"]);
    wait_divided(&plane, 2, &[("member1", 1), ("member2", 1)]);
    let hpa = plane
        .object(&["federatedhpa", "web", "-n", "default"])
        .expect("hpa");
    assert_eq!(hpa["status"]["desiredReplicas"], 2, "{}", hpa["status"]);
}
