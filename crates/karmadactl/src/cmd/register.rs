//! `karmadactl register ENDPOINT --token T --discovery-token-ca-cert-hash H --cluster-name NAME
//! --cluster-kubeconfig PATH`: registers a member cluster in Pull mode and starts its agent locally.
//!
//! Order — every check before the first write:
//! 1. the name, the token's and the hash's format, the member kubeconfig (the member must answer `/version`),
//!    no agent of that name already running here;
//! 2. the control plane's CA, fetched without trust and pinned by the hash ([`discovery`]);
//! 3. the token, through a connection verified against that CA: a wrong or expired token is refused there,
//!    and a Cluster of that name must not exist yet.
//!
//! Then: a new key and a CertificateSigningRequest for `CN=system:karmada:agent:NAME, O=system:karmada:agents`,
//! which the control plane's CSR controller approves (creating the Pull Cluster, its Lease and the agent's
//! RBAC) and signs; the agent's kubeconfig under `<karmada-data>/agents/NAME/`; the Cluster's `apiEndpoint`;
//! and `karmada agent` started in the background. A failure after the files were written removes them again
//! and stops the agent; the approved Cluster itself can only be removed by an administrator
//! (`karmadactl unregister NAME`), since the agent's identity may not delete it.

mod discovery;

pub mod agent_process;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use apiserver_auth::bootstrap_token::BootstrapToken;
use base64::Engine;
use clap::Args;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use rustls_pki_types::CertificateDer;
use serde_json::{Value, json};

use super::init::DEFAULT_DATA_DIR;
use super::join::{
    MAX_CLUSTER_NAME_LENGTH, cluster_name_problems, clusters, member_access, member_client,
    read_member_kubeconfig,
};
use crate::progress::Progress;
use agent_process::{AgentLaunch, KUBECONFIG_FILE, agent_dir, live_pid};

/// The signer agent certificates are requested from.
pub const SIGNER: &str = "kubernetes.io/kube-apiserver-client";
/// The group of every agent (its certificate O).
pub const AGENTS_GROUP: &str = "system:karmada:agents";
const MEMBER_TIMEOUT: Duration = Duration::from_secs(10);
const CSR_TIMEOUT: Duration = Duration::from_secs(60);
const AGENT_START_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Args, Debug)]
pub struct RegisterArgs {
    /// The control plane's API server: host:port (or https://host:port).
    pub endpoint: String,
    /// Bootstrap token from `karmadactl token create`.
    #[arg(long)]
    pub token: String,
    /// sha256:<hex> of the control plane CA's public key (pins the CA before the token is sent).
    #[arg(long)]
    pub discovery_token_ca_cert_hash: String,
    /// Name of the member cluster in Karmada.
    #[arg(long)]
    pub cluster_name: String,
    /// Kubeconfig of the member cluster (the agent reaches its member with it).
    #[arg(long)]
    pub cluster_kubeconfig: PathBuf,
    /// Context in the member kubeconfig (default: its current context).
    #[arg(long)]
    pub cluster_context: Option<String>,
    /// Directory for the agent's kubeconfig, pid and log (under agents/NAME/).
    #[arg(long = "karmada-data", default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// The `karmada` binary that runs the agent; by default the one beside karmadactl, else on PATH.
    #[arg(long)]
    pub karmada_binary: Option<PathBuf>,
    /// Passed to the agent: how often it probes the member and posts the status (e.g. 10s).
    #[arg(long)]
    pub cluster_status_update_frequency: Option<String>,
    /// Passed to the agent: its Lease duration (renewed every quarter of it; e.g. 40s).
    #[arg(long)]
    pub cluster_lease_duration: Option<String>,
    /// Requested validity of the agent's certificate in seconds (default: the signer's, one year).
    #[arg(long)]
    pub cert_expiration_seconds: Option<i32>,
}

