//! The interpreter trait every layer implements, and [`Interpreter`], which asks the layers in precedence order.

use std::fmt;
use std::sync::Arc;

use karmada_api::ReplicaRequirements;
use karmada_api::work::{AggregatedStatusItem, ResourceHealth};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::native::{NativeInterpreter, retain_metadata};
use crate::{InterpretError, Target};

/// The interpreter operations, with Karmada's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    InterpretReplica,
    ReviseReplica,
    Retain,
    InterpretStatus,
    AggregateStatus,
    InterpretHealth,
    InterpretDependency,
    InterpretComponent,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InterpretReplica => "InterpretReplica",
            Self::ReviseReplica => "ReviseReplica",
            Self::Retain => "Retain",
            Self::InterpretStatus => "InterpretStatus",
            Self::AggregateStatus => "AggregateStatus",
            Self::InterpretHealth => "InterpretHealth",
            Self::InterpretDependency => "InterpretDependency",
            Self::InterpretComponent => "InterpretComponent",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Replica count of a workload and what one replica needs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplicaInfo {
    pub replicas: i32,
    pub requirements: Option<ReplicaRequirements>,
}

/// One pod template of a multi-component workload (Karmada's `Component`): its name, replica count and what
/// each replica needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    pub name: String,
    #[serde(default)]
    pub replicas: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_requirements: Option<Value>,
}

/// An object another object depends on (Karmada's `DependentObjectReference`): one object by `name`, or every
/// object of the kind in `namespace` whose labels match `label_selector` (when `name` is empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DependentObjectReference {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<DependencyLabelSelector>,
}

/// The label selector of a [`DependentObjectReference`] (Karmada's native interpreter only uses `matchLabels`).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DependencyLabelSelector {
    #[serde(default)]
    pub match_labels: std::collections::BTreeMap<String, String>,
}

impl DependencyLabelSelector {
    /// Whether `labels` carry every pair of the selector.
    pub fn matches<'a>(&self, mut label: impl FnMut(&str) -> Option<&'a str>) -> bool {
        self.match_labels
            .iter()
            .all(|(key, value)| label(key) == Some(value.as_str()))
    }

    /// `key=value,...` as a list request's `labelSelector` takes it.
    pub fn to_query(&self) -> String {
        self.match_labels
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// One interpreter layer. A layer answers only the (target, operation) pairs for which [`Self::handles`] is
/// true; the default method bodies report the operation as unsupported.
pub trait ResourceInterpreter: Send + Sync {
    /// Whether this layer implements `operation` for `target`.
    fn handles(&self, target: &Target, operation: Operation) -> bool;

    /// Replicas and per-replica requirements of a workload.
    fn get_replicas(&self, object: &Value) -> Result<ReplicaInfo, InterpretError> {
        Err(unsupported(object, Operation::InterpretReplica))
    }

    /// The components of a multi-component workload.
    fn get_components(&self, object: &Value) -> Result<Vec<Component>, InterpretError> {
        Err(unsupported(object, Operation::InterpretComponent))
    }

    /// A copy of `object` whose replica count is `replicas`.
    fn revise_replica(&self, object: &Value, _replicas: i64) -> Result<Value, InterpretError> {
        Err(unsupported(object, Operation::ReviseReplica))
    }

    /// `desired` with the member-side fields of `observed` it must keep.
    fn retain(&self, desired: &Value, _observed: &Value) -> Result<Value, InterpretError> {
        Err(unsupported(desired, Operation::Retain))
    }

    /// The part of a member object's status that is collected into the Work.
    fn reflect_status(&self, object: &Value) -> Result<Option<Value>, InterpretError> {
        Err(unsupported(object, Operation::InterpretStatus))
    }

    /// The template with its `.status` aggregated from the per-cluster statuses.
    fn aggregate_status(
        &self,
        template: &Value,
        _items: &[AggregatedStatusItem],
    ) -> Result<Value, InterpretError> {
        Err(unsupported(template, Operation::AggregateStatus))
    }

    /// Whether a member object is healthy (`true`) or not.
    fn interpret_health(&self, object: &Value) -> Result<bool, InterpretError> {
        Err(unsupported(object, Operation::InterpretHealth))
    }

    /// Objects that must be propagated along with `object`.
    fn get_dependencies(
        &self,
        object: &Value,
    ) -> Result<Vec<DependentObjectReference>, InterpretError> {
        Err(unsupported(object, Operation::InterpretDependency))
    }
}

fn unsupported(object: &Value, operation: Operation) -> InterpretError {
    let text = |key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    InterpretError::Unsupported {
        operation: operation.to_string(),
        api_version: text("apiVersion"),
        kind: text("kind"),
    }
}

/// The layered interpreter: customizations, then webhooks, then third-party built-ins, then native.
///
/// Defaults when no layer handles an operation (as Karmada): no replicas; revise and aggregate leave the object
/// unchanged; retain keeps only member metadata; the whole `.status` is reflected; health is Healthy; no
/// dependencies.
#[derive(Clone)]
pub struct Interpreter {
    customizations: Vec<Arc<dyn ResourceInterpreter>>,
    webhooks: Vec<Arc<dyn ResourceInterpreter>>,
    third_party: Vec<Arc<dyn ResourceInterpreter>>,
    native: Arc<dyn ResourceInterpreter>,
}

impl Default for Interpreter {
    fn default() -> Self {
        Self::native()
    }
}

impl fmt::Debug for Interpreter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interpreter")
            .field("customizations", &self.customizations.len())
            .field("webhooks", &self.webhooks.len())
            .field("third_party", &self.third_party.len())
            .finish_non_exhaustive()
    }
}

