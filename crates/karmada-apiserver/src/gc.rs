//! Garbage collection over `metadata.ownerReferences`, as kube-controller-manager does it:
//! - Background: a dependent whose owners are all gone is deleted;
//! - Foreground: an owner marked deleting with the `foregroundDeletion` finalizer has its
//!   dependents deleted and loses the finalizer (and so goes away) once none is left;
//! - Orphan: an owner with the `orphan` finalizer has its references removed from every
//!   dependent, then loses the finalizer.
//!
//! Level-triggered and restart-safe: it starts from a full scan of the store (an index of who
//! owns whom, kept only for objects that have owners), then follows the store's watch; every
//! decision re-reads the objects involved, so a stale index only costs a wasted check. Failed
//! checks are retried on a tick.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use apimachinery::ApiError;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use store::{EventKind, RangeRequest};

use crate::handlers::WriteOptions;
use crate::handlers::delete::{
    DeleteOptions, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Propagation, delete_object,
};
use crate::handlers::update::update_object;
use crate::objects::{self, Part};
use crate::server::ApiServer;
use crate::storage;

const RETRY_TICK: Duration = Duration::from_millis(250);
const MANAGER: &str = "garbage-collector";

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
}

impl OwnerRef {
    /// A field that is missing or not a string reads as empty (the server does not check their shape).
    fn of(reference: &Value) -> Self {
        let text = |key: &str| {
            reference
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Self {
            api_version: text("apiVersion"),
            kind: text("kind"),
            name: text("name"),
            uid: text("uid"),
        }
    }
}

/// What garbage collection reads of an object in the store's watch: ownership and deletion marks.
#[derive(Debug, Default)]
struct HeadMeta {
    namespace: Option<String>,
    uid: String,
    finalizers: Vec<String>,
    deleting: bool,
    owner_references: Vec<OwnerRef>,
}

impl HeadMeta {
    /// Parsed without building the rest of the object (most of a binding is spec and status, and every write of
    /// one comes by here); only these metadata fields become JSON values.
    fn parse(bytes: &[u8]) -> Option<Self> {
        #[derive(Deserialize)]
        struct Head {
            #[serde(default)]
            metadata: Option<Metadata>,
        }
        #[derive(Default, Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Metadata {
            #[serde(default)]
            namespace: Value,
            #[serde(default)]
            uid: Value,
            #[serde(default)]
            finalizers: Value,
            #[serde(default)]
            deletion_timestamp: Value,
            #[serde(default)]
            owner_references: Value,
        }
        let metadata = serde_json::from_slice::<Head>(bytes)
            .ok()?
            .metadata
            .unwrap_or_default();
        let strings = |value: &Value| -> Vec<String> {
            value
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        Some(Self {
            namespace: metadata.namespace.as_str().map(str::to_string),
            uid: metadata.uid.as_str().unwrap_or_default().to_string(),
            finalizers: strings(&metadata.finalizers),
            deleting: !metadata.deletion_timestamp.is_null(),
            owner_references: owner_refs_of(&metadata.owner_references),
        })
    }

    fn is_deleting(&self) -> bool {
        self.deleting
    }
}

fn owner_refs_of(references: &Value) -> Vec<OwnerRef> {
    references
        .as_array()
        .map(|refs| refs.iter().map(OwnerRef::of).collect())
        .unwrap_or_default()
}

fn owner_refs(object: &Value) -> Vec<OwnerRef> {
    objects::meta(object)
        .and_then(|m| m.get("ownerReferences"))
        .map(owner_refs_of)
        .unwrap_or_default()
}

/// Who owns whom, for objects that have owners.
///
/// Held for every owned object in the store (each ResourceBinding is owned by its template), so it keeps
/// only what the decisions need: each dependent's owner uids and a hash of its references, the strings
/// shared between the two maps.
#[derive(Default)]
struct Index {
    /// owner uid → keys of its dependents.
    dependents: HashMap<Arc<str>, Vec<Arc<str>>>,
    /// dependent key → its owners.
    owners: HashMap<Arc<str>, Owned>,
    dirty_dependents: BTreeSet<String>,
    dirty_owners: BTreeSet<String>,
}

/// A dependent's owners, as the index keeps them.
struct Owned {
    /// A hash of the owner references (all four fields of each): equal hashes mean nothing to check again.
    references: u64,
    uids: Box<[Arc<str>]>,
}

fn references_hash(references: &[OwnerRef]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    references.hash(&mut hasher);
    hasher.finish()
}

impl Index {
    fn forget(&mut self, key: &str) {
        let Some(owned) = self.owners.remove(key) else {
            return;
        };
        for uid in owned.uids.iter() {
            if let Some(keys) = self.dependents.get_mut(uid) {
                keys.retain(|k| **k != *key);
                if keys.is_empty() {
                    self.dependents.remove(uid);
                }
            }
        }
    }

