//! A Deployment's conditions across member clusters, so `kubectl wait --for=condition=Available`, `kubectl
//! describe` and GitOps health checks (Progressing=False with ProgressDeadlineExceeded is Degraded) work on the
//! template as on a single cluster's Deployment. Karmada's native interpreter collects and aggregates no conditions.
//!
//! [`reflected`] keeps a member's Available, Progressing and ReplicaFailure conditions as type, status and
//! reason, with the message only when the condition reports trouble — and nothing at all once the member has
//! settled (Available, Progressing with NewReplicaSetAvailable, no ReplicaFailure), which is how almost every
//! member is almost always: a settled member's Work and the binding carry no conditions, and nothing that moves
//! while a member is healthy (times, the ReplicaSet named in a success message) makes their status change.
//! Aggregation reads a member that reported a status without conditions as settled.
//!
//! [`aggregated`] gives the template the same three conditions, without times (the controller writing the
//! template stamps `lastTransitionTime`):
//! - Available: True when every member cluster reports Available=True, else False naming the clusters that do
//!   not (or have reported nothing yet);
//! - Progressing: False when a member reports it False (its reason, e.g. ProgressDeadlineExceeded, and its
//!   message); True with NewReplicaSetAvailable when every member reports that reason and has caught up with the
//!   template; otherwise True with ReplicaSetUpdated naming the clusters still rolling out;
//! - ReplicaFailure: True, with the members' messages, when any member reports it True.
//!
//! A condition no member reports at all is left out rather than guessed.

use karmada_api::work::AggregatedStatusItem;
use serde_json::{Map, Value, json};

use crate::value::{array_at, str_at};

const AVAILABLE: &str = "Available";
const PROGRESSING: &str = "Progressing";
const REPLICA_FAILURE: &str = "ReplicaFailure";
const NEW_REPLICA_SET_AVAILABLE: &str = "NewReplicaSetAvailable";

/// Whether a condition of this type and status says something is wrong.
fn reports_trouble(condition_type: &str, status: &str) -> bool {
    if condition_type == REPLICA_FAILURE {
        status == "True"
    } else {
        status != "True"
    }
}

/// Whether a (reflected) condition is what a settled Deployment reports.
fn settled(condition: &Value) -> bool {
    match (str_at(condition, "/type"), str_at(condition, "/status")) {
        (AVAILABLE, "True") => true,
        (PROGRESSING, "True") => str_at(condition, "/reason") == NEW_REPLICA_SET_AVAILABLE,
        (REPLICA_FAILURE, "False") => true,
        _ => false,
    }
}

/// What a member reports while settled, as aggregation reads a status without conditions.
fn settled_conditions() -> Value {
    json!([{"type": AVAILABLE, "status": "True"},
           {"type": PROGRESSING, "status": "True", "reason": NEW_REPLICA_SET_AVAILABLE}])
}

/// The member's conditions as aggregation reads them; `None` when it has none of the three or has settled.
pub(super) fn reflected(status: &Map<String, Value>) -> Option<Value> {
    let kept: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter(|c| {
            [AVAILABLE, PROGRESSING, REPLICA_FAILURE].contains(&str_at(c, "/type"))
                && !str_at(c, "/status").is_empty()
        })
        .map(|c| {
            let (condition_type, status) = (str_at(c, "/type"), str_at(c, "/status"));
            let mut kept = Map::new();
            kept.insert("type".into(), json!(condition_type));
            kept.insert("status".into(), json!(status));
            for field in ["reason", "message"] {
                let value = str_at(c, &format!("/{field}"));
                let wanted = field == "reason" || reports_trouble(condition_type, status);
                if wanted && !value.is_empty() {
                    kept.insert(field.into(), json!(value));
                }
            }
            Value::Object(kept)
        })
        .collect();
    (!kept.iter().all(settled)).then_some(Value::Array(kept))
}

/// One member's condition of one type.
struct Report<'a> {
    cluster: &'a str,
    status: &'a str,
    reason: &'a str,
    message: &'a str,
}

/// Each member's condition of `condition_type`, `None` for a member that reports none (or no status).
fn reports<'a>(items: &'a [AggregatedStatusItem], condition_type: &str) -> Vec<Option<Report<'a>>> {
    static SETTLED: std::sync::LazyLock<Value> = std::sync::LazyLock::new(settled_conditions);
    items
        .iter()
        .map(|item| {
            let status = item.status.as_ref()?;
            let conditions = match array_at(status, "/conditions") {
                [] => SETTLED.as_array().map_or(&[][..], Vec::as_slice),
                reported => reported,
            };
            let condition = conditions
                .iter()
                .find(|c| str_at(c, "/type") == condition_type)?;
            Some(Report {
                cluster: &item.cluster_name,
                status: str_at(condition, "/status"),
                reason: str_at(condition, "/reason"),
                message: str_at(condition, "/message"),
            })
        })
        .collect()
}

