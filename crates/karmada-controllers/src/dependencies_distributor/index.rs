//! Which independent bindings depend on which objects, remembered from the last reconcile of each, so a change to
//! a dependency (created late, edited, deleted) wakes the bindings that need it. A dependency is one object by
//! name, or every object of a kind in a namespace whose labels match a selector (a ServiceImport's
//! EndpointSlices); an object wakes the bindings that name it and those whose selector its labels match.

use std::collections::{BTreeSet, HashMap};

use karmada_interpreter::{DependencyLabelSelector, DependentObjectReference};

/// (namespace, name) of an independent ResourceBinding.
pub type BindingKey = (String, String);

/// (kind, namespace, name) of a dependency; kinds are unique enough among the dependency kinds. A selector
/// dependency has an empty name and its selector beside it.
pub type DependencyKey = (String, String, String);

/// (kind, namespace) and the selector of a dependency given by labels.
type SelectorKey = (String, String, DependencyLabelSelector);

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
    selectors_by_binding: HashMap<BindingKey, Vec<SelectorKey>>,
    /// (kind, namespace) → the selectors bindings hold there.
    selectors: HashMap<(String, String), Vec<(DependencyLabelSelector, BindingKey)>>,
}

impl DependencyIndex {
    /// Replaces what `binding` depends on: named dependencies and selector ones.
    pub fn set_all(&mut self, binding: BindingKey, dependencies: &[DependentObjectReference]) {
        let named = dependencies
            .iter()
            .filter(|d| d.label_selector.is_none())
            .map(dependency_key)
            .collect();
        self.set(binding.clone(), named);
        let selected: Vec<SelectorKey> = dependencies
            .iter()
            .filter_map(|d| {
                let selector = d.label_selector.clone()?;
                Some((d.kind.clone(), d.namespace.clone(), selector))
            })
            .collect();
        for (kind, namespace, selector) in &selected {
            self.selectors
                .entry((kind.clone(), namespace.clone()))
                .or_default()
                .push((selector.clone(), binding.clone()));
        }
        if !selected.is_empty() {
            self.selectors_by_binding.insert(binding, selected);
        }
    }

    /// Replaces what `binding` depends on by name.
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
        for (kind, namespace, _) in self
            .selectors_by_binding
            .remove(binding)
            .unwrap_or_default()
        {
            let key = (kind, namespace);
            if let Some(held) = self.selectors.get_mut(&key) {
                held.retain(|(_, b)| b != binding);
                if held.is_empty() {
                    self.selectors.remove(&key);
                }
            }
        }
        for dependency in self.by_binding.remove(binding).unwrap_or_default() {
            if let Some(bindings) = self.by_dependency.get_mut(&dependency) {
                bindings.remove(binding);
                if bindings.is_empty() {
                    self.by_dependency.remove(&dependency);
                }
            }
        }
    }

    /// The bindings that depend on the object `dependency` names, whose labels `label` reads.
    pub fn bindings_of_object<'a>(
        &self,
        dependency: &DependencyKey,
        label: impl Fn(&str) -> Option<&'a str>,
    ) -> Vec<BindingKey> {
        let mut found: BTreeSet<BindingKey> = self.bindings_of(dependency).into_iter().collect();
        if let Some(held) = self
            .selectors
            .get(&(dependency.0.clone(), dependency.1.clone()))
        {
            for (selector, binding) in held {
                if selector.matches(&label) {
                    found.insert(binding.clone());
                }
            }
        }
        found.into_iter().collect()
    }

    /// The bindings that depend on `dependency` by name.
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

    #[test]
    fn selector_dependencies_wake_on_matching_labels() {
        let slices = DependentObjectReference {
            api_version: "discovery.k8s.io/v1".into(),
            kind: "EndpointSlice".into(),
            namespace: "default".into(),
            name: String::new(),
            label_selector: Some(DependencyLabelSelector {
                match_labels: [(
                    "kubernetes.io/service-name".to_string(),
                    "derived-api".to_string(),
                )]
                .into(),
            }),
        };
        let service = DependentObjectReference {
            api_version: "v1".into(),
            kind: "Service".into(),
            namespace: "default".into(),
            name: "derived-api".into(),
            label_selector: None,
        };
        let mut index = DependencyIndex::default();
        index.set_all(binding("api-serviceimport"), &[slices, service]);
        let slice = (
            "EndpointSlice".to_string(),
            "default".to_string(),
            "imported-a-x".to_string(),
        );
        let matching = |key: &str| (key == "kubernetes.io/service-name").then_some("derived-api");
        let other = |key: &str| (key == "kubernetes.io/service-name").then_some("web");
        assert_eq!(
            index.bindings_of_object(&slice, matching),
            [binding("api-serviceimport")]
        );
        assert!(index.bindings_of_object(&slice, other).is_empty());
        let elsewhere = (
            "EndpointSlice".to_string(),
            "prod".to_string(),
            "imported-a-x".to_string(),
        );
        assert!(index.bindings_of_object(&elsewhere, matching).is_empty());
        assert_eq!(
            index.bindings_of_object(&dep("Service", "derived-api"), |_| None),
            [binding("api-serviceimport")]
        );
        index.remove(&binding("api-serviceimport"));
        assert!(index.bindings_of_object(&slice, matching).is_empty());
        assert!(index.selectors.is_empty() && index.selectors_by_binding.is_empty());
    }
}
