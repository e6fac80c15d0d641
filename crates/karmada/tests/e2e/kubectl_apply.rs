//! `kubectl apply` (client-side twice, then server-side), `create -f`, generator commands
//! (protobuf bodies), `diff`.

use crate::harness::{Server, rows};

const DEPLOY_V1: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports: [{containerPort: 80}]
      - name: sidecar
        image: busybox:1.36
"#;

fn apply_client_side_twice_then_server_side(s: &Server) {
    let f = s.file("deploy.yaml", DEPLOY_V1);
    let out = s
        .kubectl(&["apply", "-f", f.to_str().unwrap()])
        .success()
        .to_string();
    assert_eq!(out.trim(), "deployment.apps/web created");

    // Change a field and drop a container: kubectl sends a strategic merge patch with
    // `$setElementOrder` and `$patch: delete` directives.
    let v2 = DEPLOY_V1
        .replace("replicas: 2", "replicas: 3")
        .replace("      - name: sidecar\n        image: busybox:1.36\n", "");
    let f2 = s.file("deploy-v2.yaml", &v2);
    let out = s
        .kubectl(&["apply", "-f", f2.to_str().unwrap()])
        .success()
        .to_string();
    assert_eq!(out.trim(), "deployment.apps/web configured");
    let obj = s.kubectl(&["get", "deploy", "web", "-o", "json"]).json();
    assert_eq!(obj["spec"]["replicas"], 3);
    let containers = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 1, "sidecar removed: {containers:?}");
    assert_eq!(containers[0]["name"], "nginx");
    assert!(
        obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap()
            .contains("\"replicas\":3")
    );
    // Unchanged apply reports so.
    let out = s
        .kubectl(&["apply", "-f", f2.to_str().unwrap()])
        .success()
        .to_string();
    assert_eq!(out.trim(), "deployment.apps/web unchanged");

    let v3 = v2.replace("nginx:1.25", "nginx:1.26");
    let f3 = s.file("deploy-v3.yaml", &v3);
    let out = s
        .kubectl(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            f3.to_str().unwrap(),
        ])
        .success()
        .to_string();
    assert_eq!(out.trim(), "deployment.apps/web serverside-applied");
    let obj = s
        .kubectl(&[
            "get",
            "deploy",
            "web",
            "-o",
            "json",
            "--show-managed-fields",
        ])
        .json();
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.26"
    );
    let managers: Vec<&str> = obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(
        managers.contains(&"kubectl"),
        "server-side apply manager recorded: {managers:?}"
    );
}

fn server_side_apply_creates_and_reports_conflicts(s: &Server) {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: default}\ndata: {a: \"1\"}\n";
    let f = s.file("cm.yaml", cm);
    let out = s
        .kubectl(&["apply", "--server-side", "-f", f.to_str().unwrap()])
        .success()
        .to_string();
    assert_eq!(out.trim(), "configmap/cfg serverside-applied");
    // Another manager owns data.a now with a different value: a conflict without force.
    s.kubectl(&[
        "patch",
        "configmap",
        "cfg",
        "--type=merge",
        "-p",
        r#"{"data":{"a":"2"}}"#,
    ])
    .success();
    let err = s
        .kubectl(&[
            "apply",
            "--server-side",
            "--field-manager",
            "other",
            "-f",
            f.to_str().unwrap(),
        ])
        .failure()
        .to_string();
    assert!(err.contains("conflict"), "conflict reported: {err}");
    s.kubectl(&[
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "--force-conflicts",
        "-f",
        f.to_str().unwrap(),
    ])
    .success();
    let obj = s.kubectl(&["get", "cm", "cfg", "-o", "json"]).json();
    assert_eq!(obj["data"]["a"], "1");
}

