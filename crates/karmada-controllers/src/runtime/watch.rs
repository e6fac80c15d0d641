//! Reading a `kube::runtime::watcher` stream inside a controller's own watch loop.

use futures::{Stream, StreamExt};
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;

/// The next event of `stream`; `None` once `cancel` fires or the stream ends. Errors are logged and skipped:
/// the stream's backoff reconnects and relists, which the loop sees as ordinary events.
pub async fn next_event<K, S>(
    stream: &mut S,
    cancel: &CancellationToken,
    what: &str,
    kind: &str,
) -> Option<watcher::Event<K>>
where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Unpin,
{
    loop {
        let event = tokio::select! {
            () = cancel.cancelled() => return None,
            event = stream.next() => event,
        };
        match event? {
            Ok(event) => return Some(event),
            Err(err) => tracing::debug!(%err, kind = %kind, "{what} watch error; retrying"),
        }
    }
}

/// Drops `managedFields` from an object about to enter a controller's cache: they are often as large as
/// the rest of the object, no controller reads them, and a PUT without them keeps the stored ones.
pub fn without_managed_fields(object: &mut kube::api::DynamicObject) {
    object.metadata.managed_fields = None;
}
