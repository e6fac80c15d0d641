//! The ClusterTaintPolicy controller: keeps each Cluster's `spec.taints` as the policies that target it want
//! ([`super::taint_rules`]) — e.g. `cluster.karmada.io/not-ready:NoExecute` while Ready is False or Unknown —
//! so that the taint manager can act on them. Runs over Clusters; any policy change looks at every cluster.
//! Writes are replaces with the read resourceVersion (a 409, e.g. against the cluster controller's own taint
//! writes, requeues). Events `TaintClusterSucceed` / `TaintClusterFailed` on the Cluster.

use std::sync::Arc;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::Cluster;
use karmada_api::policy::ClusterTaintPolicy;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::taint_rules::desired_taints;
use crate::runtime::{ControllerError, EventRecorder, EventType, reference_of, resources, typed};

/// Controller name.
pub const NAME: &str = "cluster-taint-policy-controller";
pub const EVENT_TAINT_CLUSTER_SUCCEED: &str = "TaintClusterSucceed";
pub const EVENT_TAINT_CLUSTER_FAILED: &str = "TaintClusterFailed";

/// The API resource of ClusterTaintPolicy.
pub fn cluster_taint_policy_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            karmada_api::policy::GROUP,
            karmada_api::policy::VERSION,
            "ClusterTaintPolicy",
        ),
        "clustertaintpolicies",
    )
}

/// Name of the policy [`ensure_default_policy`] creates.
pub const DEFAULT_POLICY_NAME: &str = "karmada-default-failover";

/// The policy behind the one failover switch: a cluster whose Ready condition is False or Unknown (as the cluster
/// status controller publishes it, after its failure threshold) gets `cluster.karmada.io/not-ready:NoExecute`;
/// Ready=True removes it. Bindings tolerate it for as long as their `clusterTolerations` say.
pub fn default_policy() -> ClusterTaintPolicy {
    let ready = |values: &[&str]| karmada_api::policy::MatchCondition {
        condition_type: karmada_api::cluster::CONDITION_READY.to_string(),
        operator: karmada_api::policy::MatchConditionOperator::In,
        status_values: values.iter().map(|v| v.to_string()).collect(),
    };
    ClusterTaintPolicy {
        api_version: format!(
            "{}/{}",
            karmada_api::policy::GROUP,
            karmada_api::policy::VERSION
        ),
        kind: "ClusterTaintPolicy".to_string(),
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(DEFAULT_POLICY_NAME.to_string()),
            ..Default::default()
        },
        spec: karmada_api::policy::ClusterTaintPolicySpec {
            target_clusters: None,
            add_on_conditions: vec![ready(&["False", "Unknown"])],
            remove_on_conditions: vec![ready(&["True"])],
            taints: vec![karmada_api::policy::TaintTemplate {
                key: karmada_api::cluster::TAINT_CLUSTER_NOT_READY.to_string(),
                effect: super::toleration::EFFECT_NO_EXECUTE.to_string(),
                value: None,
            }],
        },
    }
}

/// Creates [`default_policy`] unless a policy of that name exists (a user's edits to it are kept).
pub async fn ensure_default_policy(client: &kube::Client) -> Result<(), ControllerError> {
    let resource = cluster_taint_policy_resource();
    let body = typed::to_dynamic(&default_policy(), &resource)?;
    match resources::all(client, &resource)
        .create(&PostParams::default(), &body)
        .await
    {
        Ok(_) => Ok(()),
        Err(err) => {
            let err = ControllerError::from(err);
            if err.is_already_exists() {
                Ok(())
            } else {
                Err(err)
            }
        }
    }
}

struct Context {
    client: kube::Client,
    recorder: EventRecorder,
}

/// Runs until `cancel` fires.
pub async fn run(client: kube::Client, cancel: CancellationToken) {
    let clusters = resources::all(&client, &resources::cluster());
    let controller =
        Controller::new_with(clusters, watcher::Config::default(), resources::cluster());
    let store = controller.store();
    let controller = controller
        .watches_with(
            resources::all(&client, &cluster_taint_policy_resource()),
            cluster_taint_policy_resource(),
            watcher::Config::default(),
            move |_policy: DynamicObject| {
                store
                    .state()
                    .into_iter()
                    .map(|c| ObjectRef::from_obj_with(&*c, resources::cluster()))
                    .collect::<Vec<_>>()
            },
        )
        .graceful_shutdown_on(cancel.cancelled_owned());
    let context = Arc::new(Context {
        recorder: EventRecorder::new(client.clone(), NAME),
        client,
    });
    controller
        .run(
            crate::runtime::metrics::instrumented(NAME, 0, reconcile),
            |_, err: &ControllerError, _| Action::requeue(err.retry_after()),
            context,
        )
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(%err, "cluster taint policy reconcile");
            }
        })
        .await;
}

async fn reconcile(
    object: Arc<DynamicObject>,
    ctx: Arc<Context>,
) -> Result<Action, ControllerError> {
    if object.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let cluster: Cluster = typed::to_typed(&object)?;
    let policies = resources::all(&ctx.client, &cluster_taint_policy_resource())
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter_map(|p| typed::to_typed::<ClusterTaintPolicy>(p).ok())
        .collect::<Vec<_>>();
    let (taints, errors) = desired_taints(&cluster, &policies, Time(Timestamp::now()));
    let reference = reference_of(&object);
    for error in &errors {
        ctx.recorder
            .record(
                &reference,
                EventType::Warning,
                EVENT_TAINT_CLUSTER_FAILED,
                error,
            )
            .await;
    }
    let Some(taints) = taints else {
        return Ok(Action::await_change());
    };
    let mut next = typed::to_json(&object)?;
    if next.get("apiVersion").is_none() {
        let resource = resources::cluster();
        next["apiVersion"] = Value::String(resource.api_version);
        next["kind"] = Value::String(resource.kind);
    }
    next["spec"]["taints"] = serde_json::to_value(&taints)?;
    if let Some(metadata) = next.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let body: DynamicObject = serde_json::from_value(next)?;
    match resources::all(&ctx.client, &resources::cluster())
        .replace(&name, &PostParams::default(), &body)
        .await
    {
        Ok(_) => {
            let keys: Vec<String> = taints
                .iter()
                .map(|t| format!("{}:{}", t.key, t.effect))
                .collect();
            ctx.recorder
                .record(
                    &reference,
                    EventType::Normal,
                    EVENT_TAINT_CLUSTER_SUCCEED,
                    &format!("Taints of cluster {name} are now [{}]", keys.join(",")),
                )
                .await;
            Ok(Action::await_change())
        }
        Err(err) => {
            let err = ControllerError::from(err);
            if !err.is_conflict() {
                ctx.recorder
                    .record(
                        &reference,
                        EventType::Warning,
                        EVENT_TAINT_CLUSTER_FAILED,
                        &err.to_string(),
                    )
                    .await;
            }
            Err(err)
        }
    }
}
