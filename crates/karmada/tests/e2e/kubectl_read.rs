//! Reading: `get` in every output form, `-A`, `-l`, `--show-labels`, `-w`, `describe`,
//! `api-resources`, `api-versions`, `explain`.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::Duration;

use crate::harness::{Server, rows};

fn seed(s: &Server) {
    s.kubectl(&["create", "namespace", "shop"]).success();
    let manifest = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, labels: {app: web, tier: front}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: "nginx:1.25"}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cart, namespace: shop, labels: {app: cart}}
spec:
  replicas: 1
  selector: {matchLabels: {app: cart}}
  template:
    metadata: {labels: {app: cart}}
    spec: {containers: [{name: cart, image: "cart:2"}]}
"#;
    s.kubectl_stdin(&["apply", "-f", "-"], manifest).success();
}

fn get_in_every_output_form(s: &Server) {
    seed(s);
    let table = rows(s.kubectl(&["get", "deploy"]).success());
    assert_eq!(
        table[0],
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    );
    assert_eq!(table[1][0..2], ["web".to_string(), "0/2".to_string()]);

    let wide = rows(s.kubectl(&["get", "deploy", "-o", "wide"]).success());
    assert_eq!(
        wide[0],
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    assert_eq!(
        wide[1][5..],
        [
            "nginx".to_string(),
            "nginx:1.25".to_string(),
            "app=web".to_string()
        ]
    );

    let yaml = s
        .kubectl(&["get", "deploy", "web", "-o", "yaml"])
        .success()
        .to_string();
    assert!(
        yaml.contains("kind: Deployment") && yaml.contains("replicas: 2"),
        "{yaml}"
    );
    let json = s.kubectl(&["get", "deploy", "web", "-o", "json"]).json();
    assert_eq!(json["metadata"]["name"], "web");
    assert!(
        json["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| u.len() == 36)
    );
    assert_eq!(json["metadata"]["generation"], 1);

    let all = rows(s.kubectl(&["get", "deploy", "-A"]).success());
    assert_eq!(all[0][0], "NAMESPACE");
    let names: Vec<(&str, &str)> = all[1..]
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .collect();
    assert_eq!(names, [("default", "web"), ("shop", "cart")]);

    let by_label = rows(
        s.kubectl(&["get", "deploy", "-A", "-l", "app in (cart,other)"])
            .success(),
    );
    assert_eq!(by_label.len(), 2);
    assert_eq!(by_label[1][1], "cart");
    let none = s.kubectl(&["get", "deploy", "-l", "app=nothing"]);
    assert!(
        none.stderr
            .contains("No resources found in default namespace."),
        "{}",
        none.stderr
    );

    let labels = rows(
        s.kubectl(&["get", "deploy", "web", "--show-labels"])
            .success(),
    );
    assert_eq!(labels[0].last().unwrap(), "LABELS");
    assert_eq!(labels[1].last().unwrap(), "app=web,tier=front");

    let name = s
        .kubectl(&["get", "deploy", "-o", "name"])
        .success()
        .to_string();
    assert_eq!(name.trim(), "deployment.apps/web");
    let jp = s
        .kubectl(&[
            "get",
            "deploy",
            "-A",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ])
        .success()
        .to_string();
    assert_eq!(jp, "web cart");
    let by_field = rows(
        s.kubectl(&[
            "get",
            "deploy",
            "-A",
            "--field-selector",
            "metadata.namespace=shop",
        ])
        .success(),
    );
    assert_eq!(by_field.len(), 2);
}

fn watch_sees_a_change_arrive(s: &Server) {
    seed(s);
    let mut watch = s.kubectl_spawn(&[
        "get",
        "deploy",
        "web",
        "-w",
        "-o",
        "custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas",
    ]);
    let stdout = watch.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The initial state arrives first; then a change made after it.
    let wait = |want: &str| loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("watch line");
        if line.split_whitespace().collect::<Vec<_>>()
            == want.split_whitespace().collect::<Vec<_>>()
        {
            break;
        }
    };
    wait("web 2");
    s.kubectl(&["scale", "deploy", "web", "--replicas=7"])
        .success();
    wait("web 7");
    let _ = watch.kill();
    let _ = watch.wait();
}

fn describe_shows_the_object(s: &Server) {
    seed(s);
    let out = s
        .kubectl(&["describe", "deploy", "web"])
        .success()
        .to_string();
    assert!(out.contains("Name:") && out.contains("web"), "{out}");
    assert!(
        out.contains("Replicas:") && out.contains("2 desired"),
        "{out}"
    );
    assert!(out.contains("nginx:1.25"), "{out}");
    let ns = s.kubectl(&["describe", "ns", "shop"]).success().to_string();
    assert!(ns.contains("Status:") && ns.contains("Active"), "{ns}");
}

fn api_resources_versions_and_explain(s: &Server) {
    let resources = s.kubectl(&["api-resources"]).success().to_string();
    let table = rows(&resources);
    assert_eq!(
        table[0],
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    );
    let find = |name: &str| {
        table
            .iter()
            .find(|r| r[0] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing:\n{resources}"))
    };
    assert_eq!(
        find("deployments"),
        ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    );
    assert_eq!(
        find("propagationpolicies"),
        [
            "propagationpolicies",
            "pp",
            "policy.karmada.io/v1alpha1",
            "true",
            "PropagationPolicy"
        ]
    );
    assert_eq!(
        find("clusters")[1..],
        [
            "cluster.karmada.io/v1alpha1".to_string(),
            "false".to_string(),
            "Cluster".to_string()
        ]
    );
    assert_eq!(
        find("resourcebindings")[1..3],
        ["rb".to_string(), "work.karmada.io/v1alpha2".to_string()]
    );

    let versions = s.kubectl(&["api-versions"]).success().to_string();
    for gv in [
        "v1",
        "apps/v1",
        "policy.karmada.io/v1alpha1",
        "work.karmada.io/v1alpha2",
        "scheduling.karmada.io/v1alpha1",
    ] {
        assert!(
            versions.lines().any(|l| l == gv),
            "{gv} in api-versions:\n{versions}"
        );
    }

    let explain = s
        .kubectl(&["explain", "pp.spec.placement"])
        .success()
        .to_string();
    assert!(
        explain.contains("KIND:") && explain.contains("PropagationPolicy"),
        "{explain}"
    );
    assert!(explain.contains("clusterAffinity"), "{explain}");
    let explain = s
        .kubectl(&["explain", "deploy.spec.replicas"])
        .success()
        .to_string();
    assert!(explain.contains("FIELD: replicas"), "{explain}");
    // Built-in kinds' descriptions come from the OpenAPI documents (the served schemas drop them).
    assert!(explain.contains("desired pods"), "{explain}");
    let explain = s
        .kubectl(&["explain", "deploy.spec.strategy.rollingUpdate.maxSurge"])
        .success()
        .to_string();
    assert!(
        explain.contains("FIELD: maxSurge <IntOrString>"),
        "{explain}"
    );
}

crate::harness::on_apiserver_and_member_sim!(
    get_in_every_output_form,
    watch_sees_a_change_arrive,
    describe_shows_the_object,
    api_resources_versions_and_explain,
);
