//! From the metrics' proposal to the replicas to set: kube's HPA normalization as Karmada's
//! FederatedHPA runs it. Without `behavior`: the highest recommendation of the downscale
//! stabilization window, bounded by min, max and a scale-up limit of max(2 × current, 4). With
//! `behavior`: the up and down stabilization windows, then the rate policies over the scale events
//! of each policy's period. The history is the controller's memory per FederatedHPA, passed in.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::autoscaling::v2::{
    HPAScalingPolicy, HPAScalingRules, HorizontalPodAutoscalerBehavior,
};

use super::replica_calculator::ceil_replicas;

/// A recommendation and when it was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recommendation {
    pub replicas: i32,
    pub at: Timestamp,
}

/// A scale by `change` replicas (up or down, always positive) at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaleEvent {
    pub change: i32,
    pub at: Timestamp,
    pub outdated: bool,
}

/// What the controller remembers of one FederatedHPA between rounds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    pub recommendations: Vec<Recommendation>,
    pub scale_up_events: Vec<ScaleEvent>,
    pub scale_down_events: Vec<ScaleEvent>,
}

/// A condition the normalization sets: `(reason, message)`.
pub type Note = (&'static str, &'static str);

/// The outcome: the replicas, the AbleToScale note and the ScalingLimited note (limited or not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Normalized {
    pub replicas: i32,
    pub able_to_scale: Note,
    pub limited: bool,
    pub scaling_limited: Note,
}

const READY_FOR_NEW_SCALE: Note = ("ReadyForNewScale", "recommended size matches current size");
const SCALE_DOWN_STABILIZED: Note = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
);
const SCALE_UP_STABILIZED: Note = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
);
const WITHIN_RANGE: Note = (
    "DesiredWithinRange",
    "the desired count is within the acceptable range",
);
const SCALE_UP_LIMIT: Note = (
    "ScaleUpLimit",
    "the desired replica count is increasing faster than the maximum scale rate",
);
const TOO_MANY: Note = (
    "TooManyReplicas",
    "the desired replica count is more than the maximum replica count",
);
const SCALE_DOWN_LIMIT: Note = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
);
const TOO_FEW: Note = (
    "TooFewReplicas",
    "the desired replica count is less than the minimum replica count",
);

/// The bounds and the current size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub current: i32,
    pub min: i32,
    pub max: i32,
}

/// Karmada's default rules: scale up by max(4 pods, 100 %) per 15 s with no stabilization; scale
/// down by 100 % per 15 s, stabilized over the controller's window.
pub fn effective_behavior(
    behavior: &HorizontalPodAutoscalerBehavior,
    downscale_window: SignedDuration,
) -> (HPAScalingRules, HPAScalingRules) {
    let policy = |type_: &str, value: i32| HPAScalingPolicy {
        type_: type_.to_string(),
        value,
        period_seconds: 15,
    };
    let fill = |given: Option<&HPAScalingRules>, defaults: HPAScalingRules| {
        let Some(given) = given else { return defaults };
        HPAScalingRules {
            select_policy: given.select_policy.clone().or(defaults.select_policy),
            stabilization_window_seconds: given
                .stabilization_window_seconds
                .or(defaults.stabilization_window_seconds),
            policies: given.policies.clone().or(defaults.policies),
            ..Default::default()
        }
    };
    let up = fill(
        behavior.scale_up.as_ref(),
        HPAScalingRules {
            select_policy: Some("Max".into()),
            stabilization_window_seconds: Some(0),
            policies: Some(vec![policy("Pods", 4), policy("Percent", 100)]),
            ..Default::default()
        },
    );
    let down = fill(
        behavior.scale_down.as_ref(),
        HPAScalingRules {
            select_policy: Some("Max".into()),
            stabilization_window_seconds: Some(
                i32::try_from(downscale_window.as_secs()).unwrap_or(i32::MAX),
            ),
            policies: Some(vec![policy("Percent", 100)]),
            ..Default::default()
        },
    );
    (up, down)
}

/// Records the first recommendation (the current size) of a FederatedHPA seen for the first time.
pub fn record_initial(history: &mut History, current: i32, now: Timestamp) {
    if history.recommendations.is_empty() {
        history.recommendations.push(Recommendation {
            replicas: current,
            at: now,
        });
    }
}

/// Replaces the oldest expired sample (kube reuses the last one found) or appends.
fn remember(history: &mut History, expired: Option<usize>, replicas: i32, now: Timestamp) {
    let entry = Recommendation { replicas, at: now };
    match expired {
        Some(i) => history.recommendations[i] = entry,
        None => history.recommendations.push(entry),
    }
}

/// Without `behavior`.
pub fn without_behavior(
    history: &mut History,
    bounds: Bounds,
    proposed: i32,
    downscale_window: SignedDuration,
    now: Timestamp,
) -> Normalized {
    let cutoff = now - downscale_window;
    let mut stabilized = proposed;
    let mut expired = None;
    for (i, rec) in history.recommendations.iter().enumerate() {
        if rec.at < cutoff {
            expired = Some(i);
        } else if rec.replicas > stabilized {
            stabilized = rec.replicas;
        }
    }
    remember(history, expired, proposed, now);
    let able_to_scale = if stabilized != proposed {
        SCALE_DOWN_STABILIZED
    } else {
        READY_FOR_NEW_SCALE
    };
    let scale_up_limit = (bounds.current.saturating_mul(2)).max(4);
    let (maximum, above) = if bounds.max > scale_up_limit {
        (scale_up_limit, SCALE_UP_LIMIT)
    } else {
        (bounds.max, TOO_MANY)
    };
    let (replicas, note) = if stabilized < bounds.min {
        (bounds.min, TOO_FEW)
    } else if stabilized > maximum {
        (maximum, above)
    } else {
        (stabilized, WITHIN_RANGE)
    };
    Normalized {
        replicas,
        able_to_scale,
        limited: replicas != stabilized,
        scaling_limited: note,
    }
}

