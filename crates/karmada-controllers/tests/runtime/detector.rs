//! The resource detector against the in-process control plane: claims, bindings, policy kinds, preemption,
//! policy deletion, dependentOverrides and garbage collection with the template.

use std::time::Duration;

use karmada_controllers::detector::controller::{DetectorConfig, run};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::support::{self, ControlPlane};

const PP_ID: &str = "propagationpolicy.karmada.io/permanent-id";
const CPP_ID: &str = "clusterpropagationpolicy.karmada.io/permanent-id";

/// A seed fixture as JSON.
pub fn fixture(relative: &str) -> Value {
    test_fixtures::document(relative)
}

/// Starts the detector on `control_plane`; it stops with the control plane's token.
pub fn start_detector(control_plane: &ControlPlane, config: DetectorConfig) {
    tokio::spawn(run(
        control_plane.client.clone(),
        config,
        control_plane.cancel.child_token(),
    ));
}

/// Creates namespace `name` (already existing is fine).
pub async fn namespace(control_plane: &ControlPlane, name: &str) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(control_plane.client.clone());
    let namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
    match api.create(&Default::default(), &namespace).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(err) => panic!("create namespace {name}: {err}"),
    }
}

pub async fn get_deployment(cp: &ControlPlane, namespace: &str, name: &str) -> Option<Value> {
    support::get(
        &cp.client,
        "apps/v1",
        "Deployment",
        "deployments",
        Some(namespace),
        name,
    )
    .await
}

pub async fn get_binding(cp: &ControlPlane, namespace: &str, name: &str) -> Option<Value> {
    support::get(
        &cp.client,
        "work.karmada.io/v1alpha2",
        "ResourceBinding",
        "resourcebindings",
        Some(namespace),
        name,
    )
    .await
}

fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object["metadata"]["labels"][key].as_str()
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object["metadata"]["annotations"][key].as_str()
}

fn deployment(namespace: &str, name: &str, replicas: i64, labels: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "c", "image": "nginx",
                                                  "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}]}}
        }
    })
}

fn policy(namespace: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
           "metadata": {"name": name, "namespace": namespace}, "spec": spec})
}

fn dynamic_api(
    cp: &ControlPlane,
    api_version: &str,
    kind: &str,
    plural: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk(group, version, kind),
        plural,
    );
    match ns {
        Some(ns) => Api::namespaced_with(cp.client.clone(), ns, &resource),
        None => Api::all_with(cp.client.clone(), &resource),
    }
}

