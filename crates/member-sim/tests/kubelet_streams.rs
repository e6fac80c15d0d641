//! `pods/exec`, `pods/attach`, `pods/portforward` and `pods/log` of a simulated cluster, driven
//! by the real clients: kubectl 1.32 (WebSocket exec with v5, port-forward as SPDY tunnelled in
//! a WebSocket), the Python `kubernetes` client (v5 exec, port-forward channel form) and kube-rs.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod common;
use common::live::{self, eventually};

const NAMESPACE: &str = "default";
const POD: &str = "web";

async fn send(client: &kube::Client, method: &str, path: &str, body: &Value) -> Value {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).expect("json"))
        .expect("request");
    client
        .request::<Value>(request)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// A pod that reads a ConfigMap and a Secret through env and volumes, and is running.
async fn running_pod(client: &kube::Client) {
    let core = format!("/api/v1/namespaces/{NAMESPACE}");
    send(
        client,
        "POST",
        &format!("{core}/configmaps"),
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                "data": {"greeting": "hello from a configmap", "mode": "fast"}}),
    )
    .await;
    send(
        client,
        "POST",
        &format!("{core}/secrets"),
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
                "stringData": {"password": "s3cr3t"}}),
    )
    .await;
    send(
        client,
        "POST",
        &format!("{core}/pods"),
        &json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD},
            "spec": {
                "containers": [{
                    "name": "app", "image": "nginx:1.27", "stdin": true, "stdinOnce": true,
                    "env": [
                        {"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "greeting"}}},
                        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                    ],
                    "volumeMounts": [
                        {"name": "settings", "mountPath": "/etc/settings"},
                        {"name": "creds", "mountPath": "/etc/creds", "readOnly": true},
                    ],
                }],
                "volumes": [
                    {"name": "settings", "configMap": {"name": "settings"}},
                    {"name": "creds", "secret": {"secretName": "creds"}},
                ],
            },
        }),
    )
    .await;
    eventually("the pod's container to run", || async {
        let request = http::Request::get(format!("{core}/pods/{POD}"))
            .body(Vec::new())
            .expect("request");
        client
            .request::<Value>(request)
            .await
            .ok()
            .and_then(|pod| {
                pod.pointer("/status/containerStatuses/0/state/running")
                    .cloned()
            })
            .is_some()
    })
    .await;
}

fn kubeconfig(dir: &Path, address: std::net::SocketAddr) -> PathBuf {
    let config = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "sim",
        "clusters": [{"name": "sim", "cluster": {"server": format!("http://{address}")}}],
        "users": [{"name": "sim", "user": {}}],
        "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "sim", "namespace": NAMESPACE}}],
    });
    let path = dir.join("kubeconfig");
    std::fs::write(&path, config.to_string()).expect("write kubeconfig");
    path
}

fn kubectl_command(kubeconfig: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("kubectl");
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg(format!(
            "--cache-dir={}",
            kubeconfig.with_file_name("cache").display()
        ))
        .args(args);
    command
}

