//! Which independent bindings depend on which objects, remembered from the last reconcile of each, so a change to
//! a dependency (created late, edited, deleted) wakes the bindings that need it.

use std::collections::{BTreeSet, HashMap};

use karmada_interpreter::DependentObjectReference;

/// (namespace, name) of an independent ResourceBinding.
pub type BindingKey = (String, String);

/// (kind, namespace, name) of a dependency; kinds are unique enough among the dependency kinds.
pub type DependencyKey = (String, String, String);

pub fn dependency_key(dependency: &DependentObjectReference) -> DependencyKey {
    (
        dependency.kind.clone(),
        dependency.namespace.clone(),
        dependency.name.clone(),
    )
}

#[derive(Debug, Default)]
pub struct DependencyIndex {
    by_binding: HashMap<BindingKey, BTreeSet<DependencyKey>>,
    by_dependency: HashMap<DependencyKey, BTreeSet<BindingKey>>,
}

impl DependencyIndex {
    /// Replaces what `binding` depends on.
    pub fn set(&mut self, binding: BindingKey, dependencies: BTreeSet<DependencyKey>) {
        self.remove(&binding);
        for dependency in &dependencies {
            self.by_dependency
                .entry(dependency.clone())
                .or_default()
                .insert(binding.clone());
        }
        if !dependencies.is_empty() {
            self.by_binding.insert(binding, dependencies);
        }
    }

    pub fn remove(&mut self, binding: &BindingKey) {
        for dependency in self.by_binding.remove(binding).unwrap_or_default() {
            if let Some(bindings) = self.by_dependency.get_mut(&dependency) {
                bindings.remove(binding);
                if bindings.is_empty() {
                    self.by_dependency.remove(&dependency);
                }
            }
        }
    }

    /// The bindings that depend on `dependency`.
    pub fn bindings_of(&self, dependency: &DependencyKey) -> Vec<BindingKey> {
        self.by_dependency
            .get(dependency)
            .map(|b| b.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(kind: &str, name: &str) -> DependencyKey {
        (kind.into(), "default".into(), name.into())
    }

    fn binding(name: &str) -> BindingKey {
        ("default".into(), name.into())
    }

    #[test]
    fn set_replace_and_remove() {
        let mut index = DependencyIndex::default();
        index.set(
            binding("web"),
            BTreeSet::from([dep("ConfigMap", "cfg"), dep("Secret", "s")]),
        );
        index.set(binding("api"), BTreeSet::from([dep("ConfigMap", "cfg")]));
        assert_eq!(
            index.bindings_of(&dep("ConfigMap", "cfg")),
            [binding("api"), binding("web")]
        );
        // web no longer needs the Secret.
        index.set(binding("web"), BTreeSet::from([dep("ConfigMap", "cfg")]));
        assert!(index.bindings_of(&dep("Secret", "s")).is_empty());
        index.remove(&binding("api"));
        index.remove(&binding("web"));
        assert!(index.bindings_of(&dep("ConfigMap", "cfg")).is_empty());
        assert!(index.by_binding.is_empty() && index.by_dependency.is_empty());
    }
}
