//! Protobuf request bodies: real kubectl 1.32 generator output, hand-built messages and
//! malformed input.

#![allow(clippy::unwrap_used)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use apiserver_views::protobuf::{DecodeError, decode};
use serde_json::json;

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

// Bodies captured from `kubectl create …` (v1.32.4) against a throwaway listener.
const CONFIG_MAP: &str = "6b3873000a0f0a0276311209436f6e6669674d617012270a130a03636d3112001a0022002a0032003800420012060a016112016212080a026b32120276321a002200";
const SECRET: &str = "6b3873000a0c0a0276311206536563726574122b0a120a02733112001a0022002a00320038004200120d0a0475736572120561646d696e1a064f70617175651a002200";
const NAMESPACE: &str = "6b3873000a0f0a02763112094e616d657370616365121e0a160a067465616d2d6112001a0022002a0032003800420012001a020a001a002200";
const SERVICE_ACCOUNT: &str = "6b3873000a140a027631120e536572766963654163636f756e7412150a130a0373613112001a0022002a003200380042001a002200";
const SERVICE: &str = "6b3873000a0d0a02763112075365727669636512690a1f0a0377656212001a0022002a003200380042005a0a0a03617070120377656212420a1b0a0738302d38303830120354435018502207080010903f1a002800120a0a0361707012037765621a002209436c757374657249503a00420052005a00600068001a020a001a002200";
const DEPLOYMENT: &str = "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412bd010a1f0a0377656212001a0022002a003200380042005a0a0a036170701203776562128b010803120c0a0a0a0361707012037765621a710a1c0a0012001a0022002a003200380042005a0a0a036170701203776562125112330a056e67696e78120a6e67696e783a312e32352a00320a0a001000185022002a0042006a007200800100880100900100a201001a00320042004a0052005800600068008201008a01009a0100c2010022020a00280038001a0c0800100018002000280038001a002200";
const JOB: &str = "6b3873000a0f0a0862617463682f763112034a6f621284010a120a026a3112001a0022002a00320038004200126432620a100a0012001a0022002a00320038004200124e122b0a026a31120762757379626f781a046563686f1a0268692a0042006a007200800100880100900100a201001a054e65766572320042004a0052005800600068008201008a01009a0100c201001a082000280030003a001a002200";