/// With `behavior` (its rules already filled by [`effective_behavior`]).
pub fn with_behavior(
    history: &mut History,
    bounds: Bounds,
    proposed: i32,
    (up, down): (&HPAScalingRules, &HPAScalingRules),
    now: Timestamp,
) -> Normalized {
    let window = |rules: &HPAScalingRules| {
        SignedDuration::from_secs(i64::from(rules.stabilization_window_seconds.unwrap_or(0)))
    };
    let up_cutoff = now - window(up);
    let down_cutoff = now - window(down);
    let (mut up_rec, mut down_rec) = (proposed, proposed);
    let mut expired = None;
    for (i, rec) in history.recommendations.iter().enumerate() {
        if rec.at > up_cutoff {
            up_rec = up_rec.min(rec.replicas);
        }
        if rec.at > down_cutoff {
            down_rec = down_rec.max(rec.replicas);
        }
        if rec.at < up_cutoff && rec.at < down_cutoff {
            expired = Some(i);
        }
    }
    let stabilized = bounds.current.max(up_rec).min(down_rec);
    remember(history, expired, proposed, now);
    let able_to_scale = if stabilized == proposed {
        READY_FOR_NEW_SCALE
    } else if proposed >= bounds.current {
        SCALE_UP_STABILIZED
    } else {
        SCALE_DOWN_STABILIZED
    };
    let (replicas, note) = rate_limited(history, bounds, stabilized, up, down, now);
    Normalized {
        replicas,
        able_to_scale,
        limited: replicas != stabilized,
        scaling_limited: note,
    }
}

/// Replicas changed by the events within the last `period_seconds`.
fn changed_within(events: &[ScaleEvent], period_seconds: i32, now: Timestamp) -> i32 {
    let cutoff = now - SignedDuration::from_secs(i64::from(period_seconds));
    events
        .iter()
        .filter(|e| e.at > cutoff)
        .fold(0i32, |sum, e| sum.saturating_add(e.change))
}

fn rate_limited(
    history: &History,
    bounds: Bounds,
    desired: i32,
    up: &HPAScalingRules,
    down: &HPAScalingRules,
    now: Timestamp,
) -> (i32, Note) {
    let current = bounds.current;
    let period_start = |policy: &HPAScalingPolicy| {
        current - changed_within(&history.scale_up_events, policy.period_seconds, now)
            + changed_within(&history.scale_down_events, policy.period_seconds, now)
    };
    let policies = |rules: &HPAScalingRules| rules.policies.clone().unwrap_or_default();
    if desired > current {
        let select = up.select_policy.as_deref().unwrap_or("Max");
        let limit = if select == "Disabled" {
            current
        } else {
            let proposals = policies(up).into_iter().map(|p| {
                let start = period_start(&p);
                match p.type_.as_str() {
                    "Pods" => start.saturating_add(p.value),
                    _ => ceil_replicas(f64::from(start) * (1.0 + f64::from(p.value) / 100.0)),
                }
            });
            let picked = if select == "Min" {
                proposals.min()
            } else {
                proposals.max()
            };
            picked.unwrap_or(i32::MIN).max(current)
        };
        let (maximum, note) = if bounds.max > limit {
            (limit, SCALE_UP_LIMIT)
        } else {
            (bounds.max, TOO_MANY)
        };
        if desired > maximum {
            return (maximum, note);
        }
    } else if desired < current {
        let select = down.select_policy.as_deref().unwrap_or("Max");
        let limit = if select == "Disabled" {
            current
        } else {
            let proposals = policies(down).into_iter().map(|p| {
                let start = period_start(&p);
                match p.type_.as_str() {
                    "Pods" => start.saturating_sub(p.value),
                    _ => (f64::from(start) * (1.0 - f64::from(p.value) / 100.0)) as i32,
                }
            });
            let picked = if select == "Min" {
                proposals.max()
            } else {
                proposals.min()
            };
            picked.unwrap_or(i32::MAX).min(current)
        };
        let (minimum, note) = if bounds.min < limit {
            (limit, SCALE_DOWN_LIMIT)
        } else {
            (bounds.min, TOO_FEW)
        };
        if desired < minimum {
            return (minimum, note);
        }
    }
    (desired, WITHIN_RANGE)
}

/// Records a scale from `previous` to `new` (kube keeps events only when a behavior is set),
/// reusing an event older than the rules' longest period.
pub fn record_scale(
    history: &mut History,
    (up, down): (&HPAScalingRules, &HPAScalingRules),
    previous: i32,
    new: i32,
    now: Timestamp,
) {
    let (events, rules, change) = if new > previous {
        (&mut history.scale_up_events, up, new - previous)
    } else {
        (&mut history.scale_down_events, down, previous - new)
    };
    let longest = rules
        .policies
        .iter()
        .flatten()
        .map(|p| p.period_seconds)
        .max()
        .unwrap_or(0);
    let cutoff = now - SignedDuration::from_secs(i64::from(longest));
    for event in events.iter_mut() {
        if event.at < cutoff {
            event.outdated = true;
        }
    }
    let event = ScaleEvent {
        change,
        at: now,
        outdated: false,
    };
    match events.iter().rposition(|e| e.outdated) {
        Some(i) => events[i] = event,
        None => events.push(event),
    }
}
