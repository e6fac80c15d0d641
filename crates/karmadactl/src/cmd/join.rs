//! `karmadactl join NAME --cluster-kubeconfig=PATH`: registers a member cluster in Push mode.
//!
//! Order: validate the name, read the member kubeconfig, reach the member (`/version`), refuse a duplicate —
//! all before the first write. Then, in the member: namespace `karmada-cluster`, ServiceAccount
//! `karmada-<name>`, ClusterRole and ClusterRoleBinding `karmada-controller-manager:karmada-<name>`; in the
//! control plane: Secret `karmada-cluster/<name>` and the Cluster. If any write fails, everything created so
//! far is deleted again, newest first.
//!
//! Credentials: as Karmada does, a token of the ServiceAccount join created: a
//! `kubernetes.io/service-account-token` Secret of the same name in the member, which the member's token
//! controller fills; the control plane's Secret then holds `caBundle` plus that `token`. So a member reached
//! through an exec plugin (EKS, GKE) joins with credentials the control plane can use. A member that does not fill
//! the Secret within [`TOKEN_TIMEOUT`] is joined with what its kubeconfig carries instead (`token`, or the client
//! certificate pair `tls.crt` / `tls.key`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use base64::Engine;
use clap::Args;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

use crate::client;
use crate::progress::Progress;

/// Default namespace of the member credentials, in the control plane and in the member (`--cluster-namespace`).
pub const CLUSTER_NAMESPACE: &str = "karmada-cluster";
/// Karmada's limit on cluster names (the name becomes part of other names).
pub const MAX_CLUSTER_NAME_LENGTH: usize = 48;
const MEMBER_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Args, Debug)]
pub struct JoinArgs {
    /// Name of the member cluster.
    pub name: String,
    /// Kubeconfig of the member cluster.
    #[arg(long)]
    pub cluster_kubeconfig: PathBuf,
    /// Context in the member kubeconfig (default: its current context).
    #[arg(long)]
    pub cluster_context: Option<String>,
    #[arg(long)]
    pub cluster_provider: Option<String>,
    #[arg(long)]
    pub cluster_region: Option<String>,
    /// Comma-separated zones.
    #[arg(long, value_delimiter = ',')]
    pub cluster_zones: Vec<String>,
    /// Kubeconfig of the Karmada control plane.
    #[arg(long, alias = "karmada-config")]
    pub kubeconfig: Option<PathBuf>,
    #[arg(long = "karmada-context")]
    pub karmada_context: Option<String>,
    /// Namespace of the member's credentials: the Secret in the control plane, and the ServiceAccount and its
    /// token in the member.
    #[arg(long, default_value = CLUSTER_NAMESPACE, value_parser = parse_cluster_namespace)]
    pub cluster_namespace: String,
    /// Check everything and print what would be created, without creating it.
    #[arg(long)]
    pub dry_run: bool,
}

/// `--cluster-namespace`: a namespace name (an RFC 1123 label).
pub fn parse_cluster_namespace(text: &str) -> Result<String, String> {
    let problems = apimachinery::names::dns1123_label_problems(text);
    if problems.is_empty() {
        Ok(text.to_string())
    } else {
        Err(format!(
            "{}; a namespace name is a lowercase RFC 1123 label such as {CLUSTER_NAMESPACE}",
            problems.join("; ")
        ))
    }
}

/// The ServiceAccount, and the ClusterRole and ClusterRoleBinding (one name), join creates in the member for
/// cluster `name`, as Karmada names them.
pub fn member_object_names(name: &str) -> (String, String) {
    (
        format!("karmada-{name}"),
        format!("karmada-controller-manager:karmada-{name}"),
    )
}

/// The Cluster API of the control plane.
pub fn clusters(client: &kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster");
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, "clusters"),
    )
}

/// Problems with a cluster name, empty when it is acceptable.
pub fn cluster_name_problems(name: &str) -> Vec<String> {
    let mut problems = apimachinery::names::dns1123_label_problems(name);
    if name.len() > MAX_CLUSTER_NAME_LENGTH {
        problems.push(format!(
            "must be no more than {MAX_CLUSTER_NAME_LENGTH} characters"
        ));
    }
    problems
}

/// What the member kubeconfig says about where and how to connect.
#[derive(Debug, Default, PartialEq)]
pub struct MemberAccess {
    pub server: String,
    pub ca_pem: Option<Vec<u8>>,
    pub insecure: bool,
    pub token: Option<String>,
    pub client_cert_pem: Option<Vec<u8>>,
    pub client_key_pem: Option<Vec<u8>>,
}