// More generator bodies (same capture), each checked against `kubectl create … --dry-run=client -o json`.
const CRON_JOB: &str = "6b3873000a130a0862617463682f7631120743726f6e4a6f6212d4010a170a076e696768746c7912001a0022002a0032003800420012b6010a09302033202a202a202a1a002aa6010a170a076e696768746c7912001a0022002a00320038004200128a013287010a100a0012001a0022002a003200380042001273124c0a076e696768746c79120762757379626f781a046563686f1a0268691a102d2d6472792d72756e3d636c69656e741a022d6f1a046a736f6e2a0042006a007200800100880100900100a201001a094f6e4661696c757265320042004a0052005800600068008201008a01009a0100c201001a001a002200";
const ROLE: &str = "6b3873000a240a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311204526f6c65123c0a160a0672656164657212001a0022002a0032003800420012220a036765740a046c69737412001a04706f64731a0a636f6e6669676d6170732201611a002200";
const CLUSTER_ROLE: &str = "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b436c7573746572526f6c6512250a120a02637212001a0022002a00320038004200120f0a036765742a082f6865616c74687a1a002200";
const ROLE_BINDING: &str = "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b526f6c6542696e64696e6712b4010a120a02726212001a0022002a00320038004200122a0a04557365721219726261632e617574686f72697a6174696f6e2e6b38732e696f1a05616c6963652200122a0a0547726f75701219726261632e617574686f72697a6174696f6e2e6b38732e696f1a04646576732200121b0a0e536572766963654163636f756e7412001a03626f74220263691a290a19726261632e617574686f72697a6174696f6e2e6b38732e696f1204526f6c651a067265616465721a002200";
const CLUSTER_ROLE_BINDING: &str = "6b3873000a320a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311212436c7573746572526f6c6542696e64696e67126d0a130a0363726212001a0022002a0032003800420012280a04557365721219726261632e617574686f72697a6174696f6e2e6b38732e696f1a03626f6222001a2c0a19726261632e617574686f72697a6174696f6e2e6b38732e696f120b436c7573746572526f6c651a0263721a002200";
const INGRESS: &str = "6b3873000a1f0a146e6574776f726b696e672e6b38732e696f2f76311207496e6772657373127e0a140a047369746512001a0022002a0032003800420012620a0e220c0a0364656612050a0010903f12150a0d612e6578616d706c652e636f6d1204636572741a320a0d612e6578616d706c652e636f6d12210a1f0a1d0a042f617069120d220b0a0373766312040a0010501a0650726566697822056e67696e781a020a001a002200";
const NODE_PORT_SERVICE: &str = "6b3873000a0d0a02763112075365727669636512670a1d0a026e7012001a0022002a003200380042005a090a0361707012026e7012420a1d0a0738302d38303830120354435018502207080010903f1a002880eb0112090a0361707012026e701a0022084e6f6465506f72743a00420052005a00600068001a020a001a002200";
const ZERO_REPLICAS_DEPLOYMENT: &str = "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412bd010a1f0a0377656212001a0022002a003200380042005a0a0a036170701203776562128b010800120c0a0a0a0361707012037765621a710a1c0a0012001a0022002a003200380042005a0a0a036170701203776562125112330a056e67696e78120a6e67696e783a312e32352a00320a0a001000185022002a0042006a007200800100880100900100a201001a00320042004a0052005800600068008201008a01009a0100c2010022020a00280038001a0c0800100018002000280038001a002200";

#[test]
fn decodes_more_generator_bodies() {
    let rbac = "rbac.authorization.k8s.io";
    let cases = [
        // The capture passed extra flags after `--`, so they became part of the command.
        (
            CRON_JOB,
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"metadata": {"name": "nightly"},
                "spec": {"template": {"spec": {"containers": [{"name": "nightly", "image": "busybox",
                    "command": ["echo", "hi", "--dry-run=client", "-o", "json"]}], "restartPolicy": "OnFailure"}}}}}}),
        ),
        (
            ROLE,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader"},
            "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "configmaps"], "resourceNames": ["a"]}]}),
        ),
        (
            CLUSTER_ROLE,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "cr"},
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
        ),
        (
            ROLE_BINDING,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"},
            "subjects": [{"kind": "User", "apiGroup": rbac, "name": "alice"}, {"kind": "Group", "apiGroup": rbac, "name": "devs"},
                         {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"}],
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "reader"}}),
        ),
        (
            CLUSTER_ROLE_BINDING,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "crb"},
            "subjects": [{"kind": "User", "apiGroup": rbac, "name": "bob"}],
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "cr"}}),
        ),
        (
            INGRESS,
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "site"},
            "spec": {"ingressClassName": "nginx", "defaultBackend": {"service": {"name": "def", "port": {"number": 8080}}},
                     "tls": [{"hosts": ["a.example.com"], "secretName": "cert"}],
                     "rules": [{"host": "a.example.com", "http": {"paths": [{"path": "/api", "pathType": "Prefix",
                         "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]}}),
        ),
        (
            NODE_PORT_SERVICE,
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np", "labels": {"app": "np"}},
            "spec": {"ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080, "nodePort": 30080}],
                     "selector": {"app": "np"}, "type": "NodePort"}}),
        ),
        (
            ZERO_REPLICAS_DEPLOYMENT,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]}}}}),
        ),
    ];
    for (body, expected) in cases {
        let decoded = decode(&hex(body)).unwrap();
        // Key order differs from kubectl's JSON; compare as values.
        assert_eq!(decoded, expected, "{}", expected["kind"]);
    }
}

