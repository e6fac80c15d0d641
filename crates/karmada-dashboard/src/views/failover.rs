//! The failover timeline: cluster taints (with the time they were added), graceful eviction tasks on the
//! bindings, and the events about evictions, rescheduling and cluster health, newest first.

use serde_json::Value;

use crate::api::{self, ApiError, paths};
use crate::html::{esc, table};
use crate::views::View;
use crate::views::workload::event_time;

/// Event reasons (substrings) that belong on the timeline.
const REASONS: &[&str] = &[
    "Evict",
    "Reschedul",
    "Taint",
    "Failover",
    "NotReady",
    "ClusterReady",
    "Unschedul",
];

/// One entry of the timeline.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry {
    pub time: String,
    pub what: String,
    pub subject: String,
    pub detail: String,
}

pub async fn render(client: &kube::Client) -> Result<View, ApiError> {
    let clusters = api::list_page(client, paths::CLUSTERS, 500, None)
        .await?
        .items;
    let bindings = api::list_page(client, paths::BINDINGS, 2000, None)
        .await?
        .items;
    let events = api::list_page(client, paths::EVENTS, 1000, None)
        .await?
        .items;
    let entries = timeline(&clusters, &bindings, &events);
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            vec![
                esc(&e.time),
                esc(&e.what),
                esc(&e.subject),
                format!("<span class=\"wrap\">{}</span>", esc(&e.detail)),
            ]
        })
        .collect();
    let mut content = String::from("<h1>Failover timeline</h1>");
    content.push_str(&table(
        "timeline",
        &["Time", "What", "Subject", "Detail"],
        &rows,
    ));
    Ok(View {
        title: "Failover".into(),
        content,
        live: Some("/live/failover".into()),
    })
}

/// The entries from clusters, bindings and events, newest first (times are RFC 3339 UTC, so they sort as
/// text).
pub fn timeline(clusters: &[Value], bindings: &[Value], events: &[Value]) -> Vec<Entry> {
    let mut entries = Vec::new();
    for cluster in clusters {
        let name = api::text(cluster, "/metadata/name");
        for taint in cluster
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            entries.push(Entry {
                time: api::text(taint, "/timeAdded").to_string(),
                what: "Taint".into(),
                subject: format!("cluster/{name}"),
                detail: format!(
                    "{}{}:{}",
                    api::text(taint, "/key"),
                    match api::text(taint, "/value") {
                        "" => String::new(),
                        v => format!("={v}"),
                    },
                    api::text(taint, "/effect")
                ),
            });
        }
    }
    for binding in bindings {
        let subject = format!(
            "{}/{}",
            api::text(binding, "/metadata/namespace"),
            api::text(binding, "/metadata/name")
        );
        let tasks = binding
            .pointer("/spec/gracefulEvictionTasks")
            .and_then(Value::as_array);
        for task in tasks.into_iter().flatten() {
            entries.push(Entry {
                time: api::text(task, "/creationTimestamp").to_string(),
                what: "GracefulEviction".into(),
                subject: subject.clone(),
                detail: format!(
                    "from {} ({}{}{})",
                    api::text(task, "/fromCluster"),
                    api::text(task, "/reason"),
                    match api::text(task, "/producer") {
                        "" => String::new(),
                        p => format!(", by {p}"),
                    },
                    match api::text(task, "/message") {
                        "" => String::new(),
                        m => format!(": {m}"),
                    }
                ),
            });
        }
    }
    for event in events {
        let reason = api::text(event, "/reason");
        if REASONS.iter().any(|r| reason.contains(r)) {
            entries.push(Entry {
                time: event_time(event).to_string(),
                what: reason.to_string(),
                subject: format!(
                    "{}/{}",
                    api::text(event, "/involvedObject/kind"),
                    api::text(event, "/involvedObject/name")
                ),
                detail: api::text(event, "/message").to_string(),
            });
        }
    }
    entries.sort_by(|a, b| b.time.cmp(&a.time));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn taints_evictions_and_events_interleave_newest_first() {
        let clusters = [json!({"metadata": {"name": "m1"}, "spec": {"taints": [
            {"key": "cluster.karmada.io/not-ready", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:02Z"}]}})];
        let bindings = [
            json!({"metadata": {"namespace": "d", "name": "web"}, "spec": {"gracefulEvictionTasks": [
            {"fromCluster": "m1", "reason": "TaintUntolerated", "creationTimestamp": "2026-01-01T00:00:03Z"}]}}),
        ];
        let events = [
            json!({"reason": "EvictWorkloadFromClusterSucceed", "lastTimestamp": "2026-01-01T00:00:04Z",
                   "involvedObject": {"kind": "Deployment", "name": "web"}, "message": "ok"}),
            json!({"reason": "ScheduleBindingSucceed", "lastTimestamp": "2026-01-01T00:00:05Z"}),
        ];
        let entries = timeline(&clusters, &bindings, &events);
        let whats: Vec<&str> = entries.iter().map(|e| e.what.as_str()).collect();
        assert_eq!(
            whats,
            [
                "EvictWorkloadFromClusterSucceed",
                "GracefulEviction",
                "Taint"
            ]
        );
        assert_eq!(entries[1].detail, "from m1 (TaintUntolerated)");
        assert_eq!(entries[2].detail, "cluster.karmada.io/not-ready:NoExecute");
    }
}
