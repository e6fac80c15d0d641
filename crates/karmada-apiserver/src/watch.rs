//! Watch: a stream of newline-delimited JSON events over the store's watch stream.
//!
//! Semantics (kube-apiserver's): resourceVersion ""/"0" (or sendInitialEvents) first sends a
//! synthetic ADDED per current match; N sends only events after N; a compacted N is 410.
//! Selectors turn match transitions into ADDED/DELETED. Bookmarks carry the newest revision the
//! watch has *seen* (delivered or filtered out), so resuming from one never skips an event.
//! The stream owns no task: dropping it (client gone) drops the store watch; it ends on
//! `timeoutSeconds` or server shutdown. Writers never wait on it (the store buffers).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::{ApiError, ResourceDef};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use store::{EventKind, RangeRequest, StoreError, WatchStream};

use crate::content::Output;
use crate::selectors::Filter;
use crate::server::ApiServer;
use crate::storage;
use apiserver_views::conversion;

/// The query parameters of a watch.
#[derive(Clone, Debug)]
pub struct WatchParams {
    pub filter: Filter,
    pub resource_version: Option<String>,
    pub timeout: Option<Duration>,
    pub bookmarks: bool,
    pub send_initial_events: bool,
}

impl WatchParams {
    pub fn parse(kind: &str, query: impl Fn(&str) -> Option<String>) -> Result<Self, ApiError> {
        let filter = Filter::parse(
            query("labelSelector").as_deref(),
            query("fieldSelector").as_deref(),
            kind,
        )?;
        let timeout = match query("timeoutSeconds").filter(|t| !t.is_empty()) {
            Some(t) => Some(Duration::from_secs(t.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!(
                    "timeoutSeconds: Invalid value: \"{t}\": must be a non-negative integer"
                ))
            })?))
            // Zero means "no timeout asked for", as upstream treats it.
            .filter(|t| !t.is_zero()),
            None => None,
        };
        let flag = |name: &str| query(name).is_some_and(|v| v == "true" || v == "1");
        let send_initial_events = flag("sendInitialEvents");
        if send_initial_events && query("resourceVersionMatch").as_deref() != Some("NotOlderThan") {
            let errors = [apimachinery::FieldError::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )];
            return Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", &errors));
        }
        Ok(Self {
            filter,
            resource_version: query("resourceVersion").filter(|rv| !rv.is_empty()),
            timeout,
            bookmarks: flag("allowWatchBookmarks"),
            send_initial_events,
        })
    }
}

/// How each event's object is rendered.
#[derive(Clone)]
pub struct Render {
    pub def: Arc<ResourceDef>,
    pub output: Output,
    pub include: crate::content::Include,
}

impl Render {
    fn object(&self, object: Value) -> Value {
        match self.output {
            Output::Json => object,
            Output::PartialMetadata => crate::content::partial_metadata(&object),
            Output::Table => crate::respond::render_table(
                &self.def,
                std::slice::from_ref(&object),
                self.include,
                None,
            ),
        }
    }
}

fn line(kind: &str, object: Value) -> Bytes {
    let mut text = json!({"type": kind, "object": object}).to_string();
    text.push('\n');
    Bytes::from(text)
}

struct State {
    server: Arc<ApiServer>,
    render: Render,
    params: WatchParams,
    pending: VecDeque<Bytes>,
    events: WatchStream,
    seen: u64,
    deadline: Option<tokio::time::Instant>,
    bookmark_every: Duration,
    next_bookmark: tokio::time::Instant,
    done: bool,
}

