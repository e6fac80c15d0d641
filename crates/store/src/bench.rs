//! Raw commit-rate measurement: many concurrent clients creating fresh keys as fast as the
//! store acknowledges them. Used by the project's benchmark command; measurement code, so it
//! reads the wall clock.
//!
//! Invariant: every create goes to a key no earlier run used (keys carry the store's revision
//! at the start), so the run measures successful durable commits, not `AlreadyExists` errors.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::task::JoinSet;

use crate::Store;

/// Outcome of [`raw_create_rate`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BenchResult {
    /// Acknowledged creates per second of wall time.
    pub ops_per_sec: f64,
    /// Median latency of one successful create.
    pub p50: Duration,
    /// 99th-percentile latency of one successful create.
    pub p99: Duration,
    /// Successful creates.
    pub total: usize,
    /// Creates that failed (they are not in the rate or the latencies).
    pub errors: usize,
}

/// Runs `total` creates of `value_size`-byte values from `clients` concurrent tasks. Failures
/// do not stop the run; they are counted in [`BenchResult::errors`].
pub async fn raw_create_rate(
    store: Arc<dyn Store>,
    clients: usize,
    total: usize,
    value_size: usize,
) -> BenchResult {
    let clients = clients.max(1);
    let run = store.current_revision().await.unwrap_or(0);
    let value = Bytes::from(vec![b'x'; value_size]);
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for client in 0..clients {
        let share = total / clients + usize::from(client < total % clients);
        let store = store.clone();
        let value = value.clone();
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(share);
            let mut errors = 0;
            for i in 0..share {
                let key = format!("/bench/{run}/{client}/{i}");
                let begun = Instant::now();
                match store.create(&key, value.clone()).await {
                    Ok(_) => latencies.push(begun.elapsed()),
                    Err(error) => {
                        errors += 1;
                        tracing::debug!(%error, key, "bench create failed");
                    }
                }
            }
            (latencies, errors)
        });
    }
    let mut latencies = Vec::with_capacity(total);
    let mut errors = 0;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((client_latencies, client_errors)) => {
                latencies.extend(client_latencies);
                errors += client_errors;
            }
            Err(error) => tracing::warn!(%error, "bench client task failed"),
        }
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    BenchResult {
        ops_per_sec: latencies.len() as f64 / elapsed.as_secs_f64().max(f64::MIN_POSITIVE),
        p50: percentile(&latencies, 50),
        p99: percentile(&latencies, 99),
        total: latencies.len(),
        // A client task that died took its whole share with it.
        errors: errors + total.saturating_sub(latencies.len() + errors),
    }
}

/// The `pct`-th percentile of sorted samples (nearest rank); zero when there are none.
fn percentile(sorted: &[Duration], pct: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (sorted.len() * pct).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 50), Duration::from_millis(50));
        assert_eq!(percentile(&samples, 99), Duration::from_millis(99));
        assert_eq!(percentile(&samples[..1], 99), Duration::from_millis(1));
        assert_eq!(percentile(&[], 50), Duration::ZERO);
    }
}
