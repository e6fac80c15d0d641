//! The controller-manager's `--controllers`: Karmada's syntax and names. `*` runs every controller that is on by
//! default, `foo` runs controller `foo`, `-foo` does not (a named choice wins over `*`); Karmada's
//! hpaScaleTargetMarker and deploymentReplicasSyncer are off by default. An unknown name is an error listing the
//! known ones. Controllers Karmada has and karmada-rs does not build yet are accepted and change nothing
//! (docs/compat.md).

/// Karmada's controller names.
pub const CONTROLLERS: &[&str] = &[
    "agentcsrapproving",
    "applicationFailover",
    "binding",
    "bindingStatus",
    "cluster",
    "clusterStatus",
    "clustertaintpolicy",
    "cronFederatedHorizontalPodAutoscaler",
    "deploymentReplicasSyncer",
    "endpointSlice",
    "endpointsliceCollect",
    "endpointsliceDispatch",
    "execution",
    "federatedHorizontalPodAutoscaler",
    "federatedResourceQuotaEnforcement",
    "federatedResourceQuotaStatus",
    "federatedResourceQuotaSync",
    "gracefulEviction",
    "hpaScaleTargetMarker",
    "multiclusterservice",
    "namespace",
    "remedy",
    "serviceExport",
    "serviceImport",
    "unifiedAuth",
    "workStatus",
    "workloadRebalancer",
];

/// Off unless named.
pub const DISABLED_BY_DEFAULT: &[&str] = &["hpaScaleTargetMarker", "deploymentReplicasSyncer"];

/// The controllers `--controllers` turns on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerSet {
    items: Vec<String>,
}

impl Default for ControllerSet {
    fn default() -> Self {
        Self {
            items: vec!["*".to_string()],
        }
    }
}

impl ControllerSet {
    /// Reads the flag's value (comma-separated).
    pub fn parse(text: &str) -> Result<Self, String> {
        let items: Vec<String> = text
            .split(',')
            .map(str::trim)
            .filter(|i| !i.is_empty())
            .map(str::to_string)
            .collect();
        for item in &items {
            let name = item.strip_prefix('-').unwrap_or(item);
            if name != "*" && !CONTROLLERS.contains(&name) {
                return Err(format!(
                    "{item:?} is not in the list of known controllers: {}; accepted: '*', 'foo', '-foo'",
                    CONTROLLERS.join(", ")
                ));
            }
        }
        Ok(Self { items })
    }

    /// Whether controller `name` runs.
    pub fn enabled(&self, name: &str) -> bool {
        if self.items.iter().any(|i| i.strip_prefix('-') == Some(name)) {
            return false;
        }
        if self.items.iter().any(|i| i == name) {
            return true;
        }
        self.items.iter().any(|i| i == "*") && !DISABLED_BY_DEFAULT.contains(&name)
    }
}

/// The flag's help.
pub fn help() -> String {
    format!(
        "A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables the controller named 'foo', '-foo' disables the controller named 'foo'.\nAll controllers: {}.\nDisabled-by-default controllers: {}",
        CONTROLLERS.join(", "),
        DISABLED_BY_DEFAULT.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn karmadas_rules() {
        let cases = [
            ("*", "binding", true),
            ("*", "hpaScaleTargetMarker", false),
            ("*,hpaScaleTargetMarker", "hpaScaleTargetMarker", true),
            ("*,-namespace", "namespace", false),
            ("*,-namespace", "binding", true),
            ("binding,execution", "execution", true),
            ("binding,execution", "cluster", false),
            ("-binding,*", "binding", false),
        ];
        for (flag, controller, expected) in cases {
            let set = ControllerSet::parse(flag).expect(flag);
            assert_eq!(set.enabled(controller), expected, "{flag} {controller}");
        }
    }

    #[test]
    fn unknown_controllers_are_refused_with_the_known_ones() {
        let err = ControllerSet::parse("*,-detector").expect_err("unknown");
        assert!(
            err.starts_with(
                "\"-detector\" is not in the list of known controllers: agentcsrapproving"
            ),
            "{err}"
        );
    }
}
