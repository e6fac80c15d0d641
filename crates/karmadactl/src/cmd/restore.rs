//! `karmadactl restore -f FILE --karmada-data DIR`: restores a `karmadactl backup` into a data
//! directory with no store yet; then `karmadactl init --karmada-data DIR` serves it.
//!
//! The file is verified completely (header, size, SHA-256) before anything is written, and the
//! restored store is assembled in a temporary directory inside DIR and renamed into place only
//! when complete, so a bad file or a failure midway leaves DIR as it was.
//!
//! Revisions jump by [`store_etcd::restore::RESTORE_BUMP`] and everything before is compacted:
//! a client holding a resourceVersion from before the restore gets 410 on its next watch or
//! paged list and relists, and new resourceVersions are above every old one.
//!
//! - Embedded: the payload is a store file; its revision counters are moved before the rename.
//! - etcd: the snapshot is restored (`etcdctl snapshot restore`) into a throwaway member that
//!   records the revision offset and compacts, is snapshotted again, and that snapshot is
//!   restored into `--etcd-replicas` members (default: as many as the backed-up plane had, else
//!   one) in `DIR/etcd/<i>`, with the ports recorded in `DIR/control-plane.json`.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use store_etcd::launch::MemberCommand;
use store_etcd::restore::RESTORE_BUMP;

use super::backup::{STORE_FILE, format};
use super::init::DEFAULT_DATA_DIR;
use super::init_ha::{self, Topology};
use crate::components;

#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// The backup file written by `karmadactl backup`.
    #[arg(long = "filename", short = 'f')]
    pub file: PathBuf,
    /// The data directory to restore into; it must not hold a store yet.
    #[arg(long = "karmada-data", short = 'd', default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// etcd backups: how many local etcd members to restore.
    #[arg(long, default_value_t = 1)]
    pub etcd_replicas: usize,
}

pub async fn run(args: RestoreArgs) -> anyhow::Result<()> {
    let data_dir = std::path::absolute(&args.data_dir)
        .with_context(|| format!("resolving {}", args.data_dir.display()))?;
    refuse_live_plane(&data_dir)?;
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let work = tempfile::Builder::new()
        .prefix(".restore-")
        .tempdir_in(&data_dir)
        .context("creating a temporary directory in the data directory")?;
    let payload = work.path().join("payload");
    let file = args.file.clone();
    let payload_path = payload.clone();
    let header = tokio::task::spawn_blocking(move || format::read(&file, &payload_path)).await??;
    let revision = match header.backend {
        format::Backend::Embedded => restore_embedded(&data_dir, work.path(), &payload).await?,
        format::Backend::Etcd => {
            restore_etcd(
                &data_dir,
                work.path(),
                &payload,
                &header,
                args.etcd_replicas,
            )
            .await?
        }
    };
    println!(
        "restored the {} store (backed up at revision {}) into {}; new revisions start above {revision}",
        header.backend.name(),
        header.revision,
        data_dir.display()
    );
    println!(
        "start it with: karmadactl init --karmada-data {}",
        data_dir.display()
    );
    Ok(())
}

/// A restore must never write under a running control plane or over a store.
fn refuse_live_plane(data_dir: &Path) -> anyhow::Result<()> {
    if let Some(name) = components::recorded(data_dir)
        .into_iter()
        .find(|name| components::live_pid(data_dir, name).is_some())
    {
        bail!(
            "{name} is running from {}; restore into a fresh --karmada-data, or stop the control plane first (karmadactl deinit)",
            data_dir.display()
        );
    }
    for existing in [STORE_FILE, "etcd", init_ha::TOPOLOGY_FILE] {
        if data_dir.join(existing).exists() {
            bail!(
                "{} already holds a store ({existing}); restore into a fresh --karmada-data",
                data_dir.display()
            );
        }
    }
    Ok(())
}

async fn restore_embedded(data_dir: &Path, work: &Path, payload: &Path) -> anyhow::Result<u64> {
    let prepared = work.join(STORE_FILE);
    std::fs::rename(payload, &prepared)?;
    let path = prepared.clone();
    let revision = tokio::task::spawn_blocking(move || {
        store::redb_backend::backup::prepare_restored(&path, RESTORE_BUMP)
    })
    .await?
    .context("preparing the restored store")?;
    std::fs::rename(&prepared, data_dir.join(STORE_FILE))
        .with_context(|| format!("moving the restored store into {}", data_dir.display()))?;
    Ok(revision)
}