fn create_from_file_and_generators(s: &Server) {
    let f = s.file(
        "gen.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: cfg-, namespace: default}\ndata: {k: v}\n",
    );
    let out = s
        .kubectl(&["create", "-f", f.to_str().unwrap()])
        .success()
        .to_string();
    assert!(
        out.trim().starts_with("configmap/cfg-") && out.trim().ends_with(" created"),
        "{out}"
    );

    // kubectl 1.32 sends these as protobuf bodies.
    assert_eq!(
        s.kubectl(&["create", "namespace", "team-a"])
            .success()
            .trim(),
        "namespace/team-a created"
    );
    assert_eq!(
        s.kubectl(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "team-a",
            "--from-literal=mode=fast"
        ])
        .success()
        .trim(),
        "configmap/settings created"
    );
    assert_eq!(
        s.kubectl(&[
            "create",
            "secret",
            "generic",
            "creds",
            "-n",
            "team-a",
            "--from-literal=password=s3cret"
        ])
        .success()
        .trim(),
        "secret/creds created"
    );
    assert_eq!(
        s.kubectl(&[
            "create",
            "deployment",
            "api",
            "-n",
            "team-a",
            "--image=nginx:1.25",
            "--replicas=2"
        ])
        .success()
        .trim(),
        "deployment.apps/api created"
    );
    let cm = s
        .kubectl(&["get", "cm", "settings", "-n", "team-a", "-o", "json"])
        .json();
    assert_eq!(cm["data"]["mode"], "fast");
    let secret = s
        .kubectl(&["get", "secret", "creds", "-n", "team-a", "-o", "json"])
        .json();
    assert_eq!(secret["data"]["password"], "czNjcmV0");
    assert_eq!(secret["type"], "Opaque");
    let deploy = s
        .kubectl(&["get", "deploy", "api", "-n", "team-a", "-o", "json"])
        .json();
    assert_eq!(deploy["spec"]["replicas"], 2);
    assert_eq!(
        deploy["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.25"
    );
    let ns = rows(s.kubectl(&["get", "ns", "team-a"]).success());
    assert_eq!(ns[1][0], "team-a");
    assert_eq!(ns[1][1], "Active");
}

fn diff_shows_pending_change(s: &Server) {
    let f = s.file("deploy.yaml", DEPLOY_V1);
    s.kubectl(&["apply", "-f", f.to_str().unwrap()]).success();
    let same = s.kubectl(&["diff", "-f", f.to_str().unwrap()]);
    assert_eq!(
        same.code, 0,
        "no differences: {} {}",
        same.stdout, same.stderr
    );
    let f2 = s.file(
        "deploy-v2.yaml",
        &DEPLOY_V1.replace("replicas: 2", "replicas: 5"),
    );
    let changed = s.kubectl(&["diff", "-f", f2.to_str().unwrap()]);
    assert_eq!(
        changed.code, 1,
        "exit 1 means differences: {}",
        changed.stderr
    );
    assert!(
        changed.stdout.contains("-  replicas: 2") && changed.stdout.contains("+  replicas: 5"),
        "{}",
        changed.stdout
    );
    // diff is a dry run: nothing changed.
    let obj = s.kubectl(&["get", "deploy", "web", "-o", "json"]).json();
    assert_eq!(obj["spec"]["replicas"], 2);

    // Applied server-side, an object has no last-applied annotation, and kubectl's client-side diff patches
    // `"annotations": {}` into it: kube-apiserver drops the empty map, so there is nothing to show.
    let ssa = s.file(
        "deploy-ssa.yaml",
        &DEPLOY_V1.replace("  name: web\n", "  name: web-ssa\n"),
    );
    s.kubectl(&["apply", "--server-side", "-f", ssa.to_str().unwrap()])
        .success();
    let same = s.kubectl(&["diff", "-f", ssa.to_str().unwrap()]);
    assert_eq!(
        same.code, 0,
        "no differences after a server-side apply: {} {}",
        same.stdout, same.stderr
    );
}

crate::harness::on_apiserver_and_member_sim!(
    apply_client_side_twice_then_server_side,
    server_side_apply_creates_and_reports_conflicts,
    create_from_file_and_generators,
    diff_shows_pending_change,
);
