//! The conditions of a control-plane ServiceExport (pure), from what its clusters report (the exported-Service
//! Works of [`super::report`]), with the MCS API's condition types and reasons:
//!
//! - `Valid`: True/`Valid` when every cluster the export is propagated to has the Service and it may be
//!   exported; False/`NoService` or False/`InvalidServiceType` (ExternalName) naming the clusters; Unknown/`Pending`
//!   while it is propagated nowhere or a cluster has not reported yet.
//! - `Conflict`, as the MCS KEP resolves it: the export with the oldest report wins, and every other cluster
//!   whose Service disagrees on a property is named with both values — `PortConflict` (a port of the same name
//!   with another number or protocol), `TypeConflict` (headless against ClusterSetIP), `SessionAffinityConflict`;
//!   False/`NoConflicts` otherwise.
//!
//! `lastTransitionTime` stays while a condition's status holds.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::mcs::{CONDITION_CONFLICT, CONDITION_VALID, ServiceExportCondition};
use serde_json::Value;

pub const REASON_VALID: &str = "Valid";
pub const REASON_NO_SERVICE: &str = "NoService";
pub const REASON_INVALID_SERVICE_TYPE: &str = "InvalidServiceType";
pub const REASON_PENDING: &str = "Pending";
pub const REASON_NO_CONFLICTS: &str = "NoConflicts";
pub const REASON_PORT_CONFLICT: &str = "PortConflict";
pub const REASON_TYPE_CONFLICT: &str = "TypeConflict";
pub const REASON_SESSION_AFFINITY_CONFLICT: &str = "SessionAffinityConflict";

/// What one cluster reported for the export.
#[derive(Clone, Debug)]
pub struct ClusterReport<'a> {
    pub cluster: &'a str,
    /// When the cluster first reported (the report Work's creation): the conflict tie-breaker.
    pub since: Option<Timestamp>,
    /// The reported Service; `None` when the cluster has no such Service.
    pub service: Option<&'a Value>,
}

/// The export and what its clusters say.
#[derive(Clone, Debug)]
pub struct ExportInput<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    /// The clusters the ServiceExport is propagated to.
    pub clusters: Vec<String>,
    pub reports: Vec<ClusterReport<'a>>,
}

/// The two conditions.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub valid: ServiceExportCondition,
    pub conflict: ServiceExportCondition,
}

fn condition(type_: &str, status: &str, reason: &str, message: String) -> ServiceExportCondition {
    ServiceExportCondition {
        type_: type_.into(),
        status: status.into(),
        last_transition_time: None,
        reason: Some(reason.into()),
        message: Some(message),
    }
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn list(clusters: &[&str]) -> String {
    clusters.join(", ")
}

fn validity(input: &ExportInput<'_>) -> ServiceExportCondition {
    let service = format!("{}/{}", input.namespace, input.name);
    if input.clusters.is_empty() {
        return condition(
            CONDITION_VALID,
            "Unknown",
            REASON_PENDING,
            format!(
                "the ServiceExport is not propagated to any cluster yet; a PropagationPolicy selecting it places it \
                 in the clusters that run Service {service}"
            ),
        );
    }
    let report_of = |cluster: &str| input.reports.iter().find(|r| r.cluster == cluster);
    let mut missing = Vec::new();
    let mut external = Vec::new();
    let mut waiting = Vec::new();
    let mut exported = Vec::new();
    for cluster in &input.clusters {
        match report_of(cluster) {
            None => waiting.push(cluster.as_str()),
            Some(ClusterReport { service: None, .. }) => missing.push(cluster.as_str()),
            Some(ClusterReport {
                service: Some(s), ..
            }) if text(s, "/spec/type") == "ExternalName" => external.push(cluster.as_str()),
            Some(_) => exported.push(cluster.as_str()),
        }
    }
    let exported_note = if exported.is_empty() {
        String::new()
    } else {
        format!("; exported from {}", list(&exported))
    };
    if !missing.is_empty() {
        return condition(
            CONDITION_VALID,
            "False",
            REASON_NO_SERVICE,
            format!(
                "Service {service} does not exist in {}{exported_note}",
                list(&missing)
            ),
        );
    }
    if !external.is_empty() {
        return condition(
            CONDITION_VALID,
            "False",
            REASON_INVALID_SERVICE_TYPE,
            format!(
                "Service {service} in {} is of type ExternalName, which cannot be exported{exported_note}",
                list(&external)
            ),
        );
    }
    if !waiting.is_empty() {
        return condition(
            CONDITION_VALID,
            "Unknown",
            REASON_PENDING,
            format!(
                "waiting for {} to report Service {service}{exported_note}",
                list(&waiting)
            ),
        );
    }
    condition(
        CONDITION_VALID,
        "True",
        REASON_VALID,
        format!("Service {service} is exported from {}", list(&exported)),
    )
}

fn headless(service: &Value) -> bool {
    text(service, "/spec/clusterIP") == "None"
}

fn affinity(service: &Value) -> &str {
    match text(service, "/spec/sessionAffinity") {
        "" => "None",
        other => other,
    }
}

/// Port name → "port/PROTOCOL".
fn ports(service: &Value) -> BTreeMap<String, String> {
    service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let protocol = match text(p, "/protocol") {
                "" => "TCP",
                other => other,
            };
            let number = p.get("port").and_then(Value::as_i64).unwrap_or_default();
            (text(p, "/name").to_string(), format!("{number}/{protocol}"))
        })
        .collect()
}

