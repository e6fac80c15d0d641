//! Writing: `edit`, `patch` (json, merge, strategic; 415 for custom kinds), `label`,
//! `annotate`, `scale`, `replace`, `delete` waiting on a finalizer.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::harness::Server;

fn deployment(s: &Server) {
    let manifest = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: nginx, image: "nginx:1.25", env: [{name: A, value: "1"}]}
"#;
    s.kubectl_stdin(&["apply", "-f", "-"], manifest).success();
}

fn edit_with_an_editor_script(s: &Server) {
    deployment(s);
    let editor = s.file(
        "editor.sh",
        "#!/bin/sh\nsed -i 's/replicas: 2/replicas: 4/' \"$1\"\n",
    );
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = s
        .kubectl_env(
            &["edit", "deploy", "web"],
            &[
                ("EDITOR", editor.to_str().unwrap()),
                ("KUBE_EDITOR", editor.to_str().unwrap()),
            ],
        )
        .success()
        .to_string();
    assert_eq!(out.trim(), "deployment.apps/web edited");
    let obj = s.kubectl(&["get", "deploy", "web", "-o", "json"]).json();
    assert_eq!(obj["spec"]["replicas"], 4);
    assert_eq!(obj["metadata"]["generation"], 2);
}

fn patch_json_merge_and_strategic(s: &Server) {
    deployment(s);
    s.kubectl(&[
        "patch",
        "deploy",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/replicas","value":3}]"#,
    ])
    .success();
    s.kubectl(&[
        "patch",
        "deploy",
        "web",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"team":"a"}}}"#,
    ])
    .success();
    // Strategic: containers merge by name, env merges by name.
    let out = s
        .kubectl(&["patch", "deploy", "web", "-p", r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","env":[{"name":"B","value":"2"}]}]}}}}"#])
        .success()
        .to_string();
    assert_eq!(out.trim(), "deployment.apps/web patched");
    let obj = s.kubectl(&["get", "deploy", "web", "-o", "json"]).json();
    assert_eq!(obj["spec"]["replicas"], 3);
    assert_eq!(obj["metadata"]["labels"]["team"], "a");
    let c = &obj["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        c["image"], "nginx:1.25",
        "strategic merge kept the container"
    );
    let env: Vec<&str> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(env, ["A", "B"], "env merged by name, new entries appended");

    // A failing JSON patch test op changes nothing.
    let err = s
        .kubectl(&["patch", "deploy", "web", "--type=json", "-p", r#"[{"op":"test","path":"/spec/replicas","value":9},{"op":"replace","path":"/spec/replicas","value":1}]"#])
        .failure()
        .to_string();
    assert!(!err.is_empty());
    assert_eq!(
        s.kubectl(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"])
            .success(),
        "3"
    );
}

fn strategic_patch_on_a_custom_kind_is_415(s: &Server) {
    let pp = r#"
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web-pp, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement: {clusterAffinity: {clusterNames: [member1]}}
"#;
    s.kubectl_stdin(&["apply", "-f", "-"], pp).success();
    let err = s
        .kubectl(&["patch", "pp", "web-pp", "-p", r#"{"spec":{"priority":5}}"#])
        .failure()
        .to_string();
    assert!(
        err.contains("application/strategic-merge-patch+json is not supported by policy.karmada.io/v1alpha1, Kind=PropagationPolicy"),
        "{err}"
    );
    s.kubectl(&[
        "patch",
        "pp",
        "web-pp",
        "--type=merge",
        "-p",
        r#"{"spec":{"priority":5}}"#,
    ])
    .success();
    let obj = s.kubectl(&["get", "pp", "web-pp", "-o", "json"]).json();
    assert_eq!(obj["spec"]["priority"], 5);
}

fn label_annotate_scale_replace(s: &Server) {
    deployment(s);
    assert_eq!(
        s.kubectl(&["label", "deploy", "web", "tier=front"])
            .success()
            .trim(),
        "deployment.apps/web labeled"
    );
    assert_eq!(
        s.kubectl(&["annotate", "deploy", "web", "owner=team-a"])
            .success()
            .trim(),
        "deployment.apps/web annotated"
    );
    assert_eq!(
        s.kubectl(&["scale", "deploy", "web", "--replicas=5"])
            .success()
            .trim(),
        "deployment.apps/web scaled"
    );
    // --current-replicas goes through GET + PUT on /scale with a resourceVersion precondition.
    let stale = s.kubectl(&[
        "scale",
        "deploy",
        "web",
        "--current-replicas=2",
        "--replicas=6",
    ]);
    assert!(!stale.ok(), "precondition on current replicas fails");
    s.kubectl(&[
        "scale",
        "deploy",
        "web",
        "--current-replicas=5",
        "--replicas=6",
    ])
    .success();
    let obj = s.kubectl(&["get", "deploy", "web", "-o", "json"]).json();
    assert_eq!(obj["metadata"]["labels"]["tier"], "front");
    assert_eq!(obj["metadata"]["annotations"]["owner"], "team-a");
    assert_eq!(obj["spec"]["replicas"], 6);
    assert_eq!(
        obj["metadata"]["generation"], 3,
        "each replicas change bumps generation; labels don't"
    );

    // On a member-sim the Deployment controller writes status between our GET and PUT, so a
    // replace may lose the race: like any client, read again and retry on a conflict.
    let mut attempts = 0;
    let f = loop {
        let mut replaced = s.kubectl(&["get", "deploy", "web", "-o", "json"]).json();
        replaced["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27".into();
        let f = s.file("replace.json", &replaced.to_string());
        let run = s.kubectl(&["replace", "-f", f.to_str().unwrap()]);
        if run.ok() {
            assert_eq!(run.stdout.trim(), "deployment.apps/web replaced");
            break f;
        }
        attempts += 1;
        assert!(
            attempts < 20 && run.stderr.contains("the object has been modified"),
            "replace failed: {}",
            run.stderr
        );
    };
    // The same body again carries a stale resourceVersion now.
    let err = s
        .kubectl(&["replace", "-f", f.to_str().unwrap()])
        .failure()
        .to_string();
    assert!(err.contains("the object has been modified"), "{err}");
}

fn delete_waits_for_a_finalizer(s: &Server) {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: default, finalizers: [example.com/hold]}\ndata: {a: b}\n";
    s.kubectl_stdin(&["apply", "-f", "-"], cm).success();
    let mut delete = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&s.kubeconfig)
        .args(["delete", "cm", "held", "--timeout=60s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The object stays, marked for deletion, until the finalizer is removed.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let obj = s.kubectl(&["get", "cm", "held", "-o", "json"]).json();
        if obj["metadata"]["deletionTimestamp"].is_string() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "deletionTimestamp never set"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        delete.try_wait().unwrap().is_none(),
        "kubectl delete is still waiting"
    );
    s.kubectl(&[
        "patch",
        "cm",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])
    .success();
    let out = delete.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "configmap \"held\" deleted"
    );
    let gone = s.kubectl(&["get", "cm", "held"]).failure().to_string();
    assert!(gone.contains("configmaps \"held\" not found"), "{gone}");
}

fn deleting_a_namespace_deletes_its_contents(s: &Server) {
    s.kubectl(&["create", "namespace", "tmp"]).success();
    s.kubectl(&[
        "create",
        "configmap",
        "c1",
        "-n",
        "tmp",
        "--from-literal=a=b",
    ])
    .success();
    assert_eq!(
        s.kubectl(&["delete", "namespace", "tmp"]).success().trim(),
        "namespace \"tmp\" deleted"
    );
    s.kubectl(&["get", "ns", "tmp"]).failure();
    let list = s.kubectl(&["get", "cm", "-n", "tmp", "-o", "json"]).json();
    assert_eq!(list["items"].as_array().map(Vec::len), Some(0));
}

crate::harness::on_apiserver_and_member_sim!(
    edit_with_an_editor_script,
    patch_json_merge_and_strategic,
    strategic_patch_on_a_custom_kind_is_415,
    label_annotate_scale_replace,
    delete_waits_for_a_finalizer,
    deleting_a_namespace_deletes_its_contents,
);
