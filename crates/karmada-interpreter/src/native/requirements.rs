//! ReplicaRequirements of a pod template: node constraints (`nodeSelector`, `tolerations`, required node
//! affinity) and the effective resource request of one pod.
//!
//! Effective request follows Kubernetes: the sum over containers, plus restartable (sidecar) init containers
//! which run alongside them, raised per resource to the largest need of any one regular init container
//! (counting the sidecars started before it), plus the pod `overhead`. Limits are not read.

use std::collections::BTreeMap;

use apimachinery::Quantity;
use k8s_openapi::api::core::v1::{NodeSelector, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;
use karmada_api::ReplicaRequirements;
use karmada_api::work::NodeClaim;
use serde_json::Value;

use crate::InterpretError;
use crate::value::{array_at, str_at};

type Requests = BTreeMap<String, Quantity>;

fn parse_list(
    object: &Value,
    list: Option<&Value>,
    field: &str,
) -> Result<Requests, InterpretError> {
    let mut requests = Requests::new();
    let Some(list) = list.filter(|l| !l.is_null()) else {
        return Ok(requests);
    };
    let Some(map) = list.as_object() else {
        return Err(InterpretError::invalid(
            object,
            field,
            "must be a map of resource name to quantity",
        ));
    };
    for (name, value) in map {
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => {
                return Err(InterpretError::invalid(
                    object,
                    format!("{field}.{name}"),
                    format!("must be a quantity such as 100m or 128Mi, got {other}"),
                ));
            }
        };
        let quantity = Quantity::parse(&text)
            .map_err(|e| InterpretError::invalid(object, format!("{field}.{name}"), e.message))?;
        requests.insert(name.clone(), quantity);
    }
    Ok(requests)
}

fn add(into: &mut Requests, other: &Requests) -> Result<(), String> {
    for (name, quantity) in other {
        let sum = match into.get(name) {
            Some(existing) => existing
                .checked_add(quantity)
                .ok_or_else(|| format!("{name} overflows"))?,
            None => *quantity,
        };
        into.insert(name.clone(), sum);
    }
    Ok(())
}

fn raise_to(into: &mut Requests, other: &Requests) {
    for (name, quantity) in other {
        match into.get(name) {
            Some(existing) if existing >= quantity => {}
            _ => {
                into.insert(name.clone(), *quantity);
            }
        }
    }
}

/// The effective resource request of one pod with spec `pod_spec` (Kubernetes' rule, see module docs).
/// `object` is only used to name the object in errors.
pub fn effective_requests(
    object: &Value,
    pod_spec: &Value,
) -> Result<BTreeMap<String, Quantity>, InterpretError> {
    let overflow = |message: String| InterpretError::invalid(object, "resources.requests", message);
    let mut total = Requests::new();
    for (index, container) in array_at(pod_spec, "/containers").iter().enumerate() {
        let requests = parse_list(
            object,
            container.pointer("/resources/requests"),
            &format!("containers[{index}].resources.requests"),
        )?;
        add(&mut total, &requests).map_err(overflow)?;
    }
    let mut sidecars = Requests::new();
    let mut init_peak = Requests::new();
    for (index, container) in array_at(pod_spec, "/initContainers").iter().enumerate() {
        let requests = parse_list(
            object,
            container.pointer("/resources/requests"),
            &format!("initContainers[{index}].resources.requests"),
        )?;
        if str_at(container, "/restartPolicy") == "Always" {
            add(&mut sidecars, &requests).map_err(overflow)?;
            raise_to(&mut init_peak, &sidecars);
        } else {
            let mut need = requests;
            add(&mut need, &sidecars).map_err(overflow)?;
            raise_to(&mut init_peak, &need);
        }
    }
    add(&mut total, &sidecars).map_err(overflow)?;
    raise_to(&mut total, &init_peak);
    let overhead = parse_list(object, pod_spec.get("overhead"), "overhead")?;
    add(&mut total, &overhead).map_err(overflow)?;
    total.retain(|_, quantity| !quantity.is_zero());
    Ok(total)
}

fn node_claim(object: &Value, pod_spec: &Value) -> Result<Option<NodeClaim>, InterpretError> {
    let present = |pointer: &str| pod_spec.pointer(pointer).filter(|v| !v.is_null()).cloned();
    let node_selector: BTreeMap<String, String> = match present("/nodeSelector") {
        Some(value) => serde_json::from_value(value).map_err(|e| {
            InterpretError::invalid(
                object,
                "nodeSelector",
                format!("must map strings to strings: {e}"),
            )
        })?,
        None => BTreeMap::new(),
    };
    let tolerations: Vec<Toleration> = match present("/tolerations") {
        Some(value) => serde_json::from_value(value).map_err(|e| {
            InterpretError::invalid(
                object,
                "tolerations",
                format!("must be a list of tolerations: {e}"),
            )
        })?,
        None => Vec::new(),
    };
    let pointer = "/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution";
    let hard_node_affinity: Option<NodeSelector> = match present(pointer) {
        Some(value) => Some(serde_json::from_value(value).map_err(|e| {
            InterpretError::invalid(
                object,
                "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                format!("must be a node selector: {e}"),
            )
        })?),
        None => None,
    };
    if node_selector.is_empty() && tolerations.is_empty() && hard_node_affinity.is_none() {
        return Ok(None);
    }
    Ok(Some(NodeClaim {
        hard_node_affinity,
        node_selector,
        tolerations,
    }))
}

