//! Pull mode end to end: a control plane, a member API server, `karmada controller-manager` signing agent
//! certificates, and `karmadactl token create | register | unregister` as a user runs them. The agent runs as
//! the detached process `register` starts; a guard kills it whatever happens to the test.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::harness::{
    Owned, Run, Server, bin, cluster_json, karmadactl, ready_status, wait_within,
};

const DEADLINE: Duration = Duration::from_secs(60);

#[track_caller]
fn wait_for<T>(what: &str, check: impl FnMut() -> Result<T, String>) -> T {
    wait_within(DEADLINE, what, check)
}

/// A member cluster: a plain `karmada apiserver` process (it serves /readyz, /version and discovery).
struct Member {
    dir: tempfile::TempDir,
    child: Child,
}

impl Member {
    fn start() -> Member {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = std::fs::File::create(dir.path().join("member.log")).expect("log");
        let child = Command::new(bin("karmada"))
            .args([
                "apiserver",
                "--exit-with-stdin",
                "--secure-port",
                "0",
                "--data-dir",
            ])
            .arg(dir.path().join("data"))
            .stdin(Stdio::piped())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn member apiserver");
        let member = Member { dir, child };
        let kubeconfig = member.kubeconfig();
        wait_for("member apiserver ready", || {
            if !kubeconfig.exists() {
                return Err("no kubeconfig yet".into());
            }
            let out = Run::from(
                Command::new("kubectl")
                    .arg("--kubeconfig")
                    .arg(&kubeconfig)
                    .args(["get", "--raw", "/readyz"])
                    .output()
                    .expect("kubectl"),
            );
            if out.ok() { Ok(()) } else { Err(out.stderr) }
        });
        member
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir
            .path()
            .join("data")
            .join("karmada-apiserver.config")
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `karmada controller-manager` signing with the control plane's CA, with short periods and grace.
struct ControllerManager {
    _process: Owned,
}

impl ControllerManager {
    fn start(karmada: &Server) -> ControllerManager {
        let pki = karmada.dir.path().join("data").join("pki");
        let log =
            std::fs::File::create(karmada.dir.path().join("controller-manager.log")).expect("log");
        let child = Command::new(bin("karmada"))
            .arg("controller-manager")
            .arg("--kubeconfig")
            .arg(&karmada.kubeconfig)
            .arg("--cluster-signing-cert-file")
            .arg(pki.join("ca.crt"))
            .arg("--cluster-signing-key-file")
            .arg(pki.join("ca.key"))
            .args([
                "--cluster-status-update-frequency",
                "1s",
                "--cluster-monitor-period",
                "300ms",
                "--cluster-monitor-grace-period",
                "3s",
                "--cluster-startup-grace-period",
                "20s",
                "--metrics-bind-address",
                "127.0.0.1:0",
                "--exit-with-stdin",
            ])
            .stdin(Stdio::piped())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn controller-manager");
        ControllerManager {
            _process: Owned(child),
        }
    }
}

/// Kills the agents `register` started under `data` (their pid files), whatever happened to the test.
/// Stops every agent `karmadactl register` started under `data` when dropped.
pub struct AgentGuard {
    pub data: PathBuf,
}

impl AgentGuard {
    fn pid(&self, cluster: &str) -> Option<String> {
        let text = std::fs::read_to_string(
            self.data
                .join("agents")
                .join(cluster)
                .join("karmada-agent.pid"),
        )
        .ok()?;
        Some(text.trim().to_string())
    }

    fn kill(&self, cluster: &str) {
        if let Some(pid) = self.pid(cluster) {
            let _ = Command::new("kill").args(["-9", &pid]).output();
        }
    }
}

impl Drop for AgentGuard {
    fn drop(&mut self) {
        let Ok(entries) = std::fs::read_dir(self.data.join("agents")) else {
            return;
        };
        for entry in entries.flatten() {
            self.kill(&entry.file_name().to_string_lossy());
        }
    }
}

fn no_cluster(karmada: &Server, name: &str) {
    let out = karmada.kubectl(&["get", "cluster", name]);
    assert!(!out.ok(), "cluster {name} must not exist: {}", out.stdout);
    assert!(
        out.stderr.contains("NotFound") || out.stderr.contains("not found"),
        "{}",
        out.stderr
    );
}

/// The register command `token create --print-register-command` printed, split into its arguments.
pub fn register_args(printed: &str) -> Vec<String> {
    let line = printed
        .lines()
        .find(|l| l.starts_with("karmadactl register "))
        .unwrap_or_else(|| panic!("no register command in {printed:?}"));
    line.split_whitespace()
        .skip(1)
        .map(str::to_string)
        .collect()
}

fn flag<'a>(args: &'a [String], name: &str) -> &'a str {
    let at = args
        .iter()
        .position(|a| a == name)
        .unwrap_or_else(|| panic!("{name} in {args:?}"));
    &args[at + 1]
}

