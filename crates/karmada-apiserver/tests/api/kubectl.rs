//! The real kubectl (from PATH; `scripts/setup.sh` checks it is there) against the Router served over plain
//! HTTP on a loopback port: the everyday commands work and print what users expect.

use std::path::{Path, PathBuf};
use std::process::Output;

use tokio::io::AsyncBufReadExt;

use super::harness::Harness;

const KUBECTL: &str = "kubectl";

struct Kubectl {
    address: String,
    kubeconfig: PathBuf,
    cache: PathBuf,
    _dir: tempfile::TempDir,
}

impl Kubectl {
    async fn serve(h: &Harness) -> Kubectl {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let router = h.router();
        let cancel = h.server.options.cancel.clone();
        tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(cancel.cancelled_owned())
                .await
                .unwrap();
        });
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("config");
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: http://{address}\ncontexts:\n- name: k\n  context:\n    cluster: k\n    user: u\n    namespace: default\ncurrent-context: k\nusers:\n- name: u\n  user: {{}}\n"
        );
        std::fs::write(&kubeconfig, config).unwrap();
        Kubectl {
            address: format!("http://{address}"),
            kubeconfig,
            cache: dir.path().join("cache"),
            _dir: dir,
        }
    }

    async fn run(&self, args: &[&str], stdin_file: Option<&Path>) -> Output {
        let mut command = tokio::process::Command::new(KUBECTL);
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args);
        if let Some(file) = stdin_file {
            command.stdin(std::fs::File::open(file).unwrap());
        }
        tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
            .await
            .expect("kubectl finishes")
            .unwrap_or_else(|e| panic!("running kubectl: {e} (kubectl 1.32 must be on PATH)"))
    }

    /// Runs kubectl, asserts success and returns stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args, None).await;
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    async fn run_with_env(&self, args: &[&str], key: &str, value: &str) -> String {
        let out = tokio::process::Command::new(KUBECTL)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .env(key, value)
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    async fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args, None).await;
        assert!(!out.status.success(), "kubectl {args:?} should fail");
        String::from_utf8_lossy(&out.stderr).to_string()
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().to_string()
}

