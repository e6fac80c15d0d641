//! Which script field of a ResourceInterpreterCustomization serves which operation, and the function the
//! script must define for it (Karmada's entry points).

use karmada_api::config::{CustomizationRules, LuaScript};

use crate::Operation;

/// One customization rule: the operation, the `spec.customizations` field holding its script, and the global
/// function the script defines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub operation: Operation,
    pub field: &'static str,
    pub entry_point: &'static str,
}

/// Every rule, in Karmada's order.
pub const RULES: &[Rule] = &[
    Rule {
        operation: Operation::Retain,
        field: "retention",
        entry_point: "Retain",
    },
    Rule {
        operation: Operation::InterpretReplica,
        field: "replicaResource",
        entry_point: "GetReplicas",
    },
    Rule {
        operation: Operation::InterpretComponent,
        field: "componentResource",
        entry_point: "GetComponents",
    },
    Rule {
        operation: Operation::ReviseReplica,
        field: "replicaRevision",
        entry_point: "ReviseReplica",
    },
    Rule {
        operation: Operation::InterpretStatus,
        field: "statusReflection",
        entry_point: "ReflectStatus",
    },
    Rule {
        operation: Operation::AggregateStatus,
        field: "statusAggregation",
        entry_point: "AggregateStatus",
    },
    Rule {
        operation: Operation::InterpretHealth,
        field: "healthInterpretation",
        entry_point: "InterpretHealth",
    },
    Rule {
        operation: Operation::InterpretDependency,
        field: "dependencyInterpretation",
        entry_point: "GetDependencies",
    },
];

/// The rule of `operation`, if customizations can implement it.
pub fn rule_for(operation: Operation) -> Option<&'static Rule> {
    RULES.iter().find(|rule| rule.operation == operation)
}

/// The rule whose `--operation` name (Karmada's operation name) is `name`, case-insensitively.
pub fn rule_named(name: &str) -> Option<&'static Rule> {
    RULES
        .iter()
        .find(|rule| rule.operation.as_str().eq_ignore_ascii_case(name))
}

impl Rule {
    /// The script this rule reads from `rules`, when set.
    pub fn script<'a>(&self, rules: &'a CustomizationRules) -> Option<&'a LuaScript> {
        match self.operation {
            Operation::Retain => rules.retention.as_ref(),
            Operation::InterpretReplica => rules.replica_resource.as_ref(),
            Operation::InterpretComponent => rules.component_resource.as_ref(),
            Operation::ReviseReplica => rules.replica_revision.as_ref(),
            Operation::InterpretStatus => rules.status_reflection.as_ref(),
            Operation::AggregateStatus => rules.status_aggregation.as_ref(),
            Operation::InterpretHealth => rules.health_interpretation.as_ref(),
            Operation::InterpretDependency => rules.dependency_interpretation.as_ref(),
        }
    }

    /// Sets (or, with `None`, removes) the script this rule reads from `rules`.
    pub fn set_script(&self, rules: &mut CustomizationRules, script: Option<LuaScript>) {
        let slot = match self.operation {
            Operation::Retain => &mut rules.retention,
            Operation::InterpretReplica => &mut rules.replica_resource,
            Operation::InterpretComponent => &mut rules.component_resource,
            Operation::ReviseReplica => &mut rules.replica_revision,
            Operation::InterpretStatus => &mut rules.status_reflection,
            Operation::AggregateStatus => &mut rules.status_aggregation,
            Operation::InterpretHealth => &mut rules.health_interpretation,
            Operation::InterpretDependency => &mut rules.dependency_interpretation,
        };
        *slot = script;
    }

    /// What the rule's function receives and returns, for people writing one.
    pub fn signature(&self) -> &'static str {
        match self.operation {
            Operation::Retain => {
                "Retain(desiredObj, observedObj) -> the object to apply, keeping what the member owns"
            }
            Operation::InterpretReplica => {
                "GetReplicas(obj) -> replicas, requirements (nil or a table with resourceRequest, nodeClaim, ...)"
            }
            Operation::InterpretComponent => {
                "GetComponents(obj) -> a list of {name, replicas, replicaRequirements}"
            }
            Operation::ReviseReplica => {
                "ReviseReplica(obj, desiredReplicas) -> the object with that many replicas"
            }
            Operation::InterpretStatus => {
                "ReflectStatus(observedObj) -> the status to collect (or nil)"
            }
            Operation::AggregateStatus => {
                "AggregateStatus(desiredObj, statusItems) -> the object with its status merged from every member"
            }
            Operation::InterpretHealth => "InterpretHealth(observedObj) -> true when healthy",
            Operation::InterpretDependency => {
                "GetDependencies(desiredObj) -> a list of {apiVersion, kind, namespace, name}"
            }
        }
    }

    /// The script's field path in a customization object.
    pub fn path(&self) -> String {
        format!("spec.customizations.{}.luaScript", self.field)
    }
}
