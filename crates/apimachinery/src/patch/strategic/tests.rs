//! Strategic merge patch tests. The patches in the first three tests are the exact bodies
//! kubectl 1.32 sends; the live objects are realistic server state.

use serde_json::{Value, json};

use super::super::{BuiltinPatchMeta, NoPatchMeta, PatchError};
use super::strategic_merge;

fn deployment_meta() -> BuiltinPatchMeta {
    BuiltinPatchMeta::for_kind("Deployment")
}

#[test]
fn kubectl_client_side_apply_with_every_directive() {
    let live = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "7",
            "finalizers": ["a.io/x", "b.io/y"],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"old\":true}\n"}
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "name": "c", "image": "nginx:1.25", "args": ["b", "c"],
                        "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 81, "protocol": "TCP"}]
                    }],
                    "volumes": [{"name": "v", "emptyDir": {}}]
                }
            }
        },
        "status": {"replicas": 2}
    });
    let patch = json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["b.io/y"],"$setElementOrder/finalizers":["a.io/x"],"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"new\":true}\n"}},
     "spec":{"strategy":{"$retainKeys":["type"],"rollingUpdate":null,"type":"Recreate"},
      "template":{"spec":{"$setElementOrder/containers":[{"name":"c"}],"$setElementOrder/volumes":[{"name":"v"}],
       "containers":[{"$setElementOrder/ports":[{"containerPort":81}],"args":["a"],"name":"c","ports":[{"$patch":"delete","containerPort":80}]}],
       "volumes":[{"$retainKeys":["configMap","name"],"configMap":{"name":"cm"},"emptyDir":null,"name":"v"}]}}}});
    let expected = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "7",
            "finalizers": ["a.io/x"],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"new\":true}\n"}
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "name": "c", "image": "nginx:1.25", "args": ["a"],
                        "ports": [{"containerPort": 81, "protocol": "TCP"}]
                    }],
                    "volumes": [{"name": "v", "configMap": {"name": "cm"}}]
                }
            }
        },
        "status": {"replicas": 2}
    });
    assert_eq!(
        strategic_merge(&live, &patch, &deployment_meta()),
        Ok(expected)
    );
}

#[test]
fn kubectl_apply_removes_sidecar_env_and_volumes() {
    let live = json!({
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {
            "containers": [
                {"name": "nginx", "image": "nginx:1.25", "env": [{"name": "A", "value": "1"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}], "imagePullPolicy": "IfNotPresent"},
                {"name": "sidecar", "image": "busybox"}
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "restartPolicy": "Always"
        }}}
    });
    let patch = json!({"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"nginx"}],
       "containers":[{"env":null,"image":"nginx:1.26","name":"nginx","ports":[{"containerPort":80}]},{"$patch":"delete","name":"sidecar"}],"volumes":null}}}});
    let expected = json!({
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {
            "containers": [
                {"name": "nginx", "image": "nginx:1.26",
                 "ports": [{"containerPort": 80, "protocol": "TCP"}], "imagePullPolicy": "IfNotPresent"}
            ],
            "restartPolicy": "Always"
        }}}
    });
    assert_eq!(
        strategic_merge(&live, &patch, &deployment_meta()),
        Ok(expected)
    );
}

#[test]
fn kubectl_apply_service_ports() {
    let live = json!({
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"type": "ClusterIP", "clusterIP": "10.0.0.10", "selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}
    });
    let patch = json!({"spec":{"$setElementOrder/ports":[{"port":443}],"ports":[{"port":443,"targetPort":8443},{"$patch":"delete","port":80}]}});
    let expected = json!({
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"type": "ClusterIP", "clusterIP": "10.0.0.10", "selector": {"app": "web"},
                 "ports": [{"port": 443, "targetPort": 8443}]}
    });
    assert_eq!(
        strategic_merge(&live, &patch, &BuiltinPatchMeta::for_kind("Service")),
        Ok(expected)
    );
}

