//! Events expire: kube-apiserver stores each Event with a lease of `--event-ttl` (default one
//! hour) renewed by every write, so an Event nobody has touched for that long disappears. Here a
//! sweep deletes, every [`sweep_period`], each stored Event whose last observation (the newest
//! of `lastTimestamp`, `series.lastObservedTime`, `eventTime` and `metadata.creationTimestamp`)
//! is older than the TTL. A deletion is conditional on the revision the sweep read, so an Event
//! recorded again meanwhile stays. Watchers see the expiry as an ordinary DELETED event.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde::Deserialize;
use store::{RangeRequest, StoreError};

use crate::server::ApiServer;

/// Where core/v1 Events are stored (the embedded store also acknowledges them without a sync of
/// their own: see `RedbOptions::relaxed_prefixes`).
pub const EVENTS_PREFIX: &str = "/registry/core/events/";

/// kube-apiserver's `--event-ttl` default.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(3600);

/// Events read per store page during a sweep.
const PAGE: usize = 500;

/// How often a sweep runs for `ttl`: a tenth of it, between one second and one minute, so an
/// Event outlives its TTL by at most that.
pub fn sweep_period(ttl: Duration) -> Duration {
    (ttl / 10).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

/// Sweeps every [`sweep_period`] until the server shuts down (a failed sweep is logged and tried again then).
pub async fn run(server: Arc<ApiServer>, ttl: Duration) {
    crate::background::run_until_shutdown(
        &server,
        "event TTL sweep failed; retrying next period",
        sweep_period(ttl),
        || async {
            let expired = sweep(&server, Timestamp::now(), ttl)
                .await
                .map_err(crate::storage::store_error)?;
            if expired > 0 {
                tracing::debug!(expired, "expired events deleted");
            }
            Ok(())
        },
    )
    .await;
}

/// Deletes every stored Event last observed more than `ttl` before `now`; returns how many.
pub async fn sweep(server: &ApiServer, now: Timestamp, ttl: Duration) -> Result<usize, StoreError> {
    let cutoff = now
        .checked_sub(jiff::SignedDuration::try_from(ttl).unwrap_or(jiff::SignedDuration::MAX))
        .unwrap_or(Timestamp::MIN);
    let mut expired = 0;
    let mut start_after = None;
    loop {
        let page = server
            .store
            .range(RangeRequest {
                prefix: EVENTS_PREFIX.to_string(),
                start_after: start_after.take(),
                limit: PAGE,
                revision: None,
            })
            .await?;
        for kv in &page.kvs {
            if last_observed(&kv.value).is_none_or(|seen| seen >= cutoff) {
                continue;
            }
            match server.store.delete(&kv.key, Some(kv.mod_revision)).await {
                Ok(_) => expired += 1,
                // Recorded again, or deleted by someone else, since the page was read.
                Err(StoreError::Conflict { .. } | StoreError::NotFound(_)) => {}
                Err(error) => return Err(error),
            }
        }
        match page.kvs.last() {
            Some(last) if page.more => start_after = Some(last.key.clone()),
            _ => return Ok(expired),
        }
    }
}

/// The newest time a stored Event says it was observed; `None` if it carries no time at all
/// (such an Event is kept: nothing says how old it is).
pub fn last_observed(stored: &[u8]) -> Option<Timestamp> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Times {
        last_timestamp: Option<String>,
        event_time: Option<String>,
        series: Option<Series>,
        metadata: Option<Metadata>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Series {
        last_observed_time: Option<String>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Metadata {
        creation_timestamp: Option<String>,
    }
    let times: Times = serde_json::from_slice(stored).ok()?;
    [
        times.last_timestamp,
        times.event_time,
        times.series.and_then(|s| s.last_observed_time),
        times.metadata.and_then(|m| m.creation_timestamp),
    ]
    .into_iter()
    .flatten()
    .filter_map(|text| text.parse::<Timestamp>().ok())
    .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_observation_counts() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                r#"{"metadata":{"creationTimestamp":"2026-12-07T01:00:00Z"},"lastTimestamp":"2026-12-07T02:00:00Z"}"#,
                Some("2026-12-07T02:00:00Z"),
            ),
            (
                r#"{"metadata":{"creationTimestamp":"2026-12-07T01:00:00Z"},"eventTime":"2026-12-07T01:30:00.000001Z","series":{"count":3,"lastObservedTime":"2026-12-07T03:00:00.000000Z"}}"#,
                Some("2026-12-07T03:00:00Z"),
            ),
            (
                r#"{"metadata":{"creationTimestamp":"2026-12-07T01:00:00Z"},"lastTimestamp":null}"#,
                Some("2026-12-07T01:00:00Z"),
            ),
            (r#"{"metadata":{"name":"x"}}"#, None),
            (r#"{"lastTimestamp":"not a time"}"#, None),
            ("not json", None),
        ];
        for (stored, want) in cases {
            let want = want.map(|w| w.parse::<Timestamp>().expect("test time"));
            assert_eq!(last_observed(stored.as_bytes()), want, "{stored}");
        }
    }

    #[test]
    fn sweeps_run_at_a_tenth_of_the_ttl_within_bounds() {
        assert_eq!(
            sweep_period(DEFAULT_EVENT_TTL),
            Duration::from_secs(60),
            "an hour's TTL sweeps every minute"
        );
        assert_eq!(
            sweep_period(Duration::from_secs(100)),
            Duration::from_secs(10)
        );
        assert_eq!(sweep_period(Duration::from_secs(2)), Duration::from_secs(1));
    }
}
