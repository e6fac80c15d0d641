//! The Cluster `proxy` subresource end to end: kubectl reads, watches and writes a Push member through
//! `/apis/cluster.karmada.io/v1alpha1/clusters/NAME/proxy/...` on the Karmada API server, with Status
//! answers for an unknown cluster, a Pull cluster, an unreachable member and a caller without RBAC on
//! `clusters/proxy`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::Run;
use crate::plane::{Plane, wait_for};

const PROXY: &str = "/apis/cluster.karmada.io/v1alpha1/clusters";

/// The Karmada API server URL and CA of the plane's admin kubeconfig.
fn server_and_ca(plane: &Plane) -> (String, String) {
    let text = std::fs::read_to_string(&plane.karmada.kubeconfig).expect("kubeconfig");
    let config: Value = serde_json::from_str(&text).expect("kubeconfig is JSON");
    let cluster = &config["clusters"][0]["cluster"];
    (
        cluster["server"].as_str().expect("server").to_string(),
        cluster["certificate-authority-data"]
            .as_str()
            .expect("ca")
            .to_string(),
    )
}

/// A kubeconfig for the Karmada API server that authenticates with a bearer `token`.
fn token_kubeconfig(plane: &Plane, token: &str) -> PathBuf {
    let (server, ca) = server_and_ca(plane);
    let config = serde_json::json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "t",
        "clusters": [{"name": "t", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": "t", "user": {"token": token}}],
        "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
    });
    plane
        .karmada
        .file(&format!("kubeconfig-{token}"), &config.to_string())
}

fn kubectl_with(kubeconfig: &Path, args: &[&str]) -> Run {
    Run::from(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .output()
            .expect("run kubectl"),
    )
}

fn names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

#[test]
fn proxy_reads_watches_and_writes_on_the_member() {
    let mut plane = Plane::start(&["member1"]);

    // get --raw through the proxy answers what the member itself answers.
    let proxied = plane
        .kubectl(&[
            "get",
            "--raw",
            &format!("{PROXY}/member1/proxy/api/v1/nodes"),
        ])
        .json();
    assert_eq!(proxied["kind"], "NodeList", "{proxied}");
    let direct = plane
        .member_object("member1", &["nodes"])
        .expect("member nodes");
    assert!(!names(&proxied).is_empty(), "{proxied}");
    assert_eq!(names(&proxied), names(&direct));

    // kubectl pointed at the proxy as its server: discovery, a watch and writes all go to the member.
    let (server, _) = server_and_ca(&plane);
    let via_proxy = format!("--server={server}{PROXY}/member1/proxy");
    // Its own discovery cache: the member's API must not be mistaken for Karmada's.
    let cache = format!(
        "--cache-dir={}",
        plane.karmada.dir.path().join("proxy-cache").display()
    );
    let mut watch = plane.karmada.kubectl_spawn(&[
        &via_proxy,
        &cache,
        "get",
        "configmaps",
        "-n",
        "default",
        "-w",
        "-o",
        "name",
    ]);
    let stdout = watch.stdout.take().expect("watch stdout");
    let (lines_tx, lines) = mpsc::sync_channel::<String>(64);
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });

    plane
        .kubectl(&[
            &via_proxy,
            &cache,
            "create",
            "configmap",
            "through-proxy",
            "-n",
            "default",
            "--from-literal=k=v",
        ])
        .success();
    let created = plane
        .member_object("member1", &["configmap", "through-proxy", "-n", "default"])
        .expect("the POST through the proxy created the ConfigMap in the member");
    assert_eq!(created["data"]["k"], "v");
    assert!(
        plane
            .object(&["configmap", "through-proxy", "-n", "default"])
            .is_err(),
        "the object exists only in the member, not in Karmada"
    );

    // The watch opened through the proxy sees the member's event.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l == "configmap/through-proxy") {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "the proxied watch never showed the ConfigMap; saw {seen:?}"
        );
        if let Ok(line) = lines.recv_timeout(left) {
            seen.push(line);
        }
    }
    let _ = watch.kill();
    let _ = watch.wait();
    drop(lines);
    let _ = reader.join();

    // PATCH and DELETE through the proxy.
    plane
        .kubectl(&[
            &via_proxy,
            &cache,
            "patch",
            "configmap",
            "through-proxy",
            "-n",
            "default",
            "--type=merge",
            "-p",
            r#"{"data":{"k":"patched"}}"#,
        ])
        .success();
    wait_for("the patch reached the member", || {
        let cm =
            plane.member_object("member1", &["configmap", "through-proxy", "-n", "default"])?;
        if cm["data"]["k"] == "patched" {
            Ok(())
        } else {
            Err(cm.to_string())
        }
    });
    plane
        .kubectl(&[
            &via_proxy,
            &cache,
            "delete",
            "configmap",
            "through-proxy",
            "-n",
            "default",
        ])
        .success();
    assert!(
        plane
            .member_object("member1", &["configmap", "through-proxy", "-n", "default"])
            .is_err(),
        "DELETE through the proxy removed it from the member"
    );

    // Upgrades pass through: kubectl exec (WebSocket) and port-forward (SPDY in a WebSocket) via the proxy.
    plane
        .member_kubectl(
            "member1",
            &["run", "shell", "--image=busybox:1.36", "-n", "default"],
        )
        .success();
    wait_for("the member's pod to run", || {
        let pod = plane.member_object("member1", &["pod", "shell", "-n", "default"])?;
        match pod.pointer("/status/containerStatuses/0/state/running") {
            Some(_) => Ok(()),
            None => Err(pod["status"].to_string()),
        }
    });
    let exec = plane.kubectl(&[
        &via_proxy,
        &cache,
        "exec",
        "shell",
        "-n",
        "default",
        "--",
        "sh",
        "-c",
        "echo via the proxy; exit 4",
    ]);
    assert_eq!(
        (exec.code, exec.stdout.as_str()),
        (4, "via the proxy\n"),
        "{}",
        exec.stderr
    );

    // The member's own errors pass through unchanged.
    let err = plane
        .kubectl(&[
            "get",
            "--raw",
            &format!("{PROXY}/member1/proxy/api/v1/namespaces/default/configmaps/nope"),
        ])
        .failure()
        .to_string();
    assert!(err.contains("NotFound") && err.contains("nope"), "{err}");

    // Unknown cluster: 404.
    let err = plane
        .kubectl(&["get", "--raw", &format!("{PROXY}/ghost/proxy/api/v1/nodes")])
        .failure()
        .to_string();
    assert!(
        err.contains("NotFound") && err.contains("\"ghost\" not found"),
        "{err}"
    );

    // A Pull cluster: the control plane holds no credentials for it.
    plane
        .karmada
        .kubectl_stdin(
            &["apply", "-f", "-"],
            r#"{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster",
                "metadata":{"name":"pulled"},
                "spec":{"syncMode":"Pull","apiEndpoint":"https://127.0.0.1:1"}}"#,
        )
        .success();
    let err = plane
        .kubectl(&["get", "--raw", &format!("{PROXY}/pulled/proxy/api")])
        .failure()
        .to_string();
    assert!(
        err.contains("ServiceUnavailable") && err.contains("Pull mode"),
        "{err}"
    );

    // An unreachable member: 503 with the reason.
    plane.stop_member("member1");
    let err = plane
        .kubectl(&[
            "get",
            "--raw",
            &format!("{PROXY}/member1/proxy/api/v1/nodes"),
        ])
        .failure()
        .to_string();
    assert!(
        err.contains("ServiceUnavailable") && err.contains("unreachable"),
        "{err}"
    );
}