#[test]
fn directive_table() {
    let meta = deployment_meta();
    let containers = |list: Value| json!({"spec": {"template": {"spec": {"containers": list}}}});
    let cases: Vec<(&str, Value, Value, Value)> = vec![
        (
            "null deletes a key, maps merge",
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            json!({"metadata": {"labels": {"a": null, "c": "3"}}}),
            json!({"metadata": {"labels": {"b": "2", "c": "3"}}}),
        ),
        (
            "keyed list merges and appends",
            containers(json!([{"name": "a", "image": "x"}])),
            containers(json!([{"name": "b", "image": "y"}, {"name": "a", "image": "z"}])),
            containers(json!([{"name": "a", "image": "z"}, {"name": "b", "image": "y"}])),
        ),
        (
            "$patch replace element replaces the list",
            containers(json!([{"name": "a", "image": "x"}, {"name": "b"}])),
            containers(json!([{"$patch": "replace"}, {"name": "c", "image": "y"}])),
            containers(json!([{"name": "c", "image": "y"}])),
        ),
        (
            "$patch replace on a map",
            json!({"spec": {"selector": {"matchLabels": {"a": "1"}, "x": 1}}}),
            json!({"spec": {"selector": {"$patch": "replace", "matchLabels": {"b": "2"}}}}),
            json!({"spec": {"selector": {"matchLabels": {"b": "2"}}}}),
        ),
        (
            "$patch delete on a map",
            json!({"spec": {"selector": {"matchLabels": {"a": "1"}}, "replicas": 1}}),
            json!({"spec": {"selector": {"$patch": "delete"}}}),
            json!({"spec": {"replicas": 1}}),
        ),
        (
            "primitive set union keeps order and drops duplicates",
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["b", "c"]}}),
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
        ),
        (
            "deleting the last finalizer removes the list",
            json!({"metadata": {"name": "x", "finalizers": ["a"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
            json!({"metadata": {"name": "x"}}),
        ),
        (
            "atomic lists replace",
            containers(json!([{"name": "a", "args": ["1", "2"]}])),
            containers(json!([{"name": "a", "args": ["3"]}])),
            containers(json!([{"name": "a", "args": ["3"]}])),
        ),
        (
            "directives inside new elements do not persist",
            containers(json!([])),
            containers(
                json!([{"name": "a", "$setElementOrder/ports": [{"containerPort": 1}], "ports": [{"containerPort": 1, "x": null}]}]),
            ),
            containers(json!([{"name": "a", "ports": [{"containerPort": 1}]}])),
        ),
        (
            "ownerReferences merge by uid",
            json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}}),
            json!({"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}, {"uid": "1", "controller": true}]}}),
            json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a", "controller": true}, {"uid": "2", "name": "b"}]}}),
        ),
        (
            "conditions merge by type",
            json!({"status": {"conditions": [{"type": "Available", "status": "False"}, {"type": "Progressing", "status": "True"}]}}),
            json!({"status": {"conditions": [{"type": "Available", "status": "True"}]}}),
            json!({"status": {"conditions": [{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}]}}),
        ),
        (
            "$setElementOrder without the list in the patch reorders the live list",
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            json!({"metadata": {"$setElementOrder/finalizers": ["c", "a"]}}),
            json!({"metadata": {"finalizers": ["c", "a", "b"]}}),
        ),
        (
            "ordered elements first, the rest in server order, then appended ones",
            containers(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}])),
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "c"}, {"name": "missing"}, {"name": "a"}],
                "containers": [{"name": "d"}]
            }}}}),
            containers(json!([{"name": "c"}, {"name": "a"}, {"name": "b"}, {"name": "d"}])),
        ),
        (
            "lists of custom kinds are atomic by default",
            json!({"spec": {"items": [{"name": "a"}]}}),
            json!({"spec": {"items": [{"name": "b"}]}}),
            json!({"spec": {"items": [{"name": "b"}]}}),
        ),
    ];
    for (name, live, patch, expected) in cases {
        assert_eq!(
            strategic_merge(&live, &patch, &meta),
            Ok(expected),
            "{name}"
        );
    }
}

#[test]
fn no_patch_meta_treats_every_list_as_atomic() {
    let live = json!({"metadata": {"finalizers": ["a"]}});
    let patched = strategic_merge(
        &live,
        &json!({"metadata": {"finalizers": ["b"]}}),
        &NoPatchMeta,
    );
    assert_eq!(patched, Ok(json!({"metadata": {"finalizers": ["b"]}})));
}

