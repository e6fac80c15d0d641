//! ResourceBinding, ClusterResourceBinding and Work admission: permanent ids plus the structural rules the
//! controllers rely on.

use std::collections::BTreeSet;

use apimachinery::FieldError;
use serde_json::{Value, json};

use super::common::{decode, decode_field, field, index, permanent_id};
use super::{Request, placement};
use crate::work::{self, GracefulEvictionTask, ResourceBindingSpec, Work};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum BindingScope {
    Namespaced,
    Cluster,
}

const MAX_COMPONENT_NAME: usize = 32;
const MAX_EVICTION_REASON: usize = 32;
const MAX_EVICTION_MESSAGE: usize = 1024;

pub(crate) fn binding(
    req: &mut Request<'_>,
    obj: &mut Value,
    scope: BindingScope,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let label = match scope {
        BindingScope::Namespaced => work::LABEL_RESOURCE_BINDING_PERMANENT_ID,
        BindingScope::Cluster => work::LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID,
    };
    permanent_id(req, obj, label, &mut errors);
    // Both kinds share the spec, and only the spec is checked (status has its own subresource).
    match decode_field::<ResourceBindingSpec>(obj, "spec") {
        Ok(spec) => validate_binding(req, &spec, &mut errors),
        Err(e) => errors.push(*e),
    }
    errors
}

fn validate_binding(
    req: &mut Request<'_>,
    spec: &ResourceBindingSpec,
    errors: &mut Vec<FieldError>,
) {
    for (name, value) in [
        ("apiVersion", &spec.resource.api_version),
        ("kind", &spec.resource.kind),
        ("name", &spec.resource.name),
    ] {
        if value.is_empty() {
            errors.push(FieldError::required(field("spec.resource", name), ""));
        }
    }
    if spec.replicas < 0 {
        errors.push(FieldError::invalid(
            "spec.replicas",
            json!(spec.replicas),
            "must be greater than or equal to 0",
        ));
    }
    for (i, component) in spec.components.iter().enumerate() {
        let p = field(&index("spec.components", i), "name");
        if component.name.is_empty() {
            errors.push(FieldError::required(p, ""));
        } else if component.name.len() > MAX_COMPONENT_NAME {
            errors.push(FieldError::too_long(
                p,
                json!(component.name),
                MAX_COMPONENT_NAME,
            ));
        }
    }
    let mut names = BTreeSet::new();
    for (i, target) in spec.clusters.iter().enumerate() {
        let p = index("spec.clusters", i);
        if target.name.is_empty() {
            errors.push(FieldError::required(field(&p, "name"), "a cluster name"));
        } else if !names.insert(target.name.as_str()) {
            errors.push(FieldError::duplicate(field(&p, "name"), json!(target.name)));
        }
        if target.replicas < 0 {
            errors.push(FieldError::invalid(
                field(&p, "replicas"),
                json!(target.replicas),
                "must be greater than or equal to 0",
            ));
        }
    }
    if let Some(placement) = &spec.placement {
        placement::validate(req, placement, "spec.placement", errors);
    }
    for (i, task) in spec.graceful_eviction_tasks.iter().enumerate() {
        validate_eviction_task(task, &index("spec.gracefulEvictionTasks", i), errors);
    }
}

fn validate_eviction_task(task: &GracefulEvictionTask, path: &str, errors: &mut Vec<FieldError>) {
    if task.from_cluster.is_empty() {
        errors.push(FieldError::required(field(path, "fromCluster"), ""));
    }
    if task.producer.is_empty() {
        errors.push(FieldError::required(field(path, "producer"), ""));
    }
    let reason_path = field(path, "reason");
    let camel = task
        .reason
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase())
        && task.reason.chars().all(|c| c.is_ascii_alphanumeric());
    if task.reason.is_empty() {
        errors.push(FieldError::required(
            reason_path,
            "a CamelCase reason such as TaintUntolerated",
        ));
    } else if task.reason.len() > MAX_EVICTION_REASON {
        errors.push(FieldError::too_long(
            reason_path,
            json!(task.reason),
            MAX_EVICTION_REASON,
        ));
    } else if !camel {
        errors.push(FieldError::invalid(
            reason_path,
            json!(task.reason),
            "must be CamelCase, e.g. TaintUntolerated",
        ));
    }
    if task.message.len() > MAX_EVICTION_MESSAGE {
        errors.push(FieldError::too_long(
            field(path, "message"),
            json!(task.message),
            MAX_EVICTION_MESSAGE,
        ));
    }
    if task.grace_period_seconds.is_some() && task.suppress_deletion.is_some() {
        errors.push(FieldError::invalid(
            field(path, "suppressDeletion"),
            json!(task.suppress_deletion),
            "gracePeriodSeconds and suppressDeletion cannot be used together",
        ));
    }
}

pub(crate) fn work(req: &mut Request<'_>, obj: &mut Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    permanent_id(req, obj, work::LABEL_WORK_PERMANENT_ID, &mut errors);
    match decode::<Work>(obj) {
        Ok(work) => {
            for (i, manifest) in work.spec.workload.manifests.iter().enumerate() {
                let p = index("spec.workload.manifests", i);
                if !manifest.is_object() {
                    errors.push(FieldError::invalid(
                        p,
                        manifest.clone(),
                        "must be a Kubernetes object",
                    ));
                    continue;
                }
                for key in ["apiVersion", "kind"] {
                    if manifest
                        .get(key)
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        errors.push(FieldError::required(field(&p, key), ""));
                    }
                }
            }
        }
        Err(e) => errors.push(*e),
    }
    errors
}