/// Opens a watch. Errors that happen before streaming starts (bad revision, compaction) are
/// returned as errors so the client gets a plain Status response.
pub async fn open(
    server: Arc<ApiServer>,
    namespace: Option<&str>,
    params: WatchParams,
    render: Render,
) -> Result<impl Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static, ApiError>
{
    let def = Arc::clone(&render.def);
    let prefix = storage::collection_prefix(&def, namespace);
    let requested = match &params.resource_version {
        Some(rv) => storage::parse_resource_version(rv)?,
        None => 0,
    };
    let mut pending = VecDeque::new();
    let start = if requested == 0 || params.send_initial_events {
        // Initial state: one consistent snapshot, then events after it.
        let mut revision = None;
        let mut start_after = None;
        loop {
            let page = server
                .store
                .range(RangeRequest {
                    prefix: prefix.clone(),
                    start_after: start_after.clone(),
                    limit: 1000,
                    revision,
                })
                .await
                .map_err(storage::store_error)?;
            revision = Some(page.revision);
            for kv in &page.kvs {
                if params.filter.labels_exclude(&kv.value) {
                    continue;
                }
                let object = storage::decode(&def, kv)?;
                if params.filter.matches(&object) {
                    pending.push_back(line("ADDED", render.object(object)));
                }
            }
            if !page.more || page.kvs.is_empty() {
                break;
            }
            start_after = page.kvs.last().map(|kv| kv.key.clone());
        }
        let revision = revision.unwrap_or_default();
        if params.send_initial_events {
            pending.push_back(line("BOOKMARK", bookmark_object(&def, revision, true)));
        }
        revision
    } else {
        requested
    };
    let events = match server.store.watch(&prefix, start).await {
        Ok(events) => events,
        Err(StoreError::Compacted {
            requested,
            compacted,
        }) => return Err(ApiError::expired(requested, compacted)),
        Err(err) => return Err(storage::store_error(err)),
    };
    let now = tokio::time::Instant::now();
    let bookmark_every = server.options.bookmark_interval;
    let state = State {
        deadline: params.timeout.map(|t| now + t),
        server,
        render,
        params,
        pending,
        events,
        seen: start,
        bookmark_every,
        next_bookmark: now + bookmark_every,
        done: false,
    };
    state
        .server
        .metrics
        .watcher_added(&state.render.def.group, &state.render.def.kind);
    Ok(futures::stream::unfold(state, next_chunk))
}

impl Drop for State {
    fn drop(&mut self) {
        let def = &self.render.def;
        self.server.metrics.watcher_removed(&def.group, &def.kind);
    }
}

fn bookmark_object(def: &ResourceDef, revision: u64, initial_end: bool) -> Value {
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    json!({"kind": def.kind, "apiVersion": def.api_version(), "metadata": metadata})
}

async fn next_chunk(mut state: State) -> Option<(Result<Bytes, std::convert::Infallible>, State)> {
    loop {
        if let Some(chunk) = state.pending.pop_front() {
            return Some((Ok(chunk), state));
        }
        if state.done {
            return None;
        }
        let deadline = state.deadline;
        let shutdown = state.server.options.cancel.clone();
        tokio::select! {
            _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => {
                state.done = true;
            }
            _ = shutdown.cancelled() => {
                state.done = true;
            }
            _ = tokio::time::sleep_until(state.next_bookmark), if state.params.bookmarks => {
                state.next_bookmark = tokio::time::Instant::now() + state.bookmark_every;
                let object = bookmark_object(&state.render.def, state.seen, false);
                state.pending.push_back(line("BOOKMARK", object));
            }
            event = state.events.next() => match event {
                None => state.done = true,
                Some(Err(StoreError::Compacted { requested, compacted })) => {
                    state.pending.push_back(line("ERROR", ApiError::expired(requested, compacted).to_status()));
                    state.done = true;
                }
                Some(Err(err)) => {
                    state.pending.push_back(line("ERROR", storage::store_error(err).to_status()));
                    state.done = true;
                }
                Some(Ok(event)) => {
                    state.seen = state.seen.max(event.revision());
                    if let Some(chunk) = translate(&state, &event) {
                        state.server.metrics.watch_event(&state.render.def.kind);
                        state.pending.push_back(chunk);
                    }
                }
            },
        }
    }
}

