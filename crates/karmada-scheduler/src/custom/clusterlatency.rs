//! ClusterLatency — the seed's custom plugin, written as a user would write one against the public plugin API
//! (nothing here reaches into crate internals).
//!
//! Filter: rejects clusters whose API latency exceeds `thresholdMilliseconds` (default 100). Score:
//! `1000 / latency-ms`, clamped to the framework's 0..=100 (so every latency up to 10 ms scores 100).
//!
//! Where the latency comes from: the Cluster annotation `cluster.karmada.io/api-latency`, which the cluster
//! status controller writes from the time its health probe of the member takes (rewritten when it moves by half
//! or more, which requeues bindings in the live scheduler). An annotation rather than a status field because
//! Karmada's ClusterStatus has no latency field and a probe or operator can set an annotation without a schema
//! change. Accepted values: a number of milliseconds (`"35"`, `"12.5"`) or a
//! duration with `ms` or `s` (`"35ms"`, `"0.2s"`). A cluster without the annotation, or with an unreadable
//! value, is rejected with a detail saying so — a latency-sensitive profile should not guess.

use serde::Deserialize;

use crate::framework::{
    MAX_CLUSTER_SCORE, Plugin, Registry, Rejection, SchedulingContext, Verdict,
};
use crate::snapshot::ClusterSnapshot;

pub const NAME: &str = "ClusterLatency";
/// The Cluster annotation carrying the measured API latency.
pub const ANNOTATION_API_LATENCY: &str = "cluster.karmada.io/api-latency";

/// `ClusterLatencyArgs`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterLatencyArgs {
    /// Clusters slower than this are filtered out.
    #[serde(default = "default_threshold")]
    pub threshold_milliseconds: f64,
}

fn default_threshold() -> f64 {
    100.0
}

impl Default for ClusterLatencyArgs {
    fn default() -> Self {
        Self {
            threshold_milliseconds: default_threshold(),
        }
    }
}

/// See the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClusterLatency {
    args: ClusterLatencyArgs,
}

impl ClusterLatency {
    pub fn new(args: ClusterLatencyArgs) -> Result<Self, String> {
        if !(args.threshold_milliseconds.is_finite() && args.threshold_milliseconds > 0.0) {
            return Err(format!(
                "thresholdMilliseconds must be a positive number, got {}",
                args.threshold_milliseconds
            ));
        }
        Ok(Self { args })
    }

    /// Registers the plugin under its name.
    pub fn register(registry: &mut Registry) -> Result<(), crate::error::InputError> {
        registry.register_with_args(NAME, ClusterLatency::new)
    }
}

/// Reads the annotation value into milliseconds.
pub fn parse_latency_ms(value: &str) -> Option<f64> {
    let value = value.trim();
    let (number, scale) = if let Some(ms) = value.strip_suffix("ms") {
        (ms, 1.0)
    } else if let Some(seconds) = value.strip_suffix('s') {
        (seconds, 1000.0)
    } else {
        (value, 1.0)
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0)
        .map(|n| n * scale)
}

fn latency(cluster: &ClusterSnapshot) -> Result<f64, String> {
    let raw = cluster
        .annotation(ANNOTATION_API_LATENCY)
        .ok_or_else(|| format!("annotation {ANNOTATION_API_LATENCY} is missing"))?;
    parse_latency_ms(raw).ok_or_else(|| format!("annotation {ANNOTATION_API_LATENCY}={raw:?} is not a latency (accepted: 35, 35ms, 0.2s)"))
}

impl Plugin for ClusterLatency {
    fn name(&self) -> &str {
        NAME
    }

    fn filter(
        &self,
        _context: &SchedulingContext<'_>,
        cluster: &ClusterSnapshot,
    ) -> Option<Verdict> {
        let reason = "cluster(s) exceeded the API latency threshold";
        Some(match latency(cluster) {
            Err(problem) => Verdict::Reject(Rejection::new(reason).with_detail(problem)),
            Ok(ms) if ms > self.args.threshold_milliseconds => {
                Verdict::Reject(Rejection::new(reason).with_detail(format!(
                    "latency {ms}ms > threshold {}ms",
                    self.args.threshold_milliseconds
                )))
            }
            Ok(_) => Verdict::Pass,
        })
    }

    fn score(&self, _context: &SchedulingContext<'_>, cluster: &ClusterSnapshot) -> Option<i64> {
        let ms = latency(cluster).ok()?;
        if ms <= 0.0 {
            return Some(MAX_CLUSTER_SCORE);
        }
        // Bounded to 0..=100 before the cast, so the conversion cannot overflow.
        Some((1000.0 / ms).floor().clamp(0.0, MAX_CLUSTER_SCORE as f64) as i64)
    }
}
