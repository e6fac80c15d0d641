//! Every seed example, from the fixture files as a user applies them.
//!
//! Cluster objects are not part of the seeds; they are built here. Static weights ignore capacity (Karmada's
//! rule), so for seed 001 and seed 000's api-server any clusters that serve the API give the seed's numbers; the
//! capacities below are plausible and shown in the explanation. For the dynamic-weight variant (seed 000
//! 06-failover-policy) the capacities are what produce 4/3/2: with the api-server's 500m CPU request, free CPU of
//! 20, 17.5 and 12.5 cores gives available replicas 40:35:25.

use serde_json::json;

use super::common::*;

fn seed_000_clusters() -> Vec<ClusterDoc> {
    vec![
        cluster("member-shanghai")
            .region("cn-east")
            .provider("aliyun")
            .capacity("20", "64Gi", 110),
        cluster("member-beijing")
            .region("cn-north")
            .provider("aliyun")
            .capacity("17500m", "64Gi", 110),
        cluster("member-singapore")
            .region("ap-southeast")
            .provider("aws")
            .capacity("12500m", "64Gi", 110),
    ]
}

#[test]
fn seed_001_static_weights_two_to_one() {
    let workload = load("seed-001/nginx-deploy.yaml");
    let policy = load("seed-001/propagation-policy.yaml");
    let clusters = [
        cluster("cluster-aws")
            .provider("aws")
            .capacity("8", "32Gi", 110),
        cluster("cluster-gcp")
            .provider("gcp")
            .capacity("8", "32Gi", 110),
    ];
    let plan = run(
        find(&workload, "Deployment"),
        find(&policy, "PropagationPolicy"),
        &clusters,
        None,
    );
    assert!(plan.success(), "{}", plan.render_table());
    assert_eq!(
        assignment(&plan),
        expect(&[("cluster-aws", 4), ("cluster-gcp", 2)])
    );
    let table = plan.render_table();
    assert!(table.contains("CLUSTER       REPLICAS"), "{table}");
    assert!(table.contains("cluster-aws   4"), "{table}");
    assert!(
        table.contains("by weights cluster-aws 2, cluster-gcp 1"),
        "{table}"
    );
    assert_eq!(plan.binding["status"]["conditions"][0]["reason"], "Success");
    assert_eq!(plan.binding["metadata"]["name"], "nginx-ha-deployment");
    assert_eq!(plan.binding["metadata"]["namespace"], "production");
}

#[test]
fn seed_000_api_server_forty_thirty_five_twenty_five() {
    let documents = load("seed-000/04-api-server.yaml");
    let policy = find(&documents, "PropagationPolicy");
    let plan = run(
        find(&documents, "Deployment"),
        policy,
        &seed_000_clusters(),
        None,
    );
    assert_eq!(
        assignment(&plan),
        expect(&[
            ("member-beijing", 3),
            ("member-shanghai", 4),
            ("member-singapore", 2)
        ])
    );
    // The Service the same policy selects is a non-workload: every cluster, no replicas.
    let service = run(
        find(&documents, "Service"),
        policy,
        &seed_000_clusters(),
        None,
    );
    assert!(service.success());
    assert_eq!(
        assignment(&service),
        expect(&[
            ("member-beijing", 0),
            ("member-shanghai", 0),
            ("member-singapore", 0)
        ])
    );
}

#[test]
fn seed_000_dynamic_weights_reach_the_same_split_from_capacity() {
    let documents = load("seed-000/04-api-server.yaml");
    let failover = load("seed-000/06-failover-policy.yaml");
    let plan = run(
        find(&documents, "Deployment"),
        find(&failover, "PropagationPolicy"),
        &seed_000_clusters(),
        None,
    );
    assert_eq!(
        assignment(&plan),
        expect(&[
            ("member-beijing", 3),
            ("member-shanghai", 4),
            ("member-singapore", 2)
        ])
    );
    let estimated: Vec<i64> = plan
        .explanation
        .clusters
        .iter()
        .filter_map(|c| c.available_replicas)
        .collect();
    assert_eq!(estimated, vec![35, 40, 25], "available replicas by name");
    assert_eq!(plan.explanation.strategy, "DynamicWeight");
}

#[test]
fn seed_000_redis_thirty_three_thirty_three_thirty_four() {
    let documents = load("seed-000/03-redis-statefulset.yaml");
    let plan = run(
        find(&documents, "StatefulSet"),
        find(&documents, "PropagationPolicy"),
        &seed_000_clusters(),
        None,
    );
    assert_eq!(
        assignment(&plan),
        expect(&[
            ("member-beijing", 2),
            ("member-shanghai", 2),
            ("member-singapore", 2)
        ])
    );
    assert!(
        plan.notes
            .iter()
            .any(|n| n.contains("\"Cluster\" read as \"cluster\"")),
        "{:?}",
        plan.notes
    );
}