/// A store event as the watch event this watcher sees (or none, if it concerns no match).
fn translate(state: &State, event: &store::WatchEvent) -> Option<Bytes> {
    let def = &state.render.def;
    let filter = &state.params.filter;
    // Selected by labels alone (or not at all): the stored bytes decide, and every watcher of the kind
    // that renders plain JSON sends the same encoded object.
    if let Some(kind) = kind_by_stored_labels(filter, event) {
        let kind = kind?;
        match state.render.output {
            // The common informer case: encode each event's object once and share it.
            Output::Json => {
                let object = state.server.encoded_objects.get_or_encode(def, &event.kv)?;
                return Some(shared_line(kind, &object));
            }
            // A metadata informer reads `metadata` alone; the rest is skipped unparsed.
            Output::PartialMetadata if conversion::storage_version(def).is_none() => {
                return Some(line(kind, stored_partial_metadata(&event.kv)?));
            }
            _ => {}
        }
    }
    // Neither side's labels match: nothing to send, and nothing worth decoding.
    if filter.labels_exclude(&event.kv.value)
        && event
            .prev
            .as_ref()
            .is_none_or(|prev| filter.labels_exclude(&prev.value))
    {
        return None;
    }
    let current = storage::decode(def, &event.kv).ok()?;
    let now_matches = filter.matches(&current);
    let before = match event.kind {
        EventKind::Delete => None,
        EventKind::Put => Some(
            event
                .prev
                .as_ref()
                .and_then(|kv| storage::decode(def, kv).ok())
                .is_some_and(|before| filter.matches(&before)),
        ),
    };
    let kind = event_type(before, now_matches)?;
    Some(line(kind, state.render.object(current)))
}

/// The event's type for a watcher whose selection the stored labels decide (see
/// [`Filter::selects_stored`]): `Some(None)` when it is not sent to this watcher at
/// all, `None` when the objects must be decoded to tell.
fn kind_by_stored_labels(
    filter: &Filter,
    event: &store::WatchEvent,
) -> Option<Option<&'static str>> {
    let now_matches = filter.selects_stored(&event.kv.value)?;
    let before = match (event.kind, &event.prev) {
        (EventKind::Delete, _) => None,
        (EventKind::Put, None) => Some(false),
        (EventKind::Put, Some(prev)) => Some(filter.selects_stored(&prev.value)?),
    };
    Some(event_type(before, now_matches))
}

/// A watch event's type from whether the watcher selected the object before the change (`None` for a
/// deletion) and whether it selects it now; `None` when the change is not the watcher's to see. An
/// object that leaves the selection is DELETED for it, one that enters it ADDED, as kube-apiserver
/// tells a selecting watcher.
fn event_type(selected_before: Option<bool>, selected_now: bool) -> Option<&'static str> {
    match (selected_before, selected_now) {
        (None, true) | (Some(true), false) => Some("DELETED"),
        (None, false) | (Some(false), false) => None,
        (Some(true), true) => Some("MODIFIED"),
        (Some(false), true) => Some("ADDED"),
    }
}

/// The PartialObjectMetadata of a stored object, parsing its `metadata` only.
fn stored_partial_metadata(kv: &store::KeyValue) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct MetadataOnly {
        #[serde(default)]
        metadata: serde_json::Map<String, Value>,
    }
    let MetadataOnly { mut metadata } = serde_json::from_slice(&kv.value).ok()?;
    metadata.insert(
        "resourceVersion".into(),
        Value::String(kv.mod_revision.to_string()),
    );
    Some(crate::content::partial_metadata_of(Value::Object(metadata)))
}

/// `{"type":KIND,"object":OBJECT}\n` around an already encoded object.
fn shared_line(kind: &str, object: &[u8]) -> Bytes {
    let mut text = Vec::with_capacity(object.len() + 32);
    text.extend_from_slice(b"{\"type\":\"");
    text.extend_from_slice(kind.as_bytes());
    text.extend_from_slice(b"\",\"object\":");
    text.extend_from_slice(object);
    text.extend_from_slice(b"}\n");
    Bytes::from(text)
}

