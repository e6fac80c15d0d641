//! CronFederatedHPA end to end: rules scheduled for the coming minute in Tokyo time fire once that minute
//! comes, one setting a Deployment's replicas through its scale subresource (and the member follows), one
//! setting a FederatedHPA's bounds; each run is recorded in the status with its schedule time and the next one
//! a day later, a suspended rule has none. Admission refuses a bad schedule and an unknown zone (422, field
//! paths). The FederatedHPA controller is off, so only the cron rules move the bounds and replicas.

use std::time::Duration;

use jiff::{Timestamp, ToSpan, tz::TimeZone};
use serde_json::Value;

use crate::harness::{Server, wait_within};
use crate::plane::{Plane, wait_for, web_workload};

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
  minReplicas: 1
  maxReplicas: 3
"#;

/// The next minute boundary at least 20 s away (time to create the objects before it), as a UTC
/// timestamp and as the `minute hour` of that instant in `zone`.
fn coming_minute(zone: &TimeZone) -> (Timestamp, String) {
    let soon = Timestamp::now() + 20.seconds();
    let seconds = soon.as_second();
    let boundary = Timestamp::from_second(seconds - seconds.rem_euclid(60) + 60).expect("time");
    let local = boundary.to_zoned(zone.clone());
    (boundary, format!("{} {}", local.minute(), local.hour()))
}

fn history<'a>(cron: &'a Value, rule: &str) -> &'a Value {
    cron["status"]["executionHistories"]
        .as_array()
        .and_then(|h| h.iter().find(|h| h["ruleName"] == rule))
        .unwrap_or(&Value::Null)
}

#[test]
fn rules_fire_at_their_minute_in_their_zone_and_are_recorded() {
    let plane = Plane::start_with(
        &["member1"],
        &["--controllers", "*,-federatedHorizontalPodAutoscaler"],
    );
    plane.apply(
        "web",
        &format!("{}{AUTOSCALER}", web_workload(1, None, &["member1"], false)),
    );
    wait_for("web in member1", || {
        plane.member_object("member1", &["deployment", "web", "-n", "default"])
    });

    let tokyo = TimeZone::get("Asia/Tokyo").expect("the Tokyo zone");
    let (fire, minute_hour) = coming_minute(&tokyo);
    let crons = format!(
        r#"apiVersion: autoscaling.karmada.io/v1alpha1
kind: CronFederatedHPA
metadata:
  name: web-replicas
  namespace: default
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  rules:
  - name: morning
    schedule: "{minute_hour} * * *"
    timeZone: Asia/Tokyo
    targetReplicas: 3
  - name: paused
    schedule: "* * * * *"
    targetReplicas: 5
    suspend: true
---
apiVersion: autoscaling.karmada.io/v1alpha1
kind: CronFederatedHPA
metadata:
  name: web-bounds
  namespace: default
spec:
  scaleTargetRef:
    apiVersion: autoscaling.karmada.io/v1alpha1
    kind: FederatedHPA
    name: web
  rules:
  - name: widen
    schedule: "{minute_hour} * * *"
    timeZone: Asia/Tokyo
    targetMinReplicas: 2
    targetMaxReplicas: 6
"#
    );
    plane.apply("crons", &crons);

    // Planned first: the next execution time is the coming minute, nothing ran yet.
    let planned = wait_for("the rule's next execution time", || {
        let cron = plane.object(&["cronfederatedhpa", "web-replicas", "-n", "default"])?;
        if history(&cron, "morning")["nextExecutionTime"].is_string() {
            Ok(cron)
        } else {
            Err(format!("{}\n{}", cron["status"], plane.logs()))
        }
    });
    assert_eq!(
        history(&planned, "morning")["nextExecutionTime"],
        fire.to_string(),
        "{}",
        planned["status"]
    );
    assert!(history(&planned, "paused")["nextExecutionTime"].is_null());
    let template = plane
        .object(&["deployment", "web", "-n", "default"])
        .expect("template");
    assert_eq!(
        template["spec"]["replicas"], 1,
        "nothing runs before its time"
    );

    // The minute comes: up to 80 s from now.
    let ran = wait_within(Duration::from_secs(150), "the morning rule to run", || {
        let cron = plane.object(&["cronfederatedhpa", "web-replicas", "-n", "default"])?;
        match history(&cron, "morning")["successfulExecutions"].as_array() {
            Some(runs) if !runs.is_empty() => Ok(cron.clone()),
            _ => Err(format!("{}\n{}", cron["status"], plane.logs())),
        }
    });
    let morning = history(&ran, "morning");
    let run = &morning["successfulExecutions"][0];
    assert_eq!(run["scheduleTime"], fire.to_string(), "{morning}");
    assert_eq!(run["appliedReplicas"], 3, "{morning}");
    let executed: Timestamp = run["executionTime"]
        .as_str()
        .expect("executionTime")
        .parse()
        .expect("a time");
    assert!(executed >= fire, "ran at {executed}, before {fire}");
    assert_eq!(
        morning["nextExecutionTime"],
        (fire + 24.hours()).to_string(),
        "the next run is a day later: {morning}"
    );
    assert!(history(&ran, "paused")["successfulExecutions"].is_null());
    let template = plane
        .object(&["deployment", "web", "-n", "default"])
        .expect("template");
    assert_eq!(template["spec"]["replicas"], 3, "{template}");
    wait_for("3 replicas in member1", || {
        let object = plane.member_object("member1", &["deployment", "web", "-n", "default"])?;
        match object["spec"]["replicas"].as_i64() {
            Some(3) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });

    let bounds = wait_for("the widen rule to run", || {
        let cron = plane.object(&["cronfederatedhpa", "web-bounds", "-n", "default"])?;
        match history(&cron, "widen")["successfulExecutions"][0]["appliedMaxReplicas"].as_i64() {
            Some(6) => Ok(cron.clone()),
            _ => Err(format!("{}", cron["status"])),
        }
    });
    assert_eq!(
        history(&bounds, "widen")["successfulExecutions"][0]["appliedMinReplicas"],
        2
    );
    let fhpa = plane
        .object(&["federatedhpa", "web", "-n", "default"])
        .expect("fhpa");
    assert_eq!(fhpa["spec"]["minReplicas"], 2, "{}", fhpa["spec"]);
    assert_eq!(fhpa["spec"]["maxReplicas"], 6, "{}", fhpa["spec"]);
}

#[test]
fn bad_schedules_and_zones_are_refused_with_their_field() {
    let server = Server::start();
    let bad = r#"{"apiVersion": "autoscaling.karmada.io/v1alpha1", "kind": "CronFederatedHPA",
        "metadata": {"name": "bad", "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "rules": [{"name": "a", "schedule": "0 25 * * *", "targetReplicas": 1},
                           {"name": "b", "schedule": "0 8 * * *", "timeZone": "Mars/Olympus", "targetReplicas": 1}]}}"#;
    let out = server.kubectl_stdin(&["create", "-f", "-", "-v=6"], bad);
    assert!(!out.ok(), "created: {}", out.stdout);
    assert!(
        out.stderr.contains("422"),
        "a 422 Unprocessable Entity: {}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("spec.rules[0].schedule: Invalid value: \"0 25 * * *\""),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("accepted: five fields"),
        "the message shows the accepted form: {}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("spec.rules[1].timeZone: Invalid value: \"Mars/Olympus\""),
        "{}",
        out.stderr
    );
}