#[test]
fn seed_000_nginx_forty_forty_twenty_breaks_ties_by_uid() {
    let documents = load("seed-000/01-nginx-propagation.yaml");
    let policy = find(&documents, "PropagationPolicy");
    let cases = [
        (
            10,
            "",
            vec![
                ("member-beijing", 4),
                ("member-shanghai", 4),
                ("member-singapore", 2),
            ],
        ),
        (
            4,
            UID_EVEN_HASH,
            vec![
                ("member-beijing", 2),
                ("member-shanghai", 1),
                ("member-singapore", 1),
            ],
        ),
        (
            4,
            UID_ODD_HASH,
            vec![
                ("member-beijing", 1),
                ("member-shanghai", 2),
                ("member-singapore", 1),
            ],
        ),
    ];
    for (replicas, uid, expected) in cases {
        let workload = with_uid(deployment("nginx", replicas, "100m", "64Mi"), uid);
        let plan = run(&workload, policy, &seed_000_clusters(), None);
        assert_eq!(
            assignment(&plan),
            expect(&expected),
            "{replicas} replicas, uid {uid:?}"
        );
    }
}

#[test]
fn seed_000_namespace_policy_duplicates_without_replicas() {
    let documents = load("seed-000/02-namespace-propagation.yaml");
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "microservices"}});
    let clusters: Vec<ClusterDoc> = seed_000_clusters()
        .into_iter()
        .map(|c| {
            let mut c = c;
            c.0["status"]["apiEnablements"][1]["resources"] = json!([{"name": "namespaces", "kind": "Namespace"}, {"name": "services", "kind": "Service"}]);
            c
        })
        .collect();
    let plan = run(
        &namespace,
        find(&documents, "PropagationPolicy"),
        &clusters,
        None,
    );
    assert_eq!(assignment(&plan).len(), 3);
}

#[test]
fn seed_000_scheduler_profile_latency_sensitive() {
    let profile = load("seed-000/07-scheduler-profile.yaml");
    let mut policy = policy(json!({
        "clusterAffinity": {"clusterNames": ["member-shanghai", "member-beijing"]},
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}
    }));
    policy["spec"]["schedulerName"] = json!("latency-sensitive");
    // Currently on member-beijing, which is 80% busy: below the profile's availablePercentage 70, so it keeps no
    // locality bonus; member-shanghai is idle.
    let clusters = [
        cluster("member-shanghai").capacity("20", "64Gi", 110),
        cluster("member-beijing").summary(json!({
            "allocatable": {"cpu": "20", "memory": "64Gi", "pods": "110"},
            "allocated": {"cpu": "16", "memory": "8Gi", "pods": "10"}
        })),
    ];
    let current = binding(&[("member-beijing", 2)]);
    let plan = run_full(
        &deployment("app", 2, "500m", "128Mi"),
        &policy,
        &clusters,
        Some(&current),
        &profile,
    );
    let names: Vec<(String, i64)> = plan
        .explanation
        .plugins
        .iter()
        .map(|p| (p.name.clone(), p.weight))
        .collect();
    assert_eq!(
        names,
        expect(&[
            ("APIEnablement", 1),
            ("TaintToleration", 1),
            ("ClusterAffinity", 100),
            ("SpreadConstraint", 1),
            ("ClusterLocality", 50)
        ])
    );
    let beijing = plan
        .explanation
        .clusters
        .iter()
        .find(|c| &*c.name == "member-beijing")
        .expect("beijing");
    assert_eq!(
        beijing.score,
        Some(0),
        "locality withheld: only 20% cpu free"
    );
    assert_eq!(plan.explanation.profile, "latency-sensitive");
}

