//! Tests of the desired Works: the seed-001 split and override, labels and annotations, Job completions,
//! suspension, conflict resolution, per-cluster failures and orphans.

use apimachinery::GroupVersionKind;
use karmada_api::admission::{AdmissionContext, Operation as AdmissionOperation, admit};
use karmada_api::{PropagationPolicy, ResourceBinding};
use serde_json::json;

use super::*;

fn cluster(name: &str) -> std::sync::Arc<Cluster> {
    std::sync::Arc::new(
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"syncMode": "Push"}}))
            .expect("cluster"),
    )
}

fn seed_template() -> Value {
    let mut template = test_fixtures::document("seed-001/nginx-deploy.yaml");
    template["metadata"]["uid"] = json!("tmpl-uid");
    template["metadata"]["resourceVersion"] = json!("17");
    template["metadata"]["generation"] = json!(1);
    template["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    template["metadata"]["annotations"] =
        json!({"kubectl.kubernetes.io/last-applied-configuration": "{}"});
    template["status"] = json!({"replicas": 0});
    template
}

fn seed_override() -> OverridePolicy {
    let mut raw = test_fixtures::document("seed-001/override-policy.yaml");
    let gvk = GroupVersionKind::new("policy.karmada.io", "v1alpha1", "OverridePolicy");
    let context = AdmissionContext {
        new_id: "id".into(),
        now: "2026-01-01T00:00:00Z".into(),
    };
    admit(&gvk, AdmissionOperation::Create, &mut raw, None, &context).expect("admitted");
    serde_json::from_value(raw).expect("override policy")
}

/// The seed's binding after scheduling: 6 replicas split 4/2.
fn seed_binding() -> ResourceBinding {
    let policy: PropagationPolicy =
        serde_json::from_value(test_fixtures::document("seed-001/propagation-policy.yaml"))
            .expect("policy");
    serde_json::from_value(json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "nginx-ha-deployment", "namespace": "production",
                     "labels": {"resourcebinding.karmada.io/permanent-id": "rb-id"}},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "production", "name": "nginx-ha", "uid": "tmpl-uid"},
            "replicas": 6,
            "placement": policy.spec.placement,
            "clusters": [{"name": "cluster-aws", "replicas": 4}, {"name": "cluster-gcp", "replicas": 2}]
        }
    }))
    .expect("binding")
}

fn compute(
    binding: &ResourceBinding,
    template: &Value,
    ops: &[OverridePolicy],
    existing: &[Work],
) -> DesiredWorks {
    let clusters = [cluster("cluster-aws"), cluster("cluster-gcp")];
    let interpreter = Interpreter::native();
    desired_works(WorkInput {
        scope: BindingScope::Namespaced,
        binding_metadata: &binding.metadata,
        binding_spec: &binding.spec,
        template,
        clusters: &clusters,
        cluster_override_policies: &[],
        override_policies: ops,
        interpreter: &interpreter,
        existing_works: existing,
    })
    .expect("works")
}

fn manifest(work: &DesiredWork) -> &Value {
    &work.work.spec.workload.manifests[0]
}

#[test]
fn seed_001_split_four_two_with_gcp_registry() {
    let result = compute(&seed_binding(), &seed_template(), &[seed_override()], &[]);
    assert!(result.failures.is_empty(), "{:?}", result.failures);
    let summary: Vec<(String, Option<String>, Value, Value)> = result
        .works
        .iter()
        .map(|w| {
            (
                w.cluster.clone(),
                w.work.metadata.namespace.clone(),
                manifest(w)
                    .pointer("/spec/replicas")
                    .cloned()
                    .unwrap_or(Value::Null),
                manifest(w)
                    .pointer("/spec/template/spec/containers/0/image")
                    .cloned()
                    .unwrap_or(Value::Null),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "cluster-aws".into(),
                Some("karmada-es-cluster-aws".into()),
                json!(4),
                json!("nginx:1.27-alpine")
            ),
            (
                "cluster-gcp".into(),
                Some("karmada-es-cluster-gcp".into()),
                json!(2),
                json!("gcr.io/my-project/nginx:1.27-alpine")
            ),
        ]
    );
    let expected_name = crate::names::work_name("Deployment", "nginx-ha", "production");
    for work in &result.works {
        assert_eq!(
            work.work.metadata.name.as_deref(),
            Some(expected_name.as_str())
        );
    }
    assert!(
        result.works[1]
            .work
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key("policy.karmada.io/applied-overrides")),
        "gcp records the applied override"
    );
    assert!(
        result.works[0]
            .work
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| !a.contains_key("policy.karmada.io/applied-overrides")),
        "aws has no override applied"
    );
}