fn decode_b64(what: &str, data: &str) -> anyhow::Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .with_context(|| format!("{what} is not valid base64"))
}

/// Reads the connection details of `context` (or the current context) from a parsed kubeconfig. Relative
/// file paths are resolved against the kubeconfig's directory.
pub fn member_access(
    kubeconfig: &Kubeconfig,
    context: Option<&str>,
    dir: &Path,
) -> anyhow::Result<MemberAccess> {
    let (access, user) = member_endpoint(kubeconfig, context, dir)?;
    if !access.has_credentials() {
        bail!("user {user:?} has neither a token nor a client certificate and key");
    }
    Ok(access)
}

/// [`member_access`] without requiring credentials the control plane could store: join mints its own.
/// Returns the user's name too, for messages.
fn member_endpoint(
    kubeconfig: &Kubeconfig,
    context: Option<&str>,
    dir: &Path,
) -> anyhow::Result<(MemberAccess, String)> {
    let context_name = context
        .map(str::to_string)
        .or_else(|| kubeconfig.current_context.clone())
        .ok_or_else(|| {
            anyhow!("no context given (--cluster-context) and no current-context set")
        })?;
    let ctx = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| anyhow!("context {context_name:?} not found"))?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| {
            anyhow!(
                "cluster {:?} of context {context_name:?} not found",
                ctx.cluster
            )
        })?;
    let server = cluster
        .server
        .clone()
        .ok_or_else(|| anyhow!("cluster {:?} has no server", ctx.cluster))?;
    let read = |p: &str| std::fs::read(dir.join(p)).with_context(|| format!("reading {p}"));
    let ca_pem = match (
        &cluster.certificate_authority_data,
        &cluster.certificate_authority,
    ) {
        (Some(data), _) => Some(decode_b64("certificate-authority-data", data)?),
        (None, Some(file)) => Some(read(file)?),
        (None, None) => None,
    };
    let mut access = MemberAccess {
        server,
        ca_pem,
        insecure: cluster.insecure_skip_tls_verify.unwrap_or(false),
        ..Default::default()
    };
    let user = ctx.user.as_deref().unwrap_or_default();
    if let Some(auth) = kubeconfig
        .auth_infos
        .iter()
        .find(|a| a.name == user)
        .and_then(|a| a.auth_info.as_ref())
    {
        use secrecy::ExposeSecret;
        let expose = |s: &secrecy::SecretString| s.expose_secret().to_string();
        access.token = match (&auth.token, &auth.token_file) {
            (Some(t), _) => Some(expose(t)),
            (None, Some(f)) => Some(String::from_utf8_lossy(&read(f)?).trim().to_string()),
            _ => None,
        };
        access.client_cert_pem = match (&auth.client_certificate_data, &auth.client_certificate) {
            (Some(d), _) => Some(decode_b64("client-certificate-data", d)?),
            (None, Some(f)) => Some(read(f)?),
            _ => None,
        };
        access.client_key_pem = match (&auth.client_key_data, &auth.client_key) {
            (Some(d), _) => Some(decode_b64("client-key-data", &expose(d))?),
            (None, Some(f)) => Some(read(f)?),
            _ => None,
        };
    }
    Ok((access, user.to_string()))
}

impl MemberAccess {
    /// Whether the kubeconfig's user carries credentials a stored Secret can hold (not an exec plugin).
    pub fn has_credentials(&self) -> bool {
        self.token.is_some() || (self.client_cert_pem.is_some() && self.client_key_pem.is_some())
    }
}

/// The Secret data stored for the member.
pub fn secret_data(access: &MemberAccess) -> BTreeMap<String, ByteString> {
    let mut data = BTreeMap::new();
    if let Some(ca) = &access.ca_pem {
        data.insert("caBundle".to_string(), ByteString(ca.clone()));
    }
    if let Some(token) = &access.token {
        data.insert("token".to_string(), ByteString(token.clone().into_bytes()));
    }
    if let (Some(cert), Some(key)) = (&access.client_cert_pem, &access.client_key_pem) {
        data.insert("tls.crt".to_string(), ByteString(cert.clone()));
        data.insert("tls.key".to_string(), ByteString(key.clone()));
    }
    data
}

/// The control-plane Secret's data for a ServiceAccount token: Karmada's `caBundle` and `token`.
pub fn token_secret_data(access: &MemberAccess, token: String) -> BTreeMap<String, ByteString> {
    let mut data = BTreeMap::new();
    if let Some(ca) = &access.ca_pem {
        data.insert("caBundle".to_string(), ByteString(ca.clone()));
    }
    data.insert("token".to_string(), ByteString(token.into_bytes()));
    data
}