fn port_label(name: &str) -> String {
    if name.is_empty() {
        "the unnamed port".into()
    } else {
        format!("port {name:?}")
    }
}

fn conflicts(input: &ExportInput<'_>) -> ServiceExportCondition {
    let mut services: Vec<(&ClusterReport<'_>, &Value)> = input
        .reports
        .iter()
        .filter(|r| input.clusters.iter().any(|c| c == r.cluster))
        .filter_map(|r| Some((r, r.service?)))
        .filter(|(_, s)| text(s, "/spec/type") != "ExternalName")
        .collect();
    services.sort_by(|(a, _), (b, _)| (a.since, a.cluster).cmp(&(b.since, b.cluster)));
    let Some(((oldest, reference), others)) = services.split_first() else {
        return condition(
            CONDITION_CONFLICT,
            "False",
            REASON_NO_CONFLICTS,
            "no cluster exports the Service yet".into(),
        );
    };
    let mut found: Vec<(&str, String)> = Vec::new();
    let reference_ports = ports(reference);
    for (report, service) in others {
        for (name, value) in ports(service) {
            if let Some(expected) = reference_ports.get(&name)
                && *expected != value
            {
                found.push((
                    REASON_PORT_CONFLICT,
                    format!(
                        "{}: {} is {value} where the oldest export ({}) has {expected}",
                        report.cluster,
                        port_label(&name),
                        oldest.cluster
                    ),
                ));
            }
        }
        if headless(service) != headless(reference) {
            let kind = |h: bool| if h { "Headless" } else { "ClusterSetIP" };
            found.push((
                REASON_TYPE_CONFLICT,
                format!(
                    "{}: the Service is {} where the oldest export ({}) is {}",
                    report.cluster,
                    kind(headless(service)),
                    oldest.cluster,
                    kind(headless(reference))
                ),
            ));
        }
        if affinity(service) != affinity(reference) {
            found.push((
                REASON_SESSION_AFFINITY_CONFLICT,
                format!(
                    "{}: sessionAffinity is {} where the oldest export ({}) has {}",
                    report.cluster,
                    affinity(service),
                    oldest.cluster,
                    affinity(reference)
                ),
            ));
        }
    }
    match found.first() {
        None => condition(
            CONDITION_CONFLICT,
            "False",
            REASON_NO_CONFLICTS,
            "the exporting clusters agree on ports, type and session affinity".into(),
        ),
        Some((reason, _)) => condition(
            CONDITION_CONFLICT,
            "True",
            reason,
            format!(
                "{}; the oldest export's values are used",
                found
                    .iter()
                    .map(|(_, m)| m.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        ),
    }
}

/// The conditions `input` calls for, with transition times carried over from `previous` where the status holds.
pub fn verdict(
    input: &ExportInput<'_>,
    previous: &[ServiceExportCondition],
    now: Timestamp,
) -> Verdict {
    let stamp = |mut c: ServiceExportCondition| {
        let kept = previous
            .iter()
            .find(|p| p.type_ == c.type_ && p.status == c.status)
            .and_then(|p| p.last_transition_time.clone());
        c.last_transition_time = Some(kept.unwrap_or(Time(now)));
        c
    };
    Verdict {
        valid: stamp(validity(input)),
        conflict: stamp(conflicts(input)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn service(ports: Value, extra: Value) -> Value {
        let mut s = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "shop"},
                           "spec": {"type": "ClusterIP", "ports": ports}});
        if let (Some(spec), Some(extra)) = (s["spec"].as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        s
    }

    fn at(seconds: i64) -> Option<Timestamp> {
        Timestamp::from_second(seconds).ok()
    }

    fn input<'a>(clusters: &[&str], reports: Vec<ClusterReport<'a>>) -> ExportInput<'a> {
        ExportInput {
            namespace: "shop",
            name: "api",
            clusters: clusters.iter().map(|c| c.to_string()).collect(),
            reports,
        }
    }

    fn summary(v: &Verdict) -> (String, String, String, String) {
        (
            format!(
                "{}/{}",
                v.valid.status,
                v.valid.reason.clone().unwrap_or_default()
            ),
            v.valid.message.clone().unwrap_or_default(),
            format!(
                "{}/{}",
                v.conflict.status,
                v.conflict.reason.clone().unwrap_or_default()
            ),
            v.conflict.message.clone().unwrap_or_default(),
        )
    }

    #[test]
    fn condition_table() {
        let http = service(
            json!([{"name": "http", "port": 8080, "protocol": "TCP"}]),
            json!({}),
        );
        let http_udp = service(
            json!([{"name": "http", "port": 8080, "protocol": "UDP"}]),
            json!({}),
        );
        let http_8081 = service(json!([{"name": "http", "port": 8081}]), json!({}));
        let headless = service(
            json!([{"name": "http", "port": 8080}]),
            json!({"clusterIP": "None"}),
        );
        let sticky = service(
            json!([{"name": "http", "port": 8080}]),
            json!({"sessionAffinity": "ClientIP"}),
        );
        let external = service(json!([]), json!({"type": "ExternalName"}));
        let report = |cluster, since, service| ClusterReport {
            cluster,
            since: at(since),
            service,
        };
        // (what, clusters, reports, valid, valid message contains, conflict, conflict message contains)
        type Case<'a> = (
            &'a str,
            Vec<&'a str>,
            Vec<ClusterReport<'a>>,
            &'a str,
            &'a str,
            &'a str,
            &'a str,
        );
        let cases: Vec<Case<'_>> = vec![
            (
                "not propagated",
                vec![],
                vec![],
                "Unknown/Pending",
                "not propagated",
                "False/NoConflicts",
                "",
            ),
            (
                "one cluster not reported yet",
                vec!["a", "b"],
                vec![report("a", 1, Some(&http))],
                "Unknown/Pending",
                "waiting for b",
                "False/NoConflicts",
                "",
            ),
            (
                "agreeing clusters",
                vec!["a", "b"],
                vec![report("a", 1, Some(&http)), report("b", 2, Some(&http))],
                "True/Valid",
                "exported from a, b",
                "False/NoConflicts",
                "agree",
            ),
            (
                "service missing in one cluster",
                vec!["a", "b"],
                vec![report("a", 1, Some(&http)), report("b", 2, None)],
                "False/NoService",
                "Service shop/api does not exist in b; exported from a",
                "False/NoConflicts",
                "",
            ),
            (
                "external name",
                vec!["a"],
                vec![report("a", 1, Some(&external))],
                "False/InvalidServiceType",
                "in a is of type ExternalName",
                "False/NoConflicts",
                "no cluster exports",
            ),
            (
                "port number conflict, oldest wins",
                vec!["a", "b"],
                vec![
                    report("a", 5, Some(&http_8081)),
                    report("b", 2, Some(&http)),
                ],
                "True/Valid",
                "",
                "True/PortConflict",
                "a: port \"http\" is 8081/TCP where the oldest export (b) has 8080/TCP",
            ),
            (
                "protocol conflict",
                vec!["a", "b"],
                vec![report("a", 1, Some(&http)), report("b", 2, Some(&http_udp))],
                "True/Valid",
                "",
                "True/PortConflict",
                "b: port \"http\" is 8080/UDP where the oldest export (a) has 8080/TCP",
            ),
            (
                "type conflict",
                vec!["a", "b"],
                vec![report("a", 1, Some(&http)), report("b", 2, Some(&headless))],
                "True/Valid",
                "",
                "True/TypeConflict",
                "b: the Service is Headless where the oldest export (a) is ClusterSetIP",
            ),
            (
                "session affinity conflict",
                vec!["a", "b"],
                vec![report("a", 1, Some(&http)), report("b", 2, Some(&sticky))],
                "True/Valid",
                "",
                "True/SessionAffinityConflict",
                "b: sessionAffinity is ClientIP where the oldest export (a) has None",
            ),
            (
                "reports of clusters the export left are ignored",
                vec!["a"],
                vec![
                    report("a", 1, Some(&http)),
                    report("b", 0, Some(&http_8081)),
                ],
                "True/Valid",
                "exported from a",
                "False/NoConflicts",
                "",
            ),
        ];
        for (what, clusters, reports, valid, valid_msg, conflict, conflict_msg) in cases {
            let verdict = verdict(&input(&clusters, reports), &[], Timestamp::UNIX_EPOCH);
            let (v, vm, c, cm) = summary(&verdict);
            assert_eq!(v, valid, "{what}: {vm}");
            assert!(vm.contains(valid_msg), "{what}: {vm}");
            assert_eq!(c, conflict, "{what}: {cm}");
            assert!(cm.contains(conflict_msg), "{what}: {cm}");
        }
    }

    #[test]
    fn transition_times_hold_while_the_status_does() {
        let http = service(json!([{"name": "http", "port": 8080}]), json!({}));
        let reports = vec![ClusterReport {
            cluster: "a",
            since: at(1),
            service: Some(&http),
        }];
        let first = verdict(&input(&["a"], reports.clone()), &[], Timestamp::UNIX_EPOCH);
        let later = at(100).expect("time");
        let again = verdict(
            &input(&["a"], reports),
            &[first.valid.clone(), first.conflict.clone()],
            later,
        );
        assert_eq!(again, first);
        let gone = verdict(
            &input(
                &["a"],
                vec![ClusterReport {
                    cluster: "a",
                    since: at(1),
                    service: None,
                }],
            ),
            std::slice::from_ref(&first.valid),
            later,
        );
        assert_eq!(gone.valid.last_transition_time, Some(Time(later)));
    }
}