impl Interpreter {
    /// Only the native interpreter.
    pub fn native() -> Self {
        Self {
            customizations: Vec::new(),
            webhooks: Vec::new(),
            third_party: Vec::new(),
            native: Arc::new(NativeInterpreter),
        }
    }

    /// Native plus the customizations bundled for popular CRDs ([`crate::thirdparty`]), as Karmada runs by
    /// default.
    pub fn with_bundled() -> Self {
        Self::native().with_third_party(Arc::new(crate::thirdparty::third_party_interpreter()))
    }

    /// Adds a customization layer (e.g. Lua); it takes precedence over every layer added before.
    pub fn with_customization(mut self, layer: Arc<dyn ResourceInterpreter>) -> Self {
        self.customizations.insert(0, layer);
        self
    }

    /// Adds a webhook layer, below every customization and above the third-party built-ins.
    pub fn with_webhooks(mut self, layer: Arc<dyn ResourceInterpreter>) -> Self {
        self.webhooks.insert(0, layer);
        self
    }

    /// Adds a third-party built-in layer, below every customization and above native.
    pub fn with_third_party(mut self, layer: Arc<dyn ResourceInterpreter>) -> Self {
        self.third_party.insert(0, layer);
        self
    }

    fn layer(&self, target: &Target, operation: Operation) -> Option<&dyn ResourceInterpreter> {
        self.customizations
            .iter()
            .chain(self.webhooks.iter())
            .chain(self.third_party.iter())
            .chain(std::iter::once(&self.native))
            .find(|layer| layer.handles(target, operation))
            .map(|layer| layer.as_ref())
    }

    fn layer_for(
        &self,
        object: &Value,
        operation: Operation,
    ) -> Result<Option<&dyn ResourceInterpreter>, InterpretError> {
        Ok(self.layer(&Target::of(object)?, operation))
    }

    /// Whether some layer implements `operation` for `target`.
    pub fn hook_enabled(&self, target: &Target, operation: Operation) -> bool {
        self.layer(target, operation).is_some()
    }

    /// Replicas and requirements; kinds without replicas give 0 and none.
    pub fn get_replicas(&self, object: &Value) -> Result<ReplicaInfo, InterpretError> {
        match self.layer_for(object, Operation::InterpretReplica)? {
            Some(layer) => layer.get_replicas(object),
            None => Ok(ReplicaInfo::default()),
        }
    }

    /// Components of a multi-component workload; none for kinds without a component hook.
    pub fn get_components(&self, object: &Value) -> Result<Vec<Component>, InterpretError> {
        match self.layer_for(object, Operation::InterpretComponent)? {
            Some(layer) => layer.get_components(object),
            None => Ok(Vec::new()),
        }
    }

    /// A copy with `replicas` replicas; unchanged for kinds without replicas.
    pub fn revise_replica(&self, object: &Value, replicas: i64) -> Result<Value, InterpretError> {
        match self.layer_for(object, Operation::ReviseReplica)? {
            Some(layer) => layer.revise_replica(object, replicas),
            None => Ok(object.clone()),
        }
    }

    /// `desired` prepared to update `observed` in a member: member metadata kept (resourceVersion,
    /// finalizers, ownerReferences, labels and annotations the member added), then the per-kind fields.
    pub fn retain(&self, desired: &Value, observed: &Value) -> Result<Value, InterpretError> {
        let with_metadata = retain_metadata(desired, observed);
        match self.layer_for(desired, Operation::Retain)? {
            Some(layer) => layer.retain(&with_metadata, observed),
            None => Ok(with_metadata),
        }
    }

