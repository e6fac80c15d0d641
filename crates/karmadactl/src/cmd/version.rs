//! `karmadactl version`: the client's version, and the server's when a kubeconfig reaches one.

use clap::Args;

use crate::client::ControlPlaneFlags;

#[derive(Args, Debug)]
pub struct VersionArgs {
    /// Print only the client version.
    #[arg(long)]
    pub client: bool,
    #[command(flatten)]
    pub control_plane: ControlPlaneFlags,
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
    let path = args.control_plane.path();
    if !path.exists() {
        return Ok(());
    }
    let client = args.control_plane.client_at(&path).await?;
    let info = client.apiserver_version().await?;
    println!(
        "Server Version: version.Info{{Major:\"{}\", Minor:\"{}\", GitVersion:\"{}\", Platform:\"{}\"}}",
        info.major, info.minor, info.git_version, info.platform
    );
    Ok(())
}
