//! The FederatedHPA controller's runtime: a `kube::runtime::Controller` over FederatedHPAs, each
//! evaluated again every sync period (Karmada's `--horizontal-pod-autoscaler-sync-period`, 15 s).
//!
//! Per round: the template (its replicas and selector) from the control plane, the clusters of its
//! ResourceBinding, and from each of those members the target's replicas, its pods and their
//! PodMetrics (each member's `metrics.k8s.io`); for `Pods` metrics, the control plane's
//! `custom.metrics.k8s.io` (every member's pods, each naming its cluster); then [`evaluate`] decides. The template's
//! `spec.replicas` is written with a merge patch carrying the read resourceVersion (a conflict
//! requeues), and the scheduler divides the new count; the status is written the same way, only
//! when it changed. The history (recommendations, scale events) lives in memory per FederatedHPA,
//! as in Karmada, and is kept only when the round's scale write succeeded.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use karmada_api::Cluster;
use karmada_api::autoscaling::{self, FederatedHPA};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use kube::runtime::controller::Action;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::evaluate::{self, Decision, EvaluationConfig, Observation, PodUsage};
use super::normalize::History;
use super::replica_calculator::{ContainerRequests, PodMetric, PodSample};
use crate::runtime::dynamic_controller;
use crate::runtime::{
    ControllerError, EventRecorder, EventType, Informers, MemberClients, reference_of, resources,
    templates::TemplateReader, typed,
};

/// Karmada's name for the controller (events, metrics).
pub const CONTROLLER_NAME: &str = "federatedHPA-controller";

/// Settings of the FederatedHPA controller (Karmada's `--horizontal-pod-autoscaler-*` flags).
#[derive(Clone, Debug)]
pub struct FederatedHpaConfig {
    pub sync_period: Duration,
    pub evaluation: EvaluationConfig,
    pub concurrency: u16,
}

impl Default for FederatedHpaConfig {
    fn default() -> Self {
        Self {
            sync_period: Duration::from_secs(15),
            evaluation: EvaluationConfig::default(),
            concurrency: 5,
        }
    }
}

/// The API resource of FederatedHPAs.
pub fn federated_hpa_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(autoscaling::GROUP, autoscaling::VERSION, "FederatedHPA"),
        "federatedhpas",
    )
}

struct Context {
    client: kube::Client,
    templates: TemplateReader,
    members: MemberClients,
    events: EventRecorder,
    config: FederatedHpaConfig,
    histories: Mutex<HashMap<String, History>>,
}

/// Runs until `cancel` fires.
pub async fn run(
    client: kube::Client,
    informers: Informers,
    members: MemberClients,
    config: FederatedHpaConfig,
    cancel: CancellationToken,
) {
    let concurrency = config.concurrency;
    let context = Arc::new(Context {
        templates: TemplateReader::new(client.clone(), informers),
        events: EventRecorder::new(client.clone(), "federatedhpa-controller"),
        client: client.clone(),
        members,
        config,
        histories: Mutex::default(),
    });
    dynamic_controller::run(
        &client,
        federated_hpa_resource(),
        "federatedHPA",
        concurrency,
        reconcile,
        error_policy,
        context,
        cancel,
    )
    .await;
}

fn error_policy(_: Arc<DynamicObject>, err: &ControllerError, context: Arc<Context>) -> Action {
    if err.is_conflict() {
        return Action::requeue(Duration::from_millis(100));
    }
    Action::requeue(err.retry_after().min(context.config.sync_period))
}

fn history_key(object: &DynamicObject) -> String {
    format!(
        "{}/{}",
        object.metadata.namespace.as_deref().unwrap_or_default(),
        object.metadata.name.as_deref().unwrap_or_default()
    )
}

