//! Table-driven tests of the built-in validations, run on defaulted objects as the server does.

use serde_json::{Value, json};

use apimachinery::GroupVersionKind;

use super::super::default_builtin;
use super::validate_builtin;

fn gvk(kind: &str) -> GroupVersionKind {
    let group = match kind {
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" => "apps",
        "Job" | "CronJob" => "batch",
        "PriorityClass" => "scheduling.k8s.io",
        "StorageClass" => "storage.k8s.io",
        "IngressClass" | "NetworkPolicy" => "networking.k8s.io",
        _ => "",
    };
    GroupVersionKind::new(group, "v1", kind)
}

/// The error lines (`field: message`) for `obj` (and `old`, on updates) after defaulting, like
/// kubectl prints them. Shared by the other validation test tables.
pub(in crate::defaults) fn problems(kind: &str, mut obj: Value, old: Option<Value>) -> Vec<String> {
    let gvk = gvk(kind);
    default_builtin(&gvk, &mut obj);
    let old = old.map(|mut old| {
        default_builtin(&gvk, &mut old);
        old
    });
    validate_builtin(&gvk, &obj, old.as_ref())
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Asserts that each (kind, object) passes validation after defaulting.
pub(in crate::defaults) fn assert_valid(cases: impl IntoIterator<Item = (&'static str, Value)>) {
    for (kind, obj) in cases {
        assert_eq!(
            problems(kind, obj.clone(), None),
            Vec::<String>::new(),
            "{kind}: {obj}"
        );
    }
}

fn deployment(spec_patch: Value) -> Value {
    let mut deploy = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]}}
        }
    });
    merge(&mut deploy["spec"], spec_patch);
    deploy
}

/// RFC 7386-style merge for building variants of a fixture.
fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                if value.is_null() {
                    target.remove(&key);
                } else {
                    merge(target.entry(key).or_insert(Value::Null), value);
                }
            }
        }
        (target, patch) => *target = patch,
    }
}