#[test]
fn work_and_manifest_metadata() {
    let existing = Work {
        metadata: ObjectMeta {
            name: Some(crate::names::work_name(
                "Deployment",
                "nginx-ha",
                "production",
            )),
            namespace: Some("karmada-es-cluster-aws".into()),
            labels: Some(BTreeMap::from([(
                LABEL_WORK_PERMANENT_ID.to_string(),
                "work-id".to_string(),
            )])),
            ..ObjectMeta::default()
        },
        ..Work::default()
    };
    let result = compute(&seed_binding(), &seed_template(), &[], &[existing]);
    let aws = &result.works[0];
    let work_name = crate::names::work_name("Deployment", "nginx-ha", "production");
    let metadata = serde_json::to_value(&aws.work.metadata).expect("metadata");
    assert_eq!(
        metadata,
        json!({
            "name": work_name, "namespace": "karmada-es-cluster-aws",
            "labels": {"resourcebinding.karmada.io/permanent-id": "rb-id", "work.karmada.io/permanent-id": "work-id"},
            "annotations": {"resourcebinding.karmada.io/name": "nginx-ha-deployment",
                            "resourcebinding.karmada.io/namespace": "production",
                            "work.karmada.io/conflict-resolution": "abort"},
            "finalizers": ["karmada.io/execution-controller"]
        })
    );
    assert_eq!(aws.work.spec.suspend_dispatching, Some(false));
    assert_eq!(aws.work.spec.preserve_resources_on_deletion, Some(false));
    let manifest = manifest(aws);
    assert_eq!(manifest.get("status"), None);
    for pruned in ["uid", "resourceVersion", "generation", "creationTimestamp"] {
        assert_eq!(manifest["metadata"].get(pruned), None, "{pruned}");
    }
    assert_eq!(
        manifest["metadata"]["labels"],
        json!({"karmada.io/managed": "true", "resourcebinding.karmada.io/permanent-id": "rb-id", "work.karmada.io/permanent-id": "work-id"})
    );
    let annotations = &manifest["metadata"]["annotations"];
    let expected = [
        ("resourcetemplate.karmada.io/uid", "tmpl-uid"),
        ("resourcetemplate.karmada.io/generation", "1"),
        ("resourcebinding.karmada.io/namespace", "production"),
        ("resourcebinding.karmada.io/name", "nginx-ha-deployment"),
        ("work.karmada.io/namespace", "karmada-es-cluster-aws"),
        ("work.karmada.io/name", work_name.as_str()),
        ("work.karmada.io/conflict-resolution", "abort"),
        (
            "resourcetemplate.karmada.io/managed-labels",
            "karmada.io/managed,resourcebinding.karmada.io/permanent-id,work.karmada.io/permanent-id",
        ),
    ];
    for (key, value) in expected {
        assert_eq!(annotations[key], json!(value), "{key}");
    }
    assert_eq!(
        annotations.get("kubectl.kubernetes.io/last-applied-configuration"),
        None
    );
    let managed = annotations["resourcetemplate.karmada.io/managed-annotations"]
        .as_str()
        .expect("list");
    let mut keys: Vec<&str> = annotations
        .as_object()
        .expect("map")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        managed,
        keys.join(","),
        "every annotation key is recorded, sorted"
    );
    // A Work not created yet gets an id derived from the binding's id and the cluster, on the Work and in its
    // manifest, the same at every render: the render after the create changes nothing.
    let new_id = |result: &DesiredWorks| {
        let gcp = &result.works[1];
        let on_work = gcp
            .work
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_WORK_PERMANENT_ID))
            .cloned()
            .expect("a new Work has an id");
        assert_eq!(
            gcp.work.spec.workload.manifests[0]["metadata"]["labels"][LABEL_WORK_PERMANENT_ID],
            json!(on_work),
            "the manifest carries the Work's id"
        );
        on_work
    };
    let first = new_id(&result);
    assert!(uuid::Uuid::parse_str(&first).is_ok(), "{first}");
    assert_ne!(first, "work-id");
    let again = compute(&seed_binding(), &seed_template(), &[], &[]);
    assert_eq!(new_id(&again), first, "stable across renders");
    assert_ne!(
        again.works[0]
            .work
            .metadata
            .labels
            .as_ref()
            .map(|l| &l[LABEL_WORK_PERMANENT_ID]),
        Some(&first),
        "one id per cluster"
    );
    let mut other = seed_binding();
    other.metadata.labels = Some(BTreeMap::from([(
        "resourcebinding.karmada.io/permanent-id".to_string(),
        "other-rb-id".to_string(),
    )]));
    assert_ne!(
        new_id(&compute(&other, &seed_template(), &[], &[])),
        first,
        "one id per binding"
    );
}

