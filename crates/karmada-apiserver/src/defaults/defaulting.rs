//! kube-apiserver's defaults for the built-in kinds, applied on every create and update before
//! validation.
//!
//! Left out on purpose (they need the server's state or randomness, so they belong to the
//! caller): Service `clusterIP`/`nodePort` allocation, Job controller-uid selectors and labels,
//! admission-time Pod fields (`serviceAccountName`, tolerations, priority). Job pod templates get
//! `restartPolicy: Always` like every template, which Job validation then rejects unless the
//! manifest says `Never` or `OnFailure` — the same outcome as upstream.

use base64::Engine;
use serde_json::{Map, Value, json};

use apimachinery::GroupVersionKind;

use super::json::{child_object, existing_object, list_objects, set_default, set_default_str};
use super::pod::{default_pod, default_pod_spec, default_template};
use super::{infrastructure, scaling};

/// Applies kube-apiserver's defaults for `gvk` to `obj` in place. Unknown kinds and objects of
/// an unexpected shape are left as they are.
pub fn default_builtin(gvk: &GroupVersionKind, obj: &mut Value) {
    let Some(object) = obj.as_object_mut() else {
        return;
    };
    match (gvk.group.as_str(), gvk.kind.as_str()) {
        ("", "Namespace") => default_namespace(object),
        ("", "Secret") => default_secret(object),
        ("", "Service") => default_service(object),
        ("", "Pod") => default_pod(object),
        ("apps", "Deployment") => with_spec(object, default_deployment),
        ("apps", "StatefulSet") => with_spec(object, default_stateful_set),
        ("apps", "DaemonSet") => with_spec(object, default_daemon_set),
        ("apps", "ReplicaSet") => with_spec(object, default_replica_set),
        ("batch", "Job") => with_spec(object, default_job),
        ("batch", "CronJob") => with_spec(object, default_cron_job),
        ("", "PodTemplate") => default_template(object),
        ("", "ReplicationController") => scaling::default_replication_controller(object),
        ("autoscaling", "HorizontalPodAutoscaler") => with_spec(object, scaling::default_hpa),
        ("", "PersistentVolume") => infrastructure::default_persistent_volume(object),
        ("", "LimitRange") => with_spec(object, infrastructure::default_limit_range),
        ("storage.k8s.io", "StorageClass") => infrastructure::default_storage_class(object),
        ("scheduling.k8s.io", "PriorityClass") => infrastructure::default_priority_class(object),
        ("networking.k8s.io", "NetworkPolicy") => {
            with_spec(object, infrastructure::default_network_policy)
        }
        ("networking.k8s.io", "IngressClass") => {
            with_spec(object, infrastructure::default_ingress_class)
        }
        _ => {}
    }
}

fn with_spec(object: &mut Map<String, Value>, fill: fn(&mut Map<String, Value>)) {
    if let Some(spec) = child_object(object, "spec") {
        fill(spec);
    }
}

fn default_namespace(namespace: &mut Map<String, Value>) {
    if let Some(spec) = child_object(namespace, "spec") {
        set_default(spec, "finalizers", json!(["kubernetes"]));
    }
    if let Some(status) = child_object(namespace, "status") {
        set_default_str(status, "phase", "Active");
    }
}

/// `type: Opaque`, and `stringData` folded into base64 `data` (its keys win) and dropped, so
/// readers only ever see `data`.
fn default_secret(secret: &mut Map<String, Value>) {
    set_default_str(secret, "type", "Opaque");
    let Some(Value::Object(string_data)) = secret.remove("stringData") else {
        return;
    };
    let Some(data) = child_object(secret, "data") else {
        return;
    };
    for (key, value) in string_data {
        let text = match value {
            Value::String(text) => text,
            other => other.to_string(),
        };
        data.insert(
            key,
            Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
        );
    }
}