#[test]
fn valid_objects_have_no_problems() {
    let cases = [
        ("Deployment", deployment(json!({}))),
        (
            "ConfigMap",
            json!({"data": {"app.properties": "a=b", "KEY_1": "x"}, "binaryData": {"blob": "AAE="}}),
        ),
        ("Secret", json!({"stringData": {"password": "p"}})),
        (
            "Secret",
            json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "Y3J0", "tls.key": "a2V5"}}),
        ),
        (
            "Service",
            json!({"spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}}),
        ),
        (
            "Service",
            json!({"spec": {"type": "ExternalName", "externalName": "db.example.com"}}),
        ),
        (
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
        ),
        (
            "Job",
            json!({"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
        ),
        (
            "CronJob",
            json!({"spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        ),
        (
            "StatefulSet",
            json!({"spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                    "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}}}}),
        ),
        (
            "DaemonSet",
            json!({"spec": {"selector": {"matchLabels": {"app": "agent"}},
                    "template": {"metadata": {"labels": {"app": "agent", "extra": "x"}}, "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}}}),
        ),
        ("Namespace", json!({"metadata": {"name": "anything"}})),
    ];
    assert_valid(cases);
}

#[test]
fn invalid_objects_report_kubernetes_messages() {
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "Deployment",
            deployment(json!({"replicas": -1})),
            vec!["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            "Deployment",
            deployment(json!({"selector": null})),
            vec!["spec.selector: Required value"],
        ),
        (
            "Deployment",
            deployment(json!({"selector": {"matchLabels": {"app": "other"}}})),
            vec![
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
            ],
        ),
        (
            "Deployment",
            deployment(json!({"selector": {"matchLabels": null}})),
            vec!["spec.selector: Invalid value: {}: empty selector is invalid for deployment"],
        ),
        (
            "Deployment",
            deployment(
                json!({"template": {"spec": {"containers": [{"name": "Web_1", "image": ""}, {"name": "web", "image": "x"}]}}}),
            ),
            vec![
                "spec.template.spec.containers[0].name: Invalid value: \"Web_1\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.template.spec.containers[0].image: Required value",
            ],
        ),
        (
            "Deployment",
            deployment(json!({"template": {"spec": {"containers": [
                {"name": "web", "image": "a", "ports": [{"containerPort": 70000, "protocol": "tcp"}]},
                {"name": "web", "image": "b"}]}}})),
            vec![
                "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.template.spec.containers[0].ports[0].protocol: Unsupported value: \"tcp\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.template.spec.containers[1].name: Duplicate value: \"web\"",
            ],
        ),
        (
            "Deployment",
            deployment(json!({"template": {"spec": {"containers": null}}})),
            vec!["spec.template.spec.containers: Required value"],
        ),
        (
            "Deployment",
            deployment(json!({"template": {"spec": {"restartPolicy": "Never"}}})),
            vec![
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            ],
        ),
        (
            "Deployment",
            deployment(json!({"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}})),
            vec![
                "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
            ],
        ),
        (
            "Deployment",
            deployment(
                json!({"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}}),
            ),
            vec![
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"0%\": may not be 0 when `maxSurge` is 0",
            ],
        ),
        (
            "Deployment",
            deployment(json!({"strategy": {"type": "BlueGreen"}})),
            vec![
                "spec.strategy.type: Unsupported value: \"BlueGreen\": supported values: \"Recreate\", \"RollingUpdate\"",
            ],
        ),
        (
            "ReplicaSet",
            deployment(json!({"replicas": -3})),
            vec!["spec.replicas: Invalid value: -3: must be greater than or equal to 0"],
        ),
        (
            "StatefulSet",
            deployment(json!({"selector": {"matchLabels": {"app": "x"}}})),
            vec![
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
            ],
        ),
        (
            "Job",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
            vec![
                "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\"",
            ],
        ),
        (
            "Job",
            json!({"spec": {"backoffLimit": -1, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "b"}]}}}}),
            vec!["spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            "CronJob",
            json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "b"}]}}}}}}),
            vec!["spec.schedule: Required value"],
        ),
        (
            "CronJob",
            json!({"spec": {"schedule": "every minute", "concurrencyPolicy": "Sometimes",
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "b"}]}}}}}}),
            vec![
                "spec.schedule: Invalid value: \"every minute\": expected exactly 5 fields, found 2: [every minute]",
                "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
            ],
        ),
        (
            "Deployment",
            deployment(
                json!({"template": {"spec": {"containers": [{"name": "web", "image": "a",
                "resources": {"requests": {"cpu": "2", "memory": "lots"}, "limits": {"cpu": "1500m", "memory": "-1Gi"}}}]}}}),
            ),
            vec![
                "spec.template.spec.containers[0].resources.limits[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0",
                "spec.template.spec.containers[0].resources.requests[memory]: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                "spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1500m",
            ],
        ),
        (
            "Deployment",
            deployment(json!({"template": {"metadata": {"labels": {"bad key": "x y"}}}})),
            vec![
                "spec.template.metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "spec.template.metadata.labels: Invalid value: \"x y\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ],
        ),
        (
            "Service",
            json!({"spec": {"selector": {"app": "web"}}}),
            vec!["spec.ports: Required value"],
        ),
        (
            "Service",
            json!({"spec": {"ports": [{"port": 80, "protocol": "HTTP"}, {"name": "b", "port": 0, "nodePort": 30080}]}}),
            vec![
                "spec.ports[0].name: Required value",
                "spec.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.ports[1].port: Required value",
                "spec.ports[1].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
            ],
        ),
        (
            "Service",
            json!({"spec": {"type": "Magic", "ports": [{"port": 80, "targetPort": 99999}]}}),
            vec![
                "spec.type: Unsupported value: \"Magic\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
                "spec.ports[0].targetPort: Invalid value: 99999: must be between 1 and 65535, inclusive",
            ],
        ),
        (
            "Service",
            json!({"spec": {"type": "ExternalName"}}),
            vec!["spec.externalName: Required value"],
        ),
        (
            "ConfigMap",
            json!({"data": {"bad key": "v", "dup": "x", "n": 1}, "binaryData": {"dup": "eA=="}}),
            vec![
                "data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                "data[dup]: Invalid value: \"dup\": duplicate of key present in binaryData",
                "data[n]: Invalid value: 1: must be a string",
            ],
        ),
        (
            "ConfigMap",
            json!({"data": {"big": "x".repeat(1024 * 1024 + 1)}}),
            vec!["data: Too long: must have at most 1048576 bytes"],
        ),
        (
            "Secret",
            json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "not base64!"}}),
            vec![
                "data[tls.crt]: Invalid value: \"not base64!\": must be a base64-encoded string (standard alphabet, padded)",
                "data[tls.key]: Required value",
            ],
        ),
        (
            "Secret",
            json!({"type": "kubernetes.io/dockerconfigjson"}),
            vec!["data[.dockerconfigjson]: Required value"],
        ),
        (
            "Pod",
            json!({"spec": {"restartPolicy": "Sometimes", "containers": [{"name": "c", "image": "b", "env": [{"value": "x"}]}],
                "volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]}}),
            vec![
                "spec.volumes[1].name: Duplicate value: \"v\"",
                "spec.containers[0].env[0].name: Required value",
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            ],
        ),
    ];
    for (kind, obj, expected) in cases {
        assert_eq!(problems(kind, obj.clone(), None), expected, "{kind}: {obj}");
    }
}

#[test]
fn update_rules() {
    let cases: Vec<(&str, Value, Value, Vec<&str>)> = vec![
        // Scaling and changing the image are fine.
        (
            "Deployment",
            deployment(json!({})),
            deployment(json!({"replicas": 5})),
            vec![],
        ),
        (
            "Deployment",
            deployment(json!({})),
            deployment(
                json!({"selector": {"matchLabels": {"app": "web", "v": "2"}},
                              "template": {"metadata": {"labels": {"v": "2"}}}}),
            ),
            vec![
                "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"v\":\"2\"}}: field is immutable",
            ],
        ),
        (
            "StatefulSet",
            deployment(json!({})),
            deployment(
                json!({"replicas": 0, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}),
            ),
            vec![],
        ),
        (
            "StatefulSet",
            deployment(json!({"serviceName": "a"})),
            deployment(json!({"serviceName": "b"})),
            vec![
                "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ],
        ),
        (
            "Secret",
            json!({"data": {"a": "eA=="}}),
            json!({"data": {"a": "eQ=="}}),
            vec![],
        ),
        (
            "Secret",
            json!({"data": {"a": "eA=="}}),
            json!({"type": "kubernetes.io/basic-auth", "data": {"username": "eA=="}}),
            vec!["type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"],
        ),
        (
            "Secret",
            json!({"immutable": true, "data": {"a": "eA=="}}),
            json!({"immutable": true, "data": {"a": "eQ=="}}),
            vec!["data: Forbidden: field is immutable when `immutable` is set"],
        ),
        (
            "ConfigMap",
            json!({"immutable": true, "data": {"a": "1"}}),
            json!({"immutable": false, "data": {"a": "1"}}),
            vec!["immutable: Forbidden: field is immutable when `immutable` is set"],
        ),
        (
            "ConfigMap",
            json!({"immutable": true}),
            json!({"immutable": true, "data": {}}),
            vec![],
        ),
        (
            "Job",
            json!({"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "b:1"}]}}}}),
            json!({"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "b:2"}]}}}}),
            vec!["spec.template: field is immutable"],
        ),
    ];
    for (kind, old, new, expected) in cases {
        let found = problems(kind, new.clone(), Some(old));
        if kind == "Job" {
            // The Job message embeds the whole template; check the field and the rule.
            assert_eq!(found.len(), expected.len(), "{kind}: {new}: {found:?}");
            for (line, want) in found.iter().zip(&expected) {
                let (field, rule) = want.split_once(": ").unwrap_or((want, ""));
                assert!(
                    line.starts_with(field) && line.ends_with(rule),
                    "{line} vs {want}"
                );
            }
        } else {
            assert_eq!(found, expected, "{kind}: {new}");
        }
    }
}