#[test]
fn decodes_every_kubectl_generator_body() {
    let cases = [
        (
            CONFIG_MAP,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"},
            "data": {"a": "b", "k2": "v2"}}),
        ),
        (
            SECRET,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"},
            "data": {"user": "YWRtaW4="}, "type": "Opaque"}),
        ),
        (
            NAMESPACE,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}),
        ),
        (
            SERVICE_ACCOUNT,
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa1"}}),
        ),
        (
            SERVICE,
            json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}],
                     "selector": {"app": "web"}, "type": "ClusterIP"}}),
        ),
        (
            DEPLOYMENT,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
                                                           "ports": [{"containerPort": 80}]}]}}}}),
        ),
        (
            JOB,
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j1"},
            "spec": {"template": {"spec": {"containers": [{"name": "j1", "image": "busybox", "command": ["echo", "hi"]}],
                                           "restartPolicy": "Never"}}}}),
        ),
    ];
    for (body, expected) in cases {
        let decoded = decode(&hex(body)).unwrap();
        assert_eq!(decoded, expected, "{}", expected["kind"]);
    }
}

/// A minimal protobuf encoder for building test messages.
mod enc {
    pub fn varint(mut value: u64, out: &mut Vec<u8>) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    pub fn int(number: u32, value: i64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(u64::from(number) << 3, &mut out);
        varint(value as u64, &mut out);
        out
    }
    pub fn bytes(number: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint((u64::from(number) << 3) | 2, &mut out);
        varint(payload.len() as u64, &mut out);
        out.extend_from_slice(payload);
        out
    }
    pub fn text(number: u32, value: &str) -> Vec<u8> {
        bytes(number, value.as_bytes())
    }
    pub fn msg(number: u32, parts: &[Vec<u8>]) -> Vec<u8> {
        bytes(number, &parts.concat())
    }
    pub fn entry(number: u32, key: &str, value: &[u8]) -> Vec<u8> {
        msg(number, &[text(1, key), bytes(2, value)])
    }
    pub fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut out = b"k8s\0".to_vec();
        out.extend(msg(1, &[text(1, api_version), text(2, kind)]));
        out.extend(bytes(2, raw));
        out
    }
}

