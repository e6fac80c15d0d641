//! The fault state on disk: `DIR/NAME.faults.json`, written by `karmada member-sim fault` and
//! polled by the running simulator.
//!
//! Writes are atomic (temp file + rename), so a poller never reads half a file. A missing file
//! is a healthy cluster; an unreadable one keeps the last good state and is logged.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::faults::{Fault, Faults};

/// How often the running simulator looks at the file.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);

#[derive(Debug, thiserror::Error)]
pub enum FaultsFileError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a fault state file: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where the faults of cluster `name` live.
pub fn path(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join(format!("{name}.faults.json"))
}

/// The faults in the file; none when it does not exist.
pub fn read(path: &Path) -> Result<Faults, FaultsFileError> {
    match std::fs::read(path) {
        Ok(bytes) => parse(path, &bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Faults::default()),
        Err(source) => Err(FaultsFileError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn parse(path: &Path, bytes: &[u8]) -> Result<Faults, FaultsFileError> {
    serde_json::from_slice(bytes).map_err(|source| FaultsFileError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

/// Replaces the file atomically.
pub fn write(path: &Path, faults: &Faults) -> Result<(), FaultsFileError> {
    let error = |source| FaultsFileError::Write {
        path: path.to_path_buf(),
        source,
    };
    let body = serde_json::to_vec_pretty(faults).map_err(|e| error(std::io::Error::other(e)))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, body).map_err(error)?;
    std::fs::rename(&tmp, path).map_err(error)
}

/// Adds `fault` to the state in the file (or clears it) and returns the new state.
pub fn apply(path: &Path, fault: Fault) -> Result<Faults, FaultsFileError> {
    let mut faults = read(path)?;
    faults.apply(fault);
    write(path, &faults)?;
    Ok(faults)
}

/// Publishes the file's state to `sender` whenever its modification time or size changes,
/// until `cancel`.
pub async fn poll(path: PathBuf, sender: watch::Sender<Faults>, cancel: CancellationToken) {
    let mut seen: Option<(SystemTime, u64)> = None;
    let mut ticks = tokio::time::interval(POLL_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let stamp = match tokio::fs::metadata(&path).await {
            Ok(meta) => meta.modified().ok().map(|m| (m, meta.len())),
            Err(_) => None,
        };
        if stamp == seen {
            continue;
        }
        seen = stamp;
        let faults = match stamp {
            None => Faults::default(),
            Some(_) => match tokio::fs::read(&path).await {
                Ok(bytes) => match parse(&path, &bytes) {
                    Ok(faults) => faults,
                    Err(e) => {
                        tracing::warn!(error = %e, "ignoring the fault file");
                        continue;
                    }
                },
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "reading the fault file");
                    continue;
                }
            },
        };
        sender.send_if_modified(|current| {
            let changed = *current != faults;
            if changed {
                tracing::info!(cluster_faults = %faults, "faults changed");
                *current = faults;
            }
            changed
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_accumulates_and_clear_removes_the_state() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = path(dir.path(), "member1");
        assert_eq!(read(&file).expect("missing file"), Faults::default());
        apply(&file, Fault::NotReady).expect("apply");
        let faults = apply(&file, Fault::Latency { millis: 200 }).expect("apply");
        assert!(faults.not_ready);
        assert_eq!(faults.latency_millis, 200);
        assert_eq!(read(&file).expect("read"), faults);
        assert!(apply(&file, Fault::Clear).expect("clear").is_clear());
        assert!(read(&file).expect("read").is_clear());
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = path(dir.path(), "m");
        std::fs::write(&file, "not json").expect("write");
        let error = read(&file).expect_err("corrupt");
        assert!(error.to_string().contains("m.faults.json"), "{error}");
    }

    #[tokio::test]
    async fn the_poller_publishes_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = path(dir.path(), "m");
        let (sender, mut receiver) = watch::channel(Faults::default());
        let cancel = CancellationToken::new();
        let poller = tokio::spawn(poll(file.clone(), sender, cancel.clone()));
        apply(&file, Fault::Unreachable).expect("apply");
        tokio::time::timeout(Duration::from_secs(5), receiver.wait_for(|f| f.unreachable))
            .await
            .expect("published in time")
            .expect("sender alive");
        std::fs::remove_file(&file).expect("remove");
        tokio::time::timeout(Duration::from_secs(5), receiver.wait_for(Faults::is_clear))
            .await
            .expect("published in time")
            .expect("sender alive");
        cancel.cancel();
        poller.await.expect("poller stops");
    }
}
