//! The loop of a controller that reconciles one Karmada kind read as `DynamicObject`s through kube-runtime's
//! `Controller`: one watch, `concurrency` reconciles at once, each timed into the controller's reconcile metrics
//! under Karmada's controller name, errors requeued by the controller's own policy. Controllers whose triggers
//! are more than their own kind's watch build their `Controller` themselves.

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;

use super::error::ControllerError;
use super::resources;

/// Runs `reconcile` over every object of `resource` until `cancel` fires.
#[allow(clippy::too_many_arguments)]
pub async fn run<C, F, Fut, P>(
    client: &kube::Client,
    resource: ApiResource,
    name: &'static str,
    concurrency: u16,
    reconcile: F,
    error_policy: P,
    context: Arc<C>,
    cancel: CancellationToken,
) where
    C: Send + Sync + 'static,
    F: Fn(Arc<DynamicObject>, Arc<C>) -> Fut,
    Fut: Future<Output = Result<Action, ControllerError>> + Send + 'static,
    P: Fn(Arc<DynamicObject>, &ControllerError, Arc<C>) -> Action,
{
    Controller::new_with(
        resources::all(client, &resource),
        watcher::Config::default(),
        resource,
    )
    .with_config(ControllerConfig::default().concurrency(concurrency))
    .graceful_shutdown_on(cancel.cancelled_owned())
    .run(
        super::metrics::instrumented(name, usize::from(concurrency), reconcile),
        error_policy,
        context,
    )
    .for_each(|result| async move {
        if let Err(err) = result {
            tracing::debug!(controller = name, %err, "reconcile");
        }
    })
    .await;
}
