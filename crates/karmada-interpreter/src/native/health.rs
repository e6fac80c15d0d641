//! InterpretHealth: whether a member object works as intended.
//!
//! Deployment and StatefulSet: the member observed its latest generation, `updatedReplicas ≥ spec.replicas`
//! and `availableReplicas ≥ updatedReplicas`. ReplicaSet: generation observed and `availableReplicas ≥ spec.replicas`. DaemonSet:
//! generation observed, `updatedNumberScheduled ≥ desiredNumberScheduled` and `numberAvailable ≥
//! updatedNumberScheduled`. Service: healthy unless of type LoadBalancer without an ingress address. Ingress:
//! some load-balancer ingress has an address. PersistentVolumeClaim: Bound. PodDisruptionBudget:
//! `currentHealthy ≥ desiredHealthy`. Pod: Succeeded, or Running and
//! Ready.

use serde_json::Value;

use super::{
    DAEMON_SET, DEPLOYMENT, INGRESS, PERSISTENT_VOLUME_CLAIM, POD, POD_DISRUPTION_BUDGET,
    REPLICA_SET, SERVICE, STATEFUL_SET, is, kind_of,
};
use crate::InterpretError;
use crate::value::{array_at, int_at, int_or_zero, str_at};

fn generation_observed(object: &Value) -> Result<bool, InterpretError> {
    Ok(int_or_zero(object, "/status/observedGeneration")?
        >= int_or_zero(object, "/metadata/generation")?)
}

fn has_address(object: &Value) -> bool {
    array_at(object, "/status/loadBalancer/ingress")
        .iter()
        .any(|i| !str_at(i, "/ip").is_empty() || !str_at(i, "/hostname").is_empty())
}

pub(super) fn interpret_health(object: &Value) -> Result<bool, InterpretError> {
    let kind = kind_of(object)?;
    let status = |field: &str| int_or_zero(object, &format!("/status/{field}"));
    let spec_replicas =
        || Ok::<i64, InterpretError>(int_at(object, "/spec/replicas")?.unwrap_or(1));
    if is(&kind, DEPLOYMENT) || is(&kind, STATEFUL_SET) {
        let updated = status("updatedReplicas")?;
        Ok(generation_observed(object)?
            && updated >= spec_replicas()?
            && status("availableReplicas")? >= updated)
    } else if is(&kind, REPLICA_SET) {
        Ok(generation_observed(object)? && status("availableReplicas")? >= spec_replicas()?)
    } else if is(&kind, DAEMON_SET) {
        let updated = status("updatedNumberScheduled")?;
        Ok(generation_observed(object)?
            && updated >= status("desiredNumberScheduled")?
            && status("numberAvailable")? >= updated)
    } else if is(&kind, SERVICE) {
        Ok(str_at(object, "/spec/type") != "LoadBalancer" || has_address(object))
    } else if is(&kind, INGRESS) {
        Ok(has_address(object))
    } else if is(&kind, PERSISTENT_VOLUME_CLAIM) {
        Ok(str_at(object, "/status/phase") == "Bound")
    } else if is(&kind, POD_DISRUPTION_BUDGET) {
        Ok(status("currentHealthy")? >= status("desiredHealthy")?)
    } else if is(&kind, POD) {
        let phase = str_at(object, "/status/phase");
        let ready = array_at(object, "/status/conditions")
            .iter()
            .any(|c| str_at(c, "/type") == "Ready" && str_at(c, "/status") == "True");
        Ok(phase == "Succeeded" || (phase == "Running" && ready))
    } else {
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use karmada_api::work::ResourceHealth::{self, Healthy, Unhealthy, Unknown};
    use serde_json::{Value, json};

    use crate::Interpreter;

    fn deployment(generation: i64, replicas: i64, status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "generation": generation},
               "spec": {"replicas": replicas}, "status": status})
    }

    #[test]
    fn health_table() {
        let cases: Vec<(&str, Value, ResourceHealth)> = vec![
            (
                "deployment rolled out",
                deployment(
                    2,
                    3,
                    json!({"observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 3}),
                ),
                Healthy,
            ),
            (
                "deployment generation not observed",
                deployment(
                    3,
                    3,
                    json!({"observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 3}),
                ),
                Unhealthy,
            ),
            (
                "deployment not all updated",
                deployment(
                    2,
                    3,
                    json!({"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 2}),
                ),
                Unhealthy,
            ),
            (
                "deployment updated but unavailable",
                deployment(
                    2,
                    3,
                    json!({"observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 1}),
                ),
                Unhealthy,
            ),
            (
                "deployment scaled to zero",
                deployment(1, 0, json!({"observedGeneration": 1})),
                Healthy,
            ),
            (
                "deployment malformed status",
                deployment(1, 1, json!({"observedGeneration": "one"})),
                Unknown,
            ),
            (
                "pdb short of healthy",
                json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}, "status": {"currentHealthy": 1, "desiredHealthy": 2}}),
                Unhealthy,
            ),
            (
                "statefulset updated but unavailable",
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "generation": 1}, "spec": {"replicas": 2}, "status": {"observedGeneration": 1, "updatedReplicas": 2, "availableReplicas": 1}}),
                Unhealthy,
            ),
            (
                "statefulset updated",
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "generation": 1}, "spec": {"replicas": 2}, "status": {"observedGeneration": 1, "updatedReplicas": 2, "availableReplicas": 2}}),
                Healthy,
            ),
            (
                "replicaset short of available",
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r", "generation": 1}, "spec": {"replicas": 2}, "status": {"observedGeneration": 1, "availableReplicas": 1}}),
                Unhealthy,
            ),
            (
                "daemonset rolled out",
                json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds", "generation": 1}, "status": {"observedGeneration": 1, "desiredNumberScheduled": 2, "updatedNumberScheduled": 2, "numberAvailable": 2}}),
                Healthy,
            ),
            (
                "clusterip service",
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "ClusterIP"}}),
                Healthy,
            ),
            (
                "lb service without address",
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {}}}),
                Unhealthy,
            ),
            (
                "lb service with address",
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}),
                Healthy,
            ),
            (
                "ingress with hostname",
                json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"}, "status": {"loadBalancer": {"ingress": [{"hostname": "x"}]}}}),
                Healthy,
            ),
            (
                "pvc pending",
                json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "p"}, "status": {"phase": "Pending"}}),
                Unhealthy,
            ),
            (
                "pvc bound",
                json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "p"}, "status": {"phase": "Bound"}}),
                Healthy,
            ),
            (
                "pod running not ready",
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}}),
                Unhealthy,
            ),
            (
                "pod running ready",
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}),
                Healthy,
            ),
            (
                "pod succeeded",
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": {"phase": "Succeeded"}}),
                Healthy,
            ),
            (
                "kind without hook",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
                Healthy,
            ),
            ("not an object", json!("nope"), Unknown),
        ];
        let interpreter = Interpreter::native();
        for (name, object, expected) in cases {
            assert_eq!(interpreter.interpret_health(&object), expected, "{name}");
        }
    }
}