async fn restore_etcd(
    data_dir: &Path,
    work: &Path,
    snapshot: &Path,
    header: &format::Header,
    replicas: usize,
) -> anyhow::Result<u64> {
    let etcd = init_ha::etcd_binary()?;
    let etcdctl = etcdctl_binary()?;
    // A throwaway single member moves the revisions and compacts, then is snapshotted again.
    let prep = init_ha::plan_members(1)?.remove(0);
    let prep_dir = work.join("prep");
    let prep_launch = prep.launch(&prep_dir).cluster_token("prep");
    snapshot_restore(&etcdctl, snapshot, &prep_launch)?;
    let bumped = work.join("bumped.db");
    let revision = {
        let mut member = PrepMember::start(&etcd, &prep_launch, work)?;
        let result = bump_and_snapshot(&prep, &header.etcd_prefix, &bumped, &mut member).await;
        member.stop();
        result?
    };

    let members = init_ha::plan_members(replicas.max(1))?;
    let topology = Topology {
        etcd_prefix: header.etcd_prefix.clone(),
        cluster_token: format!("karmada-{}", members[0].peer_port),
        members,
        ..Topology::default()
    };
    let staged = work.join("members");
    for (index, member) in topology.members.iter().enumerate() {
        let launch = member
            .launch(staged.join(index.to_string()))
            .initial_cluster(topology.initial_cluster())
            .cluster_token(&topology.cluster_token);
        snapshot_restore(&etcdctl, &bumped, &launch)?;
    }
    // Everything is in place in the temporary directory: move it in.
    std::fs::rename(&staged, data_dir.join("etcd"))
        .with_context(|| format!("moving the restored members into {}", data_dir.display()))?;
    topology.save(data_dir)?;
    Ok(revision)
}

fn etcdctl_binary() -> anyhow::Result<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("etcdctl"))
        .find(|candidate| candidate.is_file())
        .context("etcdctl is not installed: install it with `apt-get install etcd-client` to restore etcd backups")
}

fn snapshot_restore(etcdctl: &Path, snapshot: &Path, member: &MemberCommand) -> anyhow::Result<()> {
    let output = member
        .snapshot_restore_command(etcdctl, snapshot)
        .output()
        .with_context(|| format!("running {}", etcdctl.display()))?;
    if !output.status.success() {
        bail!(
            "etcdctl snapshot restore failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// The throwaway etcd of a restore; killed on drop.
struct PrepMember {
    child: Option<Child>,
    log: PathBuf,
}

impl PrepMember {
    fn start(etcd: &Path, member: &MemberCommand, work: &Path) -> anyhow::Result<PrepMember> {
        let log = work.join("prep-etcd.log");
        let file = std::fs::File::create(&log)?;
        let child = member
            .command(etcd)
            .stdout(file.try_clone()?)
            .stderr(file)
            .spawn()
            .with_context(|| format!("running {}", etcd.display()))?;
        Ok(PrepMember {
            child: Some(child),
            log,
        })
    }

    fn exited(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => Some(format!(
                "etcd exited ({status}): {}",
                components::log_tail(&self.log, 10)
            )),
            _ => None,
        }
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrepMember {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn bump_and_snapshot(
    member: &init_ha::EtcdMember,
    prefix: &str,
    out: &Path,
    process: &mut PrepMember,
) -> anyhow::Result<u64> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut store = loop {
        if let Some(exit) = process.exited() {
            bail!("the restore's temporary etcd failed: {exit}");
        }
        let options = store_etcd::EtcdOptions {
            endpoints: vec![member.client_url()],
            prefix: prefix.to_string(),
            dial_timeout: Duration::from_secs(1),
            ..store_etcd::EtcdOptions::default()
        };
        match store_etcd::EtcdStore::connect(options).await {
            Ok(store) => break store,
            Err(error) if tokio::time::Instant::now() > deadline => {
                return Err(error).context("the restore's temporary etcd did not answer");
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let revision = store
        .bump_revisions(RESTORE_BUMP)
        .await
        .context("moving the restored revisions")?;
    store
        .snapshot(out)
        .await
        .context("snapshotting the prepared etcd")?;
    Ok(revision)
}