#[test]
fn decodes_times_pointers_int_or_string_and_quantities() {
    use enc::*;
    let metadata = msg(
        1,
        &[
            text(1, "web"),
            text(3, "prod"),
            msg(8, &[int(1, 1_764_439_447)]),
            text(14, "example.com/guard"),
            msg(
                13,
                &[
                    text(1, "ReplicaSet"),
                    text(3, "rs"),
                    text(4, "u-1"),
                    text(5, "apps/v1"),
                    int(6, 1),
                ],
            ),
        ],
    );
    let container = msg(
        2,
        &[
            text(1, "app"),
            text(2, "img"),
            text(4, "--flag"),
            msg(7, &[text(1, "MODE"), text(2, "fast")]),
            msg(
                8,
                &[
                    entry(1, "cpu", &text(1, "500m")),
                    entry(2, "memory", &text(1, "64Mi")),
                ],
            ),
        ],
    );
    let spec = msg(
        2,
        &[
            int(1, 0), // replicas: 0 is explicit and must survive
            msg(3, &[msg(2, &[container, text(3, "Always")])]),
            msg(
                4,
                &[
                    text(1, "RollingUpdate"),
                    msg(
                        2,
                        &[msg(1, &[int(1, 1), text(3, "25%")]), msg(2, &[int(2, 2)])],
                    ),
                ],
            ),
            int(5, 0), // minReadySeconds: zero is omitted
        ],
    );
    let raw = [metadata, spec].concat();
    let decoded = decode(&envelope("apps/v1", "Deployment", &raw)).unwrap();
    assert_eq!(
        decoded["metadata"]["creationTimestamp"],
        "2025-11-29T18:04:07Z"
    );
    assert_eq!(decoded["metadata"]["namespace"], "prod");
    assert_eq!(
        decoded["metadata"]["finalizers"],
        json!(["example.com/guard"])
    );
    assert_eq!(
        decoded["metadata"]["ownerReferences"][0]["controller"],
        true
    );
    assert_eq!(decoded["spec"]["replicas"], 0);
    assert!(decoded["spec"].get("minReadySeconds").is_none());
    let container = &decoded["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["args"], json!(["--flag"]));
    assert_eq!(container["env"], json!([{"name": "MODE", "value": "fast"}]));
    assert_eq!(
        container["resources"],
        json!({"limits": {"cpu": "500m"}, "requests": {"memory": "64Mi"}})
    );
    assert_eq!(
        decoded["spec"]["template"]["spec"]["restartPolicy"],
        "Always"
    );
    assert_eq!(
        decoded["spec"]["strategy"]["rollingUpdate"],
        json!({"maxUnavailable": "25%", "maxSurge": 2})
    );
}

#[test]
fn secret_bytes_become_base64_and_string_data_stays_text() {
    use enc::*;
    let raw = [
        msg(1, &[text(1, "s")]),
        entry(2, "bin", &[0, 1, 2, 255]),
        text(3, "Opaque"),
        entry(4, "plain", b"hi"),
    ]
    .concat();
    let decoded = decode(&envelope("v1", "Secret", &raw)).unwrap();
    assert_eq!(decoded["data"], json!({"bin": "AAEC/w=="}));
    assert_eq!(decoded["stringData"], json!({"plain": "hi"}));
}

#[test]
fn bad_bodies_get_clear_errors() {
    use enc::*;
    let unsupported = decode(&envelope("v1", "Pod", &msg(1, &[text(1, "p")]))).unwrap_err();
    assert!(matches!(&unsupported, DecodeError::UnsupportedKind { kind, .. } if kind == "Pod"));
    assert!(
        unsupported.to_string().contains("ConfigMap"),
        "lists accepted kinds: {unsupported}"
    );
    assert_eq!(
        decode(b"{\"kind\":\"ConfigMap\"}"),
        Err(DecodeError::MissingMagic)
    );

    let full = hex(CONFIG_MAP);
    for cut in [5, 10, 20, full.len() - 3] {
        assert!(
            matches!(decode(&full[..cut]), Err(DecodeError::Malformed(_))),
            "cut at {cut}"
        );
    }
    let mut encoded = b"k8s\0".to_vec();
    encoded.extend(msg(1, &[text(1, "v1"), text(2, "ConfigMap")]));
    encoded.extend(text(3, "gzip"));
    assert_eq!(
        decode(&encoded),
        Err(DecodeError::UnsupportedEncoding("gzip".into()))
    );
    // A string field given as a varint is a wire-type error, not a panic.
    assert!(matches!(
        decode(&envelope("v1", "ConfigMap", &int(3, 7))),
        Err(DecodeError::Malformed(_))
    ));
}

#[test]
fn decodes_volumes_env_sources_and_tolerations() {
    use enc::*;
    let volumes = [
        msg(1, &[text(1, "scratch"), msg(2, &[bytes(2, &[])])]),
        msg(
            1,
            &[
                text(1, "cfg"),
                msg(
                    2,
                    &[msg(19, &[msg(1, &[text(1, "app-config")]), int(3, 0o644)])],
                ),
            ],
        ),
        msg(
            1,
            &[text(1, "data"), msg(2, &[msg(10, &[text(1, "data-pvc")])])],
        ),
    ]
    .concat();
    let container = msg(
        2,
        &[
            text(1, "app"),
            text(2, "img"),
            msg(
                7,
                &[
                    text(1, "PASSWORD"),
                    msg(
                        3,
                        &[msg(4, &[msg(1, &[text(1, "db")]), text(2, "password")])],
                    ),
                ],
            ),
            msg(9, &[text(1, "cfg"), int(2, 1), text(3, "/etc/app")]),
            msg(
                19,
                &[text(1, "APP_"), msg(2, &[msg(1, &[text(1, "app-env")])])],
            ),
        ],
    );
    let toleration = msg(
        22,
        &[
            text(1, "dedicated"),
            text(2, "Equal"),
            text(3, "batch"),
            text(4, "NoSchedule"),
        ],
    );
    let pod_spec = [volumes, container, toleration, text(3, "OnFailure")].concat();
    let raw = [
        msg(1, &[text(1, "nightly-1")]),
        msg(2, &[msg(6, &[msg(2, &[pod_spec])])]),
    ]
    .concat();
    let decoded = decode(&envelope("batch/v1", "Job", &raw)).unwrap();
    let spec = &decoded["spec"]["template"]["spec"];
    assert_eq!(
        spec["volumes"],
        json!([
            {"name": "scratch", "emptyDir": {}},
            {"name": "cfg", "configMap": {"name": "app-config", "defaultMode": 420}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-pvc"}},
        ])
    );
    let container = &spec["containers"][0];
    assert_eq!(
        container["env"],
        json!([{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}])
    );
    assert_eq!(
        container["volumeMounts"],
        json!([{"name": "cfg", "readOnly": true, "mountPath": "/etc/app"}])
    );
    assert_eq!(
        container["envFrom"],
        json!([{"prefix": "APP_", "configMapRef": {"name": "app-env"}}])
    );
    assert_eq!(
        spec["tolerations"],
        json!([{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}])
    );
    assert_eq!(spec["restartPolicy"], "OnFailure");
}

#[test]
fn unknown_fields_with_data_are_refused_not_dropped() {
    use enc::*;
    // A pod template with an affinity (PodSpec field 18), which this decoder does not map.
    let affinity = msg(18, &[msg(1, &[text(1, "x")])]);
    let spec = msg(
        2,
        &[msg(
            3,
            &[msg(2, &[affinity, msg(2, &[text(1, "c"), text(2, "img")])])],
        )],
    );
    let raw = [msg(1, &[text(1, "web")]), spec].concat();
    let error = decode(&envelope("apps/v1", "Deployment", &raw)).unwrap_err();
    assert_eq!(
        error,
        DecodeError::UnsupportedField {
            parent: vec!["spec", "template", "spec"],
            number: 18
        }
    );
    assert!(
        error.to_string().contains("`spec.template.spec`"),
        "{error}"
    );

    // The same field present but empty (as Go writes unset non-pointer fields) is skipped.
    let empty_spec = msg(
        2,
        &[msg(
            3,
            &[msg(2, &[bytes(1, &[]), int(99, 0), msg(14, &[int(1, 0)])])],
        )],
    );
    let raw = [msg(1, &[text(1, "web")]), empty_spec].concat();
    assert!(decode(&envelope("apps/v1", "Deployment", &raw)).is_ok());
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Arbitrary bytes after the magic never panic the decoder.
        #[test]
        fn arbitrary_bodies_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut body = b"k8s\0".to_vec();
            body.extend(tail);
            let _ = decode(&body);
        }

        /// Any ConfigMap data round-trips through the wire format.
        #[test]
        fn config_map_data_round_trips(data in proptest::collection::btree_map("[a-z0-9.-]{1,12}", "[ -~]{0,20}", 0..6)) {
            use enc::*;
            let mut raw = msg(1, &[text(1, "cm")]);
            for (key, value) in &data {
                raw.extend(entry(2, key, value.as_bytes()));
            }
            let decoded = decode(&envelope("v1", "ConfigMap", &raw)).unwrap();
            let expected: serde_json::Map<String, serde_json::Value> =
                data.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            if data.is_empty() {
                prop_assert!(decoded.get("data").is_none());
            } else {
                prop_assert_eq!(&decoded["data"], &serde_json::Value::Object(expected));
            }
        }
    }
}

