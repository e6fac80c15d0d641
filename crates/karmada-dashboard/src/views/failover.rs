//! The failover timeline: cluster taints (with the time they were added), the eviction-budget windows the
//! failover controllers record on Clusters, graceful eviction tasks on the bindings, and the events about
//! evictions, rescheduling and cluster health, newest first.

use jiff::{SignedDuration, Timestamp};
use karmada_controllers::failover::{
    ANNOTATION_EVICTION_WINDOW, DEFAULT_EVICTION_BUDGET_CLUSTERS, DEFAULT_EVICTION_BUDGET_INTERVAL,
};
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
    let entries = timeline(&clusters, &bindings, &events, Timestamp::now());
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

/// RFC 3339 to the second, as the API's other times on the timeline.
fn seconds(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The eviction-budget window recorded on `cluster`, as an entry: when it opened, and whether it is still
/// open at `now` (the controllers' default interval; evictions from clusters beyond the budget wait for it).
pub fn budget_window(cluster: &Value, now: Timestamp) -> Option<Entry> {
    let opened_text = cluster
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION_EVICTION_WINDOW))
        .and_then(Value::as_str)?;
    let name = api::text(cluster, "/metadata/name");
    let opened: Option<Timestamp> = opened_text.parse().ok();
    let interval = SignedDuration::try_from(DEFAULT_EVICTION_BUDGET_INTERVAL).ok();
    let closes = opened
        .zip(interval)
        .and_then(|(o, i)| o.checked_add(i).ok());
    let detail = match closes {
        Some(closes) => {
            let state = if now < closes { "open" } else { "closed" };
            format!(
                "eviction-budget window {state}: evictions from this cluster admitted {} to {} (at most \
                 {DEFAULT_EVICTION_BUDGET_CLUSTERS} clusters per {}s; other clusters' evictions wait)",
                seconds(opened.unwrap_or(closes)),
                seconds(closes),
                DEFAULT_EVICTION_BUDGET_INTERVAL.as_secs()
            )
        }
        None => format!("eviction-budget window opened {opened_text} (unreadable time)"),
    };
    // The entry sorts by the window's opening, like every other entry by its start.
    Some(Entry {
        time: opened
            .map(seconds)
            .unwrap_or_else(|| opened_text.to_string()),
        what: "EvictionBudgetWindow".into(),
        subject: format!("cluster/{name}"),
        detail,
    })
}

/// The entries from clusters, bindings and events, newest first (times are RFC 3339 UTC, so they sort as
/// text); `now` decides which budget windows are still open.
pub fn timeline(
    clusters: &[Value],
    bindings: &[Value],
    events: &[Value],
    now: Timestamp,
) -> Vec<Entry> {
    let mut entries = Vec::new();
    for cluster in clusters {
        let name = api::text(cluster, "/metadata/name");
        entries.extend(budget_window(cluster, now));
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
                detail: crate::views::overview::taint_text(taint),
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn taints_evictions_and_events_interleave_newest_first() {
        let clusters = [json!({"metadata": {"name": "m1",
            "annotations": {"failover.karmada.io/eviction-window-start": "2026-01-01T00:00:02.5Z"}},
            "spec": {"taints": [
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
        let now: Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        let entries = timeline(&clusters, &bindings, &events, now);
        let whats: Vec<&str> = entries.iter().map(|e| e.what.as_str()).collect();
        assert_eq!(
            whats,
            [
                "EvictWorkloadFromClusterSucceed",
                "GracefulEviction",
                "EvictionBudgetWindow",
                "Taint"
            ]
        );
        assert_eq!(entries[1].detail, "from m1 (TaintUntolerated)");
        let window = &entries[2];
        assert!(
            window
                .detail
                .starts_with("eviction-budget window open: evictions from this cluster admitted"),
            "{}",
            window.detail
        );
        assert!(
            window.detail.contains("to 2026-01-01T00:05:02Z"),
            "{}",
            window.detail
        );
        assert_eq!(window.subject, "cluster/m1");
        assert_eq!(entries[3].detail, "cluster.karmada.io/not-ready:NoExecute");
    }

    #[test]
    fn budget_windows_close_after_the_interval() {
        let cluster = json!({"metadata": {"name": "m2",
            "annotations": {"failover.karmada.io/eviction-window-start": "2026-01-01T00:00:00Z"}}});
        let at = |t: &str| budget_window(&cluster, t.parse().unwrap()).unwrap().detail;
        assert!(at("2026-01-01T00:04:59Z").contains("window open"));
        assert!(at("2026-01-01T00:05:00Z").contains("window closed"));
        assert!(
            budget_window(&json!({"metadata": {"name": "m3"}}), Timestamp::UNIX_EPOCH).is_none()
        );
    }
}
