//! Defaults of a PodSpec and its containers, shared by Pods and every pod template (Deployment,
//! StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, ReplicationController, PodTemplate).
//!
//! `restartPolicy` defaults to `Always` in templates too, as upstream does; Jobs then fail
//! validation unless they say `Never` or `OnFailure`, which is exactly the error users see on a
//! real cluster.

use serde_json::{Map, Value, json};

use super::json::{child_object, existing_object, list_objects, set_default, set_default_str};

/// Mode of files projected from ConfigMaps, Secrets and the downward API (0644).
const DEFAULT_FILE_MODE: i64 = 0o644;

/// Fills a PodSpec's defaults in place.
pub fn default_pod_spec(spec: &mut Map<String, Value>) {
    set_default_str(spec, "restartPolicy", "Always");
    set_default_str(spec, "dnsPolicy", "ClusterFirst");
    set_default_str(spec, "schedulerName", "default-scheduler");
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "securityContext", json!({}));
    let host_network = spec
        .get("hostNetwork")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    for key in ["containers", "initContainers"] {
        for container in list_objects(spec, key) {
            default_container(container, host_network);
        }
    }
    for volume in list_objects(spec, "volumes") {
        default_volume(volume);
    }
}

/// Defaults that only a Pod (not a template) gets.
pub fn default_pod(pod: &mut Map<String, Value>) {
    if let Some(spec) = child_object(pod, "spec") {
        default_pod_spec(spec);
        set_default(spec, "enableServiceLinks", json!(true));
        for key in ["containers", "initContainers"] {
            for container in list_objects(spec, key) {
                default_requests_to_limits(container);
            }
        }
    }
    if let Some(status) = child_object(pod, "status") {
        set_default_str(status, "phase", "Pending");
    }
}

/// A Pod container with limits but no request for a resource requests its limit (Pods only,
/// not templates, as upstream).
fn default_requests_to_limits(container: &mut Map<String, Value>) {
    let Some(limits) = container
        .get("resources")
        .and_then(|r| r.get("limits"))
        .and_then(Value::as_object)
        .cloned()
    else {
        return;
    };
    if let Some(requests) =
        existing_object(container, "resources").and_then(|r| child_object(r, "requests"))
    {
        for (resource, limit) in limits {
            set_default(requests, &resource, limit);
        }
    }
}

/// Fills the PodSpec of a pod template at `template.spec`, when there is one.
pub fn default_template(owner_spec: &mut Map<String, Value>) {
    if let Some(pod_spec) =
        existing_object(owner_spec, "template").and_then(|t| existing_object(t, "spec"))
    {
        default_pod_spec(pod_spec);
    }
}

fn default_container(container: &mut Map<String, Value>, host_network: bool) {
    set_default_str(container, "terminationMessagePath", "/dev/termination-log");
    set_default_str(container, "terminationMessagePolicy", "File");
    if let Some(image) = container.get("image").and_then(Value::as_str) {
        let policy = default_image_pull_policy(image);
        set_default_str(container, "imagePullPolicy", policy);
    }
    set_default(container, "resources", json!({}));
    for port in list_objects(container, "ports") {
        set_default_str(port, "protocol", "TCP");
        if host_network && let Some(container_port) = port.get("containerPort").cloned() {
            set_default(port, "hostPort", container_port);
        }
    }
    for env in list_objects(container, "env") {
        if let Some(field_ref) =
            existing_object(env, "valueFrom").and_then(|v| existing_object(v, "fieldRef"))
        {
            set_default_str(field_ref, "apiVersion", "v1");
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = existing_object(container, probe) {
            default_probe(probe);
        }
    }
}

fn default_probe(probe: &mut Map<String, Value>) {
    set_default(probe, "timeoutSeconds", json!(1));
    set_default(probe, "periodSeconds", json!(10));
    set_default(probe, "successThreshold", json!(1));
    set_default(probe, "failureThreshold", json!(3));
    if let Some(http_get) = existing_object(probe, "httpGet") {
        set_default_str(http_get, "scheme", "HTTP");
    }
}

fn default_volume(volume: &mut Map<String, Value>) {
    for source in ["configMap", "secret", "projected", "downwardAPI"] {
        if let Some(source) = existing_object(volume, source) {
            set_default(source, "defaultMode", json!(DEFAULT_FILE_MODE));
        }
    }
    if let Some(host_path) = existing_object(volume, "hostPath") {
        set_default(host_path, "type", json!(""));
    }
}

/// `Always` for `:latest` or untagged images (they may change under the same name),
/// `IfNotPresent` for any other tag or a digest.
pub fn default_image_pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    // A ':' before the last '/' belongs to a registry host:port, not a tag.
    let last_segment = image.rsplit('/').next().unwrap_or(image);
    match last_segment.rsplit_once(':') {
        Some((_, tag)) if tag != "latest" => "IfNotPresent",
        _ => "Always",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_pull_policy_follows_the_tag() {
        let cases = [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.25", "IfNotPresent"),
            ("registry.local:5000/team/nginx", "Always"),
            ("registry.local:5000/team/nginx:1.25", "IfNotPresent"),
            ("registry.local:5000/team/nginx:latest", "Always"),
            ("nginx@sha256:0123abcd", "IfNotPresent"),
        ];
        for (image, expected) in cases {
            assert_eq!(default_image_pull_policy(image), expected, "{image}");
        }
    }

    #[test]
    fn pod_spec_gets_scheduler_and_container_defaults() {
        let mut spec = json!({
            "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
                "readinessProbe": {"httpGet": {"path": "/", "port": 80}},
                "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}],
            "volumes": [{"name": "cfg", "configMap": {"name": "cm"}}, {"name": "h", "hostPath": {"path": "/x"}}]
        })
        .as_object()
        .cloned()
        .unwrap_or_default();
        default_pod_spec(&mut spec);
        let spec = Value::Object(spec);
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["dnsPolicy"], "ClusterFirst");
        assert_eq!(spec["schedulerName"], "default-scheduler");
        assert_eq!(spec["terminationGracePeriodSeconds"], 30);
        assert_eq!(spec["securityContext"], json!({}));
        let container = &spec["containers"][0];
        assert_eq!(container["imagePullPolicy"], "Always");
        assert_eq!(container["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(container["terminationMessagePolicy"], "File");
        assert_eq!(
            container["ports"][0],
            json!({"containerPort": 80, "protocol": "TCP"})
        );
        assert_eq!(
            container["env"][0]["valueFrom"]["fieldRef"]["apiVersion"],
            "v1"
        );
        assert_eq!(
            container["readinessProbe"],
            json!({"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}, "timeoutSeconds": 1,
                   "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(spec["volumes"][0]["configMap"]["defaultMode"], 420);
        assert_eq!(spec["volumes"][1]["hostPath"]["type"], "");
    }

    #[test]
    fn explicit_values_and_host_network_ports() {
        let mut spec = json!({
            "hostNetwork": true, "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "nginx:1", "imagePullPolicy": "Never",
                "ports": [{"containerPort": 8080, "protocol": "UDP"}]}]
        })
        .as_object()
        .cloned()
        .unwrap_or_default();
        default_pod_spec(&mut spec);
        let spec = Value::Object(spec);
        assert_eq!(spec["restartPolicy"], "Never");
        assert_eq!(spec["containers"][0]["imagePullPolicy"], "Never");
        assert_eq!(
            spec["containers"][0]["ports"][0],
            json!({"containerPort": 8080, "protocol": "UDP", "hostPort": 8080})
        );
    }
}
