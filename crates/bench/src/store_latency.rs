//! How the API servers' stores answered over a stretch of a benchmark, from their
//! `etcd_request_duration_seconds` histograms: every write (create, update, delete) waits for its
//! commit to reach the disk, so a slow fsync shows here before anywhere else. Printed beside the
//! latency figures so a tail can be told apart from the control plane's own work.

use std::collections::BTreeMap;

use kube::Client;

use crate::api_requests::metrics_text;

/// Cumulative bucket counts of the store writes' latency histogram, summed over resources:
/// upper bound in seconds → writes at or under it.
#[derive(Default, Clone)]
pub struct StoreWrites(BTreeMap<u64, f64>);

const WRITE_OPERATIONS: [&str; 3] = ["create", "update", "delete"];

/// Where the slow tail starts: writes over this many seconds are counted apart.
const SLOW_SECONDS: f64 = 0.1;

impl StoreWrites {
    /// Reads one API server's histogram.
    pub async fn read(client: &Client) -> anyhow::Result<Self> {
        Ok(Self::parse(&metrics_text(client).await?))
    }

    /// The sum over several API servers (the members' stores are separate from the control plane's).
    pub async fn read_all(clients: &[&Client]) -> anyhow::Result<Self> {
        let mut total = Self::default();
        for client in clients {
            total.add(&Self::read(client).await?, 1.0);
        }
        Ok(total)
    }

    fn parse(text: &str) -> Self {
        let mut buckets = Self::default();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("etcd_request_duration_seconds_bucket{") else {
                continue;
            };
            let Some((labels, value)) = rest.rsplit_once("} ") else {
                continue;
            };
            let is_write = WRITE_OPERATIONS
                .iter()
                .any(|op| labels.contains(&format!("operation=\"{op}\"")));
            let bound = labels
                .split(',')
                .find_map(|label| label.strip_prefix("le=\""))
                .and_then(|le| le.trim_end_matches('"').parse::<f64>().ok());
            let (Some(bound), Ok(count), true) = (bound, value.trim().parse::<f64>(), is_write)
            else {
                continue;
            };
            *buckets.0.entry(micros(bound)).or_default() += count;
        }
        buckets
    }

    fn add(&mut self, other: &StoreWrites, sign: f64) {
        for (bound, count) in &other.0 {
            *self.0.entry(*bound).or_default() += sign * count;
        }
    }

    /// What was written between `before` and `self`.
    pub fn since(&self, before: &StoreWrites) -> StoreWrites {
        let mut delta = self.clone();
        delta.add(before, -1.0);
        delta
    }

    pub fn total(&self) -> f64 {
        self.0.values().copied().fold(0.0, f64::max)
    }

    /// One line for a report's note: how many writes, how many over 100 ms, and the bucket the
    /// slowest fell in.
    pub fn summary(&self) -> String {
        let total = self.total();
        if total <= 0.0 {
            return "no store writes".to_string();
        }
        let fast = self
            .0
            .iter()
            .filter(|(bound, _)| **bound <= micros(SLOW_SECONDS))
            .map(|(_, count)| *count)
            .fold(0.0, f64::max);
        let slowest = self
            .0
            .iter()
            .find(|(_, count)| **count >= total)
            .map(|(bound, _)| *bound);
        let slowest = match slowest {
            Some(bound) if bound == u64::MAX => "over the last bucket".to_string(),
            Some(bound) => format!("≤ {} ms", bound as f64 / 1000.0),
            None => "none".to_string(),
        };
        format!(
            "store writes {total:.0}, {:.0} over {} ms, slowest {slowest}",
            total - fast,
            SLOW_SECONDS * 1000.0
        )
    }
}

/// A bucket bound as whole microseconds (`+Inf` as `u64::MAX`), so bounds sort and compare exactly.
fn micros(seconds: f64) -> u64 {
    if seconds.is_finite() {
        (seconds * 1_000_000.0).round() as u64
    } else {
        u64::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "\
etcd_request_duration_seconds_bucket{operation=\"create\",type=\"pods\",le=\"0.005\"} 10
etcd_request_duration_seconds_bucket{operation=\"create\",type=\"pods\",le=\"0.1\"} 10
etcd_request_duration_seconds_bucket{operation=\"create\",type=\"pods\",le=\"0.2\"} 10
etcd_request_duration_seconds_bucket{operation=\"create\",type=\"pods\",le=\"+Inf\"} 10
etcd_request_duration_seconds_bucket{operation=\"get\",type=\"pods\",le=\"0.005\"} 3
";

    const AFTER: &str = "\
etcd_request_duration_seconds_bucket{operation=\"create\",type=\"pods\",le=\"0.005\"} 15
etcd_request_duration_seconds_bucket{operation=\"create\",type=\"pods\",le=\"0.1\"} 17
etcd_request_duration_seconds_bucket{operation=\"create\",type=\"pods\",le=\"0.2\"} 18
etcd_request_duration_seconds_bucket{operation=\"create\",type=\"pods\",le=\"+Inf\"} 18
etcd_request_duration_seconds_bucket{operation=\"update\",type=\"works.work.karmada.io\",le=\"0.005\"} 2
etcd_request_duration_seconds_bucket{operation=\"update\",type=\"works.work.karmada.io\",le=\"0.1\"} 2
etcd_request_duration_seconds_bucket{operation=\"update\",type=\"works.work.karmada.io\",le=\"0.2\"} 2
etcd_request_duration_seconds_bucket{operation=\"update\",type=\"works.work.karmada.io\",le=\"+Inf\"} 2
etcd_request_duration_seconds_bucket{operation=\"get\",type=\"pods\",le=\"0.005\"} 900
";

    #[test]
    fn counts_the_writes_between_two_reads_and_their_slow_tail() {
        let delta = StoreWrites::parse(AFTER).since(&StoreWrites::parse(BEFORE));
        // 8 creates and 2 updates; reads are left out. One create took over 100 ms, none over 200.
        assert_eq!(
            delta.summary(),
            "store writes 10, 1 over 100 ms, slowest ≤ 200 ms"
        );
    }

    #[test]
    fn no_writes_reads_as_none() {
        let same = StoreWrites::parse(BEFORE);
        assert_eq!(same.since(&same).summary(), "no store writes");
    }
}
