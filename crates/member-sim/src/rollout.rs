//! Rolling-update arithmetic, separated from JSON so it can be property-tested.
//!
//! `maxSurge` rounds percentages up and `maxUnavailable` rounds down, both against
//! `spec.replicas`; both resolving to 0 is rejected, as API validation does. One step either
//! resizes the new ReplicaSet (then stops, like the Deployment controller) or scales old
//! ReplicaSets down: first their unavailable replicas, then, oldest first, as many available
//! ones as keep `replicas - maxUnavailable` available.

use serde_json::Value;

/// Resolved rolling-update bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RollingParams {
    pub max_surge: i64,
    pub max_unavailable: i64,
}

/// An IntOrString `value` (default `default`) resolved against `total`.
pub fn int_or_percent(
    value: Option<&Value>,
    default: &str,
    total: i64,
    round_up: bool,
    field: &str,
) -> Result<i64, String> {
    let invalid = |shown: &dyn std::fmt::Display| {
        format!("{field}: Invalid value: {shown}: must be an integer or percentage (e.g. '5%')")
    };
    let text = match value {
        None | Some(Value::Null) => default.to_string(),
        Some(Value::Number(number)) => {
            let n = number.as_i64().ok_or_else(|| invalid(number))?;
            if n < 0 {
                return Err(format!(
                    "{field}: Invalid value: {n}: must be greater than or equal to 0"
                ));
            }
            return Ok(n);
        }
        Some(Value::String(text)) => text.clone(),
        Some(other) => return Err(invalid(other)),
    };
    if let Ok(n) = text.parse::<i64>()
        && n >= 0
    {
        return Ok(n);
    }
    let percent: i64 = text
        .strip_suffix('%')
        .and_then(|p| p.parse().ok())
        .filter(|p| *p >= 0)
        .ok_or_else(|| invalid(&format!("\"{text}\"")))?;
    if percent > 100 && field.ends_with("maxUnavailable") {
        return Err(format!(
            "{field}: Invalid value: \"{text}\": must not be greater than 100%"
        ));
    }
    let scaled = total.saturating_mul(percent);
    Ok(if round_up {
        (scaled + 99) / 100
    } else {
        scaled / 100
    })
}

/// Resolves a Deployment's `spec.strategy.rollingUpdate` for `replicas`.
pub fn rolling_params(deployment: &Value, replicas: i64) -> Result<RollingParams, String> {
    let rolling = deployment.pointer("/spec/strategy/rollingUpdate");
    let field = "spec.strategy.rollingUpdate";
    let max_surge = int_or_percent(
        rolling.and_then(|r| r.get("maxSurge")),
        "25%",
        replicas,
        true,
        &format!("{field}.maxSurge"),
    )?;
    let max_unavailable = int_or_percent(
        rolling.and_then(|r| r.get("maxUnavailable")),
        "25%",
        replicas,
        false,
        &format!("{field}.maxUnavailable"),
    )?;
    let surge_zero = rolling.and_then(|r| r.get("maxSurge")).is_some_and(is_zero);
    let unavailable_zero = rolling
        .and_then(|r| r.get("maxUnavailable"))
        .is_some_and(is_zero);
    if surge_zero && unavailable_zero {
        return Err(format!(
            "{field}.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"
        ));
    }
    // Percentages that round to zero on small replica counts still must allow progress.
    let max_unavailable = if max_surge == 0 && max_unavailable == 0 {
        1
    } else {
        max_unavailable
    };
    Ok(RollingParams {
        max_surge,
        max_unavailable: max_unavailable.min(replicas.max(0)),
    })
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.as_i64() == Some(0),
        Value::String(s) => s == "0" || s == "0%",
        _ => false,
    }
}

/// One ReplicaSet as the rollout sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaCounts {
    pub spec: i64,
    pub available: i64,
}

impl ReplicaCounts {
    /// Available replicas that will survive the ReplicaSet reaching its spec.
    fn effective_available(&self) -> i64 {
        self.available.min(self.spec).max(0)
    }
}

/// New sizes after one rolling-update step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RollingStep {
    pub new_spec: i64,
    pub old_specs: Vec<i64>,
}

/// The size the new ReplicaSet should have now.
pub fn new_replica_set_size(
    replicas: i64,
    params: RollingParams,
    new_spec: i64,
    all_spec: i64,
) -> i64 {
    if new_spec >= replicas {
        return replicas;
    }
    let max_total = replicas + params.max_surge;
    if all_spec >= max_total {
        return new_spec;
    }
    new_spec + (max_total - all_spec).min(replicas - new_spec)
}