fn condition(condition_type: &str, status: &str, reason: &str, message: String) -> Value {
    json!({"type": condition_type, "status": status, "reason": reason, "message": message})
}

/// "cluster: message" for each report, joined.
fn messages(reports: &[&Report]) -> String {
    reports
        .iter()
        .map(|r| match r.message {
            "" => format!("{}: {}", r.cluster, r.reason),
            message => format!("{}: {message}", r.cluster),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn available(items: &[AggregatedStatusItem]) -> Option<Value> {
    let reports = reports(items, AVAILABLE);
    if reports.iter().all(Option::is_none) {
        return None;
    }
    let missing: Vec<&str> = items
        .iter()
        .zip(&reports)
        .filter(|(_, r)| r.as_ref().is_none_or(|r| r.status != "True"))
        .map(|(item, _)| item.cluster_name.as_str())
        .collect();
    Some(if missing.is_empty() {
        condition(
            AVAILABLE,
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability in every member cluster.".into(),
        )
    } else {
        let reason = reports
            .iter()
            .flatten()
            .find(|r| r.status != "True" && !r.reason.is_empty())
            .map_or("MinimumReplicasUnavailable", |r| r.reason);
        condition(
            AVAILABLE,
            "False",
            reason,
            format!(
                "Deployment does not have minimum availability in member cluster(s) {}.",
                missing.join(", ")
            ),
        )
    })
}

/// `lagging[i]`: the i-th member has not caught up with the template yet (or reported no status).
fn progressing(items: &[AggregatedStatusItem], lagging: &[bool]) -> Option<Value> {
    let reports = reports(items, PROGRESSING);
    if reports.iter().all(Option::is_none) {
        return None;
    }
    let stalled: Vec<&Report> = reports
        .iter()
        .flatten()
        .filter(|r| r.status == "False")
        .collect();
    if let Some(first) = stalled.first() {
        return Some(condition(
            PROGRESSING,
            "False",
            first.reason,
            messages(&stalled),
        ));
    }
    let rolling: Vec<&str> = items
        .iter()
        .zip(&reports)
        .zip(lagging)
        .filter(|((_, r), lagging)| {
            **lagging
                || r.as_ref()
                    .is_none_or(|r| r.reason != NEW_REPLICA_SET_AVAILABLE)
        })
        .map(|((item, _), _)| item.cluster_name.as_str())
        .collect();
    Some(if rolling.is_empty() {
        condition(
            PROGRESSING,
            "True",
            NEW_REPLICA_SET_AVAILABLE,
            "Deployment has successfully progressed in every member cluster.".into(),
        )
    } else {
        condition(
            PROGRESSING,
            "True",
            "ReplicaSetUpdated",
            format!(
                "Deployment is progressing in member cluster(s) {}.",
                rolling.join(", ")
            ),
        )
    })
}

fn replica_failure(items: &[AggregatedStatusItem]) -> Option<Value> {
    let reports = reports(items, REPLICA_FAILURE);
    let failing: Vec<&Report> = reports
        .iter()
        .flatten()
        .filter(|r| r.status == "True")
        .collect();
    let first = failing.first()?;
    Some(condition(
        REPLICA_FAILURE,
        "True",
        first.reason,
        messages(&failing),
    ))
}

/// The template's conditions from its members' (see the module docs); `lagging` is per item.
pub(super) fn aggregated(items: &[AggregatedStatusItem], lagging: &[bool]) -> Vec<Value> {
    [
        available(items),
        progressing(items, lagging),
        replica_failure(items),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn item(cluster: &str, conditions: Option<Value>) -> AggregatedStatusItem {
        AggregatedStatusItem {
            cluster_name: cluster.into(),
            status: conditions.map(|c| json!({"replicas": 1, "conditions": c})),
            applied: true,
            ..Default::default()
        }
    }

    fn healthy() -> Value {
        json!([{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
               {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}])
    }

    fn by_type<'a>(conditions: &'a [Value], condition_type: &str) -> Option<&'a Value> {
        conditions
            .iter()
            .find(|c| str_at(c, "/type") == condition_type)
    }

    #[test]
    fn reflect_keeps_what_aggregation_reads_and_drops_what_moves_while_healthy() {
        let member = json!({"conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability.",
             "lastTransitionTime": "2026-12-02T00:07:44Z", "lastUpdateTime": "2026-12-02T00:07:44Z"},
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
             "message": "ReplicaSet \"web-1\" has timed out progressing.",
             "lastTransitionTime": "2026-12-02T00:07:42Z"},
            {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
             "message": "pods \"web-1-x\" is forbidden: exceeded quota"},
            {"type": "Custom", "status": "True"},
            {"type": "Available"}]});
        let kept = reflected(member.as_object().expect("object")).expect("conditions kept");
        assert_eq!(
            kept,
            json!([
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                 "message": "ReplicaSet \"web-1\" has timed out progressing."},
                {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                 "message": "pods \"web-1-x\" is forbidden: exceeded quota"}])
        );
        let settled = json!({"conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability."},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
             "message": "ReplicaSet \"web-1\" has successfully progressed."}]});
        assert_eq!(
            reflected(settled.as_object().expect("object")),
            None,
            "a settled member reflects none"
        );
        let rolling = json!({"conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"}]});
        assert!(
            reflected(rolling.as_object().expect("object")).is_some(),
            "a rolling member reflects them"
        );
        assert_eq!(
            reflected(json!({"replicas": 1}).as_object().expect("object")),
            None
        );
    }

    #[test]
    fn aggregated_conditions_table() {
        // (name, items, lagging, expected (type, status, reason) of each condition, in order)
        type Expected = Vec<(&'static str, &'static str, &'static str)>;
        let cases: Vec<(&str, Vec<AggregatedStatusItem>, Vec<bool>, Expected)> = vec![
            (
                "every member available and rolled out",
                vec![item("a", Some(healthy())), item("b", Some(healthy()))],
                vec![false, false],
                vec![
                    ("Available", "True", "MinimumReplicasAvailable"),
                    ("Progressing", "True", "NewReplicaSetAvailable"),
                ],
            ),
            (
                "a member not caught up with the template is still progressing",
                vec![item("a", Some(healthy())), item("b", Some(healthy()))],
                vec![false, true],
                vec![
                    ("Available", "True", "MinimumReplicasAvailable"),
                    ("Progressing", "True", "ReplicaSetUpdated"),
                ],
            ),
            (
                "a member without status yet: not available there",
                vec![item("a", Some(healthy())), item("b", None)],
                vec![false, true],
                vec![
                    ("Available", "False", "MinimumReplicasUnavailable"),
                    ("Progressing", "True", "ReplicaSetUpdated"),
                ],
            ),
            (
                "a member past its progress deadline makes the template's Progressing False",
                vec![
                    item("a", Some(healthy())),
                    item(
                        "b",
                        Some(json!([
                        {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
                        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                         "message": "ReplicaSet \"web-1\" has timed out progressing."},
                        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                         "message": "exceeded quota"}])),
                    ),
                ],
                vec![false, false],
                vec![
                    ("Available", "False", "MinimumReplicasUnavailable"),
                    ("Progressing", "False", "ProgressDeadlineExceeded"),
                    ("ReplicaFailure", "True", "FailedCreate"),
                ],
            ),
            (
                "a member with a status but no conditions has settled",
                vec![item("a", Some(json!([]))), item("b", Some(healthy()))],
                vec![false, false],
                vec![
                    ("Available", "True", "MinimumReplicasAvailable"),
                    ("Progressing", "True", "NewReplicaSetAvailable"),
                ],
            ),
            (
                "no member status yet: no conditions made up",
                vec![item("a", None), item("b", None)],
                vec![true, true],
                vec![],
            ),
        ];
        for (name, items, lagging, expected) in cases {
            let conditions = aggregated(&items, &lagging);
            let got: Vec<(&str, &str, &str)> = conditions
                .iter()
                .map(|c| {
                    (
                        str_at(c, "/type"),
                        str_at(c, "/status"),
                        str_at(c, "/reason"),
                    )
                })
                .collect();
            assert_eq!(got, expected, "{name}");
        }
    }

    #[test]
    fn messages_name_the_member_clusters() {
        let items = vec![
            item("cluster-aws", Some(healthy())),
            item(
                "cluster-gcp",
                Some(json!([
                {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
                {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                 "message": "ReplicaSet \"web-1\" has timed out progressing."}])),
            ),
            item("cluster-ali", None),
        ];
        let conditions = aggregated(&items, &[false, false, true]);
        assert_eq!(
            by_type(&conditions, "Available").map(|c| str_at(c, "/message")),
            Some(
                "Deployment does not have minimum availability in member cluster(s) cluster-gcp, cluster-ali."
            )
        );
        assert_eq!(
            by_type(&conditions, "Progressing").map(|c| str_at(c, "/message")),
            Some("cluster-gcp: ReplicaSet \"web-1\" has timed out progressing.")
        );
        let rolling = aggregated(&items[..1], &[true]);
        assert_eq!(
            by_type(&rolling, "Progressing").map(|c| str_at(c, "/message")),
            Some("Deployment is progressing in member cluster(s) cluster-aws.")
        );
    }
}
