//! The WorkloadRebalancer controller's runtime: a `kube::runtime::Controller` over WorkloadRebalancers.
//!
//! Per rebalancer: read the bindings of its workloads that have no result yet, mark those that need it with
//! `spec.rescheduleTriggeredAt` (a replace carrying the binding's read resourceVersion, so a concurrent scheduler
//! write is never lost), then record the status (a status replace with the rebalancer's resourceVersion). The
//! status is written only once every binding write succeeded; any failure, a 409 included, requeues and the
//! next pass re-reads everything, so repeating a pass is harmless. A finished rebalancer with
//! `ttlSecondsAfterFinished` is requeued for its expiry and then deleted with uid and resourceVersion
//! preconditions (an edit in between wins and is processed first).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use karmada_api::apps::{self, WorkloadRebalancer};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams, Preconditions,
};
use kube::runtime::controller::Action;
use tokio_util::sync::CancellationToken;

use super::plan::{BindingKey, FoundBinding, Next, plan};
use crate::runtime::dynamic_controller;
use crate::runtime::{ControllerError, resources, typed};

/// How soon a rebalancer with workloads still pending is looked at again.
const PENDING_RETRY: Duration = Duration::from_secs(2);

/// Settings of the WorkloadRebalancer controller.
#[derive(Clone, Debug)]
pub struct RebalancerConfig {
    /// Rebalancers reconciled at once.
    pub concurrency: u16,
}

impl Default for RebalancerConfig {
    fn default() -> Self {
        Self { concurrency: 1 }
    }
}

/// The API resource of WorkloadRebalancers.
pub fn workload_rebalancer_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(apps::GROUP, apps::VERSION, "WorkloadRebalancer"),
        "workloadrebalancers",
    )
}

struct Context {
    client: kube::Client,
}

/// Runs until `cancel` fires.
pub async fn run(client: kube::Client, config: RebalancerConfig, cancel: CancellationToken) {
    let context = Arc::new(Context {
        client: client.clone(),
    });
    dynamic_controller::run(
        &client,
        workload_rebalancer_resource(),
        // Karmada's name for the controller.
        "workload-rebalancer",
        config.concurrency,
        reconcile,
        error_policy,
        context,
        cancel,
    )
    .await;
}

fn error_policy(_: Arc<DynamicObject>, err: &ControllerError, _: Arc<Context>) -> Action {
    Action::requeue(err.retry_after())
}

fn binding_api(client: &kube::Client, key: &BindingKey) -> Api<DynamicObject> {
    if key.is_cluster_scoped() {
        resources::all(client, &resources::cluster_resource_binding())
    } else {
        resources::namespaced(client, &resources::resource_binding(), &key.namespace)
    }
}

async fn reconcile(
    object: Arc<DynamicObject>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    if object.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let client = &context.client;
    let rebalancer: WorkloadRebalancer = typed::to_typed(&object)?;
    let name = rebalancer.metadata.name.clone().unwrap_or_default();

    let mut read: BTreeMap<BindingKey, DynamicObject> = BTreeMap::new();
    let mut found = BTreeMap::new();
    for key in super::plan::bindings_to_look_up(&rebalancer) {
        match binding_api(client, &key).get_opt(&key.name).await? {
            Some(binding) => {
                let triggered_at = binding
                    .data
                    .pointer("/spec/rescheduleTriggeredAt")
                    .cloned()
                    .map(serde_json::from_value)
                    .transpose()?;
                found.insert(key.clone(), FoundBinding::Present { triggered_at });
                read.insert(key, binding);
            }
            None => {
                found.insert(key, FoundBinding::Missing);
            }
        }
    }
    let plan = plan(&rebalancer, &found, jiff::Timestamp::now())
        .map_err(|e| ControllerError::Invalid(e.to_string()))?;

    for write in &plan.writes {
        let Some(mut binding) = read.remove(&write.binding) else {
            continue;
        };
        if let Some(spec) = binding.data.get_mut("spec").and_then(|s| s.as_object_mut()) {
            spec.insert(
                "rescheduleTriggeredAt".into(),
                serde_json::to_value(&write.triggered_at)?,
            );
        }
        // The object as read carries its resourceVersion: the replace fails with 409 if anyone wrote since.
        binding_api(client, &write.binding)
            .replace(&write.binding.name, &PostParams::default(), &binding)
            .await?;
        tracing::info!(
            rebalancer = %name,
            namespace = %write.binding.namespace,
            binding = %write.binding.name,
            "binding marked for a fresh schedule"
        );
    }

    let api = resources::all(client, &workload_rebalancer_resource());
    let mut version = object.metadata.resource_version.clone();
    if plan.status_changed {
        let mut updated = object.as_ref().clone();
        let Some(fields) = updated.data.as_object_mut() else {
            return Err(ControllerError::Invalid(format!(
                "WorkloadRebalancer {name} is not a JSON object"
            )));
        };
        fields.insert("status".into(), serde_json::to_value(&plan.status)?);
        let written = api
            .replace_status(&name, &PostParams::default(), &updated)
            .await?;
        version = written.metadata.resource_version;
    }

    Ok(match plan.next {
        Next::Wait => Action::await_change(),
        Next::Retry => Action::requeue(PENDING_RETRY),
        Next::DeleteAfter(wait) => Action::requeue(wait),
        Next::DeleteNow => {
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: object.metadata.uid.clone(),
                    resource_version: version,
                }),
                ..DeleteParams::background()
            };
            match api.delete(&name, &params).await {
                Ok(_) => {
                    tracing::info!(rebalancer = %name, "deleted after ttlSecondsAfterFinished")
                }
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(err) => return Err(err.into()),
            }
            Action::await_change()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_names_the_served_kind() {
        let resource = workload_rebalancer_resource();
        assert_eq!(resource.api_version, "apps.karmada.io/v1alpha1");
        assert_eq!(resource.plural, "workloadrebalancers");
        let defs = karmada_api::resource_defs();
        let served = defs
            .iter()
            .find(|d| d.kind == "WorkloadRebalancer")
            .expect("served");
        assert_eq!(
            (
                served.plural.as_str(),
                served.namespaced,
                served.status_subresource
            ),
            (resource.plural.as_str(), false, true)
        );
    }
}
