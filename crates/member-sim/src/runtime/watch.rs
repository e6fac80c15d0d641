//! Watches every kind in [`api::WATCHED`] through the client and forwards what it sees to the
//! controller loop as JSON, with `kind` and `apiVersion` always set (list items may omit them).
//!
//! One task per kind, each a kube-runtime watcher (list, then watch, relisting with backoff
//! after errors). The channel is bounded: a slow controller loop slows the watchers down
//! rather than growing memory.

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::api::ResourceInfo;

/// One observation of one kind.
#[derive(Debug)]
pub enum Observed {
    /// A (re)list of `kind` starts; the objects that follow in [`Observed::Listed`] replace
    /// every known object of that kind at [`Observed::ListDone`].
    ListStart(&'static str),
    Listed(Value),
    ListDone(&'static str),
    Applied(Value),
    Deleted(Value),
}

fn api_resource(info: &ResourceInfo) -> ApiResource {
    let api_version = if info.group.is_empty() {
        info.version.to_string()
    } else {
        format!("{}/{}", info.group, info.version)
    };
    ApiResource {
        group: info.group.to_string(),
        version: info.version.to_string(),
        api_version,
        kind: info.kind.to_string(),
        plural: info.resource.to_string(),
    }
}

fn to_value(info: &ResourceInfo, resource: &ApiResource, object: DynamicObject) -> Option<Value> {
    let mut value = serde_json::to_value(object).ok()?;
    let fields = value.as_object_mut()?;
    fields.insert("kind".into(), json!(info.kind));
    fields.insert("apiVersion".into(), json!(resource.api_version));
    Some(value)
}

/// Watches one kind cluster-wide until `cancel` or until the receiver is gone.
pub async fn watch_kind(
    client: kube::Client,
    info: &'static ResourceInfo,
    sender: mpsc::Sender<Observed>,
    cancel: CancellationToken,
) {
    let resource = api_resource(info);
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    loop {
        let event = tokio::select! {
            _ = cancel.cancelled() => return,
            event = stream.next() => event,
        };
        let observed = match event {
            None => return,
            Some(Err(e)) => {
                tracing::debug!(kind = info.kind, error = %e, "watch failed; retrying");
                continue;
            }
            Some(Ok(Event::Init)) => Observed::ListStart(info.kind),
            Some(Ok(Event::InitDone)) => Observed::ListDone(info.kind),
            Some(Ok(Event::InitApply(object))) => match to_value(info, &resource, object) {
                Some(value) => Observed::Listed(value),
                None => continue,
            },
            Some(Ok(Event::Apply(object))) => match to_value(info, &resource, object) {
                Some(value) => Observed::Applied(value),
                None => continue,
            },
            Some(Ok(Event::Delete(object))) => match to_value(info, &resource, object) {
                Some(value) => Observed::Deleted(value),
                None => continue,
            },
        };
        let sent = tokio::select! {
            _ = cancel.cancelled() => return,
            sent = sender.send(observed) => sent,
        };
        if sent.is_err() {
            return;
        }
    }
}
