//! The native interpreter: Karmada's built-in knowledge of Kubernetes' own kinds.
//!
//! Which operation is implemented for which kind is the table in [`NativeInterpreter::handles`]; each
//! operation lives in its own module.

mod aggregate;
mod dependency;
mod deployment_conditions;
mod health;
mod reflect;
mod replica;
mod requirements;
mod retain;

use karmada_api::work::AggregatedStatusItem;
use serde_json::Value;

pub(crate) use dependency::pod_spec_references;
pub use requirements::{effective_requests, replica_requirements};
pub use retain::retain_metadata;

use crate::interpreter::{DependentObjectReference, Operation, ReplicaInfo, ResourceInterpreter};
use crate::{InterpretError, Target};

/// Kinds Karmada's native interpreter knows, by (group, kind).
const DEPLOYMENT: (&str, &str) = ("apps", "Deployment");
const REPLICA_SET: (&str, &str) = ("apps", "ReplicaSet");
const STATEFUL_SET: (&str, &str) = ("apps", "StatefulSet");
const DAEMON_SET: (&str, &str) = ("apps", "DaemonSet");
const JOB: (&str, &str) = ("batch", "Job");
const CRON_JOB: (&str, &str) = ("batch", "CronJob");
const POD: (&str, &str) = ("", "Pod");
const SERVICE: (&str, &str) = ("", "Service");
const SERVICE_ACCOUNT: (&str, &str) = ("", "ServiceAccount");
const PERSISTENT_VOLUME_CLAIM: (&str, &str) = ("", "PersistentVolumeClaim");
const PERSISTENT_VOLUME: (&str, &str) = ("", "PersistentVolume");
const INGRESS: (&str, &str) = ("networking.k8s.io", "Ingress");
const POD_DISRUPTION_BUDGET: (&str, &str) = ("policy", "PodDisruptionBudget");
const HORIZONTAL_POD_AUTOSCALER: (&str, &str) = ("autoscaling", "HorizontalPodAutoscaler");
const SERVICE_IMPORT: (&str, &str) = ("multicluster.x-k8s.io", "ServiceImport");

fn kinds_for(operation: Operation) -> &'static [(&'static str, &'static str)] {
    match operation {
        Operation::InterpretReplica => &[DEPLOYMENT, REPLICA_SET, STATEFUL_SET, JOB, POD],
        Operation::ReviseReplica => &[DEPLOYMENT, REPLICA_SET, STATEFUL_SET, JOB],
        Operation::Retain => &[
            DEPLOYMENT,
            REPLICA_SET,
            STATEFUL_SET,
            JOB,
            POD,
            SERVICE,
            SERVICE_ACCOUNT,
            PERSISTENT_VOLUME_CLAIM,
            PERSISTENT_VOLUME,
            SERVICE_IMPORT,
        ],
        Operation::InterpretStatus => &[
            DEPLOYMENT,
            STATEFUL_SET,
            DAEMON_SET,
            JOB,
            SERVICE,
            POD_DISRUPTION_BUDGET,
            HORIZONTAL_POD_AUTOSCALER,
        ],
        Operation::AggregateStatus => &[
            DEPLOYMENT,
            REPLICA_SET,
            STATEFUL_SET,
            DAEMON_SET,
            JOB,
            SERVICE,
            INGRESS,
            POD,
            PERSISTENT_VOLUME,
            PERSISTENT_VOLUME_CLAIM,
            CRON_JOB,
            POD_DISRUPTION_BUDGET,
            HORIZONTAL_POD_AUTOSCALER,
        ],
        Operation::InterpretHealth => &[
            DEPLOYMENT,
            REPLICA_SET,
            STATEFUL_SET,
            DAEMON_SET,
            SERVICE,
            INGRESS,
            PERSISTENT_VOLUME_CLAIM,
            POD_DISRUPTION_BUDGET,
            POD,
        ],
        Operation::InterpretDependency => &[
            DEPLOYMENT,
            REPLICA_SET,
            STATEFUL_SET,
            DAEMON_SET,
            JOB,
            CRON_JOB,
            POD,
            SERVICE_IMPORT,
        ],
        Operation::InterpretComponent => &[],
    }
}

fn kind_of(object: &Value) -> Result<(String, String), InterpretError> {
    let target = Target::of(object)?;
    Ok((target.group().to_string(), target.kind))
}

fn is(object_kind: &(String, String), known: (&str, &str)) -> bool {
    object_kind.0 == known.0 && object_kind.1 == known.1
}

/// Karmada's built-in interpreter for Kubernetes kinds.
#[derive(Clone, Copy, Debug, Default)]
pub struct NativeInterpreter;

impl ResourceInterpreter for NativeInterpreter {
    fn handles(&self, target: &Target, operation: Operation) -> bool {
        kinds_for(operation)
            .iter()
            .any(|(group, kind)| target.is(group, kind))
    }

    fn get_replicas(&self, object: &Value) -> Result<ReplicaInfo, InterpretError> {
        replica::get_replicas(object)
    }

    fn revise_replica(&self, object: &Value, replicas: i64) -> Result<Value, InterpretError> {
        replica::revise_replica(object, replicas)
    }

    fn retain(&self, desired: &Value, observed: &Value) -> Result<Value, InterpretError> {
        retain::retain(desired, observed)
    }

    fn reflect_status(&self, object: &Value) -> Result<Option<Value>, InterpretError> {
        reflect::reflect_status(object)
    }

    fn aggregate_status(
        &self,
        template: &Value,
        items: &[AggregatedStatusItem],
    ) -> Result<Value, InterpretError> {
        aggregate::aggregate_status(template, items)
    }

    fn interpret_health(&self, object: &Value) -> Result<bool, InterpretError> {
        health::interpret_health(object)
    }

    fn get_dependencies(
        &self,
        object: &Value,
    ) -> Result<Vec<DependentObjectReference>, InterpretError> {
        dependency::get_dependencies(object)
    }
}

/// JSON pointer of the pod spec inside a workload of this kind, if it has one.
fn pod_spec_pointer(object_kind: &(String, String)) -> Option<&'static str> {
    if is(object_kind, POD) {
        Some("/spec")
    } else if is(object_kind, CRON_JOB) {
        Some("/spec/jobTemplate/spec/template/spec")
    } else if [DEPLOYMENT, REPLICA_SET, STATEFUL_SET, DAEMON_SET, JOB]
        .iter()
        .any(|known| is(object_kind, *known))
    {
        Some("/spec/template/spec")
    } else {
        None
    }
}