// Bodies captured from `kubectl auth …` (v1.32) with `-v=8`.
const SELF_SUBJECT_ACCESS_REVIEW: &str = "6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a65637441636365737352657669657712420a100a0012001a0022002a0032003800420012240a220a067465616d2d6112046c6973741a0022002a0a636f6e6669676d61707332003a001a08080012001a0020001a002200";
const SELF_SUBJECT_ACCESS_REVIEW_PATH: &str = "6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a656374416363657373526576696577122f0a100a0012001a0022002a003200380042001211120f0a082f6865616c74687a12036765741a08080012001a0020001a002200";
const SELF_SUBJECT_RULES_REVIEW: &str = "6b3873000a310a17617574686f72697a6174696f6e2e6b38732e696f2f7631121653656c665375626a65637452756c657352657669657712220a100a0012001a0022002a0032003800420012080a067465616d2d611a04180022001a002200";
const SELF_SUBJECT_REVIEW: &str = "6b3873000a2d0a1861757468656e7469636174696f6e2e6b38732e696f2f7631121153656c665375626a656374526576696577121a0a100a0012001a0022002a0032003800420012060a040a0012001a002200";

#[test]
fn decodes_kubectl_auth_reviews_without_the_status_the_client_sent() {
    let cases = [
        (
            "auth can-i list configmaps -n team-a",
            SELF_SUBJECT_ACCESS_REVIEW,
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                   "spec": {"resourceAttributes": {"namespace": "team-a", "verb": "list", "resource": "configmaps"}}}),
        ),
        (
            "auth can-i get /healthz",
            SELF_SUBJECT_ACCESS_REVIEW_PATH,
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                   "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}}),
        ),
        (
            "auth can-i --list -n team-a",
            SELF_SUBJECT_RULES_REVIEW,
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                   "spec": {"namespace": "team-a"}}),
        ),
        (
            "auth whoami",
            SELF_SUBJECT_REVIEW,
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        ),
    ];
    for (command, body, expected) in cases {
        assert_eq!(decode(&hex(body)).unwrap(), expected, "kubectl {command}");
    }
}

