//! One watch of the ResourceBindings a benchmark creates, shared by the runs that time bindings.

use std::future::Future;

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;

/// Spawns a watch of the ResourceBindings in `namespace` that hands each one added or changed to `seen`, until
/// `stop` or the end of the stream.
pub fn watch<F, Fut>(client: &kube::Client, namespace: &str, stop: &CancellationToken, mut seen: F)
where
    F: FnMut(DynamicObject) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha2", "ResourceBinding"),
        "resourcebindings",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let stop = stop.clone();
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, watcher::Config::default()).boxed();
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => return,
                e = stream.next() => e,
            };
            let Some(event) = event else { return };
            if let Ok(watcher::Event::Apply(binding) | watcher::Event::InitApply(binding)) = event {
                seen(binding).await;
            }
        }
    });
}

/// The name of the template a binding was made for.
pub fn template(binding: &DynamicObject) -> Option<String> {
    binding.data["spec"]["resource"]["name"]
        .as_str()
        .map(str::to_string)
}