const DEPLOY: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports: [{containerPort: 80}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_everyday_commands() {
    let h = Harness::new().await;
    let k = Kubectl::serve(&h).await;
    let files = tempfile::tempdir().unwrap();

    let version = k.ok(&["version", "-o", "json"]).await;
    assert!(version.contains("\"minor\": \"32\""), "{version}");

    let resources = k.ok(&["api-resources"]).await;
    assert!(
        resources.contains("deployments") && resources.contains("propagationpolicies"),
        "{resources}"
    );

    assert!(
        k.ok(&["create", "namespace", "demo"])
            .await
            .contains("namespace/demo created")
    );
    let cm = k
        .ok(&[
            "create",
            "configmap",
            "cfg",
            "--from-literal=a=b",
            "-n",
            "demo",
        ])
        .await;
    assert!(cm.contains("configmap/cfg created"), "{cm}");

    let deploy = write(
        files.path(),
        "deploy.yaml",
        &DEPLOY.replace("REPLICAS", "1"),
    );
    assert!(
        k.ok(&["apply", "-f", &deploy])
            .await
            .contains("deployment.apps/web created")
    );
    let deploy2 = write(
        files.path(),
        "deploy2.yaml",
        &DEPLOY.replace("REPLICAS", "2"),
    );
    assert!(
        k.ok(&["apply", "-f", &deploy2])
            .await
            .contains("deployment.apps/web configured")
    );
    let got = k
        .ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"])
        .await;
    assert_eq!(got, "2");

    let wide = k.ok(&["get", "deploy", "-o", "wide"]).await;
    assert!(
        wide.contains("READY") && wide.contains("nginx:1.25"),
        "{wide}"
    );
    let all = k.ok(&["get", "deploy", "-A", "--show-labels"]).await;
    assert!(all.contains("default") && all.contains("app=web"), "{all}");

    assert!(
        k.ok(&["scale", "deploy", "web", "--replicas=3"])
            .await
            .contains("scaled")
    );
    assert!(
        k.ok(&["label", "deploy", "web", "tier=fe"])
            .await
            .contains("labeled")
    );
    assert!(
        k.ok(&["annotate", "deploy", "web", "note=x"])
            .await
            .contains("annotated")
    );
    k.ok(&[
        "patch",
        "deploy",
        "web",
        "-p",
        "{\"spec\":{\"replicas\":4}}",
    ])
    .await;
    k.ok(&[
        "patch",
        "deploy",
        "web",
        "--type=json",
        "-p",
        "[{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":5}]",
    ])
    .await;
    assert_eq!(
        k.ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"])
            .await,
        "5"
    );

    let ssa = k
        .ok(&["apply", "--server-side", "--force-conflicts", "-f", &deploy])
        .await;
    assert!(ssa.contains("serverside-applied"), "{ssa}");
    let described = k.ok(&["describe", "deploy", "web"]).await;
    assert!(described.contains("nginx:1.25"), "{described}");

    let edited = k
        .run_with_env(
            &["edit", "deploy", "web"],
            "EDITOR",
            "sed -i s/replicas:.*/replicas:\\ 7/",
        )
        .await;
    assert!(edited.contains("edited"), "{edited}");
    assert_eq!(
        k.ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"])
            .await,
        "7"
    );
    let diff = k.run(&["diff", "-f", &deploy2], None).await;
    assert_eq!(
        diff.status.code(),
        Some(1),
        "diff finds the replica change: {}",
        String::from_utf8_lossy(&diff.stderr)
    );
    assert!(String::from_utf8_lossy(&diff.stdout).contains("replicas"));
    assert!(
        k.ok(&["rollout", "restart", "deploy", "web"])
            .await
            .contains("restarted")
    );
    let everything = k.ok(&["get", "all"]).await;
    assert!(everything.contains("deployment.apps/web"), "{everything}");
    let explained = k.ok(&["explain", "deploy.spec.replicas"]).await;
    assert!(explained.contains("replicas"), "{explained}");
    let explained = k.ok(&["explain", "propagationpolicy.spec"]).await;
    assert!(explained.contains("resourceSelectors"), "{explained}");

    // get -w sees a change arrive.
    let mut watcher = tokio::process::Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(&k.kubeconfig)
        .args(["get", "configmaps", "-w", "-o", "name"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(watcher.stdout.take().unwrap()).lines();
    k.ok(&["create", "configmap", "watched"]).await;
    let seen = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("configmap/watched") {
                return true;
            }
        }
        false
    })
    .await
    .expect("the change arrives");
    assert!(seen);
    watcher.kill().await.unwrap();

    // delete waits for a finalizer to be removed.
    let held = write(
        files.path(),
        "held.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\n",
    );
    k.ok(&["apply", "-f", &held]).await;
    let server = std::sync::Arc::clone(&h.server);
    let release = tokio::spawn(async move {
        let registry = server.registry();
        let def = registry.lookup("", "v1", "configmaps").unwrap();
        loop {
            let (object, _) = server
                .read_object(&def, Some("default"), "held")
                .await
                .unwrap()
                .unwrap();
            if object["metadata"]["deletionTimestamp"].is_string() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let body = br#"{"metadata":{"finalizers":null}}"#;
        let options = karmada_apiserver::handlers::WriteOptions::internal("test");
        karmada_apiserver::handlers::update::patch_object(
            &server,
            &def,
            Some("default"),
            "held",
            karmada_apiserver::hooks::PatchType::Merge,
            body,
            karmada_apiserver::objects::Part::Main,
            &options,
        )
        .await
        .unwrap();
    });
    assert!(
        k.ok(&["delete", "configmap", "held"])
            .await
            .contains("deleted")
    );
    release.await.unwrap();

    let missing = k.fails(&["get", "deploy", "nosuch"]).await;
    assert!(
        missing.contains("deployments.apps \"nosuch\" not found"),
        "{missing}"
    );

    assert!(k.ok(&["delete", "deploy", "web"]).await.contains("deleted"));
    assert!(
        k.ok(&["delete", "namespace", "demo"])
            .await
            .contains("deleted")
    );
    let gone = k.fails(&["get", "namespace", "demo"]).await;
    assert!(gone.contains("not found"), "{gone}");

    // Every fixture either applies or fails with a message; none may crash the server.
    k.ok(&["create", "namespace", "microservices"]).await;
    k.ok(&["create", "namespace", "production"]).await;
    let fixtures = test_fixtures::yaml_files();
    assert!(
        !fixtures.is_empty(),
        "no fixtures in {}",
        test_fixtures::dir().display()
    );
    for fixture in fixtures {
        let out = k
            .run(&["apply", "-f", &test_fixtures::path_str(&fixture)], None)
            .await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!(
            "{fixture}: {}{stderr}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            out.status.success()
                || stderr.contains("Error from server")
                || stderr.contains("is invalid:"),
            "{fixture}: {stderr}"
        );
    }
    assert!(k.ok(&["version"]).await.contains("Server Version"));
}