#[test]
fn documents_are_sorted_out_and_each_template_planned() {
    let mut documents = load("seed-000/04-api-server.yaml");
    documents.extend(load("seed-000/05-multicluster-service.yaml"));
    documents.extend(seed_000_clusters().into_iter().map(|c| c.0));
    let plans = karmada_scheduler::plan_documents(
        &documents,
        None,
        &karmada_scheduler::default_registry().expect("registry"),
    )
    .expect("plans");
    let planned: Vec<(String, Vec<(String, i64)>)> = plans
        .iter()
        .map(|p| {
            (
                p.binding["spec"]["resource"]["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                assignment(p),
            )
        })
        .collect();
    // ServiceExport/ServiceImport are not claimed by the policy and are skipped.
    assert_eq!(
        planned,
        vec![
            (
                "Deployment".to_string(),
                expect(&[
                    ("member-beijing", 3),
                    ("member-shanghai", 4),
                    ("member-singapore", 2)
                ])
            ),
            (
                "Service".to_string(),
                expect(&[
                    ("member-beijing", 0),
                    ("member-shanghai", 0),
                    ("member-singapore", 0)
                ])
            ),
        ]
    );
}

#[test]
fn the_binding_carries_the_explanation() {
    let workload = load("seed-001/nginx-deploy.yaml");
    let policy = load("seed-001/propagation-policy.yaml");
    let clusters = [cluster("cluster-aws"), cluster("cluster-gcp")];
    let plan = run(
        find(&workload, "Deployment"),
        find(&policy, "PropagationPolicy"),
        &clusters,
        None,
    );
    let annotation = plan.binding["metadata"]["annotations"]
        [karmada_scheduler::explain::ANNOTATION_EXPLANATION]
        .as_str()
        .expect("annotation");
    let carried: karmada_scheduler::explain::Explanation =
        serde_json::from_str(annotation).expect("explanation JSON");
    assert_eq!(carried, plan.explanation);
    let condition = &plan.binding["status"]["conditions"][0];
    assert_eq!(
        condition["message"],
        "Binding has been scheduled successfully. cluster-aws: 4, cluster-gcp: 2 (StaticWeight, 6 replicas)"
    );
    assert_eq!(condition["lastTransitionTime"], "2026-11-29T12:00:00Z");
    assert_eq!(plan.binding["apiVersion"], "work.karmada.io/v1alpha2");
    // The binding is a valid ResourceBinding for the shared types.
    let typed: karmada_api::ResourceBinding =
        serde_json::from_value(plan.binding.clone()).expect("typed binding");
    assert_eq!(typed.spec.clusters.len(), 2);
}

#[test]
fn the_most_specific_policy_claims_the_template() {
    let workload = {
        let mut w = deployment("web", 2, "100m", "64Mi");
        w["metadata"]["labels"] = json!({"app": "web"});
        w
    };
    let pp = |name: &str, priority: i64, selector: serde_json::Value, clusters: &[&str]| {
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
               "metadata": {"name": name, "namespace": "default"},
               "spec": {"priority": priority, "resourceSelectors": [selector], "placement": {"clusterAffinity": {"clusterNames": clusters}}}})
    };
    let cpp = json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy", "metadata": {"name": "everything"},
                     "spec": {"priority": 100, "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
                              "placement": {"clusterAffinity": {"clusterNames": ["cpp"]}}}});
    let by_label = pp(
        "by-label",
        0,
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"app": "web"}}}),
        &["label"],
    );
    let by_name = pp(
        "by-name",
        0,
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}),
        &["name"],
    );
    let urgent = pp(
        "urgent",
        5,
        json!({"apiVersion": "apps/v1", "kind": "Deployment"}),
        &["urgent"],
    );
    let other_namespace = {
        let mut p = pp(
            "elsewhere",
            9,
            json!({"apiVersion": "apps/v1", "kind": "Deployment"}),
            &["elsewhere"],
        );
        p["metadata"]["namespace"] = json!("other");
        p
    };
    let clusters: Vec<serde_json::Value> = ["cpp", "label", "name", "urgent", "elsewhere"]
        .iter()
        .map(|n| cluster(n).0)
        .collect();
    let cases: Vec<(&str, Vec<serde_json::Value>, &str)> = vec![
        (
            "PropagationPolicy beats ClusterPropagationPolicy",
            vec![cpp.clone(), by_label.clone()],
            "label",
        ),
        (
            "name beats labelSelector",
            vec![by_label.clone(), by_name.clone()],
            "name",
        ),
        (
            "priority beats specificity",
            vec![by_name.clone(), urgent.clone()],
            "urgent",
        ),
        (
            "other namespaces do not claim",
            vec![other_namespace.clone(), cpp.clone()],
            "cpp",
        ),
    ];
    for (name, policies, expected) in cases {
        let mut documents = vec![workload.clone()];
        documents.extend(policies);
        documents.extend(clusters.iter().cloned());
        let plans = karmada_scheduler::plan_documents(
            &documents,
            None,
            &karmada_scheduler::default_registry().expect("registry"),
        )
        .expect(name);
        assert_eq!(assignment(&plans[0]), expect(&[(expected, 2)]), "{name}");
    }
}
