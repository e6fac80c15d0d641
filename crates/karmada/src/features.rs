//! `--feature-gates`: Karmada's gates, with Karmada's names, stages and defaults, as `Name=true,Other=false`.
//!
//! Each component reads the gates it acts on: the controller-manager PropagationPolicyPreemption,
//! PriorityBasedScheduling (the detector resolves `schedulePriority`), PropagateDeps, GracefulEviction and
//! Failover; the scheduler PriorityBasedScheduling (its queue) and CustomizedClusterResourceModeling; the
//! estimator ResourceQuotaEstimate. The others are accepted, as Karmada's components accept every gate, and change
//! nothing here (docs/compat.md lists them).

use std::collections::BTreeMap;

/// A gate: name, default, stage.
pub struct Gate {
    pub name: &'static str,
    pub default: bool,
    pub stage: &'static str,
}

const fn gate(name: &'static str, default: bool, stage: &'static str) -> Gate {
    Gate {
        name,
        default,
        stage,
    }
}

/// Karmada's gates (v1.19 defaults), and the Kubernetes logging gates its components also take.
pub const GATES: &[Gate] = &[
    gate("ContextualLogging", true, "BETA"),
    gate("ControllerPriorityQueue", true, "BETA"),
    gate("CustomizedClusterResourceModeling", true, "BETA"),
    gate("Failover", false, "BETA"),
    gate("FederatedQuotaEnforcement", false, "ALPHA"),
    gate("GracefulEviction", true, "BETA"),
    gate("LoggingAlphaOptions", false, "ALPHA"),
    gate("LoggingBetaOptions", true, "BETA"),
    gate("MultiClusterService", false, "ALPHA"),
    gate("MultiplePodTemplatesScheduling", false, "ALPHA"),
    gate("PriorityBasedScheduling", true, "BETA"),
    gate("PropagateDeps", true, "BETA"),
    gate("PropagationPolicyPreemption", false, "ALPHA"),
    gate("ResourceQuotaEstimate", false, "ALPHA"),
    gate("SchedulingOvercommitProtection", false, "ALPHA"),
    gate("StatefulFailoverInjection", false, "ALPHA"),
    gate("WorkloadAffinity", false, "ALPHA"),
];

/// The gates in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureGates(BTreeMap<&'static str, bool>);

impl Default for FeatureGates {
    fn default() -> Self {
        Self(GATES.iter().map(|g| (g.name, g.default)).collect())
    }
}

impl FeatureGates {
    /// Reads the flag's value (`A=true,B=false`; empty keeps the defaults).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut gates = Self::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, value) = item.split_once('=').ok_or_else(|| {
                format!("missing bool value for {item:?}; accepted: Name=true or Name=false, comma-separated")
            })?;
            let (name, value) = (name.trim(), value.trim());
            let value: bool = value.parse().map_err(|_| {
                format!("invalid value of {name}={value}, err: expected true or false")
            })?;
            let known = GATES.iter().find(|g| g.name == name).ok_or_else(|| {
                format!(
                    "unrecognized feature gate: {name}; known gates: {}",
                    GATES.iter().map(|g| g.name).collect::<Vec<_>>().join(", ")
                )
            })?;
            gates.0.insert(known.name, value);
        }
        Ok(gates)
    }

    /// Whether gate `name` is on.
    pub fn enabled(&self, name: &str) -> bool {
        self.0.get(name).copied().unwrap_or(false)
    }
}

/// The flag's help, listing every gate as Kubernetes components do.
pub fn help() -> String {
    let mut text = String::from(
        "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:",
    );
    for gate in GATES {
        text.push_str(&format!(
            "\n{}=true|false ({} - default={})",
            gate.name, gate.stage, gate.default
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn karmadas_defaults_and_overrides() {
        let defaults = FeatureGates::default();
        assert!(!defaults.enabled("PropagationPolicyPreemption"));
        assert!(defaults.enabled("PriorityBasedScheduling"));
        assert!(!defaults.enabled("Failover"));
        let gates =
            FeatureGates::parse("PropagationPolicyPreemption=true, PriorityBasedScheduling=false")
                .expect("valid");
        assert!(gates.enabled("PropagationPolicyPreemption"));
        assert!(!gates.enabled("PriorityBasedScheduling"));
        assert!(
            gates.enabled("PropagateDeps"),
            "untouched gates keep their default"
        );
    }

    #[test]
    fn bad_gates_say_what_is_accepted() {
        let cases = [
            (
                "Preemption=true",
                "unrecognized feature gate: Preemption; known gates: ContextualLogging",
            ),
            ("Failover", "missing bool value for \"Failover\""),
            ("Failover=yes", "invalid value of Failover=yes"),
        ];
        for (flag, expected) in cases {
            let err = FeatureGates::parse(flag).expect_err(flag);
            assert!(err.starts_with(expected), "{flag}: {err}");
        }
    }

    #[test]
    fn help_lists_every_gate_with_its_default() {
        let help = help();
        assert!(
            help.contains("PropagationPolicyPreemption=true|false (ALPHA - default=false)"),
            "{help}"
        );
        assert!(
            help.contains("PriorityBasedScheduling=true|false (BETA - default=true)"),
            "{help}"
        );
    }
}