async fn events_for(cp: &ControlPlane, namespace: &str, name: &str) -> Vec<(String, String)> {
    let api: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(cp.client.clone(), namespace);
    api.list(&Default::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn seed_deployment_and_policy_give_a_claimed_binding() {
    let cp = ControlPlane::start().await;
    start_detector(&cp, DetectorConfig::default());
    namespace(&cp, "production").await;
    let deploy = cp
        .create("deployments", fixture("seed-001/nginx-deploy.yaml"))
        .await;
    let pp = cp
        .create(
            "propagationpolicies",
            fixture("seed-001/propagation-policy.yaml"),
        )
        .await;
    let pp_id = label(&pp, PP_ID)
        .expect("admission assigns the permanent id")
        .to_string();

    let claimed = support::eventually("the Deployment claimed", || async {
        let d = get_deployment(&cp, "production", "nginx-ha").await?;
        (label(&d, PP_ID) == Some(pp_id.as_str())).then_some(d)
    })
    .await;
    assert_eq!(
        annotation(&claimed, "propagationpolicy.karmada.io/name"),
        Some("nginx-ha-policy")
    );
    assert_eq!(
        annotation(&claimed, "propagationpolicy.karmada.io/namespace"),
        Some("production")
    );

    let binding = support::eventually("the ResourceBinding", || async {
        get_binding(&cp, "production", "nginx-ha-deployment").await
    })
    .await;
    assert_eq!(binding["spec"]["replicas"], 6);
    assert_eq!(
        binding["spec"]["replicaRequirements"]["resourceRequest"],
        json!({"cpu": "100m", "memory": "128Mi"})
    );
    assert_eq!(
        binding["spec"]["resource"]["uid"],
        deploy["metadata"]["uid"]
    );
    assert_eq!(binding["spec"]["resource"]["kind"], "Deployment");
    assert_eq!(
        binding["metadata"]["ownerReferences"][0]["uid"],
        deploy["metadata"]["uid"]
    );
    assert_eq!(
        binding["metadata"]["ownerReferences"][0]["controller"],
        true
    );
    assert_eq!(label(&binding, PP_ID), Some(pp_id.as_str()));
    assert_eq!(
        binding["spec"]["placement"],
        fixture("seed-001/propagation-policy.yaml")["spec"]["placement"]
    );
    assert!(
        binding["spec"]
            .get("clusters")
            .is_none_or(|c| c.as_array().is_some_and(Vec::is_empty))
    );

    support::eventually("ApplyPolicySucceed on the Deployment", || async {
        events_for(&cp, "production", "nginx-ha")
            .await
            .into_iter()
            .find(|(reason, message)| {
                reason == "ApplyPolicySucceed" && message.contains("production/nginx-ha-policy")
            })
    })
    .await;

    // A policy update reaches the binding (the policy is not Lazy).
    let policies = dynamic_api(
        &cp,
        "policy.karmada.io/v1alpha1",
        "PropagationPolicy",
        "propagationpolicies",
        Some("production"),
    );
    policies
        .patch(
            "nginx-ha-policy",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"placement": {"clusterAffinity": {"clusterNames": ["cluster-aws"]}}}})),
        )
        .await
        .expect("update policy");
    support::eventually("the binding follows the policy", || async {
        let b = get_binding(&cp, "production", "nginx-ha-deployment").await?;
        (b["spec"]["placement"]["clusterAffinity"]["clusterNames"] == json!(["cluster-aws"]))
            .then_some(())
    })
    .await;

    // A template change reaches the binding.
    let deployments = dynamic_api(
        &cp,
        "apps/v1",
        "Deployment",
        "deployments",
        Some("production"),
    );
    deployments
        .patch(
            "nginx-ha",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 9}})),
        )
        .await
        .expect("scale");
    support::eventually("replicas 9 in the binding", || async {
        let b = get_binding(&cp, "production", "nginx-ha-deployment").await?;
        (b["spec"]["replicas"] == 9).then_some(())
    })
    .await;
}

#[tokio::test]
async fn cluster_propagation_policy_claims_a_namespaced_template() {
    let cp = ControlPlane::start().await;
    start_detector(&cp, DetectorConfig::default());
    namespace(&cp, "team").await;
    cp.create(
        "configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team"},
               "data": {"k": "v"}}),
    )
    .await;
    let cpp = cp
        .create(
            "clusterpropagationpolicies",
            json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
                   "metadata": {"name": "all-configmaps"},
                   "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}]}}),
        )
        .await;
    let cpp_id = label(&cpp, CPP_ID).expect("permanent id").to_string();
    let binding = support::eventually("a ResourceBinding in the template's namespace", || async {
        get_binding(&cp, "team", "settings-configmap").await
    })
    .await;
    assert_eq!(label(&binding, CPP_ID), Some(cpp_id.as_str()));
    assert_eq!(
        annotation(&binding, "clusterpropagationpolicy.karmada.io/name"),
        Some("all-configmaps")
    );
    assert_eq!(
        binding["spec"]["replicas"].as_i64().unwrap_or(0),
        0,
        "a ConfigMap has no replicas"
    );
    let cm = support::get(
        &cp.client,
        "v1",
        "ConfigMap",
        "configmaps",
        Some("team"),
        "settings",
    )
    .await
    .expect("configmap");
    assert_eq!(label(&cm, CPP_ID), Some(cpp_id.as_str()));

    // Karmada's own namespaces are never propagated, whatever the policy selects.
    namespace(&cp, "karmada-system").await;
    cp.create(
        "configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "internal", "namespace": "karmada-system"}}),
    )
    .await;
    cp.create(
        "configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "second", "namespace": "team"}}),
    )
    .await;
    // Once the later template in `team` is bound, the earlier one in karmada-system has had its chance.
    support::eventually("the second ConfigMap bound", || async {
        get_binding(&cp, "team", "second-configmap").await
    })
    .await;
    assert!(
        get_binding(&cp, "karmada-system", "internal-configmap")
            .await
            .is_none()
    );
}