    /// The status collected from a member object; the whole `.status` for kinds without a reflector.
    pub fn reflect_status(&self, object: &Value) -> Result<Option<Value>, InterpretError> {
        match self.layer_for(object, Operation::InterpretStatus)? {
            Some(layer) => layer.reflect_status(object),
            None => Ok(object.get("status").filter(|s| !s.is_null()).cloned()),
        }
    }

    /// The template with its aggregated `.status`; unchanged for kinds without an aggregator.
    pub fn aggregate_status(
        &self,
        template: &Value,
        items: &[AggregatedStatusItem],
    ) -> Result<Value, InterpretError> {
        match self.layer_for(template, Operation::AggregateStatus)? {
            Some(layer) => layer.aggregate_status(template, items),
            None => Ok(template.clone()),
        }
    }

    /// Health of a member object: Healthy for kinds without a health hook, Unknown when it cannot be told.
    pub fn interpret_health(&self, object: &Value) -> ResourceHealth {
        match self.layer_for(object, Operation::InterpretHealth) {
            Ok(None) => ResourceHealth::Healthy,
            Ok(Some(layer)) => match layer.interpret_health(object) {
                Ok(true) => ResourceHealth::Healthy,
                Ok(false) => ResourceHealth::Unhealthy,
                Err(_) => ResourceHealth::Unknown,
            },
            Err(_) => ResourceHealth::Unknown,
        }
    }

    /// Dependencies, sorted and without duplicates; none for kinds without a dependency hook.
    pub fn get_dependencies(
        &self,
        object: &Value,
    ) -> Result<Vec<DependentObjectReference>, InterpretError> {
        let mut dependencies = match self.layer_for(object, Operation::InterpretDependency)? {
            Some(layer) => layer.get_dependencies(object)?,
            None => Vec::new(),
        };
        dependencies.sort();
        dependencies.dedup();
        Ok(dependencies)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A layer that claims Deployment replicas only, answering a fixed count.
    struct FixedReplicas(i32);

    impl ResourceInterpreter for FixedReplicas {
        fn handles(&self, target: &Target, operation: Operation) -> bool {
            operation == Operation::InterpretReplica && target.is("apps", "Deployment")
        }

        fn get_replicas(&self, _object: &Value) -> Result<ReplicaInfo, InterpretError> {
            Ok(ReplicaInfo {
                replicas: self.0,
                requirements: None,
            })
        }
    }

    #[test]
    fn customization_beats_third_party_beats_native() {
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3}});
        let native = Interpreter::native();
        assert_eq!(native.get_replicas(&deployment).map(|r| r.replicas), Ok(3));
        let third_party = Interpreter::native().with_third_party(Arc::new(FixedReplicas(7)));
        assert_eq!(
            third_party.get_replicas(&deployment).map(|r| r.replicas),
            Ok(7)
        );
        let customized = third_party.with_customization(Arc::new(FixedReplicas(11)));
        assert_eq!(
            customized.get_replicas(&deployment).map(|r| r.replicas),
            Ok(11)
        );
        // Operations the layers do not claim still reach native.
        let revised = customized
            .revise_replica(&deployment, 5)
            .expect("native revise");
        assert_eq!(revised.pointer("/spec/replicas"), Some(&json!(5)));
    }

    #[test]
    fn defaults_when_no_layer_handles_the_kind() {
        let interpreter = Interpreter::native();
        let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "status": {"ok": true}});
        let target = Target::new("example.com/v1", "Widget");
        for operation in [
            Operation::InterpretReplica,
            Operation::ReviseReplica,
            Operation::InterpretHealth,
        ] {
            assert!(!interpreter.hook_enabled(&target, operation));
        }
        assert_eq!(
            interpreter.get_replicas(&widget),
            Ok(ReplicaInfo::default())
        );
        assert_eq!(interpreter.revise_replica(&widget, 4), Ok(widget.clone()));
        assert_eq!(
            interpreter.reflect_status(&widget),
            Ok(Some(json!({"ok": true})))
        );
        assert_eq!(
            interpreter.aggregate_status(&widget, &[]),
            Ok(widget.clone())
        );
        assert_eq!(
            interpreter.interpret_health(&widget),
            ResourceHealth::Healthy
        );
        assert_eq!(interpreter.get_dependencies(&widget), Ok(Vec::new()));
        assert!(matches!(
            interpreter.get_replicas(&json!({})),
            Err(InterpretError::NotAnObject(_))
        ));
    }
}
