//! The controller loop: keeps the observed objects up to date from the watchers, runs the pure
//! controllers level-triggered (on every change, on fault changes and at the wake-up times they
//! ask for) and sends their writes in order.
//!
//! Consistency. After a successful write the loop records the server's answer at once, so the
//! next pass never repeats a write whose watch event has not arrived yet (creating a second pod
//! for the same replica, say). Watch events older than what is known (by `resourceVersion`) are
//! ignored, and an object this loop deleted stays deleted until the server shows a newer
//! version of it. A write refused as stale (409) is retried by a later pass, after the watch
//! has delivered the newer object.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::api::WATCHED;
use crate::config::SimConfig;
use crate::dns::DnsTable;
use crate::faults::Faults;
use crate::meta;
use crate::naming::SplitMix64;
use crate::objects::{ObjectKey, Objects};
use crate::runtime::watch::Observed;
use crate::runtime::writer::{self, WriteError, Written};
use crate::{nodes, scale_mode, sim};

/// Passes in a row without a new event before the loop waits for one: a controller that
/// keeps writing is logged rather than spinning.
const MAX_PASSES_IN_A_ROW: usize = 50;
/// How soon a pass whose writes were stale runs again (the watch usually delivers first).
const RETRY_AFTER_CONFLICT: Duration = Duration::from_millis(100);
/// How soon a pass whose writes failed otherwise runs again.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(1);

/// What the loop drives.
pub struct ControllerOptions {
    pub config: SimConfig,
    /// Workload status from capacity, without Pod objects ([`scale_mode`]).
    pub scale_mode: bool,
    pub client: kube::Client,
    pub faults: watch::Receiver<Faults>,
    pub cancel: CancellationToken,
    pub seed: u64,
    /// Where the DNS records are published after each pass that changed a Service, EndpointSlice or
    /// ServiceImport (the DNS server answers from the latest).
    pub dns: Option<watch::Sender<Arc<DnsTable>>>,
}

/// Kinds the DNS records are built from.
const DNS_KINDS: [&str; 3] = ["Service", "EndpointSlice", "ServiceImport"];

/// The observed objects plus what the loop knows beyond them.
#[derive(Default)]
struct Observation {
    objects: Objects,
    /// Objects this loop deleted, with their last version.
    deleted: BTreeMap<ObjectKey, u64>,
    /// Kinds whose initial list has completed.
    synced: HashSet<&'static str>,
    /// A relist in progress per kind.
    relisting: BTreeMap<&'static str, Vec<Value>>,
    /// Keys whose object changed since the last pass (scale mode reconciles only those).
    changed: BTreeSet<ObjectKey>,
}

fn version(object: &Value) -> Option<u64> {
    meta::str_at(object, "/metadata/resourceVersion")
        .parse()
        .ok()
}

impl Observation {
    /// Records an object unless a newer version (or its deletion) is already known.
    fn observe(&mut self, object: Value) {
        let key = ObjectKey::of(&object);
        let incoming = version(&object);
        if let (Some(&deleted_at), Some(incoming)) = (self.deleted.get(&key), incoming) {
            if incoming <= deleted_at {
                return;
            }
            self.deleted.remove(&key);
        }
        if let Some(known) = self.objects.get(&key).and_then(version)
            && incoming.is_some_and(|incoming| incoming < known)
        {
            return;
        }
        self.changed.insert(key);
        self.objects.insert(object);
    }

    fn forget(&mut self, object: &Value) {
        let key = ObjectKey::of(object);
        let gone = version(object);
        if let Some(known) = self.objects.get(&key).and_then(version)
            && gone.is_some_and(|gone| gone < known)
        {
            // A newer object of the same name exists already (recreated).
            return;
        }
        self.objects.remove(&key);
        self.deleted.remove(&key);
        self.changed.insert(key);
    }

