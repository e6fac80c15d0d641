//! Which operations and kinds a webhook's rules claim.

use karmada_api::config::RuleWithOperations;

use crate::{Operation, Target};

fn listed(values: &[String], wanted: &str) -> bool {
    values.iter().any(|value| value == "*" || value == wanted)
}

/// Whether `rule` claims `operation` on `target`: each of its lists names the value or `*`.
pub fn matches(rule: &RuleWithOperations, target: &Target, operation: Operation) -> bool {
    let version = target
        .api_version
        .rsplit_once('/')
        .map_or(target.api_version.as_str(), |(_, version)| version);
    listed(&rule.operations, operation.as_str())
        && listed(&rule.api_groups, target.group())
        && listed(&rule.api_versions, version)
        && listed(&rule.kinds, &target.kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(
        operations: &[&str],
        groups: &[&str],
        versions: &[&str],
        kinds: &[&str],
    ) -> RuleWithOperations {
        let list = |values: &[&str]| values.iter().map(|v| (*v).to_string()).collect();
        RuleWithOperations {
            operations: list(operations),
            api_groups: list(groups),
            api_versions: list(versions),
            kinds: list(kinds),
        }
    }

    #[test]
    fn each_list_names_the_value_or_a_wildcard() {
        let workload = Target::new("workload.example.io/v1alpha1", "Workload");
        let configmap = Target::new("v1", "ConfigMap");
        let cases = [
            (
                rule(
                    &["InterpretReplica"],
                    &["workload.example.io"],
                    &["v1alpha1"],
                    &["Workload"],
                ),
                &workload,
                Operation::InterpretReplica,
                true,
            ),
            (
                rule(
                    &["InterpretReplica"],
                    &["workload.example.io"],
                    &["v1alpha1"],
                    &["Workload"],
                ),
                &workload,
                Operation::ReviseReplica,
                false,
            ),
            (
                rule(&["*"], &["*"], &["*"], &["*"]),
                &workload,
                Operation::Retain,
                true,
            ),
            (
                rule(&["*"], &["workload.example.io"], &["v1"], &["Workload"]),
                &workload,
                Operation::Retain,
                false,
            ),
            (
                rule(&["*"], &[""], &["v1"], &["ConfigMap"]),
                &configmap,
                Operation::InterpretStatus,
                true,
            ),
            (
                rule(&["*"], &["apps"], &["v1"], &["ConfigMap"]),
                &configmap,
                Operation::InterpretStatus,
                false,
            ),
            (
                rule(&[], &["*"], &["*"], &["*"]),
                &workload,
                Operation::Retain,
                false,
            ),
        ];
        for (rule, target, operation, expected) in cases {
            assert_eq!(
                matches(&rule, target, operation),
                expected,
                "{rule:?} {target:?} {operation}"
            );
        }
    }
}