    fn observe(&mut self, key: &str, object: HeadMeta) {
        let owner_finalizing = object.is_deleting()
            && object
                .finalizers
                .iter()
                .any(|f| f == ORPHAN_FINALIZER || f == FOREGROUND_FINALIZER);
        let refs = object.owner_references;
        let references = references_hash(&refs);
        // A dependent whose owner references did not change needs no new check: its owners' existence only
        // changes through their own deletion, which marks their dependents (see `deleted`). Without this,
        // every update of a dependent (a binding's status, say) re-read it and each of its owners.
        let unchanged = !refs.is_empty()
            && self
                .owners
                .get(key)
                .is_some_and(|owned| owned.references == references);
        self.forget(key);
        if !refs.is_empty() {
            let key: Arc<str> = Arc::from(key);
            let mut uids: Vec<Arc<str>> = Vec::with_capacity(refs.len());
            for r in &refs {
                let uid = match self.dependents.get_key_value(r.uid.as_str()) {
                    Some((uid, _)) => uid.clone(),
                    None => Arc::from(r.uid.as_str()),
                };
                let keys = self.dependents.entry(uid.clone()).or_default();
                // Two references to one owner list the dependent once.
                if !keys.iter().any(|k| Arc::ptr_eq(k, &key)) {
                    keys.push(key.clone());
                }
                uids.push(uid);
            }
            self.owners.insert(
                key.clone(),
                Owned {
                    references,
                    uids: uids.into_boxed_slice(),
                },
            );
            if !unchanged {
                self.dirty_dependents.insert(key.to_string());
            }
        }
        if owner_finalizing {
            self.dirty_owners.insert(key.to_string());
        }
    }

    /// Whether an event can matter to garbage collection, decided without parsing the object
    /// (most writes carry no owner references and no deletion marks).
    fn concerns(&self, event: &store::WatchEvent) -> bool {
        let value = &event.kv.value[..];
        let mentions = |needle: &[u8]| memchr::memmem::find(value, needle).is_some();
        self.owners.contains_key(event.kv.key.as_str())
            || match event.kind {
                EventKind::Put => {
                    mentions(b"\"ownerReferences\"") || mentions(b"\"deletionTimestamp\"")
                }
                EventKind::Delete => {
                    !self.dependents.is_empty() || mentions(b"\"ownerReferences\"")
                }
            }
    }

    fn deleted(&mut self, key: &str, object: &HeadMeta, owner_keys: Vec<String>) {
        self.forget(key);
        if let Some(dependents) = self.dependents.get(object.uid.as_str()) {
            self.dirty_dependents
                .extend(dependents.iter().map(|k| k.to_string()));
        }
        self.dirty_owners.extend(owner_keys);
    }
}

/// Runs until the server's shutdown token is cancelled.
pub async fn run(server: Arc<ApiServer>) {
    crate::background::run_until_shutdown(
        &server,
        "garbage collector restarting from a full scan",
        RETRY_TICK,
        || collect(&server),
    )
    .await;
}

/// The store key of the owner `r` names, for a dependent in `namespace`.
fn owner_key(
    server: &ApiServer,
    r: &OwnerRef,
    namespace: Option<&str>,
) -> Option<(Arc<apimachinery::ResourceDef>, String)> {
    let (group, version) = match r.api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", r.api_version.as_str()),
    };
    let def = server.registry().lookup_kind(group, version, &r.kind)?;
    let key = storage::object_key(&def, namespace, &r.name);
    Some((def, key))
}