/// One step of a rolling update. `olds` are ordered oldest first.
pub fn rolling_step(
    replicas: i64,
    params: RollingParams,
    new: ReplicaCounts,
    olds: &[ReplicaCounts],
) -> RollingStep {
    let old_specs: Vec<i64> = olds.iter().map(|o| o.spec).collect();
    let all_spec = new.spec + old_specs.iter().sum::<i64>();
    let new_spec = new_replica_set_size(replicas, params, new.spec, all_spec);
    if new_spec != new.spec || olds.iter().all(|o| o.spec == 0) {
        return RollingStep {
            new_spec,
            old_specs,
        };
    }
    let min_available = replicas - params.max_unavailable;
    let new_unavailable = new.spec - new.effective_available();
    let max_scaled_down = all_spec - min_available - new_unavailable;
    let mut olds: Vec<ReplicaCounts> = olds.to_vec();
    if max_scaled_down <= 0 {
        return RollingStep {
            new_spec,
            old_specs,
        };
    }
    // Unavailable old replicas go first: removing them costs no availability.
    let mut cleaned = 0;
    for old in olds.iter_mut() {
        let unhealthy = old.spec - old.effective_available();
        if old.spec == 0 || unhealthy <= 0 || cleaned >= max_scaled_down {
            continue;
        }
        let down = unhealthy.min(max_scaled_down - cleaned);
        old.spec -= down;
        cleaned += down;
    }
    let available: i64 =
        new.effective_available() + olds.iter().map(|o| o.effective_available()).sum::<i64>();
    let mut budget = (available - min_available).max(0);
    for old in olds.iter_mut() {
        if budget == 0 {
            break;
        }
        let down = old.spec.min(budget);
        old.spec -= down;
        budget -= down;
    }
    RollingStep {
        new_spec,
        old_specs: olds.iter().map(|o| o.spec).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_int_or_percent_with_kubernetes_rounding() {
        let cases = [
            // (rollingUpdate, replicas, surge, unavailable)
            (json!(null), 10, 3, 2),
            (json!(null), 4, 1, 1),
            (json!(null), 1, 1, 0),
            (json!({"maxSurge": 1, "maxUnavailable": 0}), 3, 1, 0),
            (json!({"maxSurge": "50%", "maxUnavailable": "50%"}), 3, 2, 1),
            (json!({"maxSurge": "0", "maxUnavailable": "1"}), 3, 0, 1),
            (json!({"maxSurge": "10%", "maxUnavailable": "10%"}), 5, 1, 0),
            (json!({"maxSurge": 0, "maxUnavailable": "10%"}), 5, 0, 1),
        ];
        for (rolling, replicas, surge, unavailable) in cases {
            let deployment = json!({"spec": {"strategy": {"rollingUpdate": rolling}}});
            assert_eq!(
                rolling_params(&deployment, replicas),
                Ok(RollingParams {
                    max_surge: surge,
                    max_unavailable: unavailable
                }),
                "{rolling} × {replicas}"
            );
        }
    }

    #[test]
    fn rejects_both_zero_and_garbage() {
        let cases = [
            (
                json!({"maxSurge": 0, "maxUnavailable": 0}),
                "may not be 0 when `maxSurge` is 0",
            ),
            (
                json!({"maxSurge": "0%", "maxUnavailable": "0"}),
                "may not be 0 when `maxSurge` is 0",
            ),
            (
                json!({"maxSurge": "lots"}),
                "must be an integer or percentage",
            ),
            (json!({"maxSurge": -1}), "greater than or equal to 0"),
            (json!({"maxUnavailable": "150%"}), "greater than 100%"),
        ];
        for (rolling, problem) in cases {
            let deployment = json!({"spec": {"strategy": {"rollingUpdate": rolling}}});
            let error = rolling_params(&deployment, 3).expect_err("invalid");
            assert!(error.contains(problem), "{rolling}: {error}");
        }
    }

    #[test]
    fn steps_follow_the_kubernetes_order() {
        let params = RollingParams {
            max_surge: 1,
            max_unavailable: 1,
        };
        let healthy = |n| ReplicaCounts {
            spec: n,
            available: n,
        };
        // Fresh update: the new ReplicaSet surges by one first.
        assert_eq!(
            rolling_step(
                3,
                params,
                ReplicaCounts {
                    spec: 0,
                    available: 0
                },
                &[healthy(3)]
            ),
            RollingStep {
                new_spec: 1,
                old_specs: vec![3]
            }
        );
        // Surge used up, nothing new available yet: scale old down by maxUnavailable.
        assert_eq!(
            rolling_step(
                3,
                params,
                ReplicaCounts {
                    spec: 1,
                    available: 0
                },
                &[healthy(3)]
            ),
            RollingStep {
                new_spec: 1,
                old_specs: vec![2]
            }
        );
        // Unavailable old replicas are removed before available ones.
        assert_eq!(
            rolling_step(
                3,
                params,
                healthy(1),
                &[ReplicaCounts {
                    spec: 3,
                    available: 1
                }]
            ),
            RollingStep {
                new_spec: 1,
                old_specs: vec![1]
            }
        );
        // Oldest first, down to replicas - maxUnavailable available.
        assert_eq!(
            rolling_step(4, params, healthy(2), &[healthy(1), healthy(2)]),
            RollingStep {
                new_spec: 2,
                old_specs: vec![0, 1]
            }
        );
        // Done: nothing to change.
        assert_eq!(
            rolling_step(3, params, healthy(3), &[healthy(0)]),
            RollingStep {
                new_spec: 3,
                old_specs: vec![0]
            }
        );
    }
}