#[test]
fn duplicated_gets_the_full_count_and_flags_apply() {
    let mut binding = seed_binding();
    if let Some(placement) = binding.spec.placement.as_mut() {
        placement.replica_scheduling = None;
    }
    binding.spec.clusters = vec![
        karmada_api::TargetCluster {
            name: "cluster-aws".into(),
            replicas: 6,
            ..Default::default()
        },
        karmada_api::TargetCluster {
            name: "cluster-gcp".into(),
            replicas: 6,
            ..Default::default()
        },
    ];
    binding.spec.conflict_resolution = Some(ConflictResolution::Overwrite);
    binding.spec.preserve_resources_on_deletion = Some(true);
    binding.spec.suspension = Some(karmada_api::work::BindingSuspension {
        dispatching_on_clusters: Some(karmada_api::policy::SuspendClusters {
            cluster_names: vec!["cluster-gcp".into()],
        }),
        ..Default::default()
    });
    let result = compute(&binding, &seed_template(), &[], &[]);
    for work in &result.works {
        assert_eq!(
            manifest(work).pointer("/spec/replicas"),
            Some(&json!(6)),
            "{}",
            work.cluster
        );
        assert_eq!(
            manifest(work)["metadata"]["annotations"]["work.karmada.io/conflict-resolution"],
            json!("overwrite")
        );
        assert_eq!(work.work.spec.preserve_resources_on_deletion, Some(true));
        assert_eq!(
            work.work.spec.suspend_dispatching,
            Some(work.cluster == "cluster-gcp")
        );
    }
    let mut template = seed_template();
    template["metadata"]["annotations"] = json!({"work.karmada.io/conflict-resolution": "abort"});
    let result = compute(&binding, &template, &[], &[]);
    assert_eq!(
        manifest(&result.works[0])["metadata"]["annotations"]["work.karmada.io/conflict-resolution"],
        json!("abort"),
        "template annotation wins"
    );
}