async fn collect(server: &ApiServer) -> Result<(), ApiError> {
    let mut index = Index::default();
    let mut start_after = None;
    let mut revision = None;
    loop {
        let page = server
            .store
            .range(RangeRequest {
                prefix: storage::ROOT_PREFIX.into(),
                start_after: start_after.clone(),
                limit: 1000,
                revision,
            })
            .await
            .map_err(storage::store_error)?;
        revision = Some(page.revision);
        for kv in &page.kvs {
            let as_put = store::WatchEvent {
                kind: EventKind::Put,
                kv: kv.clone(),
                prev: None,
            };
            if index.concerns(&as_put)
                && let Some(object) = HeadMeta::parse(&kv.value)
            {
                index.observe(&kv.key, object);
            }
        }
        if !page.more || page.kvs.is_empty() {
            break;
        }
        start_after = page.kvs.last().map(|kv| kv.key.clone());
    }
    let mut events = server
        .store
        .watch(storage::ROOT_PREFIX, revision.unwrap_or_default())
        .await
        .map_err(storage::store_error)?;
    loop {
        let failed = process(server, &mut index).await;
        let event = if failed {
            tokio::select! {
                event = events.next() => Some(event),
                _ = tokio::time::sleep(RETRY_TICK) => None,
            }
        } else {
            Some(events.next().await)
        };
        let mut batch = Vec::new();
        match event {
            Some(None) => return Ok(()),
            Some(Some(event)) => batch.push(event),
            None => {}
        }
        while let Some(Some(event)) = futures::FutureExt::now_or_never(events.next()) {
            batch.push(event);
        }
        for event in batch {
            let event = event.map_err(storage::store_error)?;
            if !index.concerns(&event) {
                continue;
            }
            let Some(object) = HeadMeta::parse(&event.kv.value) else {
                continue;
            };
            match event.kind {
                EventKind::Put => index.observe(&event.kv.key, object),
                EventKind::Delete => {
                    let namespace = object.namespace.as_deref();
                    let owner_keys = object
                        .owner_references
                        .iter()
                        .filter_map(|r| owner_key(server, r, namespace).map(|(_, key)| key))
                        .collect();
                    index.deleted(&event.kv.key, &object, owner_keys);
                }
            }
        }
    }
}

/// Works off the dirty sets; true if something failed and should be retried.
async fn process(server: &ApiServer, index: &mut Index) -> bool {
    let mut failed = false;
    let owners: Vec<String> = std::mem::take(&mut index.dirty_owners)
        .into_iter()
        .collect();
    for key in owners {
        if let Err(err) = process_owner(server, index, &key).await {
            tracing::debug!(%key, %err, "garbage collector: owner retry");
            index.dirty_owners.insert(key);
            failed = true;
        }
    }
    let dependents: Vec<String> = std::mem::take(&mut index.dirty_dependents)
        .into_iter()
        .collect();
    for key in dependents {
        if let Err(err) = process_dependent(server, index, &key).await {
            tracing::debug!(%key, %err, "garbage collector: dependent retry");
            index.dirty_dependents.insert(key);
            failed = true;
        }
    }
    failed
}

/// Reads a stored object by key: its def (from apiVersion/kind), value and revision.
async fn read(
    server: &ApiServer,
    key: &str,
) -> Result<Option<(Arc<apimachinery::ResourceDef>, Value)>, ApiError> {
    let Some(kv) = server.store.get(key).await.map_err(storage::store_error)? else {
        return Ok(None);
    };
    // The type first (the rest skipped unbuilt), then the object decoded once for its kind.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct TypeOf {
        #[serde(default)]
        api_version: Value,
        #[serde(default)]
        kind: Value,
    }
    let type_of: TypeOf =
        serde_json::from_slice(&kv.value).map_err(|e| ApiError::internal(e.to_string()))?;
    let api_version = type_of.api_version.as_str().unwrap_or_default();
    let kind = type_of.kind.as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let Some(def) = server.registry().lookup_kind(group, version, kind) else {
        return Ok(None);
    };
    let object = storage::decode(&def, &kv)?;
    Ok(Some((def, object)))
}