const PYTHON_SCRIPT: &str = r#"
import sys, threading, time
from kubernetes import client, watch
cfg = client.Configuration()
cfg.host = sys.argv[1]
api = client.ApiClient(cfg)
apps = client.AppsV1Api(api)
custom = client.CustomObjectsApi(api)
body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "py"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "py"}},
                 "template": {"metadata": {"labels": {"app": "py"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
events = []
def watcher():
    for event in watch.Watch().stream(apps.list_namespaced_deployment, "default", timeout_seconds=3):
        events.append((event["type"], event["object"].metadata.name))
thread = threading.Thread(target=watcher)
thread.start()
time.sleep(0.5)
apps.create_namespaced_deployment("default", body)
apps.patch_namespaced_deployment("py", "default", {"spec": {"replicas": 2}})
apps.patch_namespaced_deployment_scale("py", "default", {"spec": {"replicas": 3}})
assert apps.read_namespaced_deployment("py", "default").spec.replicas == 3
assert [d.metadata.name for d in apps.list_namespaced_deployment("default").items] == ["py"]
apps.delete_namespaced_deployment("py", "default", propagation_policy="Foreground")
thread.join()
kinds = [e[0] for e in events if e[1] == "py"]
assert kinds[0] == "ADDED" and "MODIFIED" in kinds and kinds[-1] == "DELETED", kinds
pp = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "pp"},
      "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "py"}],
               "placement": {"clusterAffinity": {"clusterNames": ["m1"]}}}}
custom.create_namespaced_custom_object("policy.karmada.io", "v1alpha1", "default", "propagationpolicies", pp)
custom.patch_namespaced_custom_object("policy.karmada.io", "v1alpha1", "default", "propagationpolicies", "pp", {"spec": {"priority": 5}})
got = custom.get_namespaced_custom_object("policy.karmada.io", "v1alpha1", "default", "propagationpolicies", "pp")
assert got["spec"]["priority"] == 5, got
try:
    apps.read_namespaced_deployment("nosuch", "default")
    raise SystemExit("expected 404")
except client.exceptions.ApiException as e:
    assert e.status == 404, e.status
print("python ok")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_crud_and_watch() {
    let probe = tokio::process::Command::new("python3")
        .args(["-c", "import kubernetes"])
        .output()
        .await;
    assert!(
        probe.is_ok_and(|o| o.status.success()),
        "python3 with the kubernetes package is required: run scripts/setup.sh (pip install kubernetes)"
    );
    let h = Harness::new().await;
    let k = Kubectl::serve(&h).await;
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::new("python3")
            .args(["-c", PYTHON_SCRIPT, &k.address])
            .output(),
    )
    .await
    .expect("python finishes")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("python ok"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