#[tokio::test]
async fn preemption_moves_the_claim_to_the_higher_priority_policy() {
    let cp = ControlPlane::start().await;
    start_detector(
        &cp,
        DetectorConfig {
            preemption: true,
            ..DetectorConfig::default()
        },
    );
    namespace(&cp, "apps").await;
    cp.create(
        "deployments",
        deployment("apps", "web", 2, json!({"tier": "front"})),
    )
    .await;
    let low = cp
        .create(
            "propagationpolicies",
            policy("apps", "low", json!({"priority": 1, "resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"tier": "front"}}}]})),
        )
        .await;
    let low_id = label(&low, PP_ID).expect("id").to_string();
    support::eventually("claimed by low", || async {
        let b = get_binding(&cp, "apps", "web-deployment").await?;
        (label(&b, PP_ID) == Some(low_id.as_str())).then_some(())
    })
    .await;
    // Not preempting (no `preemption: Always`): the claim stays even at a higher priority.
    cp.create(
        "propagationpolicies",
        policy(
            "apps",
            "polite",
            json!({"priority": 50, "resourceSelectors": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]}),
        ),
    )
    .await;
    let high = cp
        .create(
            "propagationpolicies",
            policy(
                "apps",
                "high",
                json!({"priority": 10, "preemption": "Always", "resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]}),
            ),
        )
        .await;
    let high_id = label(&high, PP_ID).expect("id").to_string();
    let binding = support::eventually("claimed by high", || async {
        let b = get_binding(&cp, "apps", "web-deployment").await?;
        (label(&b, PP_ID) == Some(high_id.as_str())).then_some(b)
    })
    .await;
    assert_eq!(
        annotation(&binding, "propagationpolicy.karmada.io/name"),
        Some("high")
    );
    let template = get_deployment(&cp, "apps", "web")
        .await
        .expect("deployment");
    assert_eq!(label(&template, PP_ID), Some(high_id.as_str()));
    assert_eq!(
        annotation(&template, "propagationpolicy.karmada.io/name"),
        Some("high")
    );
}

#[tokio::test]
async fn without_the_preemption_gate_a_claim_stays_with_its_policy() {
    let cp = ControlPlane::start().await;
    // Karmada's default: PropagationPolicyPreemption off.
    start_detector(&cp, DetectorConfig::default());
    namespace(&cp, "apps").await;
    cp.create("deployments", deployment("apps", "web", 2, json!({})))
        .await;
    let low = cp
        .create(
            "propagationpolicies",
            policy(
                "apps",
                "low",
                json!({"priority": 1, "resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]}),
            ),
        )
        .await;
    let low_id = label(&low, PP_ID).expect("id").to_string();
    support::eventually("claimed by low", || async {
        let b = get_binding(&cp, "apps", "web-deployment").await?;
        (label(&b, PP_ID) == Some(low_id.as_str())).then_some(())
    })
    .await;
    // A preempting policy for web and for an unclaimed `marker`: once it has claimed marker, it has been matched
    // against web too.
    cp.create("deployments", deployment("apps", "marker", 1, json!({})))
        .await;
    let high = cp
        .create(
            "propagationpolicies",
            policy(
                "apps",
                "high",
                json!({"priority": 10, "preemption": "Always", "resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "marker"}]}),
            ),
        )
        .await;
    let high_id = label(&high, PP_ID).expect("id").to_string();
    support::eventually("marker claimed by high", || async {
        let b = get_binding(&cp, "apps", "marker-deployment").await?;
        (label(&b, PP_ID) == Some(high_id.as_str())).then_some(())
    })
    .await;
    let template = get_deployment(&cp, "apps", "web")
        .await
        .expect("deployment");
    assert_eq!(label(&template, PP_ID), Some(low_id.as_str()));
    let binding = get_binding(&cp, "apps", "web-deployment")
        .await
        .expect("binding");
    assert_eq!(label(&binding, PP_ID), Some(low_id.as_str()));
}

#[tokio::test]
async fn policy_deletion_releases_the_claim_and_keeps_the_binding_and_template_deletion_removes_it()
{
    let cp = ControlPlane::start().await;
    start_detector(&cp, DetectorConfig::default());
    namespace(&cp, "apps").await;
    cp.create("deployments", deployment("apps", "api", 3, json!({})))
        .await;
    cp.create(
        "propagationpolicies",
        policy("apps", "api-policy", json!({"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"}]})),
    )
    .await;
    support::eventually("the binding", || async {
        let b = get_binding(&cp, "apps", "api-deployment").await?;
        label(&b, PP_ID).map(|_| ())
    })
    .await;
    let policies = dynamic_api(
        &cp,
        "policy.karmada.io/v1alpha1",
        "PropagationPolicy",
        "propagationpolicies",
        Some("apps"),
    );
    support::eventually("the detector's finalizer on the policy", || async {
        let p = policies.get("api-policy").await.ok()?;
        p.metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "karmada.io/propagation-policy-controller")
            .then_some(())
    })
    .await;
    policies
        .delete("api-policy", &DeleteParams::default())
        .await
        .expect("delete policy");
    support::eventually("claim removed from template and binding", || async {
        let t = get_deployment(&cp, "apps", "api").await?;
        let b = get_binding(&cp, "apps", "api-deployment").await?;
        let released = label(&t, PP_ID).is_none()
            && annotation(&t, "propagationpolicy.karmada.io/name").is_none()
            && label(&b, PP_ID).is_none()
            && annotation(&b, "propagationpolicy.karmada.io/name").is_none();
        released.then_some(())
    })
    .await;
    support::eventually("the policy gone once its claims are released", || async {
        policies
            .get_opt("api-policy")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    let binding = get_binding(&cp, "apps", "api-deployment")
        .await
        .expect("the binding is kept");
    assert_eq!(binding["spec"]["replicas"], 3);

    // The template goes: the ownerReference takes the binding with it (its binding-controller finalizer,
    // owned by the binding controller, may hold it in deletion).
    let deployments = dynamic_api(&cp, "apps/v1", "Deployment", "deployments", Some("apps"));
    deployments
        .delete("api", &DeleteParams::default())
        .await
        .expect("delete template");
    support::eventually("binding deleted with its template", || async {
        match get_binding(&cp, "apps", "api-deployment").await {
            None => Some(()),
            Some(b) => b["metadata"]["deletionTimestamp"].is_string().then_some(()),
        }
    })
    .await;
}

#[tokio::test]
async fn dependent_overrides_hold_the_binding_until_they_exist() {
    let cp = ControlPlane::start().await;
    start_detector(&cp, DetectorConfig::default());
    namespace(&cp, "apps").await;
    cp.create("deployments", deployment("apps", "worker", 1, json!({})))
        .await;
    cp.create(
        "propagationpolicies",
        policy("apps", "worker-policy", json!({
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"}],
            "dependentOverrides": ["worker-override"]})),
    )
    .await;
    support::eventually("ApplyPolicyFailed naming the missing override", || async {
        events_for(&cp, "apps", "worker")
            .await
            .into_iter()
            .find(|(reason, message)| {
                reason == "ApplyPolicyFailed" && message.contains("worker-override")
            })
    })
    .await;
    assert!(
        get_binding(&cp, "apps", "worker-deployment")
            .await
            .is_none()
    );
    cp.create(
        "overridepolicies",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
               "metadata": {"name": "worker-override", "namespace": "apps"},
               "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"}],
                        "overrideRules": [{"overriders": {"labelsOverrider": [{"operator": "add", "value": {"a": "b"}}]}}]}}),
    )
    .await;
    // Well before the 30 s fallback retry: the override's arrival queues the waiting template.
    let started = std::time::Instant::now();
    support::eventually("the binding once the override exists", || async {
        get_binding(&cp, "apps", "worker-deployment").await
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn a_crd_created_later_is_discovered_and_propagated() {
    let cp = ControlPlane::start().await;
    start_detector(
        &cp,
        DetectorConfig {
            discovery_period: Duration::from_millis(200),
            ..DetectorConfig::default()
        },
    );
    namespace(&cp, "apps").await;
    cp.create(
        "customresourcedefinitions",
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "widgets.demo.example.com"},
               "spec": {"group": "demo.example.com", "scope": "Namespaced",
                        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                        "versions": [{"name": "v1", "served": true, "storage": true,
                                      "schema": {"openAPIV3Schema": {"type": "object",
                                                 "x-kubernetes-preserve-unknown-fields": true}}}]}}),
    )
    .await;
    let widget = json!({"apiVersion": "demo.example.com/v1", "kind": "Widget",
                        "metadata": {"name": "gear", "namespace": "apps"}, "spec": {"size": 3}});
    // The CRD's API may take a moment to be served.
    support::eventually("the Widget created", || {
        let api = dynamic_api(
            &cp,
            "demo.example.com/v1",
            "Widget",
            "widgets",
            Some("apps"),
        );
        let widget = widget.clone();
        async move {
            let object: DynamicObject = serde_json::from_value(widget).expect("widget");
            api.create(&Default::default(), &object).await.ok()
        }
    })
    .await;
    cp.create(
        "propagationpolicies",
        policy(
            "apps",
            "widgets",
            json!({"resourceSelectors": [{"apiVersion": "demo.example.com/v1", "kind": "Widget"}]}),
        ),
    )
    .await;
    let binding = support::eventually("a binding for the custom resource", || async {
        get_binding(&cp, "apps", "gear-widget").await
    })
    .await;
    assert_eq!(
        binding["spec"]["resource"]["apiVersion"],
        "demo.example.com/v1"
    );
    assert_eq!(binding["spec"]["resource"]["kind"], "Widget");
}

#[tokio::test]
async fn lazy_policy_changes_wait_for_a_template_change() {
    let cp = ControlPlane::start().await;
    start_detector(&cp, DetectorConfig::default());
    namespace(&cp, "apps").await;
    cp.create("deployments", deployment("apps", "lazy", 2, json!({})))
        .await;
    cp.create(
        "propagationpolicies",
        policy(
            "apps",
            "lazy-policy",
            json!({
            "activationPreference": "Lazy",
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "lazy"}],
            "placement": {"clusterAffinity": {"clusterNames": ["member1"]}}}),
        ),
    )
    .await;
    support::eventually("bound", || async {
        get_binding(&cp, "apps", "lazy-deployment").await
    })
    .await;
    let policies = dynamic_api(
        &cp,
        "policy.karmada.io/v1alpha1",
        "PropagationPolicy",
        "propagationpolicies",
        Some("apps"),
    );
    policies
        .patch(
            "lazy-policy",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"placement": {"clusterAffinity": {"clusterNames": ["member2"]}}}}),
            ),
        )
        .await
        .expect("update policy");
    // A later, unrelated template is bound after the policy update was seen: the lazy template still has the
    // old placement.
    cp.create("deployments", deployment("apps", "marker", 1, json!({})))
        .await;
    cp.create(
        "propagationpolicies",
        policy("apps", "marker-policy", json!({"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "marker"}]})),
    )
    .await;
    support::eventually("marker bound", || async {
        get_binding(&cp, "apps", "marker-deployment").await
    })
    .await;
    let binding = get_binding(&cp, "apps", "lazy-deployment")
        .await
        .expect("binding");
    assert_eq!(
        binding["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        json!(["member1"])
    );
    // The template changes: now the policy's new placement applies.
    let deployments = dynamic_api(&cp, "apps/v1", "Deployment", "deployments", Some("apps"));
    deployments
        .patch(
            "lazy",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scale");
    support::eventually("the new placement after the template changed", || async {
        let b = get_binding(&cp, "apps", "lazy-deployment").await?;
        (b["spec"]["placement"]["clusterAffinity"]["clusterNames"] == json!(["member2"]))
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_policy_update_that_stops_selecting_releases_but_a_template_change_does_not() {
    let cp = ControlPlane::start().await;
    start_detector(&cp, DetectorConfig::default());
    namespace(&cp, "apps").await;
    cp.create(
        "deployments",
        deployment("apps", "front", 1, json!({"tier": "front"})),
    )
    .await;
    cp.create(
        "propagationpolicies",
        policy("apps", "tiers", json!({"resourceSelectors": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"tier": "front"}}}]})),
    )
    .await;
    support::eventually("claimed", || async {
        let t = get_deployment(&cp, "apps", "front").await?;
        label(&t, PP_ID).map(|_| ())
    })
    .await;
    // The template's own label change takes it out of the selection: it stays claimed (Karmada's rule) …
    let deployments = dynamic_api(&cp, "apps/v1", "Deployment", "deployments", Some("apps"));
    deployments
        .patch(
            "front",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"tier": "back"}}, "spec": {"replicas": 4}}),
            ),
        )
        .await
        .expect("relabel");
    // … and, as its change is still a change of a claimed template, nothing moves the binding either.
    cp.create(
        "deployments",
        deployment("apps", "marker", 1, json!({"tier": "front"})),
    )
    .await;
    support::eventually("a later template bound", || async {
        get_binding(&cp, "apps", "marker-deployment").await
    })
    .await;
    let template = get_deployment(&cp, "apps", "front")
        .await
        .expect("template");
    assert!(label(&template, PP_ID).is_some(), "still claimed");
    // The policy changes and still does not select it: the claim is released, the binding kept.
    let policies = dynamic_api(
        &cp,
        "policy.karmada.io/v1alpha1",
        "PropagationPolicy",
        "propagationpolicies",
        Some("apps"),
    );
    policies
        .patch(
            "tiers",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"priority": 3}})),
        )
        .await
        .expect("update policy");
    support::eventually("claim released", || async {
        let t = get_deployment(&cp, "apps", "front").await?;
        let b = get_binding(&cp, "apps", "front-deployment").await?;
        (label(&t, PP_ID).is_none() && label(&b, PP_ID).is_none()).then_some(())
    })
    .await;
}