async fn process_owner(server: &ApiServer, index: &mut Index, key: &str) -> Result<(), ApiError> {
    let Some((def, owner)) = read(server, key).await? else {
        return Ok(());
    };
    if !objects::is_deleting(&owner) {
        return Ok(());
    }
    let finalizers = objects::finalizers(&owner);
    let uid = objects::uid_of(&owner).to_string();
    let dependents: Vec<String> = index
        .dependents
        .get(uid.as_str())
        .map(|keys| keys.iter().map(|k| k.to_string()).collect())
        .unwrap_or_default();
    let namespace = objects::meta_str(&owner, "namespace").map(str::to_string);
    let name = objects::name_of(&owner).to_string();
    let remove = if finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
        for dep_key in &dependents {
            let Some((dep_def, mut dependent)) = read(server, dep_key).await? else {
                continue;
            };
            let kept: Vec<Value> = objects::meta(&dependent)
                .and_then(|m| m.get("ownerReferences"))
                .and_then(Value::as_array)
                .map(|refs| {
                    refs.iter()
                        .filter(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            let meta = objects::meta_mut(&mut dependent)?;
            if kept.is_empty() {
                meta.remove("ownerReferences");
            } else {
                meta.insert("ownerReferences".into(), Value::Array(kept));
            }
            let dep_ns = objects::meta_str(&dependent, "namespace").map(str::to_string);
            let dep_name = objects::name_of(&dependent).to_string();
            update_object(
                server,
                &dep_def,
                dep_ns.as_deref(),
                &dep_name,
                dependent,
                Part::Main,
                &WriteOptions::internal(MANAGER),
            )
            .await?;
        }
        ORPHAN_FINALIZER
    } else if finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
        let mut remaining = 0;
        for dep_key in &dependents {
            let Some((dep_def, dependent)) = read(server, dep_key).await? else {
                continue;
            };
            remaining += 1;
            if objects::is_deleting(&dependent) {
                continue;
            }
            let dep_ns = objects::meta_str(&dependent, "namespace").map(str::to_string);
            let options = DeleteOptions {
                propagation: Propagation::Foreground,
                ..DeleteOptions::default()
            };
            match delete_object(
                server,
                &dep_def,
                dep_ns.as_deref(),
                objects::name_of(&dependent),
                &options,
            )
            .await
            {
                Ok(_) => {}
                Err(err) if err.code == 404 => {}
                Err(err) => return Err(err),
            }
        }
        if remaining > 0 {
            // Dependents' deletions mark this owner dirty again.
            return Ok(());
        }
        FOREGROUND_FINALIZER
    } else {
        return Ok(());
    };
    let Some((_, mut owner)) = read(server, key).await? else {
        return Ok(());
    };
    let left: Vec<String> = objects::finalizers(&owner)
        .into_iter()
        .filter(|f| f != remove)
        .collect();
    objects::set_finalizers(&mut owner, &left)?;
    update_object(
        server,
        &def,
        namespace.as_deref(),
        &name,
        owner,
        Part::Main,
        &WriteOptions::internal(MANAGER),
    )
    .await?;
    Ok(())
}

async fn process_dependent(
    server: &ApiServer,
    index: &mut Index,
    key: &str,
) -> Result<(), ApiError> {
    let Some((def, dependent)) = read(server, key).await? else {
        return Ok(());
    };
    if objects::is_deleting(&dependent) {
        return Ok(());
    }
    let refs = owner_refs(&dependent);
    if refs.is_empty() {
        return Ok(());
    }
    let namespace = objects::meta_str(&dependent, "namespace").map(str::to_string);
    let mut any_present = false;
    let mut any_foreground = false;
    for r in &refs {
        let Some((owner_def, owner_key)) = owner_key(server, r, namespace.as_deref()) else {
            // An owner of a kind this server does not serve: leave the dependent alone.
            any_present = true;
            continue;
        };
        let _ = owner_def;
        match read(server, &owner_key).await? {
            Some((_, owner)) if objects::uid_of(&owner) == r.uid => {
                if objects::is_deleting(&owner)
                    && objects::finalizers(&owner)
                        .iter()
                        .any(|f| f == FOREGROUND_FINALIZER)
                {
                    any_foreground = true;
                    index.dirty_owners.insert(owner_key);
                } else {
                    any_present = true;
                }
            }
            _ => {}
        }
    }
    if any_present {
        return Ok(());
    }
    let propagation = if any_foreground {
        Propagation::Foreground
    } else {
        Propagation::Background
    };
    let options = DeleteOptions {
        propagation,
        ..DeleteOptions::default()
    };
    match delete_object(
        server,
        &def,
        namespace.as_deref(),
        objects::name_of(&dependent),
        &options,
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(err) if err.code == 404 => Ok(()),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn head(object: &Value) -> HeadMeta {
        HeadMeta::parse(&serde_json::to_vec(object).unwrap()).unwrap()
    }

    fn dependent(owner_uids: &[&str]) -> HeadMeta {
        head(&dependent_json(owner_uids))
    }

    fn dependent_json(owner_uids: &[&str]) -> Value {
        let refs: Vec<Value> = owner_uids
            .iter()
            .map(|uid| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": format!("owner-{uid}"), "uid": uid}))
            .collect();
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "d", "namespace": "ns", "uid": "d-uid", "ownerReferences": refs}})
    }

    fn owner(uid: &str) -> HeadMeta {
        head(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("owner-{uid}"), "namespace": "ns", "uid": uid}}),
        )
    }

    #[test]
    fn a_dependent_is_checked_again_only_when_its_owners_change_or_one_goes() {
        let mut index = Index::default();
        index.observe("d", dependent(&["a"]));
        assert!(
            index.dirty_dependents.contains("d"),
            "new dependents are checked"
        );
        index.dirty_dependents.clear();

        index.observe("d", dependent(&["a"]));
        assert!(
            index.dirty_dependents.is_empty(),
            "same owners: nothing to check"
        );

        index.observe("d", dependent(&["a", "b"]));
        assert!(index.dirty_dependents.contains("d"), "an owner was added");
        index.dirty_dependents.clear();

        index.deleted("owner-b", &owner("b"), Vec::new());
        assert!(index.dirty_dependents.contains("d"), "an owner went away");
        index.dirty_dependents.clear();

        // Deleted and created again under the same key: a new object, checked again.
        index.deleted("d", &dependent(&["a", "b"]), Vec::new());
        index.observe("d", dependent(&["a", "b"]));
        assert!(index.dirty_dependents.contains("d"));
    }

    #[test]
    fn the_index_forgets_what_a_dependent_no_longer_references() {
        let mut index = Index::default();
        index.observe("d", dependent(&["a", "b", "a"]));
        index.observe("e", dependent(&["a"]));
        let keys = |index: &Index, uid: &str| -> Vec<String> {
            index
                .dependents
                .get(uid)
                .map(|keys| keys.iter().map(|k| k.to_string()).collect())
                .unwrap_or_default()
        };
        assert_eq!(
            keys(&index, "a"),
            ["d", "e"],
            "a repeated owner lists its dependent once"
        );
        assert_eq!(keys(&index, "b"), ["d"]);

        index.observe("d", dependent(&[]));
        assert_eq!(keys(&index, "a"), ["e"]);
        assert!(
            !index.dependents.contains_key("b"),
            "an owner left without dependents is dropped"
        );
        assert!(!index.owners.contains_key("d"));

        index.deleted("e", &dependent(&["a"]), Vec::new());
        assert!(index.dependents.is_empty() && index.owners.is_empty());
    }

    #[test]
    fn the_head_reads_ownership_and_deletion_marks_and_takes_null_as_absent() {
        let parsed = head(&json!({"kind": "Secret", "spec": {"big": [1, 2, 3]},
            "metadata": {"namespace": "ns", "uid": "u", "finalizers": ["orphan"],
                         "deletionTimestamp": "2026-12-01T00:00:00Z",
                         "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "o-uid"}]}}));
        assert_eq!(parsed.namespace.as_deref(), Some("ns"));
        assert_eq!(parsed.uid, "u");
        assert!(parsed.is_deleting());
        assert_eq!(parsed.owner_references.len(), 1);
        assert_eq!(parsed.owner_references[0].uid, "o-uid");

        let nulls = head(
            &json!({"metadata": {"finalizers": null, "ownerReferences": null,
                                              "deletionTimestamp": null, "uid": null}}),
        );
        assert!(!nulls.is_deleting());
        assert!(nulls.owner_references.is_empty() && nulls.finalizers.is_empty());
        assert!(HeadMeta::parse(b"{not json").is_none());
        let odd = head(
            &json!({"metadata": {"ownerReferences": [{"uid": 5, "name": "o"}], "finalizers": [1, "f"]}}),
        );
        assert_eq!(
            odd.owner_references[0].uid, "",
            "a non-string field reads as empty"
        );
        assert_eq!(odd.owner_references[0].name, "o");
        assert_eq!(odd.finalizers, vec!["f".to_string()]);

        let mut index = Index::default();
        index.observe("o", parsed);
        assert!(
            index.dirty_owners.contains("o"),
            "an orphaning owner is worked on"
        );
    }
}