#[test]
fn token_register_agent_lease_and_unregister() {
    let karmada = Server::start();
    let member = Member::start();
    let _cm = ControllerManager::start(&karmada);
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("karmada-data");
    let agents = AgentGuard { data: data.clone() };
    let kubeconfig = karmada.kubeconfig.to_str().expect("utf8").to_string();
    let member_kubeconfig = member.kubeconfig().to_str().expect("utf8").to_string();
    let data_arg = data.to_str().expect("utf8").to_string();

    // token create → a Secret and a register command with the CA hash.
    let printed = karmadactl(&[
        "token",
        "create",
        "--print-register-command",
        "--ttl",
        "1h",
        "--kubeconfig",
        &kubeconfig,
    ]);
    let base = register_args(printed.success());
    let token = flag(&base, "--token").to_string();
    let hash = flag(&base, "--discovery-token-ca-cert-hash").to_string();
    let id = token.split('.').next().expect("id");
    let secret = karmada.kubectl(&[
        "get",
        "secret",
        "-n",
        "kube-system",
        &format!("bootstrap-token-{id}"),
        "-o",
        "json",
    ]);
    let secret: serde_json::Value = serde_json::from_str(secret.success()).expect("json");
    assert_eq!(secret["type"], "bootstrap.kubernetes.io/token");
    let listed = karmadactl(&["token", "list", "--kubeconfig", &kubeconfig]);
    assert!(listed.success().contains(&token), "{}", listed.stdout);

    let register = |name: &str, token: &str, hash: &str, data: &str| {
        let mut args: Vec<String> = vec!["register".into(), base[1].clone()];
        args.extend(
            [
                "--token",
                token,
                "--discovery-token-ca-cert-hash",
                hash,
                "--cluster-name",
                name,
                "--cluster-kubeconfig",
                &member_kubeconfig,
                "--karmada-data",
                data,
                "--cluster-status-update-frequency",
                "1s",
                "--cluster-lease-duration",
                "2s",
            ]
            .map(str::to_string),
        );
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        karmadactl(&refs)
    };

    // Bad input: clear errors, nothing created.
    let zeros = format!("sha256:{}", "0".repeat(64));
    let err = register("pull1", &token, &zeros, &data_arg)
        .failure()
        .to_string();
    assert!(
        err.contains("does not match --discovery-token-ca-cert-hash"),
        "{err}"
    );
    let err = register("pull1", "abcdef.0123456789abcdef", &hash, &data_arg)
        .failure()
        .to_string();
    assert!(err.contains("refused the bootstrap token"), "{err}");
    let err = register("Bad_Name", &token, &hash, &data_arg)
        .failure()
        .to_string();
    assert!(err.contains("invalid cluster name"), "{err}");
    let err = register("pull1", "not-a-token", &hash, &data_arg)
        .failure()
        .to_string();
    assert!(err.contains("<id>.<secret>"), "{err}");
    no_cluster(&karmada, "pull1");
    let csrs = karmada.kubectl(&["get", "csr", "-o", "name"]);
    assert_eq!(csrs.success().trim(), "", "no CSR was submitted");
    assert!(!data.join("agents").join("pull1").exists());

    // register → Ready Pull cluster.
    let out = register("pull1", &token, &hash, &data_arg);
    out.success();
    assert!(
        out.stdout.contains("registered successfully"),
        "{}",
        out.stdout
    );
    assert!(agents.pid("pull1").is_some());
    wait_for("pull1 Ready in get clusters", || {
        let out = karmadactl(&["get", "clusters", "--kubeconfig", &kubeconfig]);
        let row = out
            .stdout
            .lines()
            .find(|l| l.starts_with("pull1 "))
            .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .ok_or(format!("{}{}", out.stdout, out.stderr))?;
        // NAME VERSION MODE READY AGE
        if row.get(2).map(String::as_str) == Some("Pull")
            && row.get(3).map(String::as_str) == Some("True")
        {
            Ok(())
        } else {
            Err(format!("{row:?}"))
        }
    });
    let cluster = cluster_json(&karmada, "pull1").expect("cluster");
    assert_eq!(cluster["spec"]["syncMode"], "Pull");
    assert!(
        cluster["spec"]["apiEndpoint"]
            .as_str()
            .is_some_and(|e| e.starts_with("https://")),
        "{cluster}"
    );
    let csr = karmada.kubectl(&["get", "csr"]);
    assert!(csr.success().contains("Approved,Issued"), "{}", csr.stdout);
    assert!(
        csr.stdout.contains(&format!("system:bootstrap:{id}")),
        "{}",
        csr.stdout
    );
    let lease = karmada.kubectl(&[
        "get",
        "lease",
        "-n",
        "karmada-cluster",
        "pull1",
        "-o",
        "jsonpath={.spec.renewTime}",
    ]);
    assert!(!lease.success().is_empty(), "the agent renews its lease");

    // The agent applies its own cluster's Works to its member.
    let pulled = serde_json::json!({
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": "pulled", "namespace": "karmada-es-pull1"},
        "spec": {"workload": {"manifests": [{
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "pulled", "namespace": "default"},
            "data": {"mode": "pull"},
        }]}},
    });
    karmada
        .kubectl_stdin(&["create", "-f", "-"], &pulled.to_string())
        .success();
    wait_for("the Work applied in the member by the agent", || {
        let out = Run::from(
            Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(member.kubeconfig())
                .args([
                    "get",
                    "configmap",
                    "pulled",
                    "-n",
                    "default",
                    "-o",
                    "jsonpath={.data.mode}",
                ])
                .output()
                .expect("kubectl"),
        );
        if out.ok() && out.stdout == "pull" {
            Ok(())
        } else {
            Err(out.stderr)
        }
    });

    // Deleting the Work: the agent removes the ConfigMap and releases the Work.
    karmada
        .kubectl(&[
            "delete",
            "work",
            "pulled",
            "-n",
            "karmada-es-pull1",
            "--wait=false",
        ])
        .success();
    wait_for("the Work released by the agent", || {
        let out = karmada.kubectl(&["get", "work", "pulled", "-n", "karmada-es-pull1"]);
        if out.ok() { Err(out.stdout) } else { Ok(()) }
    });

    // Duplicate name (another data dir, so the local check does not fire first).
    let other = work
        .path()
        .join("other")
        .to_str()
        .expect("utf8")
        .to_string();
    let err = register("pull1", &token, &hash, &other)
        .failure()
        .to_string();
    assert!(err.contains("already registered"), "{err}");

    // The agent's identity reaches its own cluster and nothing else.
    let agent_config = data
        .join("agents")
        .join("pull1")
        .join("karmada-agent.config");
    let as_agent = |args: &[&str]| {
        Run::from(
            Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(&agent_config)
                .args(args)
                .output()
                .expect("kubectl"),
        )
    };
    as_agent(&["get", "cluster", "pull1"]).success();
    as_agent(&["get", "works.work.karmada.io", "-n", "karmada-es-pull1"]).success();
    for forbidden in [
        vec!["get", "works.work.karmada.io", "-n", "karmada-es-other"],
        vec!["get", "secrets", "-n", "kube-system"],
        vec!["get", "secrets", "-A"],
        vec!["get", "secret", "-n", "karmada-es-pull1", "anything"],
        vec!["get", "clusters"],
        vec!["delete", "cluster", "pull1"],
    ] {
        let out = as_agent(&forbidden);
        assert!(!out.ok(), "{forbidden:?} must be refused");
        assert!(
            out.stderr.contains("Forbidden") || out.stderr.contains("forbidden"),
            "{forbidden:?}: {}",
            out.stderr
        );
    }

    // Stopping the agent: Ready Unknown after the grace period, with the unreachable taint.
    agents.kill("pull1");
    wait_for("pull1 Ready Unknown", || {
        let cluster = cluster_json(&karmada, "pull1")?;
        let (status, reason) = ready_status(&cluster);
        let tainted = cluster["spec"]["taints"].as_array().is_some_and(|ts| {
            ts.iter()
                .any(|t| t["key"] == "cluster.karmada.io/unreachable")
        });
        if status == "Unknown" && reason == "ClusterStatusUnknown" && tainted {
            Ok(())
        } else {
            Err(format!("{status} {reason} tainted={tainted}"))
        }
    });

    // unjoin is for Push clusters; a Pull one is left as it is, with the command to use.
    let refused = karmadactl(&["unjoin", "pull1", "--kubeconfig", &kubeconfig]);
    let message = refused.failure();
    assert!(
        message.contains("is a Pull mode member cluster; use `karmadactl unregister pull1`"),
        "{message}"
    );

    // unregister removes the cluster and the agent's files.
    let out = karmadactl(&[
        "unregister",
        "pull1",
        "--karmada-data",
        &data_arg,
        "--kubeconfig",
        &kubeconfig,
        "--wait",
        "60s",
    ]);
    assert!(
        out.success().contains("unregistered successfully"),
        "{}",
        out.stdout
    );
    no_cluster(&karmada, "pull1");
    assert!(!data.join("agents").join("pull1").exists());
    wait_for("agent RBAC garbage-collected", || {
        let out = karmada.kubectl(&["get", "clusterrole", "system:karmada:agent:pull1"]);
        if out.ok() {
            Err("still there".into())
        } else {
            Ok(())
        }
    });

    // token delete: the token no longer authenticates.
    karmadactl(&["token", "delete", id, "--kubeconfig", &kubeconfig]).success();
    let err = register("pull2", &token, &hash, &data_arg)
        .failure()
        .to_string();
    assert!(err.contains("refused the bootstrap token"), "{err}");
    no_cluster(&karmada, "pull2");

    // An expired token is refused too.
    let printed = karmadactl(&[
        "token",
        "create",
        "--print-register-command",
        "--ttl",
        "1s",
        "--kubeconfig",
        &kubeconfig,
    ]);
    let short = register_args(printed.success());
    let short_token = flag(&short, "--token").to_string();
    let short_id = short_token.split('.').next().expect("id");
    let expiration = karmada.kubectl(&[
        "get",
        "secret",
        "-n",
        "kube-system",
        &format!("bootstrap-token-{short_id}"),
        "-o",
        "jsonpath={.data.expiration}",
    ]);
    let expiration = {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(expiration.success().trim())
            .expect("base64");
        String::from_utf8(bytes).expect("utf8")
    };
    let expires: jiff::Timestamp = expiration.trim().parse().expect("RFC 3339");
    wait_for("the short token to expire", || {
        if jiff::Timestamp::now() > expires {
            Ok(())
        } else {
            Err(format!("expires at {expires}"))
        }
    });
    let err = register("pull2", &short_token, &hash, &data_arg)
        .failure()
        .to_string();
    assert!(err.contains("refused the bootstrap token"), "{err}");
    no_cluster(&karmada, "pull2");
}

