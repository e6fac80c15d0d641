//! fieldValidation, built-in defaulting and Karmada admission on writes.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::harness::{Harness, deployment};

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

#[tokio::test]
async fn strict_unknown_field_is_400_and_nothing_is_stored() {
    let h = Harness::new().await;
    let rev = h.revision().await;
    let mut body = deployment("web", 1);
    body["spec"]["foo"] = json!(1);
    let reply = h
        .post(&format!("{DEPLOYS}?fieldValidation=Strict"), &body)
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{:?}", reply.body);
    assert_eq!(reply.reason(), "BadRequest");
    assert_eq!(
        reply.message(),
        "strict decoding error: unknown field \"spec.foo\""
    );
    assert_eq!(h.revision().await, rev);
    assert_eq!(
        h.get(&format!("{DEPLOYS}/web")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn warn_keeps_going_with_a_warning_and_ignore_drops_silently() {
    let h = Harness::new().await;
    let mut body = deployment("warned", 1);
    body["spec"]["foo"] = json!(1);
    let reply = h
        .post(&format!("{DEPLOYS}?fieldValidation=Warn"), &body)
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    let warning = reply
        .headers
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert_eq!(warning, "299 - \"unknown field \\\"spec.foo\\\"\"");
    assert!(reply.body["spec"].get("foo").is_none());

    let mut body = deployment("ignored", 1);
    body["spec"]["foo"] = json!(1);
    let reply = h.post(DEPLOYS, &body).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert!(reply.headers.get("warning").is_none());
    assert!(reply.body["spec"].get("foo").is_none());
}

#[tokio::test]
async fn realistic_deployment_passes_strict_and_gets_defaults() {
    let h = Harness::new().await;
    let body = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "full", "labels": {"app": "full"}, "annotations": {"a": "b"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "full"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}]},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "full", "tier": "fe"}},
                "spec": {
                    "containers": [{
                        "name": "nginx", "image": "nginx:1.25",
                        "ports": [{"containerPort": 80, "name": "http"}],
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": 0.1}},
                        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5}
                    }],
                    "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}],
                    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
                }
            }
        }
    });
    let reply = h
        .post(
            &format!("{DEPLOYS}?fieldValidation=Strict&fieldManager=kubectl-create"),
            &body,
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    assert_eq!(
        reply.body["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"],
        "TCP"
    );
    assert_eq!(
        reply.body["metadata"]["managedFields"][0]["manager"],
        "kubectl-create"
    );
    assert_eq!(
        reply.body["metadata"]["managedFields"][0]["operation"],
        "Update"
    );
}

#[tokio::test]
async fn builtin_validation_is_422_with_field_path() {
    let h = Harness::new().await;
    let rev = h.revision().await;
    let reply = h.post(DEPLOYS, &deployment("neg", -1)).await;
    assert_eq!(
        reply.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        reply.body
    );
    assert_eq!(reply.reason(), "Invalid");
    assert_eq!(reply.body["details"]["kind"], "Deployment");
    assert!(
        reply.message().contains("spec.replicas"),
        "{}",
        reply.message()
    );
    assert_eq!(h.revision().await, rev);
}

#[tokio::test]
async fn secret_string_data_becomes_data() {
    let h = Harness::new().await;
    let body = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"user": "admin"}});
    let reply = h.post("/api/v1/namespaces/default/secrets", &body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    assert_eq!(reply.body["data"]["user"], "YWRtaW4=");
    assert!(reply.body.get("stringData").is_none());
    assert_eq!(reply.body["type"], "Opaque");
}

#[tokio::test]
async fn karmada_fixture_applies_with_its_stated_meaning() {
    let h = Harness::new().await;
    let body = test_fixtures::text("seed-000/01-nginx-propagation.yaml").into_bytes();
    let path = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies?fieldValidation=Strict";
    let reply = h
        .request(Method::POST, path, Some("application/yaml"), body)
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    assert_eq!(
        reply.body["spec"]["placement"]["spreadConstraints"][0]["spreadByField"],
        "cluster"
    );
}

#[tokio::test]
async fn scheduler_profiles_are_checked_against_the_schedulers_plugins() {
    let h = Harness::new().await;
    let path = "/apis/scheduling.karmada.io/v1alpha1/schedulerprofiles";
    let profile = |name: &str, spec: Value| {
        json!({"apiVersion": "scheduling.karmada.io/v1alpha1", "kind": "SchedulerProfile",
               "metadata": {"name": name}, "spec": spec})
    };
    let rev = h.revision().await;
    let cases = [
        (
            json!({"plugins": {"schedule": {"enabled": [{"name": "ClusterAffinty", "weight": 2}]}}}),
            "spec.plugins.schedule.enabled[0].name: Invalid value: \"ClusterAffinty\": unknown plugin; known plugins: APIEnablement",
        ),
        (
            json!({"plugins": {"schedule": {"enabled": [{"name": "ClusterLocality"}]}},
                   "pluginConfig": [{"name": "ClusterLocality", "args": {"availablePercentage": 170}}]}),
            "spec.pluginConfig[0].args: Invalid value: {\"availablePercentage\":170}: availablePercentage must be between 0 and 100, got 170",
        ),
        (
            json!({"plugins": {"schedule": {"enabled": [{"name": "ClusterLocality"}]}},
                   "pluginConfig": [{"name": "ClusterLocality", "args": {"availablePercent": 70}}]}),
            "spec.pluginConfig[0].args.availablePercent: Invalid value: 70: invalid args: unknown field `availablePercent`",
        ),
    ];
    for (spec, expected) in cases {
        let reply = h.post(path, &profile("bad", spec.clone())).await;
        assert_eq!(
            reply.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{spec}: {:?}",
            reply.body
        );
        assert_eq!(reply.reason(), "Invalid");
        assert!(
            reply.message().contains(expected),
            "{spec}: {}",
            reply.message()
        );
        assert_eq!(
            reply.body["details"]["causes"][0]["field"],
            expected.split(':').next().unwrap_or_default(),
            "{:?}",
            reply.body
        );
    }
    assert_eq!(h.revision().await, rev, "nothing stored");
    let seed = test_fixtures::document("seed-000/07-scheduler-profile.yaml");
    let reply = h.post(path, &seed).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    // An update is checked too, and the stored profile stays as it was.
    let mut broken = reply.body.clone();
    broken["spec"]["plugins"]["schedule"]["enabled"][0]["name"] = json!("Nope");
    let reply = h.put(&format!("{path}/latency-sensitive"), &broken).await;
    assert_eq!(
        reply.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        reply.body
    );
    let stored = h.get(&format!("{path}/latency-sensitive")).await;
    assert_eq!(stored.body["spec"], seed["spec"]);
}