    fn apply(&mut self, observed: Observed) {
        match observed {
            Observed::ListStart(kind) => {
                self.relisting.insert(kind, Vec::new());
            }
            Observed::Listed(object) => {
                let kind = WATCHED
                    .iter()
                    .find(|info| object.get("kind").and_then(Value::as_str) == Some(info.kind))
                    .map(|info| info.kind);
                match kind.and_then(|kind| self.relisting.get_mut(kind)) {
                    Some(buffer) => buffer.push(object),
                    None => self.observe(object),
                }
            }
            Observed::ListDone(kind) => {
                let listed = self.relisting.remove(kind).unwrap_or_default();
                let stale: Vec<ObjectKey> = self.objects.list(kind).map(ObjectKey::of).collect();
                for key in stale {
                    self.objects.remove(&key);
                    self.changed.insert(key);
                }
                for object in listed {
                    self.observe(object);
                }
                self.synced.insert(kind);
            }
            Observed::Applied(object) => self.observe(object),
            Observed::Deleted(object) => self.forget(&object),
        }
    }

    fn record(&mut self, written: Written) {
        match written {
            Written::Object(object) => self.observe(object),
            Written::Deleted(key, last) => {
                let known = self.objects.remove(&key);
                self.changed.insert(key.clone());
                let at = last
                    .as_ref()
                    .and_then(version)
                    .into_iter()
                    .chain(known.as_ref().and_then(version))
                    .max();
                if let Some(at) = at {
                    self.deleted.insert(key, at);
                }
            }
        }
    }
}

/// Runs until cancelled or until every watcher is gone.
pub async fn run(options: ControllerOptions, mut events: mpsc::Receiver<Observed>) {
    let ControllerOptions {
        config,
        scale_mode,
        client,
        mut faults,
        cancel,
        seed,
        dns,
    } = options;
    let mut dns_published = false;
    let mut randomness = SplitMix64(seed);
    let mut observation = Observation::default();
    let mut scale_state = scale_mode::ScaleModeState::new();
    let mut wake: Option<Instant> = None;
    let mut passes_in_a_row = 0usize;
    let mut dirty = false;
    loop {
        if dirty {
            // More to settle: take what arrived meanwhile, without waiting.
            if cancel.is_cancelled() {
                return;
            }
            while let Ok(event) = events.try_recv() {
                observation.apply(event);
            }
        } else {
            let sleep_until = wake.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return,
                event = events.recv() => match event {
                    Some(event) => {
                        observation.apply(event);
                        while let Ok(event) = events.try_recv() {
                            observation.apply(event);
                        }
                        passes_in_a_row = 0;
                    }
                    None => return,
                },
                changed = faults.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    passes_in_a_row = 0;
                }
                _ = tokio::time::sleep_until(sleep_until), if wake.is_some() => {
                    wake = None;
                }
            }
        }
        if observation.synced.len() < WATCHED.len() {
            dirty = false;
            continue;
        }
        dirty = false;
        let now = Timestamp::now();
        let current_faults = faults.borrow_and_update().clone();
        let changed = std::mem::take(&mut observation.changed);
        if let Some(dns) = &dns
            && (!dns_published
                || changed
                    .iter()
                    .any(|key| DNS_KINDS.contains(&key.kind.as_str())))
        {
            dns.send_replace(Arc::new(DnsTable::build(&observation.objects)));
            dns_published = true;
        }
        let outcome = if scale_mode {
            let mut outcome = nodes::reconcile(&observation.objects, &config, &current_faults, now);
            outcome.merge(scale_state.reconcile(
                &observation.objects,
                &changed,
                &current_faults,
                now,
            ));
            outcome
        } else {
            sim::reconcile_all(
                &observation.objects,
                &config,
                &current_faults,
                now,
                &mut randomness,
            )
        };
        for error in &outcome.errors {
            tracing::debug!(cluster = %config.name, error, "object skipped");
        }
        let mut retry: Option<Duration> = None;
        let mut wrote = false;
        let mut refused: HashSet<ObjectKey> = HashSet::new();
        for write in &outcome.writes {
            let key = write.key();
            if refused.contains(&key) {
                continue;
            }
            let result = tokio::select! {
                _ = cancel.cancelled() => return,
                result = writer::send(&client, &observation.objects, write, now) => result,
            };
            match result {
                Ok(written) => {
                    observation.record(written);
                    wrote = true;
                }
                Err(WriteError::Stale { key, message }) => {
                    tracing::debug!(cluster = %config.name, %key, message, "stale write; retrying");
                    retry =
                        Some(retry.map_or(RETRY_AFTER_CONFLICT, |r| r.min(RETRY_AFTER_CONFLICT)));
                    refused.insert(key);
                }
                Err(WriteError::Gone { key }) => {
                    refused.insert(key);
                }
                Err(error) => {
                    tracing::warn!(cluster = %config.name, %error, "write failed");
                    retry = Some(retry.unwrap_or(RETRY_AFTER_ERROR));
                    refused.insert(key);
                }
            }
        }
        wake = next_wake(outcome.requeue_at, now, retry);
        if wrote {
            passes_in_a_row += 1;
            if passes_in_a_row < MAX_PASSES_IN_A_ROW {
                // Writes can enable further writes (a new ReplicaSet gets pods): settle now.
                dirty = true;
            } else {
                tracing::warn!(cluster = %config.name, "controllers keep writing; pausing until the next change");
            }
        }
    }
}