#[test]
fn proxy_needs_rbac_on_clusters_proxy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "bobtoken,bob,1001,\"\"\n").expect("tokens");
    let plane = Plane::start_with_server_args(
        &["member1"],
        &["--token-auth-file", tokens.to_str().expect("utf8")],
    );
    let bob = token_kubeconfig(&plane, "bobtoken");
    let nodes = format!("{PROXY}/member1/proxy/api/v1/nodes");

    // Reading the Cluster itself is not enough.
    plane
        .karmada
        .kubectl_stdin(
            &["apply", "-f", "-"],
            r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
                "metadata":{"name":"cluster-reader"},
                "rules":[{"apiGroups":["cluster.karmada.io"],"resources":["clusters"],"verbs":["get","list"]}]}"#,
        )
        .success();
    plane
        .kubectl(&[
            "create",
            "clusterrolebinding",
            "bob-cluster-reader",
            "--clusterrole=cluster-reader",
            "--user=bob",
        ])
        .success();
    wait_for("bob can read clusters", || {
        let out = kubectl_with(&bob, &["get", "--raw", &format!("{PROXY}/member1")]);
        if out.ok() { Ok(()) } else { Err(out.stderr) }
    });
    let err = kubectl_with(&bob, &["get", "--raw", &nodes])
        .failure()
        .to_string();
    assert!(
        err.contains("User \"bob\" cannot get resource \"clusters/proxy\" in API group \"cluster.karmada.io\""),
        "{err}"
    );

    // `get` on clusters/proxy for member1 only: reads pass, writes and other clusters do not.
    plane
        .karmada
        .kubectl_stdin(
            &["apply", "-f", "-"],
            r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
                "metadata":{"name":"member1-proxy-reader"},
                "rules":[{"apiGroups":["cluster.karmada.io"],"resources":["clusters/proxy"],
                          "resourceNames":["member1"],"verbs":["get"]}]}"#,
        )
        .success();
    plane
        .kubectl(&[
            "create",
            "clusterrolebinding",
            "bob-member1-proxy",
            "--clusterrole=member1-proxy-reader",
            "--user=bob",
        ])
        .success();
    let listed = wait_for("bob reads member1 through the proxy", || {
        let out = kubectl_with(&bob, &["get", "--raw", &nodes]);
        if out.ok() {
            Ok(out.json())
        } else {
            Err(out.stderr)
        }
    });
    assert_eq!(listed["kind"], "NodeList");

    let body = plane.karmada.file(
        "cm.json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-bob"}}"#,
    );
    let err = kubectl_with(
        &bob,
        &[
            "create",
            "--raw",
            &format!("{PROXY}/member1/proxy/api/v1/namespaces/default/configmaps"),
            "-f",
            body.to_str().expect("utf8"),
        ],
    )
    .failure()
    .to_string();
    assert!(
        err.contains("cannot create resource \"clusters/proxy\""),
        "{err}"
    );
    assert!(
        plane
            .member_object("member1", &["configmap", "from-bob", "-n", "default"])
            .is_err(),
        "a forbidden POST must not reach the member"
    );

    // The administrator may POST with the same raw request.
    plane
        .kubectl(&[
            "create",
            "--raw",
            &format!("{PROXY}/member1/proxy/api/v1/namespaces/default/configmaps"),
            "-f",
            body.to_str().expect("utf8"),
        ])
        .success();
    plane
        .member_object("member1", &["configmap", "from-bob", "-n", "default"])
        .expect("the admin's POST created the ConfigMap in the member");
}
