//! Seed 001 through every pure core, as the controllers will chain them: the detector claims the Deployment for
//! the PropagationPolicy and builds its ResourceBinding, the scheduler core splits 6 replicas 4/2, and the
//! binding controller core renders one Work per cluster with the admitted OverridePolicy applied to cluster-gcp
//! only. Finally the template's status is aggregated from the two members.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::collections::BTreeMap;

use apimachinery::{GroupVersionKind, merge_patch};
use karmada_api::admission::{AdmissionContext, Operation, admit};
use karmada_api::work::AggregatedStatusItem;
use karmada_api::{Cluster, OverridePolicy, PropagationPolicy, ResourceBinding};
use karmada_controllers::binding::{BindingScope, WorkInput, desired_works};
use karmada_controllers::detector::{Decision, DetectorFilter, claim, decide, desired_binding};
use karmada_interpreter::Interpreter;
use karmada_scheduler::{PlanInput, plan};
use serde_json::{Value, json};

fn load(relative: &str) -> Value {
    test_fixtures::document(&format!("seed-001/{relative}"))
}

fn admitted(mut object: Value, kind: &str) -> Value {
    let gvk = GroupVersionKind::new("policy.karmada.io", "v1alpha1", kind);
    let context = AdmissionContext {
        new_id: format!("{kind}-id"),
        now: "2026-11-29T00:00:00Z".into(),
    };
    admit(&gvk, Operation::Create, &mut object, None, &context).expect("admitted");
    object
}

fn cluster(name: &str) -> Value {
    json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"syncMode": "Push"},
        "status": {
            "apiEnablements": [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "",
                            "lastTransitionTime": "2026-11-29T00:00:00Z"}]
        }
    })
}

#[test]
fn seed_001_end_to_end_through_the_pure_cores() {
    let interpreter = Interpreter::native();
    let mut template = load("nginx-deploy.yaml");
    template["metadata"]["uid"] = json!("template-uid");
    template["metadata"]["generation"] = json!(1);
    let policy_json = admitted(load("propagation-policy.yaml"), "PropagationPolicy");
    let policy: PropagationPolicy = serde_json::from_value(policy_json.clone()).expect("policy");
    let override_policy: OverridePolicy =
        serde_json::from_value(admitted(load("override-policy.yaml"), "OverridePolicy"))
            .expect("override");

    // Detector: the policy claims the template.
    let policies = [policy];
    let Decision::Claim(chosen) =
        decide(&template, &DetectorFilter::default(), &policies, &[], false)
    else {
        panic!("expected a first claim");
    };
    let patch = claim(&template, chosen).expect("claim").expect("changes");
    let template = merge_patch(&template, &patch);
    assert!(matches!(
        decide(&template, &DetectorFilter::default(), &policies, &[], false),
        Decision::Apply(_)
    ));
    let mut binding_json = desired_binding(&template, chosen, &interpreter, None).expect("binding");
    binding_json["metadata"]["labels"]["resourcebinding.karmada.io/permanent-id"] = json!("rb-id");

    // Scheduler core: 2:1 static weights.
    let clusters_json = [cluster("cluster-aws"), cluster("cluster-gcp")];
    let scheduled = plan(&PlanInput {
        workload: &template,
        policy: &policy_json,
        clusters: &clusters_json,
        binding: Some(&binding_json),
        profiles: &[],
        now: None,
        plugins: None,
    })
    .expect("plan");
    assert!(scheduled.scheduled);
    binding_json["spec"]["clusters"] = scheduled.binding["spec"]["clusters"].clone();
    let binding: ResourceBinding = serde_json::from_value(binding_json).expect("binding");

    // Binding controller core: one Work per cluster.
    let clusters: Vec<std::sync::Arc<Cluster>> = clusters_json
        .iter()
        .map(|c| std::sync::Arc::new(serde_json::from_value(c.clone()).expect("cluster")))
        .collect();
    let works = desired_works(WorkInput {
        scope: BindingScope::Namespaced,
        binding_metadata: &binding.metadata,
        binding_spec: &binding.spec,
        template: &template,
        clusters: &clusters,
        cluster_override_policies: &[],
        override_policies: &[override_policy],
        interpreter: &interpreter,
        existing_works: &[],
    })
    .expect("works");
    assert!(works.failures.is_empty(), "{:?}", works.failures);
    let rendered: BTreeMap<String, (Value, Value)> = works
        .works
        .iter()
        .map(|w| {
            let manifest = &w.work.spec.workload.manifests[0];
            (
                w.cluster.clone(),
                (
                    manifest["spec"]["replicas"].clone(),
                    manifest["spec"]["template"]["spec"]["containers"][0]["image"].clone(),
                ),
            )
        })
        .collect();
    assert_eq!(
        rendered,
        BTreeMap::from([
            (
                "cluster-aws".to_string(),
                (json!(4), json!("nginx:1.27-alpine"))
            ),
            (
                "cluster-gcp".to_string(),
                (json!(2), json!("gcr.io/my-project/nginx:1.27-alpine"))
            ),
        ])
    );

    // Status: each member reports its share ready; the template shows 6 ready.
    let items: Vec<AggregatedStatusItem> = works
        .works
        .iter()
        .map(|w| {
            let mut member = w.work.spec.workload.manifests[0].clone();
            let replicas = member["spec"]["replicas"].clone();
            member["metadata"]["generation"] = json!(1);
            member["status"] = json!({"replicas": replicas, "readyReplicas": replicas, "updatedReplicas": replicas,
                                      "availableReplicas": replicas, "observedGeneration": 1});
            AggregatedStatusItem {
                cluster_name: w.cluster.clone(),
                status: interpreter.reflect_status(&member).expect("reflect"),
                applied: true,
                health: Some(interpreter.interpret_health(&member)),
                ..Default::default()
            }
        })
        .collect();
    assert!(
        items
            .iter()
            .all(|i| i.health == Some(karmada_api::work::ResourceHealth::Healthy))
    );
    let aggregated = interpreter
        .aggregate_status(&template, &items)
        .expect("aggregate");
    assert_eq!(aggregated["status"]["readyReplicas"], json!(6));
    assert_eq!(aggregated["status"]["observedGeneration"], json!(1));
}