#[test]
fn csr_requestor_table_and_kubectl_certificate_approve() {
    use base64::Engine;
    let karmada = Server::start();
    let (csr_pem, _key) =
        apiserver_auth::signer::client_csr("someone", &["some-group".to_string()]).expect("csr");
    let manifest = serde_json::json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "demo"},
        "spec": {
            "signerName": "example.com/demo",
            "usages": ["client auth"],
            "username": "system:masters-impostor",
            "groups": ["system:masters"],
            "request": base64::engine::general_purpose::STANDARD.encode(csr_pem),
        },
    });
    karmada
        .kubectl_stdin(&["create", "-f", "-"], &manifest.to_string())
        .success();
    let stored = karmada.kubectl(&["get", "csr", "demo", "-o", "json"]);
    let stored: serde_json::Value = serde_json::from_str(stored.success()).expect("json");
    assert_eq!(
        stored["spec"]["username"], "system:admin",
        "the requestor is who authenticated, not what the client claimed"
    );
    assert!(
        !stored["spec"]["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .any(|g| g == "system:masters-impostor")
    );
    let table = karmada.kubectl(&["get", "csr"]);
    let header = table
        .success()
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns,
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ]
    );
    assert!(table.stdout.contains("Pending"), "{}", table.stdout);
    karmada
        .kubectl(&["certificate", "approve", "demo"])
        .success();
    let table = karmada.kubectl(&["get", "csr", "demo"]);
    let row: Vec<String> = table
        .success()
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(row.last().map(String::as_str), Some("Approved"), "{row:?}");
}