// `kubectl create poddisruptionbudget|priorityclass|quota` (v1.32.4), captured with `-v=8`; each checked against
// the same command's `--dry-run=client -o json` (minus the zero `status`, which the server writes).
const PDB_MAX_UNAVAILABLE: &str = "6b3873000a200a09706f6c6963792f76311213506f6444697372757074696f6e427564676574123e0a160a0664622d70646212001a0022002a003200380042001218120b0a090a03617070120264621a09080110001a033530251a0a080018002000280030001a002200";
const PDB_MIN_AVAILABLE: &str = "6b3873000a200a09706f6c6963792f76311213506f6444697372757074696f6e427564676574123d0a170a077765622d70646212001a0022002a0032003800420012160a06080010011a00120c0a0a0a0361707012037765621a0a080018002000280030001a002200";
const PRIORITY_CLASS: &str = "6b3873000a250a147363686564756c696e672e6b38732e696f2f7631120d5072696f72697479436c617373122b0a140a046869676812001a0022002a0032003800420010e80718002207666f72207765622a054e657665721a002200";
const ZERO_PRIORITY_CLASS: &str = "6b3873000a250a147363686564756c696e672e6b38732e696f2f7631120d5072696f72697479436c61737312320a140a047a65726f12001a0022002a003200380042001000180122002a14507265656d70744c6f7765725072696f726974791a002200";
const RESOURCE_QUOTA: &str = "6b3873000a130a027631120d5265736f7572636551756f7461124f0a170a07636f6d7075746512001a0022002a0032003800420012320a0c0a04706f647312040a0231300a130a0c72657175657374732e63707512030a0134120d4e6f74426573744566666f72741a001a002200";