#[test]
fn job_completions_are_split_by_share() {
    let mut binding = seed_binding();
    binding.spec.resource.kind = "Job".into();
    binding.spec.replicas = 3;
    binding.spec.clusters = vec![
        karmada_api::TargetCluster {
            name: "cluster-aws".into(),
            replicas: 2,
            ..Default::default()
        },
        karmada_api::TargetCluster {
            name: "cluster-gcp".into(),
            replicas: 1,
            ..Default::default()
        },
    ];
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi", "namespace": "production", "uid": "job-uid"},
                     "spec": {"parallelism": 3, "completions": 9, "template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}}});
    let result = compute(&binding, &job, &[], &[]);
    let split: Vec<(Value, Value)> = result
        .works
        .iter()
        .map(|w| {
            (
                manifest(w)["spec"]["parallelism"].clone(),
                manifest(w)["spec"]["completions"].clone(),
            )
        })
        .collect();
    assert_eq!(split, vec![(json!(2), json!(6)), (json!(1), json!(3))]);
}

#[test]
fn one_cluster_failing_does_not_block_the_others() {
    let mut binding = seed_binding();
    binding.spec.clusters.push(karmada_api::TargetCluster {
        name: "cluster-gone".into(),
        replicas: 1,
        ..Default::default()
    });
    let broken: OverridePolicy = serde_json::from_value(json!({
        "metadata": {"name": "broken", "namespace": "production"},
        "spec": {"overrideRules": [{"targetCluster": {"clusterNames": ["cluster-gcp"]},
                                    "overriders": {"plaintext": [{"path": "/spec/missing/deep", "operator": "replace", "value": 1}]}}]}
    }))
    .expect("policy");
    let result = compute(&binding, &seed_template(), &[broken], &[]);
    assert_eq!(
        result
            .works
            .iter()
            .map(|w| w.cluster.as_str())
            .collect::<Vec<_>>(),
        vec!["cluster-aws"]
    );
    let messages: Vec<String> = result.failures.iter().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].starts_with("cluster cluster-gcp: OverridePolicy production/broken: overrideRules[0].overriders: plaintext:"), "{}", messages[0]);
    assert_eq!(
        messages[1],
        "cluster cluster-gone is not a known member cluster"
    );
}

#[test]
fn whole_binding_errors() {
    let mut binding = seed_binding();
    binding.metadata.labels = None;
    let clusters = [cluster("cluster-aws")];
    let interpreter = Interpreter::native();
    let input = WorkInput {
        scope: BindingScope::Namespaced,
        binding_metadata: &binding.metadata,
        binding_spec: &binding.spec,
        template: &seed_template(),
        clusters: &clusters,
        cluster_override_policies: &[],
        override_policies: &[],
        interpreter: &interpreter,
        existing_works: &[],
    };
    assert_eq!(
        desired_works(input),
        Err(WorkError::MissingBindingId(
            LABEL_RESOURCE_BINDING_PERMANENT_ID
        ))
    );
    let scope_cluster = WorkInput {
        scope: BindingScope::Cluster,
        ..input
    };
    assert_eq!(
        desired_works(scope_cluster),
        Err(WorkError::MissingBindingId(
            LABEL_CLUSTER_RESOURCE_BINDING_PERMANENT_ID
        ))
    );
}

fn work_in(cluster: &str) -> Work {
    Work {
        metadata: ObjectMeta {
            name: Some("nginx-ha-x".into()),
            namespace: Some(execution_namespace(cluster)),
            ..ObjectMeta::default()
        },
        ..Work::default()
    }
}

#[test]
fn orphans_and_direct_purge() {
    let mut spec = seed_binding().spec;
    spec.required_by = vec![karmada_api::work::BindingSnapshot {
        namespace: "production".into(),
        name: "dependent".into(),
        clusters: vec![karmada_api::TargetCluster {
            name: "cluster-dep".into(),
            ..Default::default()
        }],
    }];
    spec.graceful_eviction_tasks = vec![
        karmada_api::GracefulEvictionTask {
            from_cluster: "cluster-graceful".into(),
            reason: "TaintUntolerated".into(),
            producer: "TaintManager".into(),
            ..Default::default()
        },
        karmada_api::GracefulEvictionTask {
            from_cluster: "cluster-direct".into(),
            purge_mode: Some(PurgeMode::Directly),
            reason: "TaintUntolerated".into(),
            producer: "TaintManager".into(),
            ..Default::default()
        },
    ];
    let existing = [
        "cluster-aws",
        "cluster-gcp",
        "cluster-dep",
        "cluster-graceful",
        "cluster-direct",
        "cluster-old",
    ]
    .map(work_in);
    let orphans: Vec<&str> = orphan_works(&existing, &spec)
        .iter()
        .filter_map(|w| work_cluster(w))
        .collect();
    assert_eq!(orphans, vec!["cluster-direct", "cluster-old"]);
    assert!(waiting_for_direct_purge(&existing, &spec));
    assert!(!waiting_for_direct_purge(&existing[..4], &spec));
}
