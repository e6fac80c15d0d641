//! The CronFederatedHPA controller's runtime: a `kube::runtime::Controller` over CronFederatedHPAs.
//!
//! Each reconcile plans every rule with [`plan::step`] against the rules started so far (kept in
//! memory per object, as Karmada keeps its per-rule schedulers), runs the rules that are due, and
//! writes `status.executionHistories`; it then requeues itself for the earliest next fire time. A
//! run scales a workload through its `scale` subresource or sets a FederatedHPA's min/max bounds,
//! each a write conditional on the resourceVersion read (a conflict re-reads and tries again). The
//! status write re-reads and re-applies the records on conflict, so a run is recorded once and
//! never repeated.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use k8s_openapi::api::autoscaling::v2::CrossVersionObjectReference;
use karmada_api::autoscaling::{
    self, CronFederatedHPA, CronFederatedHPARule, CronFederatedHPAStatus,
};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::runtime::controller::Action;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::history;
use super::plan::{self, RuleState, Step};
use crate::federatedhpa::controller::federated_hpa_resource;
use crate::runtime::dynamic_controller;
use crate::runtime::{
    ControllerError, EventRecorder, EventType, Informers, reference_of, resources,
    templates::TemplateReader, typed,
};

/// Karmada's name for the controller (events).
pub const CONTROLLER_NAME: &str = "cronfederatedhpa-controller";

/// Writes retried on conflict before the run counts as failed.
const CONFLICT_RETRIES: usize = 5;

/// Settings of the CronFederatedHPA controller.
#[derive(Clone, Debug)]
pub struct CronFederatedHpaConfig {
    pub concurrency: u16,
    /// The zone of rules without `timeZone` (Karmada: the controller's local zone).
    pub local_zone: TimeZone,
}

impl Default for CronFederatedHpaConfig {
    fn default() -> Self {
        Self {
            concurrency: 5,
            local_zone: TimeZone::system(),
        }
    }
}

/// The API resource of CronFederatedHPAs.
pub fn cron_federated_hpa_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(autoscaling::GROUP, autoscaling::VERSION, "CronFederatedHPA"),
        "cronfederatedhpas",
    )
}

/// The started rules of one object, by rule name.
type Started = HashMap<String, RuleState>;

struct Context {
    client: kube::Client,
    templates: TemplateReader,
    events: EventRecorder,
    config: CronFederatedHpaConfig,
    started: Mutex<HashMap<String, Started>>,
}