/// Recently encoded watch objects, keyed by store key, revision and served version, so N
/// watchers of one kind decode and encode each event once instead of N times. Bounded by bytes and
/// by entries, the oldest evicted first: watchers of one kind send an event within moments of each
/// other, so a short window gets nearly every hit, and a watcher that lags further behind only
/// encodes again. (A count bound alone let it hold ~20 MiB of large objects, more than the watch
/// ring itself.)
#[derive(Default)]
pub struct EncodedObjects {
    inner: parking_lot::Mutex<EncodedInner>,
}

#[derive(Default)]
struct EncodedInner {
    entries: std::collections::HashMap<(String, u64, String), Bytes>,
    order: VecDeque<(String, u64, String)>,
    /// Sum of the cached encodings' lengths.
    bytes: usize,
}

const ENCODED_CAPACITY: usize = 4096;
const ENCODED_BYTES: usize = 4 << 20;

impl EncodedInner {
    fn insert(&mut self, key: (String, u64, String), bytes: Bytes) {
        let added = bytes.len();
        if let Some(replaced) = self.entries.insert(key.clone(), bytes) {
            // A race encoded it twice; the order already holds the key.
            self.bytes = self.bytes - replaced.len() + added;
            return;
        }
        self.order.push_back(key);
        self.bytes += added;
        while self.order.len() > ENCODED_CAPACITY || self.bytes > ENCODED_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(evicted) = self.entries.remove(&old) {
                self.bytes -= evicted.len();
            }
        }
    }
}

impl EncodedObjects {
    fn get_or_encode(&self, def: &ResourceDef, kv: &store::KeyValue) -> Option<Bytes> {
        let key = (kv.key.clone(), kv.mod_revision, def.api_version());
        if let Some(found) = self.inner.lock().entries.get(&key) {
            return Some(found.clone());
        }
        // Encode outside the lock; a race only encodes twice. Usually the stored text with the resourceVersion
        // spliced in, without parsing it.
        let json = storage::stamped_json(def, kv).ok()?;
        // Exactly as long as the text (the cache is bounded by lengths; a serializer's buffer is up to twice).
        let bytes = Bytes::from(json.into_bytes().into_boxed_slice());
        self.inner.lock().insert(key, bytes.clone());
        Some(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_event_carries_the_status_in_kube_apiservers_bytes() {
        let event = line("ERROR", ApiError::expired(3, 17).to_status());
        assert_eq!(
            std::str::from_utf8(&event).unwrap(),
            "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: 3 (17)\",\"reason\":\"Expired\",\"code\":410}}\n"
        );
    }

    fn key(i: u64) -> (String, u64, String) {
        ("/registry/works/w".to_string(), i, "v1alpha1".to_string())
    }

    #[test]
    fn encoded_objects_are_bounded_by_bytes_and_entries_oldest_first() {
        let mut cache = EncodedInner::default();
        let large = Bytes::from(vec![b'x'; 100 << 10]);
        for i in 0..100 {
            cache.insert(key(i), large.clone());
            assert!(cache.bytes <= ENCODED_BYTES, "{} bytes", cache.bytes);
            assert_eq!(
                cache.bytes,
                cache.entries.values().map(Bytes::len).sum::<usize>()
            );
        }
        assert_eq!(cache.entries.len(), ENCODED_BYTES / large.len());
        assert!(cache.entries.contains_key(&key(99)), "the newest stays");
        assert!(
            !cache.entries.contains_key(&key(0)),
            "the oldest went first"
        );

        // Encoded twice by a race: counted once.
        cache.insert(key(99), large.clone());
        assert_eq!(
            cache.bytes,
            cache.entries.values().map(Bytes::len).sum::<usize>()
        );
        assert_eq!(cache.order.len(), cache.entries.len());

        let mut small = EncodedInner::default();
        for i in 0..(ENCODED_CAPACITY as u64 + 10) {
            small.insert(key(i), Bytes::from_static(b"{}"));
        }
        assert_eq!(small.entries.len(), ENCODED_CAPACITY);
        assert_eq!(small.order.len(), ENCODED_CAPACITY);
    }
}
