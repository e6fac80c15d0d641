//! Building a client from a kubeconfig, with karmadactl's flags.

use std::path::{Path, PathBuf};

use anyhow::Context;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Where the control plane's kubeconfig lives: `--kubeconfig`, else `$KUBECONFIG`, else
/// `/etc/karmada/karmada-apiserver.config` (what `karmadactl init` writes by default).
pub fn kubeconfig_path(flag: Option<&Path>) -> PathBuf {
    if let Some(path) = flag {
        return path.to_path_buf();
    }
    if let Some(env) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        return PathBuf::from(env);
    }
    PathBuf::from(crate::cmd::init::DEFAULT_DATA_DIR).join(crate::cmd::init::KUBECONFIG_FILE)
}

pub async fn from_kubeconfig(path: &Path, context: Option<&str>) -> anyhow::Result<kube::Client> {
    let kubeconfig = Kubeconfig::read_from(path).with_context(|| {
        format!(
            "reading kubeconfig {} (pass --kubeconfig or run `karmadactl init`)",
            path.display()
        )
    })?;
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .with_context(|| format!("using kubeconfig {}", path.display()))?;
    named_client(config).context("building the API client")
}

/// A client for `config` naming karmadactl in its `User-Agent`, as Karmada's karmadactl does, so the objects it
/// writes (a joined Cluster, a registered agent's credentials) are recorded under the field manager `karmadactl`.
pub fn named_client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    let agent = karmada_controllers::runtime::client::user_agent("karmadactl");
    let config = karmada_controllers::runtime::client::with_user_agent(config, agent.as_ref());
    kube::Client::try_from(config)
}

/// GET a path and return the body as text.
pub async fn get_text(client: &kube::Client, path: &str) -> anyhow::Result<String> {
    let request = http::Request::get(path).body(Vec::new())?;
    Ok(client.request_text(request).await?)
}

/// The control plane a command talks to: `--kubeconfig` and `--karmada-context` (alias `--context`), one
/// definition for every command that reads or writes it.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ControlPlaneFlags {
    /// Kubeconfig of the Karmada control plane (default: $KUBECONFIG, then the file `karmadactl init` writes).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The context of that kubeconfig to use (default: its current context).
    #[arg(long = "karmada-context", alias = "context", global = true)]
    pub context: Option<String>,
}

impl ControlPlaneFlags {
    /// The kubeconfig file in force.
    pub fn path(&self) -> PathBuf {
        kubeconfig_path(self.kubeconfig.as_deref())
    }

    /// A client of the control plane from the kubeconfig at `path` (see [`Self::path`]).
    pub async fn client_at(&self, path: &Path) -> anyhow::Result<kube::Client> {
        from_kubeconfig(path, self.context.as_deref()).await
    }
}
