//! Scheduler estimators for member clusters, as `local-up` and `init --enable-scheduler-estimator` start them:
//! one `karmada scheduler-estimator` process per member (pid file and log like every component), serving on a
//! free port and publishing itself to the control plane as the ExternalName Service
//! `karmada-scheduler-estimator-<cluster>` in `karmada-system`, which is how the scheduler and the descheduler
//! find it. `local-down` and `deinit` stop them with the rest.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use base64::Engine;
use k8s_openapi::api::core::v1::{Secret, Service};
use kube::Api;

use super::init::{ControlPlane, KARMADA_CONTEXT};
use crate::components::{self, Launch};
use crate::progress::Progress;

/// Karmada's names: the component and the Service are `karmada-scheduler-estimator-<cluster>`.
pub fn component(cluster: &str) -> String {
    format!("karmada-scheduler-estimator-{cluster}")
}

const NAMESPACE: &str = "karmada-system";
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Starts `cluster`'s estimator reading the member through `member_kubeconfig` (context `context`), unless it
/// runs already; returns once its Service is published.
pub async fn start(
    plane: &ControlPlane,
    karmada: &kube::Client,
    cluster: &str,
    member_kubeconfig: &Path,
    context: Option<&str>,
    progress: &Progress,
) -> anyhow::Result<()> {
    let name = component(cluster);
    if let Some(pid) = components::live_pid(&plane.data_dir, &name) {
        progress.note(&format!("{name} is already running (pid {pid})"));
        return Ok(());
    }
    let services: Api<Service> = Api::namespaced(karmada.clone(), NAMESPACE);
    // A Service left by an earlier run must not pass for this one's.
    let _ = services.delete(&name, &Default::default()).await;
    let karmada_kubeconfig = plane.kubeconfig();
    let mut args: Vec<OsString> = vec![
        "scheduler-estimator".into(),
        "--cluster-name".into(),
        cluster.into(),
        "--kubeconfig".into(),
        member_kubeconfig.as_os_str().to_os_string(),
        "--server-port".into(),
        "0".into(),
        "--karmada-kubeconfig".into(),
        karmada_kubeconfig.as_os_str().to_os_string(),
        "--karmada-context".into(),
        KARMADA_CONTEXT.into(),
        // Beside the pid file, where `local-up --monitoring` finds what to scrape.
        "--metrics-address-file".into(),
        components::metrics_address_file(&plane.data_dir, &name).into_os_string(),
    ];
    if let Some(context) = context {
        args.extend(["--context".into(), context.into()]);
    }
    let mut child = components::launch(Launch {
        name: &name,
        binary: &plane.binary,
        args,
        data_dir: &plane.data_dir,
        exit_with_stdin: plane.exit_with_stdin,
    })?;
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    loop {
        components::check_running(&mut child, &plane.data_dir, &name)?;
        if services.get_opt(&name).await.ok().flatten().is_some() {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "{name} did not publish its Service within {}s; see {}",
                START_TIMEOUT.as_secs(),
                components::log_file(&plane.data_dir, &name).display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    progress.note(&format!("{name} started (pid {})", child.id()));
    Ok(())
}

/// A kubeconfig for Push cluster `cluster` from the control plane's credentials for it (its `secretRef`:
/// `caBundle` and `token`, or `tls.crt`/`tls.key`), written to `DATA/estimators/<cluster>.config`; `None` for a
/// cluster without credentials there (Pull mode).
pub async fn member_kubeconfig(
    plane: &ControlPlane,
    karmada: &kube::Client,
    cluster: &serde_json::Value,
) -> anyhow::Result<Option<PathBuf>> {
    let name = cluster["metadata"]["name"].as_str().unwrap_or_default();
    let (Some(endpoint), Some(secret_namespace), Some(secret_name)) = (
        cluster["spec"]["apiEndpoint"].as_str(),
        cluster["spec"]["secretRef"]["namespace"].as_str(),
        cluster["spec"]["secretRef"]["name"].as_str(),
    ) else {
        return Ok(None);
    };
    let secrets: Api<Secret> = Api::namespaced(karmada.clone(), secret_namespace);
    let Some(secret) = secrets.get_opt(secret_name).await.with_context(|| {
        format!("reading Secret {secret_namespace}/{secret_name} of cluster {name}")
    })?
    else {
        return Ok(None);
    };
    let data = secret.data.unwrap_or_default();
    let encode = |key: &str| {
        data.get(key)
            .map(|bytes| base64::engine::general_purpose::STANDARD.encode(&bytes.0))
    };
    let mut user = serde_json::Map::new();
    if let Some(token) = data.get("token") {
        user.insert(
            "token".into(),
            String::from_utf8_lossy(&token.0).into_owned().into(),
        );
    } else if let (Some(cert), Some(key)) = (encode("tls.crt"), encode("tls.key")) {
        user.insert("client-certificate-data".into(), cert.into());
        user.insert("client-key-data".into(), key.into());
    } else {
        return Ok(None);
    }
    let mut server = serde_json::json!({"server": endpoint});
    match encode("caBundle") {
        Some(ca) => server["certificate-authority-data"] = ca.into(),
        None => server["insecure-skip-tls-verify"] = true.into(),
    }
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1", "kind": "Config", "current-context": name,
        "clusters": [{"name": name, "cluster": server}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
    });
    let dir = plane.data_dir.join("estimators");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("{name}.config"));
    std::fs::write(&path, serde_json::to_string_pretty(&kubeconfig)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(Some(path))
}
