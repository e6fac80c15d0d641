//! `karmadactl deinit`: stops every component `init` (or `local-up`) started and removes the data directory.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;

use super::init::DEFAULT_DATA_DIR;
use crate::components;

#[derive(Args, Debug)]
pub struct DeinitArgs {
    #[arg(long = "karmada-data", short = 'd', default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// Required: the data directory (the whole store) is deleted.
    #[arg(long, short = 'f')]
    pub force: bool,
}

pub async fn run(args: DeinitArgs) -> anyhow::Result<()> {
    if !args.force {
        bail!(
            "deinit stops the control plane and deletes {} with every object in it; re-run with --force to proceed",
            args.data_dir.display()
        );
    }
    let data_dir = std::path::absolute(&args.data_dir)
        .with_context(|| format!("resolving {}", args.data_dir.display()))?;
    stop_all(&data_dir).await?;
    if data_dir.exists() {
        std::fs::remove_dir_all(&data_dir)
            .with_context(|| format!("removing {}", data_dir.display()))?;
        println!("removed {}", data_dir.display());
    } else {
        println!("{} does not exist; nothing to remove", data_dir.display());
    }
    Ok(())
}

/// Stops every component with a pid file in the data directory — Pull agents, members, controllers, the API
/// server last. Returns how many were running.
pub async fn stop_all(data_dir: &std::path::Path) -> anyhow::Result<usize> {
    let mut stopped = super::local_up_pull::stop_agents(data_dir).await?;
    for name in components::recorded(data_dir) {
        if let Some(pid) = components::stop(data_dir, &name).await? {
            println!("stopped {name} (pid {pid})");
            stopped += 1;
        }
    }
    Ok(stopped)
}