/// Runs kubectl to the end, with `stdin` piped in.
async fn kubectl(kubeconfig: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut command = kubectl_command(kubeconfig, args);
    let stdin = stdin.to_vec();
    tokio::task::spawn_blocking(move || {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs (scripts/setup.sh installs kubectl 1.32)");
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(&stdin).expect("write stdin");
        drop(pipe);
        child.wait_with_output().expect("kubectl finishes")
    })
    .await
    .expect("kubectl task")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_and_python_exec_logs_and_port_forward() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cancel = CancellationToken::new();
    let running = live::start(member_sim::SimConfig::default(), dir.path(), &cancel).await;
    let client = live::socket_client(&running);
    running_pod(&client).await;
    let config = kubeconfig(dir.path(), running.address);

    // exec -- echo hi prints hi, over WebSocket v5.
    let out = kubectl(&config, &["exec", POD, "--", "echo", "hi"], b"").await;
    assert_eq!(
        (out.status.code(), text(&out.stdout).as_str()),
        (Some(0), "hi\n"),
        "stderr: {}",
        text(&out.stderr)
    );

    // The exit code travels on the error channel; kubectl exits with it.
    let out = kubectl(&config, &["exec", POD, "--", "sh", "-c", "exit 3"], b"").await;
    assert_eq!(out.status.code(), Some(3), "stderr: {}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("command terminated with exit code 3"),
        "{}",
        text(&out.stderr)
    );

    // The container sees its env and mounted ConfigMap and Secret.
    let script = "echo $GREETING; printenv PASSWORD; cat /etc/settings/mode; echo; cat /etc/creds/password; echo; hostname";
    let out = kubectl(&config, &["exec", POD, "--", "sh", "-c", script], b"").await;
    assert_eq!(
        text(&out.stdout),
        "hello from a configmap\ns3cr3t\nfast\ns3cr3t\nweb\n",
        "stderr: {}",
        text(&out.stderr)
    );
    let out = kubectl(&config, &["exec", POD, "--", "env"], b"").await;
    let env = text(&out.stdout);
    for line in [
        "HOSTNAME=web",
        "GREETING=hello from a configmap",
        "PASSWORD=s3cr3t",
    ] {
        assert!(env.lines().any(|l| l == line), "{line} in {env}");
    }

    // stdin reaches the command and its end (v5 close) lets it finish.
    let out = kubectl(&config, &["exec", "-i", POD, "--", "cat"], b"piped in\n").await;
    assert_eq!(
        text(&out.stdout),
        "piped in\n",
        "stderr: {}",
        text(&out.stderr)
    );

    // stderr comes back on its own channel; an unknown program is the runtime's error.
    let out = kubectl(&config, &["exec", POD, "--", "cat", "/nope"], b"").await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr).lines().next(),
        Some("cat: /nope: No such file or directory")
    );
    let out = kubectl(&config, &["exec", POD, "--", "nginx", "-t"], b"").await;
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("executable file not found in $PATH"),
        "{}",
        text(&out.stderr)
    );
    let out = kubectl(&config, &["exec", POD, "-c", "nope", "--", "echo"], b"").await;
    assert!(
        text(&out.stderr).contains("container nope is not valid for pod web"),
        "{}",
        text(&out.stderr)
    );

    // logs: what the container printed, with --tail and --previous's error.
    let out = kubectl(&config, &["logs", POD], b"").await;
    assert_eq!(
        text(&out.stdout),
        "member-sim: container app started (image nginx:1.27)\nmember-sim: container app is ready\n",
        "stderr: {}",
        text(&out.stderr)
    );
    let out = kubectl(&config, &["logs", POD, "--tail=1", "--timestamps"], b"").await;
    let line = text(&out.stdout);
    assert!(
        line.ends_with("Z member-sim: container app is ready\n"),
        "{line}"
    );
    assert_eq!(line.lines().count(), 1);
    let out = kubectl(&config, &["logs", POD, "--previous"], b"").await;
    assert!(
        text(&out.stderr)
            .contains("previous terminated container \"app\" in pod \"web\" not found"),
        "{}",
        text(&out.stderr)
    );

    // logs -f: the lines so far, then the answer stays open for more.
    logs_follow_stays_open(&config).await;

    // port-forward: kubectl tunnels SPDY in a WebSocket; the pod's port echoes.
    port_forward_echoes(&config).await;

    // attach: the container keeps stdin open (stdin: true) and echoes it.
    let out = kubectl(&config, &["attach", "-i", POD], b"attached\n").await;
    assert!(
        text(&out.stdout).contains("attached"),
        "stdout: {} stderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );

    // The Python client: v5 exec, exit codes, stdin close, port-forward channel form.
    python_streams(&config).await;

    // kube-rs: exec with the exit status, port-forward (channel form), logs.
    kube_rs_streams(client.clone()).await;

    cancel.cancel();
    running.stop().await;
}

async fn logs_follow_stays_open(config: &Path) {
    let mut child = kubectl_command(config, &["logs", "-f", POD])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl logs -f runs");
    let stdout = child.stdout.take().expect("stdout");
    let lines = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .take(2)
            .collect::<Vec<_>>()
    })
    .await
    .expect("reader");
    assert_eq!(
        lines,
        [
            "member-sim: container app started (image nginx:1.27)",
            "member-sim: container app is ready"
        ]
    );
    // Only a smoke check that the answer did not end with the lines so far: a stream closed at
    // once would usually have let kubectl exit by now (new lines arriving is not exercised).
    assert!(
        child.try_wait().expect("kubectl status").is_none(),
        "kubectl logs -f ended while the container runs"
    );
    let _ = child.kill();
    let _ = child.wait();
}