#[test]
fn decodes_policy_generator_bodies() {
    let cases = [
        (
            PDB_MAX_UNAVAILABLE,
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db-pdb"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}, "maxUnavailable": "50%"}}),
        ),
        (
            PDB_MIN_AVAILABLE,
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web-pdb"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
        ),
        (
            PRIORITY_CLASS,
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
            "value": 1000, "description": "for web", "preemptionPolicy": "Never"}),
        ),
        (
            ZERO_PRIORITY_CLASS,
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "zero"},
            "value": 0, "globalDefault": true, "preemptionPolicy": "PreemptLowerPriority"}),
        ),
        (
            RESOURCE_QUOTA,
            json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute"},
            "spec": {"hard": {"pods": "10", "requests.cpu": "4"}, "scopes": ["NotBestEffort"]}}),
        ),
    ];
    for (body, expected) in cases {
        let decoded = decode(&hex(body)).unwrap();
        assert_eq!(decoded, expected, "{}", expected["metadata"]["name"]);
    }
}

// `kubectl autoscale deployment auto --name=cap1 --min=2 --max=5 --cpu-percent=70` and `--name=cap2 --max=4`
// (v1.32.4, autoscaling/v1), captured with `-v=8`. The client's zero `status` is the server's to write.
const HPA_V1: &str = "6b3873000a290a0e6175746f7363616c696e672f76311217486f72697a6f6e74616c506f644175746f7363616c657212410a140a046361703112001a0022002a0032003800420012230a1b0a0a4465706c6f796d656e7412046175746f1a07617070732f76311002180520461a04180020001a002200";
const HPA_V1_BARE: &str = "6b3873000a290a0e6175746f7363616c696e672f76311217486f72697a6f6e74616c506f644175746f7363616c6572123d0a140a046361703212001a0022002a00320038004200121f0a1b0a0a4465706c6f796d656e7412046175746f1a07617070732f763118041a04180020001a002200";

#[test]
fn decodes_kubectl_autoscale_bodies() {
    let target = json!({"kind": "Deployment", "name": "auto", "apiVersion": "apps/v1"});
    assert_eq!(
        decode(&hex(HPA_V1)).unwrap(),
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "cap1"},
            "spec": {"scaleTargetRef": target, "minReplicas": 2, "maxReplicas": 5,
                     "targetCPUUtilizationPercentage": 70}})
    );
    assert_eq!(
        decode(&hex(HPA_V1_BARE)).unwrap(),
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "cap2"},
            "spec": {"scaleTargetRef": target, "maxReplicas": 4}})
    );
}

// `kubectl create token sa1` and `kubectl create token sa1 --duration=2h --audience=https://example.com
// --audience=other` (v1.32.4, authentication.k8s.io/v1 TokenRequest), captured with `-v=8`.
const TOKEN_REQUEST: &str = "6b3873000a280a1861757468656e7469636174696f6e2e6b38732e696f2f7631120c546f6b656e52657175657374121a0a100a0012001a0022002a0032003800420012001a040a0012001a002200";
const TOKEN_REQUEST_AUDIENCES: &str = "6b3873000a280a1861757468656e7469636174696f6e2e6b38732e696f2f7631120c546f6b656e5265717565737412390a100a0012001a0022002a00320038004200121f0a1368747470733a2f2f6578616d706c652e636f6d0a056f7468657220a0381a040a0012001a002200";

#[test]
fn decodes_kubectl_create_token_bodies() {
    assert_eq!(
        decode(&hex(TOKEN_REQUEST)).unwrap(),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"})
    );
    assert_eq!(
        decode(&hex(TOKEN_REQUEST_AUDIENCES)).unwrap(),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": ["https://example.com", "other"], "expirationSeconds": 7200}})
    );
}