pub async fn run(args: RegisterArgs) -> anyhow::Result<()> {
    let name = args.cluster_name.as_str();
    let problems = cluster_name_problems(name);
    if !problems.is_empty() {
        bail!(
            "invalid cluster name {name:?}: {}; a cluster name is a lowercase RFC 1123 label (a-z, 0-9, '-', \
             starting and ending with an alphanumeric character) of at most {MAX_CLUSTER_NAME_LENGTH} characters",
            problems.join("; ")
        );
    }
    let token = BootstrapToken::parse(&args.token).map_err(|e| anyhow!("--token: {e}"))?;
    let expected_hash = discovery::parse_ca_hash(&args.discovery_token_ca_cert_hash)?;
    let (address, host) = discovery::split_endpoint(&args.endpoint)?;
    let binary = find_karmada_binary(args.karmada_binary.as_deref())?;
    let member_kubeconfig = std::path::absolute(&args.cluster_kubeconfig)
        .with_context(|| format!("resolving {}", args.cluster_kubeconfig.display()))?;
    let (member_server, member_id) =
        check_member(&member_kubeconfig, args.cluster_context.as_deref()).await?;
    let dir = agent_dir(&args.data_dir, name);
    if let Some(pid) = live_pid(&dir) {
        bail!(
            "an agent for cluster {name:?} is already running here (pid {pid}); `karmadactl unregister {name}` first"
        );
    }

    let mut progress = Progress::new(5);
    progress.step("discovering the control plane", &address);
    let chain = discovery::presented_chain(&address, &host).await?;
    let ca = discovery::pick_ca(&chain, &expected_hash)?.clone();
    let ca_pem = pem("CERTIFICATE", &ca);
    let server = format!("https://{address}");

    progress.step("authenticating with the bootstrap token", "");
    let bootstrap = client_for(&server, &ca_pem, Credentials::Token(&token.to_string())).await?;
    match clusters(&bootstrap).get_opt(name).await {
        Ok(None) => {}
        Ok(Some(_)) => bail!(
            "cluster {name:?} is already registered in Karmada; unregister it first or choose another name — nothing was created"
        ),
        Err(kube::Error::Api(s)) if s.code == 401 => bail!(
            "the control plane refused the bootstrap token (wrong, deleted or expired); create a new one with \
             `karmadactl token create --print-register-command` — nothing was created"
        ),
        Err(kube::Error::Api(s)) if s.code == 403 => bail!(
            "the bootstrap token is valid but may not look up clusters ({}); the control plane lacks the \
             system:karmada:agent-bootstrapper role — nothing was created",
            s.message
        ),
        Err(e) => return Err(e).context("checking for an existing cluster"),
    }

    progress.step("requesting the agent's certificate", "");
    let groups = vec![AGENTS_GROUP.to_owned()];
    let user = format!("system:karmada:agent:{name}");
    let (csr_pem, key_pem) = apiserver_auth::signer::client_csr(&user, &groups)?;
    let cert_pem =
        request_certificate(&bootstrap, name, &csr_pem, args.cert_expiration_seconds).await?;

    progress.step("writing the agent's kubeconfig", &dir.display().to_string());
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = finish(
        &args,
        &binary,
        &dir,
        &member_kubeconfig,
        &server,
        &ca_pem,
        &cert_pem,
        &key_pem,
        &member_server,
        &member_id,
        &mut progress,
    )
    .await;
    if let Err(err) = result {
        let _ = agent_process::stop(&dir).await;
        let _ = std::fs::remove_dir_all(&dir);
        return Err(err.context(format!(
            "registering cluster {name:?} failed after its certificate was issued; the local agent files were \
             removed; remove the Pull cluster with `karmadactl unregister {name}` before retrying"
        )));
    }
    progress.outcome(&format!("cluster({name}) is registered successfully"));
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn finish(
    args: &RegisterArgs,
    binary: &Path,
    dir: &Path,
    member_kubeconfig: &Path,
    server: &str,
    ca_pem: &str,
    cert_pem: &str,
    key_pem: &str,
    member_server: &str,
    member_id: &str,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    let name = args.cluster_name.as_str();
    let kubeconfig_path = dir.join(KUBECONFIG_FILE);
    write_private(
        &kubeconfig_path,
        &serde_json::to_vec_pretty(&kubeconfig_json(
            server,
            ca_pem,
            Credentials::Cert(cert_pem, key_pem),
        ))?,
    )?;
    let agent = client_for(server, ca_pem, Credentials::Cert(cert_pem, key_pem)).await?;
    let mut spec = json!({"apiEndpoint": member_server});
    if !member_id.is_empty() {
        spec["id"] = json!(member_id);
    }
    clusters(&agent)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": spec})),
        )
        .await
        .with_context(|| {
            format!("recording the member's endpoint on cluster {name} with the agent's identity")
        })?;

    progress.step("starting karmada-agent", "");
    let mut extra_args = Vec::new();
    if let Some(f) = &args.cluster_status_update_frequency {
        extra_args.extend(["--cluster-status-update-frequency".to_owned(), f.clone()]);
    }
    if let Some(d) = &args.cluster_lease_duration {
        extra_args.extend(["--cluster-lease-duration".to_owned(), d.clone()]);
    }
    let (pid, mut child) = agent_process::start(&AgentLaunch {
        binary,
        dir,
        cluster: name,
        cluster_kubeconfig: member_kubeconfig,
        cluster_context: args.cluster_context.as_deref(),
        extra_args,
    })?;
    // The agent proves itself by posting the Cluster's Ready condition.
    let deadline = tokio::time::Instant::now() + AGENT_START_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait()? {
            bail!(
                "karmada-agent (pid {pid}) exited with {status}; last log lines:\n{}",
                agent_process::log_tail(dir, 20)
            );
        }
        let cluster = clusters(&agent).get(name).await?;
        let ready = cluster
            .data
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
            .and_then(|c| c["status"].as_str())
            .map(str::to_owned);
        if let Some(ready) = ready {
            progress.note(&format!(
                "karmada-agent running (pid {pid}); cluster {name} Ready={ready}"
            ));
            progress.note(&format!(
                "log: {}",
                dir.join(agent_process::LOG_FILE).display()
            ));
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "karmada-agent (pid {pid}) did not post the cluster status within {}s; see {}",
                AGENT_START_TIMEOUT.as_secs(),
                dir.join(agent_process::LOG_FILE).display()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Reads the member kubeconfig and checks that the member answers; returns its API endpoint and its id (the
/// uid of its kube-system namespace, empty when unreadable).
async fn check_member(path: &Path, context: Option<&str>) -> anyhow::Result<(String, String)> {
    let kubeconfig = read_member_kubeconfig(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let access = member_access(&kubeconfig, context, dir)
        .with_context(|| format!("cluster kubeconfig {}", path.display()))?;
    let member = member_client(kubeconfig, path, context).await?;
    member.apiserver_version().await.with_context(|| {
        format!(
            "cluster kubeconfig {}: cannot reach the member cluster at {} (GET /version)",
            path.display(),
            access.server
        )
    })?;
    let id = Api::<Namespace>::all(member)
        .get("kube-system")
        .await
        .ok()
        .and_then(|ns| ns.metadata.uid)
        .unwrap_or_default();
    Ok((access.server, id))
}

/// Creates the CSR and waits for the certificate; a denial or failure is an error with the controller's reason.
async fn request_certificate(
    bootstrap: &kube::Client,
    name: &str,
    csr_pem: &str,
    expiration_seconds: Option<i32>,
) -> anyhow::Result<String> {
    let api: Api<CertificateSigningRequest> = Api::all(bootstrap.clone());
    let mut csr: CertificateSigningRequest = serde_json::from_value(json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"generateName": format!("agent-csr-{name}-")},
        "spec": {
            "signerName": SIGNER,
            "usages": ["digital signature", "key encipherment", "client auth"],
            "request": "",
        },
    }))?;
    csr.spec.request = ByteString(csr_pem.as_bytes().to_vec());
    csr.spec.expiration_seconds = expiration_seconds;
    let created = api
        .create(&PostParams::default(), &csr)
        .await
        .context("submitting the certificate signing request")?;
    let csr_name = created.metadata.name.unwrap_or_default();
    let deadline = tokio::time::Instant::now() + CSR_TIMEOUT;
    loop {
        let current = api
            .get(&csr_name)
            .await
            .with_context(|| format!("reading {csr_name}"))?;
        let status = current.status.unwrap_or_default();
        for condition in status.conditions.unwrap_or_default() {
            if matches!(condition.type_.as_str(), "Denied" | "Failed") && condition.status == "True"
            {
                bail!(
                    "the control plane {} certificate signing request {csr_name}: {}: {} — nothing was created",
                    condition.type_.to_lowercase(),
                    condition.reason.unwrap_or_default(),
                    condition.message.unwrap_or_default()
                );
            }
        }
        if let Some(cert) = status.certificate.filter(|c| !c.0.is_empty()) {
            return String::from_utf8(cert.0).context("the issued certificate is not PEM text");
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "certificate signing request {csr_name} was not signed within {}s: is `karmada controller-manager` \
                 running with --cluster-signing-cert-file and --cluster-signing-key-file?",
                CSR_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

enum Credentials<'a> {
    Token(&'a str),
    Cert(&'a str, &'a str),
}

fn kubeconfig_json(server: &str, ca_pem: &str, credentials: Credentials<'_>) -> Value {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    let user = match credentials {
        Credentials::Token(token) => json!({"token": token}),
        Credentials::Cert(cert, key) => {
            json!({"client-certificate-data": b64(cert), "client-key-data": b64(key)})
        }
    };
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "karmada", "cluster": {"server": server, "certificate-authority-data": b64(ca_pem)}}],
        "users": [{"name": "karmada-agent", "user": user}],
        "contexts": [{"name": "karmada", "context": {"cluster": "karmada", "user": "karmada-agent"}}],
        "current-context": "karmada",
    })
}