#[test]
fn errors_say_what_is_accepted() {
    let meta = deployment_meta();
    let live = json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}});
    let cases: Vec<(Value, bool, &str)> = vec![
        (
            json!([1]),
            true,
            "a strategic merge patch must be a JSON object",
        ),
        (
            json!({"spec": {"$frobnicate": 1}}),
            true,
            "unknown strategic merge patch directive \"$frobnicate\"; accepted: $patch, $retainKeys, $setElementOrder/<field>, $deleteFromPrimitiveList/<field>",
        ),
        (
            json!({"spec": {"$patch": "explode"}}),
            true,
            "unknown $patch value \"explode\" on a map; accepted: \"replace\", \"delete\", \"merge\"",
        ),
        (
            json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
            false,
            "map: {\"image\":\"x\"} does not contain declared merge key: name (list spec.template.spec.containers)",
        ),
        (
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {}}}}),
            true,
            "$retainKeys [\"type\"] must list every field the patch sets, and \"rollingUpdate\" is missing",
        ),
        (
            json!({"spec": {"template": {"spec": {"containers": ["a"]}}}}),
            true,
            "spec.template.spec.containers is a list of objects merged by \"name\"; \"a\" is not an object",
        ),
    ];
    for (patch, malformed, message) in cases {
        let error = strategic_merge(&live, &patch, &meta).expect_err("must fail");
        let expected = if malformed {
            PatchError::Malformed(message.into())
        } else {
            PatchError::Unprocessable(message.into())
        };
        assert_eq!(error, expected, "{patch}");
    }
}

#[test]
fn key_order_of_the_live_object_is_kept() {
    let live = json!({"b": 1, "a": {"z": 1, "y": 2}, "c": 3});
    let patched = strategic_merge(
        &live,
        &json!({"a": {"z": 5}, "b": null, "d": 4}),
        &NoPatchMeta,
    )
    .expect("applies");
    assert_eq!(
        serde_json::to_string(&patched).expect("serializes"),
        r#"{"a":{"z":5,"y":2},"c":3,"d":4}"#
    );
}

mod properties {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::super::super::merge_patch;
    use super::{deployment_meta, strategic_merge};
    use crate::patch::NoPatchMeta;

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-5i64..5).prop_map(|n| json!(n)),
            "[a-c]{0,2}".prop_map(Value::String),
        ]
    }

    /// Objects over a few keys, whose lists hold only scalars (RFC 7386 copies lists verbatim,
    /// while a strategic patch cleans objects inside them).
    fn document() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            scalar(),
            proptest::collection::vec(scalar(), 0..3).prop_map(Value::Array)
        ];
        leaf.prop_recursive(3, 24, 3, |inner| {
            proptest::collection::btree_map("[a-d]", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<String, Value>>()))
        })
    }

    fn object() -> impl Strategy<Value = Value> {
        proptest::collection::btree_map("[a-d]", document(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect::<Map<String, Value>>()))
    }

    fn container() -> impl Strategy<Value = Value> {
        (
            "[a-c]",
            proptest::option::of("img[0-2]"),
            proptest::collection::vec(1i64..4, 0..3),
        )
            .prop_map(|(name, image, ports)| {
                let mut c = json!({"name": name});
                if let Some(image) = image {
                    c["image"] = json!(image);
                }
                if !ports.is_empty() {
                    c["ports"] = Value::Array(
                        ports
                            .into_iter()
                            .map(|p| json!({"containerPort": p}))
                            .collect(),
                    );
                }
                c
            })
    }

    fn containers_patch() -> impl Strategy<Value = Value> {
        proptest::collection::vec((container(), any::<bool>()), 0..4).prop_map(|items| {
            // kubectl names each element at most once per patch.
            let mut seen = std::collections::BTreeSet::new();
            let list: Vec<Value> = items
                .into_iter()
                .filter(|(c, _)| seen.insert(c["name"].to_string()))
                .map(|(c, delete)| {
                    if delete {
                        json!({"$patch": "delete", "name": c["name"]})
                    } else {
                        c
                    }
                })
                .collect();
            json!({"spec": {"template": {"spec": {"containers": list}}}})
        })
    }

    proptest! {
        #[test]
        fn without_directives_or_merge_lists_it_is_a_merge_patch(doc in object(), patch in object()) {
            prop_assert_eq!(strategic_merge(&doc, &patch, &NoPatchMeta), Ok(merge_patch(&doc, &patch)));
        }

        #[test]
        fn applying_a_patch_twice_changes_nothing_more(
            live in proptest::collection::vec(container(), 0..4),
            patch in containers_patch(),
        ) {
            let mut seen = std::collections::BTreeSet::new();
            let live: Vec<Value> = live.into_iter().filter(|c| seen.insert(c["name"].to_string())).collect();
            let doc = json!({"spec": {"template": {"spec": {"containers": live}}}});
            let once = strategic_merge(&doc, &patch, &deployment_meta()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let twice = strategic_merge(&once, &patch, &deployment_meta()).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&twice, &once);
            let text = once.to_string();
            prop_assert!(!text.contains("$patch"), "directives persisted: {}", text);
        }
    }
}