/// With the binding controller's cache in the process, the detector reads bindings from it: it creates a
/// new template's binding without asking first and updates from the cached copy. The only reads left are
/// after a create that found the binding already there (the cache not yet showing the detector's own write).
#[tokio::test]
async fn the_detector_reads_bindings_from_the_shared_cache() {
    use futures::StreamExt;
    use karmada_controllers::runtime::{Informers, resources};
    use kube::runtime::watcher;

    use crate::write_budget::{Counts, counting_client};

    let cp = ControlPlane::start().await;
    namespace(&cp, "cached").await;
    let informers = Informers::default();
    let mut bindings = informers.subscribe(
        resources::all_raw(&cp.client, &resources::resource_binding()),
        watcher::Config::default(),
    );
    while let Some(event) = bindings.events.next().await {
        if matches!(event, watcher::Event::InitDone) {
            break;
        }
    }
    // Drained like the binding controller would, so the shared watch never waits on this subscriber.
    let _drained = tokio::spawn(async move { while bindings.events.next().await.is_some() {} });

    let counts = Counts::default();
    tokio::spawn(run(
        counting_client(&cp.client, &counts, "detector"),
        DetectorConfig {
            informers: informers.clone(),
            ..DetectorConfig::default()
        },
        cp.cancel.child_token(),
    ));
    cp.create(
        "propagationpolicies",
        policy(
            "cached",
            "all",
            json!({"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}),
        ),
    )
    .await;
    const TEMPLATES: usize = 4;
    for i in 0..TEMPLATES {
        cp.create(
            "deployments",
            deployment("cached", &format!("web-{i}"), 2, json!({})),
        )
        .await;
    }
    for i in 0..TEMPLATES {
        support::eventually("the binding exists", || async {
            get_binding(&cp, "cached", &format!("web-{i}-deployment")).await
        })
        .await;
    }
    // An update goes through the cached copy (its resourceVersion is the write's precondition).
    dynamic_api(&cp, "apps/v1", "Deployment", "deployments", Some("cached"))
        .patch(
            "web-0",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("scale web-0");
    support::eventually("the binding follows the template's replicas", || async {
        let binding = get_binding(&cp, "cached", "web-0-deployment").await?;
        (binding["spec"]["replicas"] == 5).then_some(())
    })
    .await;

    let counts = counts.snapshot();
    let count = |prefix: &str| -> u64 {
        counts
            .iter()
            .filter(|(key, _)| key.starts_with(prefix))
            .map(|(_, n)| n)
            .sum()
    };
    assert_eq!(
        counts.get("detector: create resourcebindings").copied(),
        Some(TEMPLATES as u64),
        "{counts:?}"
    );
    assert_eq!(
        count("detector: get resourcebindings"),
        count("detector: create resourcebindings (409)"),
        "a binding is read only after a create found it already there: {counts:?}"
    );
}