async fn client_for(
    server: &str,
    ca_pem: &str,
    credentials: Credentials<'_>,
) -> anyhow::Result<kube::Client> {
    let kubeconfig: Kubeconfig =
        serde_json::from_value(kubeconfig_json(server, ca_pem, credentials))?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .context("building a client for the control plane")?;
    config.connect_timeout = Some(MEMBER_TIMEOUT);
    config.read_timeout = Some(MEMBER_TIMEOUT);
    crate::client::named_client(config).context("building a client for the control plane")
}

fn pem(label: &str, der: &CertificateDer<'_>) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Writes a file only its owner can read (it holds a private key).
fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    apiserver_auth::files::write_private(path, contents)
        .with_context(|| format!("writing {}", path.display()))
}

fn find_karmada_binary(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = flag {
        return Ok(path.to_path_buf());
    }
    if let Some(sibling) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("karmada")))
        && sibling.is_file()
    {
        return Ok(sibling);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("karmada"))
        .find(|candidate| candidate.is_file())
        .context("the `karmada` binary (which runs the agent) was not found beside karmadactl or on PATH; pass --karmada-binary")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn pem_round_trips() {
        use rustls_pki_types::pem::PemObject;
        let der = CertificateDer::from(vec![1u8, 2, 3, 4, 5]);
        let text = pem("CERTIFICATE", &der);
        assert_eq!(
            CertificateDer::from_pem_slice(text.as_bytes()).unwrap(),
            der
        );
    }

    #[test]
    fn kubeconfigs_parse() {
        for credentials in [
            Credentials::Token("abcdef.0123456789abcdef"),
            Credentials::Cert("C", "K"),
        ] {
            let value = kubeconfig_json("https://127.0.0.1:1", "CA", credentials);
            let parsed: Kubeconfig = serde_json::from_value(value).unwrap();
            assert_eq!(parsed.current_context.as_deref(), Some("karmada"));
        }
    }
}