/// ReplicaRequirements of a workload `object` whose pod spec is `pod_spec`: absent when the pod template has
/// neither node constraints nor resource requests.
pub fn replica_requirements(
    object: &Value,
    pod_spec: &Value,
) -> Result<Option<ReplicaRequirements>, InterpretError> {
    let node_claim = node_claim(object, pod_spec)?;
    let requests = effective_requests(object, pod_spec)?;
    if node_claim.is_none() && requests.is_empty() {
        return Ok(None);
    }
    Ok(Some(ReplicaRequirements {
        node_claim,
        resource_request: requests
            .into_iter()
            .map(|(name, quantity)| (name, WireQuantity(quantity.to_string())))
            .collect(),
        namespace: str_at(object, "/metadata/namespace").to_string(),
        priority_class_name: str_at(pod_spec, "/priorityClassName").to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn requests_of(pod_spec: Value) -> BTreeMap<String, String> {
        effective_requests(&json!({}), &pod_spec)
            .expect("valid")
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect()
    }

    fn container(cpu: &str, memory: &str) -> Value {
        json!({"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}})
    }

    #[test]
    fn effective_request_table() {
        type Case = (&'static str, Value, &'static [(&'static str, &'static str)]);
        let cases: Vec<Case> = vec![
            ("no requests", json!({"containers": [{"name": "c"}]}), &[]),
            (
                "containers are summed",
                json!({"containers": [container("100m", "128Mi"), container("250m", "64Mi")]}),
                &[("cpu", "350m"), ("memory", "192Mi")],
            ),
            (
                "a larger init container raises the request",
                json!({"containers": [container("100m", "128Mi")], "initContainers": [container("2", "64Mi")]}),
                &[("cpu", "2"), ("memory", "128Mi")],
            ),
            (
                "sidecars add to containers and to later init containers",
                json!({
                    "containers": [container("100m", "100Mi")],
                    "initContainers": [
                        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
                        container("500m", "10Mi"),
                    ]
                }),
                &[("cpu", "550m"), ("memory", "100Mi")],
            ),
            (
                "overhead is added",
                json!({"containers": [container("1", "1Gi")], "overhead": {"cpu": "250m"}}),
                &[("cpu", "1250m"), ("memory", "1Gi")],
            ),
            (
                "numbers are quantities",
                json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": 2}}}]}),
                &[("cpu", "2")],
            ),
        ];
        for (name, pod_spec, expected) in cases {
            let expected: BTreeMap<String, String> = expected
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect();
            assert_eq!(requests_of(pod_spec), expected, "{name}");
        }
    }

    #[test]
    fn bad_quantity_names_the_field() {
        let object =
            json!({"kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}});
        let error = effective_requests(&object, &json!({"containers": [container("lots", "1Gi")]}))
            .expect_err("rejected");
        let text = error.to_string();
        assert!(
            text.contains("Deployment prod/web: containers[0].resources.requests.cpu"),
            "{text}"
        );
    }

    #[test]
    fn requirements_carry_node_claim_namespace_and_priority() {
        let object =
            json!({"kind": "Deployment", "metadata": {"name": "web", "namespace": "prod"}});
        let pod_spec = json!({
            "containers": [container("100m", "128Mi")],
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
            }}},
            "priorityClassName": "high"
        });
        let requirements = replica_requirements(&object, &pod_spec)
            .expect("valid")
            .expect("present");
        let claim = requirements.node_claim.expect("node claim");
        assert_eq!(
            claim.node_selector.get("disk").map(String::as_str),
            Some("ssd")
        );
        assert_eq!(claim.tolerations.len(), 1);
        assert_eq!(
            claim
                .hard_node_affinity
                .map(|a| a.node_selector_terms.len()),
            Some(1)
        );
        assert_eq!(requirements.namespace, "prod");
        assert_eq!(requirements.priority_class_name, "high");
        assert_eq!(
            requirements
                .resource_request
                .get("cpu")
                .map(|q| q.0.as_str()),
            Some("100m")
        );
        assert_eq!(
            replica_requirements(&object, &json!({"containers": [{"name": "c"}]})).expect("valid"),
            None
        );
    }
}
