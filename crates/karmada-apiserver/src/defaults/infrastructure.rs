//! kube-apiserver v1.32's defaults for the cluster-infrastructure kinds users propagate:
//! PersistentVolume, LimitRange (core), StorageClass (`storage.k8s.io`), PriorityClass
//! (`scheduling.k8s.io`), NetworkPolicy and IngressClass (`networking.k8s.io`).

use serde_json::{Map, Value, json};

use super::json::{child_object, existing_object, list_objects, set_default, set_default_str};

/// `Retain` reclaim policy and `Filesystem` mode; a new volume's phase is `Pending`.
pub fn default_persistent_volume(volume: &mut Map<String, Value>) {
    if let Some(spec) = child_object(volume, "spec") {
        set_default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
        set_default_str(spec, "volumeMode", "Filesystem");
        if let Some(host_path) = existing_object(spec, "hostPath") {
            set_default(host_path, "type", json!(""));
        }
    }
    if let Some(status) = child_object(volume, "status") {
        set_default_str(status, "phase", "Pending");
    }
}

/// Volumes provisioned for the class are deleted with their claim and bound at once.
pub fn default_storage_class(class: &mut Map<String, Value>) {
    set_default_str(class, "reclaimPolicy", "Delete");
    set_default_str(class, "volumeBindingMode", "Immediate");
}

pub fn default_priority_class(class: &mut Map<String, Value>) {
    set_default_str(class, "preemptionPolicy", "PreemptLowerPriority");
}

/// `policyTypes` when none are given: `Ingress`, plus `Egress` when egress rules exist; ports
/// without a protocol are TCP.
pub fn default_network_policy(spec: &mut Map<String, Value>) {
    let unset = spec
        .get("policyTypes")
        .is_none_or(|types| types.is_null() || types.as_array().is_some_and(Vec::is_empty));
    if unset {
        let has_egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|rules| !rules.is_empty());
        let types = if has_egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
    for direction in ["ingress", "egress"] {
        for rule in list_objects(spec, direction) {
            for port in list_objects(rule, "ports") {
                set_default_str(port, "protocol", "TCP");
            }
        }
    }
}

/// Parameters of an IngressClass are cluster-scoped unless they say otherwise.
pub fn default_ingress_class(spec: &mut Map<String, Value>) {
    if let Some(parameters) = existing_object(spec, "parameters") {
        set_default_str(parameters, "scope", "Cluster");
    }
}

/// Container limits: the default limit falls back to `max`, the default request to the default
/// limit and then to `min`.
pub fn default_limit_range(spec: &mut Map<String, Value>) {
    for item in list_objects(spec, "limits") {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let resources = |item: &Map<String, Value>, key: &str| -> Map<String, Value> {
            item.get(key)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let mut limit = resources(item, "default");
        for (resource, value) in resources(item, "max") {
            limit.entry(resource).or_insert(value);
        }
        let mut request = resources(item, "defaultRequest");
        for (resource, value) in limit.iter().chain(resources(item, "min").iter()) {
            request
                .entry(resource.clone())
                .or_insert_with(|| value.clone());
        }
        for (key, values) in [("default", limit), ("defaultRequest", request)] {
            // A field of another type is left for validation to report.
            let writable = item.get(key).is_none_or(|v| v.is_null() || v.is_object());
            if writable && !values.is_empty() {
                item.insert(key.into(), Value::Object(values));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use apimachinery::GroupVersionKind;

    use super::super::default_builtin;

    fn defaulted(group: &str, kind: &str, mut obj: Value) -> Value {
        default_builtin(&GroupVersionKind::new(group, "v1", kind), &mut obj);
        obj
    }

    #[test]
    fn defaults_fill_absent_fields_only() {
        // (group, kind, object, expected object)
        let cases = [
            (
                "",
                "PersistentVolume",
                json!({"spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/data"}}}),
                json!({"spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/data", "type": ""},
                       "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"},
                       "status": {"phase": "Pending"}}),
            ),
            (
                "",
                "PersistentVolume",
                json!({"spec": {"persistentVolumeReclaimPolicy": "Delete", "volumeMode": "Block"},
                       "status": {"phase": "Bound"}}),
                json!({"spec": {"persistentVolumeReclaimPolicy": "Delete", "volumeMode": "Block"},
                       "status": {"phase": "Bound"}}),
            ),
            (
                "storage.k8s.io",
                "StorageClass",
                json!({"provisioner": "example.com/csi"}),
                json!({"provisioner": "example.com/csi", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}),
            ),
            (
                "storage.k8s.io",
                "StorageClass",
                json!({"provisioner": "p", "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer"}),
                json!({"provisioner": "p", "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer"}),
            ),
            (
                "scheduling.k8s.io",
                "PriorityClass",
                json!({"value": 1000}),
                json!({"value": 1000, "preemptionPolicy": "PreemptLowerPriority"}),
            ),
            (
                "scheduling.k8s.io",
                "PriorityClass",
                json!({"value": 1000, "preemptionPolicy": "Never"}),
                json!({"value": 1000, "preemptionPolicy": "Never"}),
            ),
            (
                "networking.k8s.io",
                "NetworkPolicy",
                json!({"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}]}}),
                json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress"],
                       "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}]}}),
            ),
            (
                "networking.k8s.io",
                "NetworkPolicy",
                json!({"spec": {"podSelector": {}, "policyTypes": [], "egress": [{"to": []}]}}),
                json!({"spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "egress": [{"to": []}]}}),
            ),
            (
                "networking.k8s.io",
                "NetworkPolicy",
                json!({"spec": {"podSelector": {}, "policyTypes": ["Egress"]}}),
                json!({"spec": {"podSelector": {}, "policyTypes": ["Egress"]}}),
            ),
            (
                "networking.k8s.io",
                "IngressClass",
                json!({"spec": {"controller": "c", "parameters": {"kind": "K", "name": "n"}}}),
                json!({"spec": {"controller": "c", "parameters": {"kind": "K", "name": "n", "scope": "Cluster"}}}),
            ),
            (
                "networking.k8s.io",
                "IngressClass",
                json!({"spec": {"controller": "c"}}),
                json!({"spec": {"controller": "c"}}),
            ),
            (
                "",
                "LimitRange",
                json!({"spec": {"limits": [
                    {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "ephemeral-storage": "1Gi"},
                     "default": {"cpu": "1"}},
                    {"type": "Pod", "max": {"cpu": "4"}}]}}),
                json!({"spec": {"limits": [
                    {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "ephemeral-storage": "1Gi"},
                     "default": {"cpu": "1", "memory": "1Gi"},
                     "defaultRequest": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}},
                    {"type": "Pod", "max": {"cpu": "4"}}]}}),
            ),
        ];
        for (group, kind, obj, expected) in cases {
            assert_eq!(
                defaulted(group, kind, obj.clone()),
                expected,
                "{kind}: {obj}"
            );
        }
    }

    #[test]
    fn pod_templates_get_pod_defaults() {
        let template = defaulted(
            "",
            "PodTemplate",
            json!({"template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}),
        );
        let spec = &template["template"]["spec"];
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
    }
}