/// The earlier of the controllers' requested time and a retry.
fn next_wake(
    requeue_at: Option<Timestamp>,
    now: Timestamp,
    retry: Option<Duration>,
) -> Option<Instant> {
    let requested = requeue_at.map(|at| {
        let wait = at.duration_since(now).try_into().unwrap_or(Duration::ZERO);
        // A little late rather than early: the controllers compare against their deadline.
        Instant::now() + wait + Duration::from_millis(5)
    });
    let retry = retry.map(|r| Instant::now() + r);
    match (requested, retry) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, version: &str) -> Value {
        json!({"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "resourceVersion": version}})
    }

    #[test]
    fn older_watch_events_never_overwrite_newer_knowledge() {
        let mut observation = Observation::default();
        observation.observe(pod("a", "5"));
        observation.observe(pod("a", "3"));
        let key = ObjectKey::new("Pod", "ns", "a");
        assert_eq!(
            version(observation.objects.get(&key).expect("known")),
            Some(5)
        );

        observation.record(Written::Deleted(key.clone(), Some(pod("a", "6"))));
        observation.apply(Observed::Applied(pod("a", "5")));
        assert!(
            observation.objects.get(&key).is_none(),
            "deleted stays deleted"
        );
        observation.apply(Observed::Applied(pod("a", "9")));
        assert!(
            observation.objects.get(&key).is_some(),
            "a recreated object is seen"
        );
        observation.apply(Observed::Deleted(pod("a", "6")));
        assert!(
            observation.objects.get(&key).is_some(),
            "the old deletion does not remove it"
        );
    }

    #[test]
    fn a_relist_replaces_every_object_of_its_kind() {
        let mut observation = Observation::default();
        observation.observe(pod("gone", "1"));
        observation
            .observe(json!({"kind": "Node", "metadata": {"name": "n", "resourceVersion": "2"}}));
        observation.apply(Observed::ListStart("Pod"));
        observation.apply(Observed::Listed(pod("kept", "3")));
        assert!(!observation.synced.contains("Pod"));
        observation.apply(Observed::ListDone("Pod"));
        let pods: Vec<&str> = observation.objects.list("Pod").map(meta::name).collect();
        assert_eq!(pods, vec!["kept"]);
        assert_eq!(observation.objects.list("Node").count(), 1);
        assert!(observation.synced.contains("Pod"));
    }
}