/// The control-plane Secret's data, and a line saying where it came from: the ServiceAccount `token` the member
/// issued, else the kubeconfig's own credentials, else an error that says what to do.
pub fn stored_credentials(
    access: &MemberAccess,
    user: &str,
    namespace: &str,
    sa_name: &str,
    token: Option<String>,
) -> anyhow::Result<(BTreeMap<String, ByteString>, String)> {
    match token {
        Some(token) => Ok((
            token_secret_data(access, token),
            format!(
                "obtained a token of serviceaccount {namespace}/{sa_name} from the member cluster"
            ),
        )),
        None if access.has_credentials() => Ok((
            secret_data(access),
            format!(
                "the member did not issue a token for serviceaccount {namespace}/{sa_name} within {}s; \
                 storing the kubeconfig's own credentials",
                TOKEN_TIMEOUT.as_secs()
            ),
        )),
        None => bail!(
            "the member did not issue a token for serviceaccount {namespace}/{sa_name} within {}s, and \
             user {user:?} of the kubeconfig has neither a token nor a client certificate and key to store instead; \
             check that the member's kube-controller-manager runs its token controller, or join with a kubeconfig \
             whose user has a token or a client certificate",
            TOKEN_TIMEOUT.as_secs()
        ),
    }
}

/// How long join waits for the member to fill the ServiceAccount's token Secret (Karmada waits as long).
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// A token of the ServiceAccount `sa_name`: the member fills a `kubernetes.io/service-account-token` Secret of
/// the same name (created here unless it exists), watched until it holds one. `None` when it stays empty.
async fn service_account_token(
    member: &kube::Client,
    namespace: &str,
    sa_name: &str,
    created: &mut Vec<Created>,
) -> anyhow::Result<Option<String>> {
    let secrets: Api<Secret> = Api::namespaced(member.clone(), namespace);
    let mut annotations = BTreeMap::new();
    annotations.insert(
        "kubernetes.io/service-account.name".to_string(),
        sa_name.to_string(),
    );
    let secret = Secret {
        metadata: ObjectMeta {
            annotations: Some(annotations),
            ..meta(sa_name, Some(namespace))
        },
        type_: Some("kubernetes.io/service-account-token".into()),
        ..Default::default()
    };
    ensure(&secrets, &secret, created, Created::Secret)
        .await
        .context("creating the ServiceAccount's token Secret in the member")?;
    let has_token = |secret: Option<&Secret>| {
        secret
            .and_then(|s| s.data.as_ref())
            .and_then(|d| d.get("token"))
            .is_some_and(|t| !t.0.is_empty())
    };
    let filled = kube::runtime::wait::await_condition(secrets.clone(), sa_name, has_token);
    match tokio::time::timeout(TOKEN_TIMEOUT, filled).await {
        Ok(Ok(Some(secret))) => Ok(secret
            .data
            .and_then(|mut d| d.remove("token"))
            .map(|t| String::from_utf8_lossy(&t.0).into_owned())),
        Ok(Ok(None)) => Ok(None),
        Ok(Err(e)) => Err(anyhow!(e).context("watching the ServiceAccount's token Secret")),
        Err(_) => Ok(None),
    }
}

/// One object created by join, so that a failure can delete it again.
enum Created {
    Namespace(Api<Namespace>, String),
    ServiceAccount(Api<ServiceAccount>, String),
    ClusterRole(Api<ClusterRole>, String),
    ClusterRoleBinding(Api<ClusterRoleBinding>, String),
    Secret(Api<Secret>, String),
}

impl Created {
    async fn delete(&self) -> Result<(), kube::Error> {
        let dp = DeleteParams::background();
        match self {
            Created::Namespace(api, n) => api.delete(n, &dp).await.map(|_| ()),
            Created::ServiceAccount(api, n) => api.delete(n, &dp).await.map(|_| ()),
            Created::ClusterRole(api, n) => api.delete(n, &dp).await.map(|_| ()),
            Created::ClusterRoleBinding(api, n) => api.delete(n, &dp).await.map(|_| ()),
            Created::Secret(api, n) => api.delete(n, &dp).await.map(|_| ()),
        }
    }

