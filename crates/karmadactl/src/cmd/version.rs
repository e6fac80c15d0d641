//! `karmadactl version`: the client's version, and the server's when a kubeconfig reaches one.

use std::path::PathBuf;

use clap::Args;

use crate::client;

#[derive(Args, Debug)]
pub struct VersionArgs {
    /// Print only the client version.
    #[arg(long)]
    pub client: bool,
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    #[arg(long = "karmada-context", alias = "context")]
    pub context: Option<String>,
}

pub fn client_version_line() -> String {
    format!(
        "karmadactl version: version.Info{{GitVersion:\"v{}\", Compiler:\"rustc\", Platform:\"{}/{}\"}}",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH,
    )
}

pub async fn run(args: VersionArgs) -> anyhow::Result<()> {
    println!("{}", client_version_line());
    if args.client {
        return Ok(());
    }
    let path = client::kubeconfig_path(args.kubeconfig.as_deref());
    if !path.exists() {
        return Ok(());
    }
    let client = client::from_kubeconfig(&path, args.context.as_deref()).await?;
    let info = client.apiserver_version().await?;
    println!(
        "Server Version: version.Info{{Major:\"{}\", Minor:\"{}\", GitVersion:\"{}\", Platform:\"{}\"}}",
        info.major, info.minor, info.git_version, info.platform
    );
    Ok(())
}