#[tokio::test]
async fn karmada_admission_rejects_with_accepted_form_and_defaults() {
    let h = Harness::new().await;
    let path = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies?fieldValidation=Strict";
    let bad = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "bad"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
                 "placement": {"spreadConstraints": [{"spreadByField": "galaxy", "maxGroups": 3, "minGroups": 2}]}}
    });
    let rev = h.revision().await;
    let reply = h.post(path, &bad).await;
    assert_eq!(
        reply.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        reply.body
    );
    assert_eq!(reply.reason(), "Invalid");
    assert!(
        reply.message().contains("spreadByField"),
        "{}",
        reply.message()
    );
    assert!(
        reply.message().contains("\"cluster\""),
        "the message shows the accepted form: {}",
        reply.message()
    );
    assert_eq!(h.revision().await, rev);

    let good = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "pp"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
                 "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}
    });
    let reply = h.post(path, &good).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    assert_eq!(
        reply.body["spec"]["conflictResolution"], "Abort",
        "Karmada defaults apply"
    );
    let smp = h
        .patch(
            "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies/pp",
            "application/strategic-merge-patch+json",
            &json!({"spec": {"priority": 1}}),
        )
        .await;
    assert_eq!(smp.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[tokio::test]
async fn interpreter_customizations_are_refused_with_the_script_line_and_field() {
    let h = Harness::new().await;
    let path = "/apis/config.karmada.io/v1alpha1/resourceinterpretercustomizations";
    let customization = |name: &str, customizations: Value| {
        json!({"apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterCustomization",
               "metadata": {"name": name},
               "spec": {"target": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet"},
                        "customizations": customizations}})
    };
    let rev = h.revision().await;
    let cases = [
        (
            json!({"replicaResource": {"luaScript": "function GetReplicas(obj)\n  return obj.spec.replicas +\nend"}}),
            "spec.customizations.replicaResource.luaScript",
            "line 3: invalid Lua",
        ),
        (
            json!({"replicaRevision": {"luaScript": "function Revise(obj, n)\n  return obj\nend"}}),
            "spec.customizations.replicaRevision.luaScript",
            "must define the global function ReviseReplica",
        ),
        (
            json!({"healthInterpretation": {"luaScript": "function InterpretHealth(obj)\n  return os.execute('true') == 0\nend"}}),
            "spec.customizations.healthInterpretation.luaScript",
            "line 2: os.execute is not available",
        ),
    ];
    for (customizations, field, expected) in cases {
        let reply = h
            .post(path, &customization("bad", customizations.clone()))
            .await;
        assert_eq!(
            reply.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{customizations}: {:?}",
            reply.body
        );
        assert_eq!(reply.reason(), "Invalid");
        assert!(
            reply.message().contains(expected),
            "{customizations}: {}",
            reply.message()
        );
        assert_eq!(
            reply.body["details"]["causes"][0]["field"], field,
            "{:?}",
            reply.body
        );
    }
    assert_eq!(h.revision().await, rev, "nothing stored");
    let replicas = json!({"replicaResource": {"luaScript": "function GetReplicas(obj)\n  return obj.spec.replicas, nil\nend"}});
    let reply = h
        .post(path, &customization("replicas", replicas.clone()))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    // A second customization scripting the same operation of the same kind is refused; another operation is not.
    let reply = h
        .post(path, &customization("replicas-again", replicas))
        .await;
    assert_eq!(
        reply.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        reply.body
    );
    assert_eq!(
        reply.body["details"]["causes"][0]["field"],
        "spec.customizations.replicaResource"
    );
    assert!(
        reply
            .message()
            .contains("already customized by ResourceInterpreterCustomization replicas"),
        "{}",
        reply.message()
    );
    let health = json!({"healthInterpretation": {"luaScript": "function InterpretHealth(obj)\n  return true\nend"}});
    let reply = h.post(path, &customization("health", health)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    // An update that breaks a script is refused and the stored one stays.
    let mut broken = reply.body.clone();
    broken["spec"]["customizations"]["healthInterpretation"]["luaScript"] =
        json!("function InterpretHealth(obj) return end end");
    let reply = h.put(&format!("{path}/health"), &broken).await;
    assert_eq!(
        reply.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{:?}",
        reply.body
    );
    let stored = h.get(&format!("{path}/health")).await;
    assert_eq!(
        stored.body["spec"]["customizations"]["healthInterpretation"]["luaScript"],
        json!("function InterpretHealth(obj)\n  return true\nend")
    );
}