async fn port_forward_echoes(config: &Path) {
    let mut command = kubectl_command(config, &["port-forward", &format!("pod/{POD}"), ":8080"]);
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl port-forward runs");
    let stdout = child.stdout.take().expect("stdout");
    let result = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, String> {
        // "Forwarding from 127.0.0.1:PORT -> 8080"
        let mut lines = BufReader::new(stdout).lines();
        let port = loop {
            let line = lines
                .next()
                .ok_or("kubectl port-forward ended before forwarding")?
                .map_err(|e| e.to_string())?;
            if let Some(rest) = line.strip_prefix("Forwarding from 127.0.0.1:") {
                break rest.split(' ').next().unwrap_or_default().to_string();
            }
        };
        let mut socket =
            std::net::TcpStream::connect(format!("127.0.0.1:{port}")).map_err(|e| e.to_string())?;
        socket
            .set_read_timeout(Some(live::DEADLINE))
            .map_err(|e| e.to_string())?;
        let mut echoed = Vec::new();
        for chunk in [&b"hello "[..], b"through kubectl"] {
            socket.write_all(chunk).map_err(|e| e.to_string())?;
            let mut buffer = vec![0; chunk.len()];
            socket.read_exact(&mut buffer).map_err(|e| e.to_string())?;
            echoed.extend(buffer);
        }
        socket
            .shutdown(std::net::Shutdown::Write)
            .map_err(|e| e.to_string())?;
        let mut rest = Vec::new();
        socket.read_to_end(&mut rest).map_err(|e| e.to_string())?;
        echoed.extend(rest);
        Ok(echoed)
    })
    .await
    .expect("port-forward task");
    let _ = child.kill();
    let output = child
        .wait_with_output()
        .expect("kubectl port-forward exits");
    let echoed = result.unwrap_or_else(|e| panic!("{e}; kubectl said: {}", text(&output.stderr)));
    assert_eq!(text(&echoed), "hello through kubectl");
    assert!(
        !text(&output.stderr).contains("error"),
        "kubectl port-forward reported: {}",
        text(&output.stderr)
    );
}

async fn python_streams(config: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/streams.py");
    let config = config.to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg(&script)
            .arg(&config)
            .arg(NAMESPACE)
            .arg(POD)
            .output()
            .expect("python3 runs (scripts/setup.sh installs python3 and the kubernetes package)")
    })
    .await
    .expect("python task");
    assert!(
        out.status.success(),
        "streams.py: {}\n(scripts/setup.sh installs the kubernetes package)",
        text(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).expect("streams.py prints JSON");
    assert_eq!(
        seen,
        json!({
            "echo": "hi\n",
            "exit": {
                "stdout": "out\n",
                "stderr": "cat: /nope: No such file or directory\n",
                "returncode": 3,
                "subprotocol": "v5.channel.k8s.io",
            },
            "stdin": {"stdout": "from python stdin\n", "returncode": 0},
            "portforward": "echo me",
        })
    );
}

async fn kube_rs_streams(client: kube::Client) {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, AttachParams, LogParams};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let pods: Api<Pod> = Api::namespaced(client, NAMESPACE);
    let mut process = pods
        .exec(
            POD,
            ["sh", "-c", "echo from kube-rs; exit 5"],
            &AttachParams::default().stderr(true),
        )
        .await
        .expect("kube-rs exec");
    let mut stdout = process.stdout().expect("stdout");
    let status = process.take_status().expect("status channel");
    let mut out = String::new();
    stdout.read_to_string(&mut out).await.expect("read stdout");
    let status = status.await.expect("a status");
    process.join().await.expect("the exec ends");
    assert_eq!(out, "from kube-rs\n");
    assert_eq!(
        status.reason.as_deref(),
        Some("NonZeroExitCode"),
        "{status:?}"
    );
    let cause = status
        .details
        .and_then(|d| d.causes)
        .and_then(|c| c.into_iter().next())
        .expect("an ExitCode cause");
    assert_eq!(
        (cause.reason.as_deref(), cause.message.as_deref()),
        (Some("ExitCode"), Some("5"))
    );

    let mut forwarder = pods
        .portforward(POD, &[9090])
        .await
        .expect("kube-rs port-forward");
    let mut stream = forwarder.take_stream(9090).expect("the port's stream");
    stream.write_all(b"kube-rs echo").await.expect("write");
    let mut echoed = [0u8; 12];
    stream.read_exact(&mut echoed).await.expect("read the echo");
    assert_eq!(&echoed, b"kube-rs echo");
    drop(stream);
    forwarder.abort();

    let tail = pods
        .logs(
            POD,
            &LogParams {
                tail_lines: Some(1),
                ..LogParams::default()
            },
        )
        .await
        .expect("kube-rs logs");
    assert_eq!(tail, "member-sim: container app is ready\n");
}