/// Runs until `cancel` fires.
pub async fn run(
    client: kube::Client,
    informers: Informers,
    config: CronFederatedHpaConfig,
    cancel: CancellationToken,
) {
    let concurrency = config.concurrency;
    let context = Arc::new(Context {
        templates: TemplateReader::new(client.clone(), informers),
        events: EventRecorder::new(client.clone(), CONTROLLER_NAME),
        client: client.clone(),
        config,
        started: Mutex::default(),
    });
    dynamic_controller::run(
        &client,
        cron_federated_hpa_resource(),
        "cronFederatedHPA",
        concurrency,
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

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn object_key(object: &DynamicObject) -> String {
    format!(
        "{}/{}",
        object.metadata.namespace.as_deref().unwrap_or_default(),
        object.metadata.name.as_deref().unwrap_or_default()
    )
}

/// One run's outcome, re-applied to a fresh status when the status write conflicts.
enum Record {
    Success {
        rule: CronFederatedHPARule,
        scheduled: Timestamp,
        executed: Timestamp,
        next: Option<Timestamp>,
    },
    Failure {
        rule: CronFederatedHPARule,
        scheduled: Timestamp,
        executed: Timestamp,
        next: Option<Timestamp>,
        message: String,
    },
}

async fn reconcile(
    object: Arc<DynamicObject>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    let key = object_key(&object);
    if object.metadata.deletion_timestamp.is_some() {
        lock(&context.started).remove(&key);
        return Ok(Action::await_change());
    }
    let cron: CronFederatedHPA = typed::to_typed(&object)?;
    let target = cron.spec.scale_target_ref.clone();
    let known = lock(&context.started)
        .get(&key)
        .cloned()
        .unwrap_or_default();
    let now = Timestamp::now();
    let reference = reference_of(&object);
    let mut started = Started::new();
    let mut nexts = Vec::new();
    let mut due = Vec::new();
    for rule in &cron.spec.rules {
        let step = plan::step(
            rule,
            &target,
            known.get(&rule.name),
            &context.config.local_zone,
            now,
        );
        if let Step::Invalid(error) = &step {
            let message = format!("rule {}: {error}", rule.name);
            context
                .events
                .record(&reference, EventType::Warning, "StartRuleFailed", &message)
                .await;
        }
        if let Some(state) = step.state(rule, &target) {
            started.insert(rule.name.clone(), state);
        }
        nexts.push((rule.name.clone(), step.next()));
        if let Step::Fire { scheduled, next } = step {
            due.push((rule.clone(), scheduled, next));
        }
    }
    // The new plan is kept before anything runs: a run is never repeated, whatever fails after it.
    lock(&context.started).insert(key.clone(), started.clone());
    let mut records = Vec::new();
    for (rule, scheduled, next) in due {
        let result = execute(&context, &cron, &target, &rule).await;
        let executed = Timestamp::now();
        match result {
            Ok(()) => {
                tracing::info!(cronfederatedhpa = %key, rule = %rule.name, "rule ran");
                records.push(Record::Success {
                    rule,
                    scheduled,
                    executed,
                    next,
                });
            }
            Err(error) => {
                let message = error.to_string();
                context
                    .events
                    .record(&reference, EventType::Warning, "ScaleFailed", &message)
                    .await;
                records.push(Record::Failure {
                    rule,
                    scheduled,
                    executed,
                    next,
                    message,
                });
            }
        }
    }
    let apply = |status: &mut CronFederatedHPAStatus| {
        let names: Vec<(&str, Option<Timestamp>)> =
            nexts.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        history::sync_rules(status, &names);
        for record in &records {
            match record {
                Record::Success {
                    rule,
                    scheduled,
                    executed,
                    next,
                } => history::record_success(status, rule, *scheduled, *executed, *next),
                Record::Failure {
                    rule,
                    scheduled,
                    executed,
                    next,
                    message,
                } => history::record_failure(status, rule, *scheduled, *executed, *next, message),
            }
        }
    };
    if let Err(error) = write_status(&context.client, &object, apply).await {
        context
            .events
            .record(
                &reference,
                EventType::Warning,
                "UpdateCronFederatedHPAFailed",
                &error.to_string(),
            )
            .await;
        return Err(error);
    }
    Ok(
        match plan::wait_until_next(
            started.values().map(|s| s.next),
            Timestamp::now(),
            Duration::from_millis(10),
        ) {
            Some(wait) => Action::requeue(wait),
            None => Action::await_change(),
        },
    )
}

/// Applies `apply` to the object's status and writes it when it changed, conditional on the
/// resourceVersion read; a conflict re-reads the object and applies again.
async fn write_status(
    client: &kube::Client,
    object: &DynamicObject,
    apply: impl Fn(&mut CronFederatedHPAStatus),
) -> Result<(), ControllerError> {
    let name = object.metadata.name.as_deref().unwrap_or_default();
    let api = resources::namespaced(
        client,
        &cron_federated_hpa_resource(),
        object.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let mut current = object.clone();
    let mut attempt = 0;
    loop {
        let cron: CronFederatedHPA = typed::to_typed(&current)?;
        let old = cron.status.unwrap_or_default();
        let mut status = old.clone();
        apply(&mut status);
        if status == old {
            return Ok(());
        }
        let patch = json!({
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "status": status,
        });
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(ControllerError::from)
        {
            Ok(_) => return Ok(()),
            Err(error) if error.is_conflict() && attempt < CONFLICT_RETRIES => {
                attempt += 1;
                current = api.get(name).await?;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Runs `rule` against the object's target.
async fn execute(
    context: &Context,
    cron: &CronFederatedHPA,
    target: &CrossVersionObjectReference,
    rule: &CronFederatedHPARule,
) -> Result<(), ControllerError> {
    let namespace = cron.metadata.namespace.as_deref().unwrap_or_default();
    let group_version = format!("{}/{}", autoscaling::GROUP, autoscaling::VERSION);
    let mut attempt = 0;
    loop {
        let result = if target.api_version.as_deref() == Some(group_version.as_str()) {
            if target.kind != "FederatedHPA" {
                return Err(ControllerError::Invalid(format!(
                    "CronFederatedHPA({namespace}/{}) does not support scale target {group_version}/{}",
                    cron.metadata.name.as_deref().unwrap_or_default(),
                    target.kind
                )));
            }
            scale_federated_hpa(&context.client, namespace, &target.name, rule).await
        } else {
            scale_workload(&context.templates, namespace, target, rule).await
        };
        match result {
            Err(error) if error.is_conflict() && attempt < CONFLICT_RETRIES => attempt += 1,
            other => return other,
        }
    }
}

/// Sets the FederatedHPA's bounds the rule names, when they differ.
async fn scale_federated_hpa(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    rule: &CronFederatedHPARule,
) -> Result<(), ControllerError> {
    let api = resources::namespaced(client, &federated_hpa_resource(), namespace);
    let fhpa = api.get(name).await?;
    let mut spec = serde_json::Map::new();
    let current = |field: &str| {
        fhpa.data
            .pointer(&format!("/spec/{field}"))
            .and_then(Value::as_i64)
    };
    for (field, wanted) in [
        ("minReplicas", rule.target_min_replicas),
        ("maxReplicas", rule.target_max_replicas),
    ] {
        if let Some(wanted) = wanted
            && current(field) != Some(i64::from(wanted))
        {
            spec.insert(field.to_string(), json!(wanted));
        }
    }
    if spec.is_empty() {
        return Ok(());
    }
    let patch = json!({
        "metadata": {"resourceVersion": fhpa.metadata.resource_version},
        "spec": spec,
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Sets the workload's replicas through its `scale` subresource, when they differ.
async fn scale_workload(
    templates: &TemplateReader,
    namespace: &str,
    target: &CrossVersionObjectReference,
    rule: &CronFederatedHPARule,
) -> Result<(), ControllerError> {
    let replicas = rule.target_replicas.ok_or_else(|| {
        ControllerError::Invalid(format!(
            "rule {} has no targetReplicas to set on {} {}",
            rule.name, target.kind, target.name
        ))
    })?;
    let api_version = target.api_version.as_deref().unwrap_or("apps/v1");
    let api: Api<DynamicObject> = templates.api(api_version, &target.kind, namespace).await?;
    let mut scale = api.get_scale(&target.name).await?;
    let spec = scale.spec.get_or_insert_with(Default::default);
    if spec.replicas == Some(replicas) {
        return Ok(());
    }
    spec.replicas = Some(replicas);
    // The Scale read carries the workload's resourceVersion: a write in between conflicts.
    api.replace_scale(&target.name, &PostParams::default(), &scale)
        .await?;
    Ok(())
}