fn default_service(service: &mut Map<String, Value>) {
    let Some(spec) = child_object(service, "spec") else {
        return;
    };
    set_default_str(spec, "type", "ClusterIP");
    set_default_str(spec, "sessionAffinity", "None");
    let service_type = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if spec.get("sessionAffinity").and_then(Value::as_str) == Some("ClientIP")
        && let Some(config) =
            child_object(spec, "sessionAffinityConfig").and_then(|c| child_object(c, "clientIP"))
    {
        set_default(config, "timeoutSeconds", json!(10800));
    }
    for port in list_objects(spec, "ports") {
        set_default_str(port, "protocol", "TCP");
        let target_unset = match port.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        if target_unset && let Some(number) = port.get("port").cloned() {
            port.insert("targetPort".into(), number);
        }
    }
    if service_type == "ExternalName" {
        return;
    }
    set_default_str(spec, "internalTrafficPolicy", "Cluster");
    // Single-stack IPv4 is the only family this server hands out.
    set_default_str(spec, "ipFamilyPolicy", "SingleStack");
    set_default(spec, "ipFamilies", json!(["IPv4"]));
    if service_type == "NodePort" || service_type == "LoadBalancer" {
        set_default_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if service_type == "LoadBalancer" {
        set_default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

fn default_deployment(spec: &mut Map<String, Value>) {
    set_default(spec, "replicas", json!(1));
    if let Some(strategy) = child_object(spec, "strategy") {
        set_default_str(strategy, "type", "RollingUpdate");
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(rolling) = child_object(strategy, "rollingUpdate")
        {
            set_default(rolling, "maxUnavailable", json!("25%"));
            set_default(rolling, "maxSurge", json!("25%"));
        }
    }
    set_default(spec, "revisionHistoryLimit", json!(10));
    set_default(spec, "progressDeadlineSeconds", json!(600));
    default_template(spec);
}

fn default_stateful_set(spec: &mut Map<String, Value>) {
    set_default(spec, "replicas", json!(1));
    set_default_str(spec, "podManagementPolicy", "OrderedReady");
    if let Some(strategy) = child_object(spec, "updateStrategy") {
        let type_was_unset = strategy
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        set_default_str(strategy, "type", "RollingUpdate");
        // Like upstream: `rollingUpdate` is created only when the type itself was defaulted.
        if type_was_unset {
            set_default(strategy, "rollingUpdate", json!({}));
        }
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(rolling) = existing_object(strategy, "rollingUpdate")
        {
            set_default(rolling, "partition", json!(0));
        }
    }
    set_default(spec, "revisionHistoryLimit", json!(10));
    if let Some(policy) = child_object(spec, "persistentVolumeClaimRetentionPolicy") {
        set_default_str(policy, "whenDeleted", "Retain");
        set_default_str(policy, "whenScaled", "Retain");
    }
    for claim in list_objects(spec, "volumeClaimTemplates") {
        if let Some(claim_spec) = existing_object(claim, "spec") {
            set_default_str(claim_spec, "volumeMode", "Filesystem");
        }
    }
    default_template(spec);
}

fn default_daemon_set(spec: &mut Map<String, Value>) {
    if let Some(strategy) = child_object(spec, "updateStrategy") {
        set_default_str(strategy, "type", "RollingUpdate");
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(rolling) = child_object(strategy, "rollingUpdate")
        {
            set_default(rolling, "maxUnavailable", json!(1));
            set_default(rolling, "maxSurge", json!(0));
        }
    }
    set_default(spec, "revisionHistoryLimit", json!(10));
    default_template(spec);
}

fn default_replica_set(spec: &mut Map<String, Value>) {
    set_default(spec, "replicas", json!(1));
    default_template(spec);
}

fn default_job(spec: &mut Map<String, Value>) {
    let unset = |spec: &Map<String, Value>, key: &str| spec.get(key).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    set_default(spec, "parallelism", json!(1));
    let backoff = if unset(spec, "backoffLimitPerIndex") {
        json!(6)
    } else {
        json!(i32::MAX)
    };
    set_default(spec, "backoffLimit", backoff);
    set_default_str(spec, "completionMode", "NonIndexed");
    set_default(spec, "suspend", json!(false));
    let replacement = if unset(spec, "podFailurePolicy") {
        "TerminatingOrFailed"
    } else {
        "Failed"
    };
    set_default_str(spec, "podReplacementPolicy", replacement);
    default_template(spec);
}

fn default_cron_job(spec: &mut Map<String, Value>) {
    set_default_str(spec, "concurrencyPolicy", "Allow");
    set_default(spec, "suspend", json!(false));
    set_default(spec, "successfulJobsHistoryLimit", json!(3));
    set_default(spec, "failedJobsHistoryLimit", json!(1));
    if let Some(pod_spec) = existing_object(spec, "jobTemplate")
        .and_then(|t| existing_object(t, "spec"))
        .and_then(|s| existing_object(s, "template"))
        .and_then(|t| existing_object(t, "spec"))
    {
        default_pod_spec(pod_spec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaulted(group: &str, kind: &str, mut obj: Value) -> Value {
        default_builtin(&GroupVersionKind::new(group, "v1", kind), &mut obj);
        obj
    }

    fn template() -> Value {
        json!({"metadata": {"labels": {"app": "web"}},
               "spec": {"containers": [{"name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]}})
    }

    #[test]
    fn namespace_gets_finalizer_and_active_phase() {
        let ns = defaulted("", "Namespace", json!({"metadata": {"name": "a"}}));
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(ns["status"]["phase"], "Active");
        let terminating = defaulted("", "Namespace", json!({"status": {"phase": "Terminating"}}));
        assert_eq!(terminating["status"]["phase"], "Terminating");
    }

    #[test]
    fn secret_string_data_is_folded_into_data() {
        let secret = defaulted(
            "",
            "Secret",
            json!({"data": {"keep": "eA==", "user": "b2xk"}, "stringData": {"user": "admin", "pass": "s3cret"}}),
        );
        assert_eq!(secret["type"], "Opaque");
        assert!(secret.get("stringData").is_none());
        assert_eq!(
            secret["data"],
            json!({"keep": "eA==", "user": "YWRtaW4=", "pass": "czNjcmV0"})
        );
        let typed = defaulted("", "Secret", json!({"type": "kubernetes.io/tls"}));
        assert_eq!(typed["type"], "kubernetes.io/tls");
        assert!(typed.get("data").is_none());
    }

    #[test]
    fn service_defaults_by_type() {
        let cluster_ip = defaulted(
            "",
            "Service",
            json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}}),
        );
        assert_eq!(cluster_ip["spec"]["type"], "ClusterIP");
        assert_eq!(cluster_ip["spec"]["sessionAffinity"], "None");
        assert_eq!(cluster_ip["spec"]["internalTrafficPolicy"], "Cluster");
        assert_eq!(cluster_ip["spec"]["ipFamilyPolicy"], "SingleStack");
        assert_eq!(cluster_ip["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(
            cluster_ip["spec"]["ports"][0],
            json!({"port": 80, "protocol": "TCP", "targetPort": 80})
        );
        assert_eq!(
            cluster_ip["spec"]["ports"][1],
            json!({"port": 53, "protocol": "UDP", "targetPort": "dns"})
        );
        assert!(cluster_ip["spec"].get("externalTrafficPolicy").is_none());

        let lb = defaulted(
            "",
            "Service",
            json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 443, "targetPort": 0}]}}),
        );
        assert_eq!(lb["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
        assert_eq!(
            lb["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
            10800
        );
        assert_eq!(lb["spec"]["ports"][0]["targetPort"], 443);

        let external = defaulted(
            "",
            "Service",
            json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}),
        );
        assert!(external["spec"].get("ipFamilyPolicy").is_none());
        assert!(external["spec"].get("internalTrafficPolicy").is_none());
    }

    #[test]
    fn deployment_defaults_and_template() {
        let deploy = defaulted(
            "apps",
            "Deployment",
            json!({"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template()}}),
        );
        let spec = &deploy["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(spec["progressDeadlineSeconds"], 600);
        assert_eq!(spec["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(
            spec["template"]["spec"]["containers"][0]["ports"][0]["protocol"],
            "TCP"
        );
        assert_eq!(
            spec["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );

        let recreate = defaulted(
            "apps",
            "Deployment",
            json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}}),
        );
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(recreate["spec"]["replicas"], 0);
    }

    #[test]
    fn stateful_set_defaults() {
        let sts = defaulted(
            "apps",
            "StatefulSet",
            json!({"spec": {"template": template(), "volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}}),
        );
        let spec = &sts["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(spec["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            spec["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(
            spec["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        assert_eq!(
            spec["volumeClaimTemplates"][0]["spec"]["volumeMode"],
            "Filesystem"
        );
        assert_eq!(spec["template"]["spec"]["dnsPolicy"], "ClusterFirst");

        let on_delete = defaulted(
            "apps",
            "StatefulSet",
            json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
        );
        assert_eq!(
            on_delete["spec"]["updateStrategy"],
            json!({"type": "OnDelete"})
        );
    }

    #[test]
    fn daemon_set_and_replica_set_defaults() {
        let ds = defaulted(
            "apps",
            "DaemonSet",
            json!({"spec": {"template": template()}}),
        );
        assert_eq!(
            ds["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
        assert!(ds["spec"].get("replicas").is_none());
        let rs = defaulted(
            "apps",
            "ReplicaSet",
            json!({"spec": {"template": template()}}),
        );
        assert_eq!(rs["spec"]["replicas"], 1);
        assert_eq!(
            rs["spec"]["template"]["spec"]["schedulerName"],
            "default-scheduler"
        );
    }

    #[test]
    fn job_defaults() {
        let cases = [
            (
                json!({}),
                json!(1),
                json!(1),
                json!(6),
                "TerminatingOrFailed",
            ),
            (
                json!({"parallelism": 3}),
                Value::Null,
                json!(3),
                json!(6),
                "TerminatingOrFailed",
            ),
            (
                json!({"completions": 5}),
                json!(5),
                json!(1),
                json!(6),
                "TerminatingOrFailed",
            ),
            (
                json!({"backoffLimitPerIndex": 1, "completionMode": "Indexed", "completions": 2}),
                json!(2),
                json!(1),
                json!(i32::MAX),
                "TerminatingOrFailed",
            ),
            (
                json!({"podFailurePolicy": {"rules": []}}),
                json!(1),
                json!(1),
                json!(6),
                "Failed",
            ),
        ];
        for (spec, completions, parallelism, backoff, replacement) in cases {
            let job = defaulted("batch", "Job", json!({"spec": spec.clone()}));
            let out = &job["spec"];
            assert_eq!(
                out.get("completions").cloned().unwrap_or(Value::Null),
                completions,
                "{spec}"
            );
            assert_eq!(out["parallelism"], parallelism, "{spec}");
            assert_eq!(out["backoffLimit"], backoff, "{spec}");
            assert_eq!(out["podReplacementPolicy"], replacement, "{spec}");
            assert_eq!(out["suspend"], false);
        }
        let job = defaulted("batch", "Job", json!({"spec": {}}));
        assert_eq!(job["spec"]["completionMode"], "NonIndexed");
    }

    #[test]
    fn cron_job_defaults_reach_the_pod_template() {
        let cron = defaulted(
            "batch",
            "CronJob",
            json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        );
        let spec = &cron["spec"];
        assert_eq!(spec["concurrencyPolicy"], "Allow");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["successfulJobsHistoryLimit"], 3);
        assert_eq!(spec["failedJobsHistoryLimit"], 1);
        let pod_spec = &spec["jobTemplate"]["spec"]["template"]["spec"];
        assert_eq!(pod_spec["restartPolicy"], "OnFailure");
        assert_eq!(pod_spec["containers"][0]["imagePullPolicy"], "Always");
    }

    #[test]
    fn pods_get_pod_only_defaults_and_unknown_kinds_are_untouched() {
        let pod = defaulted(
            "",
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "image": "nginx",
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}]}}),
        );
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "500m", "memory": "1Gi"})
        );
        assert_eq!(pod["spec"]["enableServiceLinks"], true);
        assert_eq!(pod["status"]["phase"], "Pending");
        let original = json!({"data": {"a": "b"}});
        assert_eq!(defaulted("", "ConfigMap", original.clone()), original);
        assert_eq!(
            defaulted("policy.karmada.io", "PropagationPolicy", original.clone()),
            original
        );
        assert_eq!(
            defaulted("apps", "Deployment", json!("not an object")),
            json!("not an object")
        );
    }
}