    fn describe(&self) -> String {
        match self {
            Created::Namespace(_, n) => format!("namespace {n}"),
            Created::ServiceAccount(_, n) => format!("serviceaccount {n}"),
            Created::ClusterRole(_, n) => format!("clusterrole {n}"),
            Created::ClusterRoleBinding(_, n) => format!("clusterrolebinding {n}"),
            Created::Secret(_, n) => format!("secret {n}"),
        }
    }
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        ..Default::default()
    }
}

/// Creates `object` unless it exists; records it for rollback only when this run created it.
async fn ensure<K>(
    api: &Api<K>,
    object: &K,
    created: &mut Vec<Created>,
    wrap: fn(Api<K>, String) -> Created,
) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = object.meta().name.clone().unwrap_or_default();
    match api.create(&PostParams::default(), object).await {
        Ok(_) => {
            created.push(wrap(api.clone(), name));
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The member kubeconfig at `path` (`--cluster-kubeconfig`).
pub fn read_member_kubeconfig(path: &Path) -> anyhow::Result<Kubeconfig> {
    Kubeconfig::read_from(path).with_context(|| {
        format!(
            "reading cluster kubeconfig {}: not a readable kubeconfig",
            path.display()
        )
    })
}

/// A client of the member a kubeconfig (read from `path`) names, with join's timeouts; exec plugins work.
pub async fn member_client(
    kubeconfig: Kubeconfig,
    path: &Path,
    context: Option<&str>,
) -> anyhow::Result<kube::Client> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .with_context(|| {
            format!(
                "cluster kubeconfig {}: cannot build a client",
                path.display()
            )
        })?;
    config.connect_timeout = Some(MEMBER_TIMEOUT);
    config.read_timeout = Some(MEMBER_TIMEOUT);
    crate::client::named_client(config).with_context(|| {
        format!(
            "cluster kubeconfig {}: cannot build a client",
            path.display()
        )
    })
}

pub async fn run(args: JoinArgs) -> anyhow::Result<()> {
    join_cluster(&args, &mut Progress::new(JOIN_STEPS)).await
}

/// Steps on `progress`: check both ends, create the member's access, register in karmada.
const JOIN_STEPS: u32 = 3;

/// Joins the member `args` names, reporting each step and object created on `progress`. The
/// library form of `karmadactl join` (`local-up` calls it with a hidden progress).
pub async fn join_cluster(args: &JoinArgs, progress: &mut Progress) -> anyhow::Result<()> {
    let name = args.name.as_str();
    let problems = cluster_name_problems(name);
    if !problems.is_empty() {
        bail!(
            "invalid cluster name {name:?}: {}; a cluster name is a lowercase RFC 1123 label (a-z, 0-9, '-', \
             starting and ending with an alphanumeric character) of at most {MAX_CLUSTER_NAME_LENGTH} characters",
            problems.join("; ")
        );
    }
    let path = &args.cluster_kubeconfig;
    progress.step(
        "checking the member cluster and karmada",
        &path.display().to_string(),
    );
    let kubeconfig = read_member_kubeconfig(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let (access, user) = member_endpoint(&kubeconfig, args.cluster_context.as_deref(), dir)
        .with_context(|| format!("cluster kubeconfig {}", path.display()))?;
    let member = member_client(kubeconfig, path, args.cluster_context.as_deref()).await?;
    let version = member.apiserver_version().await.with_context(|| {
        format!(
            "cluster kubeconfig {}: cannot reach the member cluster at {} (GET /version)",
            path.display(),
            access.server
        )
    })?;

    progress.note(&format!(
        "member reachable at {} (version {})",
        access.server, version.git_version
    ));

    let karmada_path = client::kubeconfig_path(args.kubeconfig.as_deref());
    let karmada = client::from_kubeconfig(&karmada_path, args.karmada_context.as_deref()).await?;
    let cluster_api = clusters(&karmada);
    if cluster_api
        .get_opt(name)
        .await
        .context("checking for an existing cluster")?
        .is_some()
    {
        bail!(
            "cluster {name:?} already exists; unjoin it first (karmadactl unjoin {name}) or choose another name"
        );
    }
    let kube_system = Api::<Namespace>::all(member.clone())
        .get("kube-system")
        .await
        .context("reading the member's kube-system namespace (its uid is the cluster id)")?;
    let id = kube_system.metadata.uid.unwrap_or_default();

    let namespace = args.cluster_namespace.as_str();
    let (sa_name, role_name) = member_object_names(name);
    let mut cluster = json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {
            "id": id,
            "syncMode": "Push",
            "apiEndpoint": access.server,
            "secretRef": {"namespace": namespace, "name": name},
        },
    });
    if access.insecure {
        cluster["spec"]["insecureSkipTLSVerification"] = json!(true);
    }
    if let Some(p) = &args.cluster_provider {
        cluster["spec"]["provider"] = json!(p);
    }
    if let Some(r) = &args.cluster_region {
        cluster["spec"]["region"] = json!(r);
    }
    let zones: Vec<&String> = args
        .cluster_zones
        .iter()
        .filter(|z| !z.is_empty())
        .collect();
    if !zones.is_empty() {
        cluster["spec"]["zones"] = json!(zones);
    }
    if args.dry_run {
        progress.finish();
        println!(
            "member cluster {name:?} reachable at {} (version {})",
            access.server, version.git_version
        );
        println!(
            "would create in the member: serviceaccount {namespace}/{sa_name} and its token secret, clusterrole and clusterrolebinding {role_name}"
        );
        println!("would create in karmada: secret {namespace}/{name}, cluster {name}");
        println!("cluster({name}) is joined successfully (dry run)");
        return Ok(());
    }

    let mut created = Vec::new();
    let result = create_all(
        &member,
        &karmada,
        &access,
        &user,
        namespace,
        name,
        &sa_name,
        &role_name,
        &cluster,
        &mut created,
        progress,
    )
    .await;
    if let Err(err) = result {
        progress.finish();
        for object in created.iter().rev() {
            if let Err(e) = object.delete().await {
                eprintln!("warning: rolling back {}: {e}", object.describe());
            }
        }
        return Err(err.context(format!(
            "joining cluster {name:?} failed; everything it created was removed"
        )));
    }
    progress.outcome(&format!("cluster({name}) is joined successfully"));
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn create_all(
    member: &kube::Client,
    karmada: &kube::Client,
    access: &MemberAccess,
    user: &str,
    namespace: &str,
    name: &str,
    sa_name: &str,
    role_name: &str,
    cluster: &serde_json::Value,
    created: &mut Vec<Created>,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    progress.step("creating the member's service account and role", namespace);
    ensure(
        &Api::all(member.clone()),
        &Namespace {
            metadata: meta(namespace, None),
            ..Default::default()
        },
        created,
        Created::Namespace,
    )
    .await
    .with_context(|| format!("creating namespace {namespace} in the member"))?;
    let sa = ServiceAccount {
        metadata: meta(sa_name, Some(namespace)),
        ..Default::default()
    };
    ensure(
        &Api::namespaced(member.clone(), namespace),
        &sa,
        created,
        Created::ServiceAccount,
    )
    .await
    .context("creating the ServiceAccount in the member")?;
    progress.note(&format!(
        "created serviceaccount {namespace}/{sa_name} in the member cluster"
    ));
    let role = ClusterRole {
        metadata: meta(role_name, None),
        rules: Some(vec![
            PolicyRule {
                api_groups: Some(vec!["*".into()]),
                resources: Some(vec!["*".into()]),
                verbs: vec!["*".into()],
                ..Default::default()
            },
            PolicyRule {
                non_resource_urls: Some(vec!["*".into()]),
                verbs: vec!["get".into()],
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    ensure(
        &Api::all(member.clone()),
        &role,
        created,
        Created::ClusterRole,
    )
    .await
    .context("creating the ClusterRole in the member")?;
    let binding = ClusterRoleBinding {
        metadata: meta(role_name, None),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role_name.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: sa_name.into(),
            namespace: Some(namespace.to_string()),
            ..Default::default()
        }]),
    };
    ensure(
        &Api::all(member.clone()),
        &binding,
        created,
        Created::ClusterRoleBinding,
    )
    .await
    .context("creating the ClusterRoleBinding in the member")?;
    progress.note(&format!(
        "created clusterrole and clusterrolebinding {role_name} in the member cluster"
    ));
    let token = service_account_token(member, namespace, sa_name, created).await?;
    let (data, how) = stored_credentials(access, user, namespace, sa_name, token)?;
    progress.note(&how);

    progress.step("registering the cluster in karmada", name);
    ensure(
        &Api::all(karmada.clone()),
        &Namespace {
            metadata: meta(namespace, None),
            ..Default::default()
        },
        created,
        Created::Namespace,
    )
    .await
    .with_context(|| format!("creating namespace {namespace} in karmada"))?;
    let secrets: Api<Secret> = Api::namespaced(karmada.clone(), namespace);
    let secret = Secret {
        metadata: meta(name, Some(namespace)),
        data: Some(data),
        ..Default::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .with_context(|| format!("creating secret {namespace}/{name} in karmada"))?;
    created.push(Created::Secret(secrets, name.to_string()));
    progress.note(&format!("created secret {namespace}/{name} in karmada"));
    let object: DynamicObject = serde_json::from_value(cluster.clone())?;
    clusters(karmada)
        .create(&PostParams::default(), &object)
        .await
        .with_context(|| format!("failed to create cluster({name}) object"))?;
    progress.note(&format!("created cluster {name} in karmada"));
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cluster_names_are_validated() {
        let long = "a".repeat(49);
        // (name, acceptable)
        let table = [
            ("member1", true),
            ("a", true),
            (&"b".repeat(48), true),
            ("Member1", false),
            ("-x", false),
            ("a.b", false),
            ("", false),
            (&long, false),
        ];
        for (name, ok) in table {
            assert_eq!(cluster_name_problems(name).is_empty(), ok, "{name}");
        }
    }

    #[test]
    fn member_access_reads_certificates_and_tokens() {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let kc: Kubeconfig = serde_json::from_value(json!({
            "clusters": [{"name": "c", "cluster": {"server": "https://m:6443", "certificate-authority-data": b64("CA")}}],
            "users": [
                {"name": "cert", "user": {"client-certificate-data": b64("CERT"), "client-key-data": b64("KEY")}},
                {"name": "tok", "user": {"token": "abc"}},
                {"name": "none", "user": {}}
            ],
            "contexts": [
                {"name": "a", "context": {"cluster": "c", "user": "cert"}},
                {"name": "b", "context": {"cluster": "c", "user": "tok"}},
                {"name": "n", "context": {"cluster": "c", "user": "none"}}
            ],
            "current-context": "a"
        }))
        .unwrap();
        let a = member_access(&kc, None, Path::new(".")).unwrap();
        assert_eq!(a.server, "https://m:6443");
        assert_eq!(a.ca_pem.as_deref(), Some(b"CA".as_slice()));
        let keys: Vec<String> = secret_data(&a).into_keys().collect();
        assert_eq!(keys, vec!["caBundle", "tls.crt", "tls.key"]);
        let b = member_access(&kc, Some("b"), Path::new(".")).unwrap();
        assert_eq!(b.token.as_deref(), Some("abc"));
        let err = member_access(&kc, Some("n"), Path::new(".")).unwrap_err();
        assert!(err.to_string().contains("neither a token"), "{err}");
        let err = member_access(&kc, Some("zz"), Path::new(".")).unwrap_err();
        assert!(err.to_string().contains("\"zz\" not found"), "{err}");
    }

    #[test]
    fn the_stored_credentials_are_the_issued_token_else_the_kubeconfigs_own() {
        let cert = MemberAccess {
            ca_pem: Some(b"CA".to_vec()),
            client_cert_pem: Some(b"CERT".to_vec()),
            client_key_pem: Some(b"KEY".to_vec()),
            ..Default::default()
        };
        let keys =
            |data: &BTreeMap<String, ByteString>| -> Vec<String> { data.keys().cloned().collect() };
        // Issued: Karmada's caBundle + token, whatever the kubeconfig carries.
        let (data, how) = stored_credentials(
            &cert,
            "admin",
            CLUSTER_NAMESPACE,
            "karmada-m1",
            Some("jwt".into()),
        )
        .unwrap();
        assert_eq!(keys(&data), ["caBundle", "token"]);
        assert_eq!(data["token"].0, b"jwt");
        assert!(
            how.contains("obtained a token of serviceaccount karmada-cluster/karmada-m1"),
            "{how}"
        );
        // Not issued: the kubeconfig's certificate.
        let (data, how) =
            stored_credentials(&cert, "admin", CLUSTER_NAMESPACE, "karmada-m1", None).unwrap();
        assert_eq!(keys(&data), ["caBundle", "tls.crt", "tls.key"]);
        assert!(
            how.contains("storing the kubeconfig's own credentials"),
            "{how}"
        );
        // Not issued, and an exec-plugin user: nothing to store, and the error says what to do.
        let exec = MemberAccess {
            ca_pem: Some(b"CA".to_vec()),
            ..Default::default()
        };
        let err = stored_credentials(&exec, "eks-user", CLUSTER_NAMESPACE, "karmada-m1", None)
            .unwrap_err();
        let message = err.to_string();
        assert!(message.contains("user \"eks-user\""), "{message}");
        assert!(message.contains("token controller"), "{message}");
    }
}
