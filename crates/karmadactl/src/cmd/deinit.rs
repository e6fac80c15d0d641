//! `karmadactl deinit`: stops the control plane `init` started and removes its data directory.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::init::{DEFAULT_DATA_DIR, live_pid};

const STOP_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Args, Debug)]
pub struct DeinitArgs {
    #[arg(long = "karmada-data", default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// Required: the data directory (the whole store) is deleted.
    #[arg(long)]
    pub force: bool,
}

pub async fn run(args: DeinitArgs) -> anyhow::Result<()> {
    if !args.force {
        bail!(
            "deinit stops the control plane and deletes {} with every object in it; re-run with --force to proceed",
            args.data_dir.display()
        );
    }
    if let Some(pid) = live_pid(&args.data_dir) {
        println!("stopping karmada-apiserver (pid {pid})");
        let target = Pid::from_raw(pid);
        kill(target, Signal::SIGTERM).context("signalling the API server")?;
        let deadline = tokio::time::Instant::now() + STOP_TIMEOUT;
        while live_pid(&args.data_dir).is_some() {
            if tokio::time::Instant::now() >= deadline {
                println!(
                    "still running after {}s; killing it",
                    STOP_TIMEOUT.as_secs()
                );
                let _ = kill(target, Signal::SIGKILL);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    if args.data_dir.exists() {
        std::fs::remove_dir_all(&args.data_dir)
            .with_context(|| format!("removing {}", args.data_dir.display()))?;
        println!("removed {}", args.data_dir.display());
    } else {
        println!(
            "{} does not exist; nothing to remove",
            args.data_dir.display()
        );
    }
    Ok(())
}
