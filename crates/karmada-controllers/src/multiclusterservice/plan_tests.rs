use karmada_api::networking::{ClusterSelector, MultiClusterServiceSpec};

use super::*;

fn mcs(providers: &[&str], consumers: &[&str]) -> MultiClusterService {
    let mut mcs = MultiClusterService {
        spec: MultiClusterServiceSpec {
            types: vec![ExposureType::CrossCluster],
            provider_clusters: providers
                .iter()
                .map(|n| ClusterSelector {
                    name: n.to_string(),
                })
                .collect(),
            consumer_clusters: consumers
                .iter()
                .map(|n| ClusterSelector {
                    name: n.to_string(),
                })
                .collect(),
            ..MultiClusterServiceSpec::default()
        },
        ..MultiClusterService::default()
    };
    mcs.metadata.name = Some("web".into());
    mcs.metadata.namespace = Some("shop".into());
    mcs.metadata.labels = Some(
        [(
            LABEL_MULTI_CLUSTER_SERVICE_PERMANENT_ID.to_string(),
            "id-1".to_string(),
        )]
        .into(),
    );
    mcs
}

fn service() -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "web", "namespace": "shop", "uid": "s1", "resourceVersion": "9",
                        "labels": {"propagationpolicy.karmada.io/permanent-id": "pp"},
                        "annotations": {"propagationpolicy.karmada.io/name": "p", "propagationpolicy.karmada.io/namespace": "shop"}},
           "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}})
}

#[test]
fn sides_resolve_to_existing_clusters_and_name_the_missing() {
    let existing: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let (providers, consumers) = sides(&mcs(&["a", "x"], &[]));
    let (found, missing) = resolve(&providers, &existing);
    assert_eq!(found.into_iter().collect::<Vec<_>>(), ["a"]);
    assert_eq!(missing, ["x"]);
    let (all, none) = resolve(&consumers, &existing);
    assert_eq!(all, existing);
    assert!(none.is_empty());
    let mut not_cross = mcs(&[], &[]);
    not_cross.spec.types = vec![ExposureType::LoadBalancer];
    assert!(!cross_cluster(&not_cross) && cross_cluster(&mcs(&[], &[])));
}

#[test]
fn the_service_is_claimed_from_its_policy_and_released_again() {
    let claimed = claimed_service(&service(), &mcs(&[], &[])).expect("a change");
    let labels = &claimed["metadata"]["labels"];
    assert_eq!(
        labels["resourcetemplate.karmada.io/claimed-by"],
        "MultiClusterService"
    );
    assert_eq!(
        labels["multiclusterservice.karmada.io/permanent-id"],
        "id-1"
    );
    assert!(
        labels
            .get("propagationpolicy.karmada.io/permanent-id")
            .is_none()
    );
    let annotations = &claimed["metadata"]["annotations"];
    assert_eq!(annotations["multiclusterservice.karmada.io/name"], "web");
    assert!(
        annotations
            .get("propagationpolicy.karmada.io/name")
            .is_none()
    );
    assert_eq!(claimed_service(&claimed, &mcs(&[], &[])), None);
    let released = released_service(&claimed).expect("a change");
    assert!(
        released["metadata"]["labels"]
            .get("resourcetemplate.karmada.io/claimed-by")
            .is_none()
    );
    assert_eq!(released_service(&released), None);
}

#[test]
fn the_binding_places_the_service_on_providers_and_consumers() {
    let clusters: BTreeSet<String> = ["a", "c"].iter().map(|s| s.to_string()).collect();
    let binding = service_binding(&service(), &mcs(&["a"], &["c"]), &clusters, None);
    assert_eq!(binding["metadata"]["name"], "web-service");
    assert_eq!(
        binding["metadata"]["labels"]["binding.karmada.io/managed-by"],
        "MultiClusterService"
    );
    assert_eq!(binding["metadata"]["ownerReferences"][0]["uid"], "s1");
    assert_eq!(
        binding["metadata"]["finalizers"],
        json!(["karmada.io/binding-controller"])
    );
    assert_eq!(
        binding["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        json!(["a", "c"])
    );
    assert_eq!(binding["spec"]["conflictResolution"], "Overwrite");
    // Taking over a policy's binding keeps its schedule and drops the policy's claim.
    let mut existing = binding.clone();
    existing["metadata"]["labels"]["propagationpolicy.karmada.io/permanent-id"] = json!("pp");
    existing["spec"]["clusters"] = json!([{"name": "a"}]);
    let moved = service_binding(&service(), &mcs(&["a"], &["c"]), &clusters, Some(&existing));
    assert_eq!(moved["spec"]["clusters"], json!([{"name": "a"}]));
    assert!(
        moved["metadata"]["labels"]
            .get("propagationpolicy.karmada.io/permanent-id")
            .is_none()
    );
    assert!(binding_up_to_date(
        &binding,
        &service_binding(&service(), &mcs(&["a"], &["c"]), &clusters, Some(&binding))
    ));
}

#[test]
fn collected_slices_are_dispatched_under_the_service_name() {
    let marker: Work =
        serde_json::from_value(marker_work(&mcs(&["a"], &["c"]), "a")).expect("work");
    assert!(is_marker(&marker));
    assert_eq!(marker.metadata.namespace.as_deref(), Some("karmada-es-a"));
    assert_eq!(marker.spec.suspend_dispatching, Some(true));
    let reported: Work = serde_json::from_value(json!({
        "metadata": {"name": "web-abcde-xyz", "namespace": "karmada-es-a",
                     "labels": {"endpointslice.karmada.io/managed-by": "MultiClusterService",
                                "multiclusterservice.karmada.io/name": "web", "multiclusterservice.karmada.io/namespace": "shop"}},
        "spec": {"suspendDispatching": true, "workload": {"manifests": [{
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-abcde", "namespace": "shop"},
            "addressType": "IPv4", "endpoints": [{"addresses": ["10.100.0.5"]}], "ports": [{"name": "http", "port": 8080}]}]}},
    }))
    .expect("work");
    assert!(is_collected_slice(&reported) && !is_marker(&reported));
    let work = dispatched_work("shop", "web", &reported, "a", "c").expect("dispatched");
    assert_eq!(work["metadata"]["namespace"], "karmada-es-c");
    assert_eq!(work["metadata"]["name"], "web-abcde-xyz");
    assert_eq!(
        work["metadata"]["annotations"]["endpointslice.karmada.io/provision-cluster"],
        "a"
    );
    let slice = &work["spec"]["workload"]["manifests"][0];
    assert_eq!(slice["metadata"]["name"], "a-web-abcde");
    assert_eq!(
        slice["metadata"]["labels"]["kubernetes.io/service-name"],
        "web"
    );
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-dispatch-controller.karmada.io"
    );
    assert_eq!(slice["endpoints"][0]["addresses"][0], "10.100.0.5");
    assert_eq!(slice["metadata"]["labels"]["karmada.io/managed"], "true");
    assert!(dispatched_up_to_date(&work, &work));
}