async fn reconcile(
    object: Arc<DynamicObject>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    let key = history_key(&object);
    if object.metadata.deletion_timestamp.is_some() {
        lock(&context.histories).remove(&key);
        return Ok(Action::await_change());
    }
    let hpa: FederatedHPA = typed::to_typed(&object)?;
    let namespace = hpa.metadata.namespace.clone().unwrap_or_default();
    let target = observe(&context, &hpa, &namespace).await;
    let (observation, template) = match target {
        Ok(found) => found,
        Err(error) => (
            Observation {
                target_error: Some(error.to_string()),
                ..Observation::default()
            },
            None,
        ),
    };
    let mut history = lock(&context.histories)
        .get(&key)
        .cloned()
        .unwrap_or_default();
    let now = Timestamp::now();
    let mut decision = evaluate::evaluate(
        &hpa,
        &observation,
        &mut history,
        &context.config.evaluation,
        now,
    );
    let reference = reference_of(&object);
    if let Some((reason, message)) = &decision.problem {
        context
            .events
            .record(&reference, EventType::Warning, reason, message)
            .await;
    }
    let mut scale_error = None;
    if let (Some(replicas), Some((api, template))) = (decision.scale_to, &template) {
        match scale_template(api, template, replicas).await {
            Ok(()) => {
                let message = format!("New size: {replicas}; reason: {}", decision.reason);
                context
                    .events
                    .record(&reference, EventType::Normal, "SuccessfulRescale", &message)
                    .await;
                tracing::info!(federatedhpa = %key, replicas, reason = %decision.reason, "rescaled");
                lock(&context.histories).insert(key.clone(), history);
            }
            Err(error) => {
                failed_rescale(&mut decision, &hpa, replicas, &error, now);
                let message = format!(
                    "New size: {replicas}; reason: {}; error: {error}",
                    decision.reason
                );
                context
                    .events
                    .record(&reference, EventType::Warning, "FailedRescale", &message)
                    .await;
                scale_error = Some(error);
            }
        }
    } else {
        lock(&context.histories).insert(key.clone(), history);
    }
    write_status(&context.client, &object, &hpa, &decision).await?;
    if let Some(error) = scale_error {
        return Err(error);
    }
    Ok(Action::requeue(context.config.sync_period))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The status when the scale write failed: the old replicas, and AbleToScale False.
fn failed_rescale(
    decision: &mut Decision,
    hpa: &FederatedHPA,
    replicas: i32,
    error: &ControllerError,
    now: Timestamp,
) {
    let old = hpa.status.clone().unwrap_or_default();
    decision.status.desired_replicas = decision.status.current_replicas.unwrap_or_default();
    decision.status.last_scale_time = old.last_scale_time;
    let conditions = decision.status.conditions.get_or_insert_with(Vec::new);
    evaluate::set_condition(
        conditions,
        "AbleToScale",
        false,
        "FailedUpdateScale",
        format!("the HPA controller was unable to update the target scale to {replicas}: {error}"),
        now,
    );
}

/// The template's API and the template as read.
type Template = (Api<DynamicObject>, DynamicObject);

/// Reads what one round needs.
async fn observe(
    context: &Context,
    hpa: &FederatedHPA,
    namespace: &str,
) -> Result<(Observation, Option<Template>), ControllerError> {
    let target = &hpa.spec.scale_target_ref;
    let api_version = target
        .api_version
        .clone()
        .unwrap_or_else(|| "apps/v1".into());
    let (resource, _) = context
        .templates
        .resolve(&api_version, &target.kind)
        .await?;
    let api = context
        .templates
        .api(&api_version, &target.kind, namespace)
        .await?;
    let template = api.get(&target.name).await?;
    let replicas = template
        .data
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .map_or(1, |r| i32::try_from(r).unwrap_or(i32::MAX));
    let selector = template
        .data
        .pointer("/spec/selector")
        .map(apimachinery::LabelSelector::from_label_selector)
        .transpose()
        .map_err(|e| ControllerError::Invalid(format!("the target's selector: {e}")))?
        .ok_or_else(|| {
            ControllerError::Invalid("the HPA target's scale is missing a selector".into())
        })?;
    let selector = selector_query(&selector.to_label_selector());
    let mut observation = Observation {
        template_replicas: Some(replicas),
        ..Observation::default()
    };
    for cluster in target_clusters(context, namespace, &target.kind, &target.name).await? {
        if let Err(error) = observe_member(
            context,
            &cluster,
            &resource,
            namespace,
            &target.name,
            &selector,
            &mut observation,
        )
        .await
        {
            tracing::debug!(cluster, %error, "member skipped for this round");
        }
    }
    for metric in hpa.spec.metrics.iter().filter_map(|m| m.pods.as_ref()) {
        let Ok(key) = evaluate::pods_metric_key(&metric.metric) else {
            // evaluate reports the unusable selector.
            continue;
        };
        let values = pods_metric(&context.client, namespace, &selector, &key)
            .await
            .map(|list| custom_metric_values(&list))
            .map_err(|e| match e {
                kube::Error::Api(status) => status.message,
                other => other.to_string(),
            });
        observation.custom_metrics.insert(key, values);
    }
    Ok((observation, Some((api, template))))
}

/// The control plane's `custom.metrics.k8s.io` values of one `Pods` metric for the target's pods
/// (every member's, as karmada-metrics-adapter aggregates them).
async fn pods_metric(
    client: &kube::Client,
    namespace: &str,
    selector: &str,
    (metric, metric_selector): &evaluate::PodsMetricKey,
) -> Result<Value, kube::Error> {
    let query = {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query.append_pair("labelSelector", selector);
        if !metric_selector.is_empty() {
            query.append_pair("metricLabelSelector", metric_selector);
        }
        query.finish()
    };
    let path = format!(
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{namespace}/pods/*/{metric}?{query}"
    );
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e)))?;
    client.request::<Value>(request).await
}

/// A `MetricValueList`'s values by pod (`cluster/name`, the cluster from the adapter's
/// `resource.karmada.io/query-from-cluster` annotation; items without it are left out).
pub fn custom_metric_values(list: &Value) -> BTreeMap<String, PodMetric> {
    let items = list["items"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    items
        .iter()
        .filter_map(|item| {
            let cluster = item
                .pointer("/metadata/annotations")?
                .get(karmada_api::cluster::ANNOTATION_QUERY_FROM_CLUSTER)?
                .as_str()?;
            let pod = item.pointer("/describedObject/name")?.as_str()?;
            let value = milli(item.get("value")?)?;
            let window = item
                .get("windowSeconds")
                .or_else(|| item.get("window"))
                .and_then(Value::as_i64)
                .map_or(SignedDuration::from_mins(1), SignedDuration::from_secs);
            Some((
                format!("{cluster}/{pod}"),
                PodMetric {
                    value,
                    timestamp: timestamp(item.get("timestamp"))?,
                    window,
                },
            ))
        })
        .collect()
}

/// `matchLabels`/`matchExpressions` as a query-string selector.
fn selector_query(selector: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            parts.push(format!("{key}={}", value.as_str().unwrap_or_default()));
        }
    }
    if let Some(expressions) = selector.get("matchExpressions").and_then(Value::as_array) {
        for e in expressions {
            let key = e["key"].as_str().unwrap_or_default();
            let values: Vec<&str> = e["values"]
                .as_array()
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            parts.push(match e["operator"].as_str().unwrap_or_default() {
                "In" => format!("{key} in ({})", values.join(",")),
                "NotIn" => format!("{key} notin ({})", values.join(",")),
                "Exists" => key.to_string(),
                _ => format!("!{key}"),
            });
        }
    }
    parts.join(",")
}

/// The clusters the target's ResourceBinding is scheduled to.
async fn target_clusters(
    context: &Context,
    namespace: &str,
    kind: &str,
    name: &str,
) -> Result<Vec<String>, ControllerError> {
    let bindings =
        resources::namespaced(&context.client, &resources::resource_binding(), namespace);
    let binding = bindings
        .get(&crate::names::binding_name(kind, name))
        .await?;
    Ok(binding
        .data
        .pointer("/spec/clusters")
        .and_then(Value::as_array)
        .map(|clusters| {
            clusters
                .iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

/// Adds one member's replicas, pods and metrics.
async fn observe_member(
    context: &Context,
    cluster: &str,
    resource: &ApiResource,
    namespace: &str,
    name: &str,
    selector: &str,
    observation: &mut Observation,
) -> Result<(), ControllerError> {
    let found = resources::all(&context.client, &resources::cluster())
        .get(cluster)
        .await?;
    let cluster_object: Cluster = typed::to_typed(&found)?;
    let member = context.members.client(&cluster_object).await?;
    let workload: Api<DynamicObject> = Api::namespaced_with(member.clone(), namespace, resource);
    let workload = workload.get(name).await?;
    let replicas = workload
        .data
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let params = ListParams::default().labels(selector);
    let pods: Api<DynamicObject> = Api::namespaced_with(
        member.clone(),
        namespace,
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods"),
    );
    let pods = pods.list(&params).await?;
    let metrics: Api<DynamicObject> = Api::namespaced_with(
        member,
        namespace,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", "PodMetrics"),
            "pods",
        ),
    );
    // A member without metrics.k8s.io still counts its pods (they are missing metrics).
    let metrics = metrics
        .list(&params)
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    add_member(observation, cluster, replicas, &pods.items, &metrics);
    Ok(())
}

/// Adds one member's answers (its workload's replicas, the selected pods and their PodMetrics) to
/// `observation`: a round's per-member work apart from the requests.
pub fn add_member(
    observation: &mut Observation,
    cluster: &str,
    replicas: i64,
    pods: &[DynamicObject],
    metrics: &[DynamicObject],
) {
    observation.member_replicas = observation
        .member_replicas
        .saturating_add(i32::try_from(replicas).unwrap_or(i32::MAX));
    for pod in pods {
        observation.pods.push(pod_sample(
            cluster,
            &pod.data,
            pod.metadata.name.as_deref().unwrap_or_default(),
            pod.metadata.deletion_timestamp.is_some(),
        ));
    }
    for metric in metrics {
        let pod = format!(
            "{cluster}/{}",
            metric.metadata.name.as_deref().unwrap_or_default()
        );
        if let Some(usage) = pod_usage(&metric.data) {
            observation.usage.insert(pod, usage);
        }
    }
}

fn timestamp(value: Option<&Value>) -> Option<Timestamp> {
    value.and_then(Value::as_str).and_then(|t| t.parse().ok())
}

/// Thousandths of a quantity.
fn milli(value: &Value) -> Option<i64> {
    apimachinery::quantity::milli_from_json(value)
        .ok()
        .and_then(|milli| i64::try_from(milli).ok())
}

fn resources_of(value: Option<&Value>) -> BTreeMap<String, i64> {
    value
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .filter_map(|(name, q)| milli(q).map(|m| (name.clone(), m)))
                .collect()
        })
        .unwrap_or_default()
}

/// A member pod as the calculator sees it, named `cluster/name`.
pub fn pod_sample(cluster: &str, pod: &Value, name: &str, deleting: bool) -> PodSample {
    let ready = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .and_then(|c| {
            Some((
                c["status"] == "True",
                timestamp(c.get("lastTransitionTime"))?,
            ))
        });
    PodSample {
        name: format!("{cluster}/{name}"),
        phase: pod
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("Pending")
            .to_string(),
        deleting,
        ready,
        start_time: timestamp(pod.pointer("/status/startTime")),
        containers: pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .map(|containers| {
                containers
                    .iter()
                    .map(|c| ContainerRequests {
                        name: c["name"].as_str().unwrap_or_default().to_string(),
                        requests: resources_of(c.pointer("/resources/requests")),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// A PodMetrics object's usage.
pub fn pod_usage(metrics: &Value) -> Option<PodUsage> {
    let window = metrics
        .get("window")
        .and_then(Value::as_str)
        .and_then(|w| w.parse::<SignedDuration>().ok().or_else(|| go_duration(w)))
        .unwrap_or(SignedDuration::from_secs(15));
    Some(PodUsage {
        timestamp: timestamp(metrics.get("timestamp"))?,
        window,
        containers: metrics
            .get("containers")
            .and_then(Value::as_array)
            .map(|containers| {
                containers
                    .iter()
                    .map(|c| {
                        (
                            c["name"].as_str().unwrap_or_default().to_string(),
                            resources_of(c.get("usage")),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// Go's `15s`, `1m30s`, `10.5s` duration text.
fn go_duration(text: &str) -> Option<SignedDuration> {
    let seconds: f64 = text.strip_suffix('s')?.parse().ok()?;
    SignedDuration::try_from_secs_f64(seconds).ok()
}

/// Sets the template's `spec.replicas`, conditional on the resourceVersion read.
async fn scale_template(
    api: &Api<DynamicObject>,
    template: &DynamicObject,
    replicas: i32,
) -> Result<(), ControllerError> {
    let name = template.metadata.name.clone().unwrap_or_default();
    let patch = json!({
        "metadata": {"resourceVersion": template.metadata.resource_version},
        "spec": {"replicas": replicas},
    });
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Writes the status when it changed, conditional on the resourceVersion read.
async fn write_status(
    client: &kube::Client,
    object: &DynamicObject,
    hpa: &FederatedHPA,
    decision: &Decision,
) -> Result<(), ControllerError> {
    if hpa.status.as_ref() == Some(&decision.status) {
        return Ok(());
    }
    let api = resources::namespaced(
        client,
        &federated_hpa_resource(),
        object.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let patch = json!({
        "metadata": {"resourceVersion": object.metadata.resource_version},
        "status": decision.status,
    });
    api.patch_status(
        object.metadata.name.as_deref().unwrap_or_default(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}
