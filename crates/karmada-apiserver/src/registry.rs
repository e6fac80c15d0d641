//! The kinds this server serves: built-in kinds, Karmada kinds and the kinds of every
//! established CustomResourceDefinition.
//!
//! A [`Registry`] is an immutable snapshot; the server swaps in a new snapshot when a CRD is
//! registered or removed, so request handlers never hold a lock while they await.
//! Invariant: a (group, version, plural) and a (group, version, kind) name at most one def.

use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::ResourceDef;

/// An immutable set of served resource definitions.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    defs: Vec<Arc<ResourceDef>>,
    by_plural: BTreeMap<(String, String, String), usize>,
    by_kind: BTreeMap<(String, String, String), usize>,
    /// Which CRD (by name) contributed which defs, so deleting the CRD removes them.
    crd_owned: BTreeMap<String, Vec<(String, String, String)>>,
    /// Discovery documents rendered from this snapshot.
    pub(crate) discovery: crate::discovery_cache::DiscoveryCache,
}

impl Registry {
    pub fn new(defs: impl IntoIterator<Item = ResourceDef>) -> Self {
        let mut registry = Self::default();
        for def in defs {
            registry.insert(def);
        }
        registry
    }

    fn insert(&mut self, def: ResourceDef) {
        let plural_key = (def.group.clone(), def.version.clone(), def.plural.clone());
        let kind_key = (def.group.clone(), def.version.clone(), def.kind.clone());
        if let Some(&index) = self.by_plural.get(&plural_key) {
            self.defs[index] = Arc::new(def);
            self.by_kind.insert(kind_key, index);
            return;
        }
        self.defs.push(Arc::new(def));
        let index = self.defs.len() - 1;
        self.by_plural.insert(plural_key, index);
        self.by_kind.insert(kind_key, index);
    }

    fn rebuild(
        defs: Vec<Arc<ResourceDef>>,
        crd_owned: BTreeMap<String, Vec<(String, String, String)>>,
    ) -> Self {
        let mut registry = Self {
            crd_owned,
            ..Self::default()
        };
        for def in defs {
            registry.insert((*def).clone());
        }
        registry
    }

    /// The def served at `/apis/{group}/{version}/{plural}`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        self.by_plural
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .map(|&i| Arc::clone(&self.defs[i]))
    }

    /// The def of a kind at a version (e.g. from an ownerReference's apiVersion and kind).
    pub fn lookup_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceDef>> {
        self.by_kind
            .get(&(group.to_string(), version.to_string(), kind.to_string()))
            .map(|&i| Arc::clone(&self.defs[i]))
    }

    /// Every served def, in registration order.
    pub fn defs(&self) -> Vec<ResourceDef> {
        self.defs.iter().map(|d| (**d).clone()).collect()
    }

    /// One def per stored resource (group + plural): the storage version when marked, else the
    /// first registered. Background controllers walk these to visit every stored object once.
    pub fn storage_defs(&self) -> Vec<Arc<ResourceDef>> {
        let mut chosen: BTreeMap<(String, String), Arc<ResourceDef>> = BTreeMap::new();
        for def in &self.defs {
            let key = (def.group.clone(), def.plural.clone());
            match chosen.get(&key) {
                Some(existing) if existing.storage_version || !def.storage_version => {}
                _ => {
                    chosen.insert(key, Arc::clone(def));
                }
            }
        }
        chosen.into_values().collect()
    }

    /// A new snapshot with `defs` served on behalf of the CRD `crd_name`, replacing what that CRD
    /// contributed before.
    pub fn with_crd(&self, crd_name: &str, defs: Vec<ResourceDef>) -> Self {
        let without = self.without_crd(crd_name);
        let mut crd_owned = without.crd_owned.clone();
        crd_owned.insert(
            crd_name.to_string(),
            defs.iter()
                .map(|d| (d.group.clone(), d.version.clone(), d.plural.clone()))
                .collect(),
        );
        let mut all: Vec<Arc<ResourceDef>> = without.defs.clone();
        all.extend(defs.into_iter().map(Arc::new));
        Self::rebuild(all, crd_owned)
    }

    /// A new snapshot without what the CRD `crd_name` contributed.
    pub fn without_crd(&self, crd_name: &str) -> Self {
        let mut crd_owned = self.crd_owned.clone();
        let Some(owned) = crd_owned.remove(crd_name) else {
            return self.clone();
        };
        let kept = self
            .defs
            .iter()
            .filter(|d| !owned.contains(&(d.group.clone(), d.version.clone(), d.plural.clone())))
            .cloned()
            .collect();
        Self::rebuild(kept, crd_owned)
    }

    /// Whether `group`/`version` has any served resource.
    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.defs
            .iter()
            .any(|d| d.group == group && d.version == version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::Printer;

    fn def(group: &str, version: &str, plural: &str, storage: bool) -> ResourceDef {
        ResourceDef {
            group: group.into(),
            version: version.into(),
            kind: format!("K{plural}"),
            plural: plural.into(),
            singular: plural.into(),
            namespaced: true,
            short_names: Vec::new(),
            categories: Vec::new(),
            status_subresource: false,
            scale_subresource: None,
            builtin: false,
            tracks_generation: true,
            printer: Printer::Columns(Vec::new()),
            schema: None,
            storage_version: storage,
        }
    }

    #[test]
    fn crds_come_and_go_without_touching_other_kinds() {
        let base = Registry::new([def("", "v1", "configmaps", true)]);
        let with = base.with_crd(
            "widgets.x.io",
            vec![
                def("x.io", "v1", "widgets", false),
                def("x.io", "v2", "widgets", true),
            ],
        );
        assert!(with.lookup("x.io", "v1", "widgets").is_some());
        assert!(with.lookup_kind("x.io", "v2", "Kwidgets").is_some());
        let storage: Vec<String> = with
            .storage_defs()
            .iter()
            .map(|d| format!("{}/{}", d.group, d.version))
            .collect();
        assert!(storage.contains(&"x.io/v2".to_string()), "{storage:?}");
        assert_eq!(storage.len(), 2);
        let without = with.without_crd("widgets.x.io");
        assert!(without.lookup("x.io", "v1", "widgets").is_none());
        assert!(without.lookup("", "v1", "configmaps").is_some());
        assert!(!without.serves_group_version("x.io", "v2"));
    }
}
