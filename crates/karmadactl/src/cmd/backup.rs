//! `karmadactl backup --karmada-data DIR -o FILE`: a consistent backup of the control plane's
//! store, taken while it serves.
//!
//! - Embedded store: the running API server writes a copy from one read transaction (asked over
//!   `DATA/backup.sock`); with no server running, karmadactl copies the file itself.
//! - etcd (a control plane `init` started with `--etcd-replicas`/`--etcd-servers`): etcd's
//!   snapshot API, a consistent copy of the whole database.
//!
//! Every object acknowledged before the backup began is in it. The file is a [`format`] header
//! (backend, revision, payload size, SHA-256) followed by the payload, written to a temporary
//! sibling and renamed into place, so `-o` never names a partial backup.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;

use super::init::DEFAULT_DATA_DIR;
use super::init_ha;

/// The embedded store's file and backup socket inside the data directory (the API server's
/// names).
pub const STORE_FILE: &str = "store.redb";
pub const BACKUP_SOCKET: &str = "backup.sock";

#[derive(Args, Debug)]
pub struct BackupArgs {
    /// The control plane's data directory.
    #[arg(long = "karmada-data", short = 'd', default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// The backup file to write.
    #[arg(long = "output", short = 'o')]
    pub output: PathBuf,
}

pub async fn run(args: BackupArgs) -> anyhow::Result<()> {
    let data_dir = std::path::absolute(&args.data_dir)
        .with_context(|| format!("resolving {}", args.data_dir.display()))?;
    let output = std::path::absolute(&args.output)
        .with_context(|| format!("resolving {}", args.output.display()))?;
    if !data_dir.is_dir() {
        bail!("--karmada-data {}: no such directory", data_dir.display());
    }
    let work = tempfile::Builder::new()
        .prefix(".karmada-backup-")
        .tempdir_in(output.parent().unwrap_or(Path::new(".")))
        .context("creating a temporary directory beside the output")?;
    let payload = work.path().join("payload");
    let header = match init_ha::Topology::load(&data_dir)? {
        Some(topology) => {
            let endpoints = topology.etcd_endpoints();
            let revision = etcd_snapshot(&endpoints, &topology.etcd_prefix, &payload).await?;
            format::Header {
                backend: format::Backend::Etcd,
                revision,
                etcd_prefix: topology.etcd_prefix.clone(),
                payload_bytes: 0,
                sha256: String::new(),
            }
        }
        None => {
            let revision = embedded_copy(&data_dir, &payload).await?;
            format::Header {
                backend: format::Backend::Embedded,
                revision,
                etcd_prefix: String::new(),
                payload_bytes: 0,
                sha256: String::new(),
            }
        }
    };
    let written = format::write(&output, header, &payload)?;
    println!(
        "backup of the {} store at revision {} written to {} ({} bytes)",
        written.backend.name(),
        written.revision,
        output.display(),
        written.payload_bytes
    );
    Ok(())
}

/// Copies the embedded store: through the running API server, else from the file.
async fn embedded_copy(data_dir: &Path, out: &Path) -> anyhow::Result<u64> {
    let socket = data_dir.join(BACKUP_SOCKET);
    match tokio::net::UnixStream::connect(&socket).await {
        Ok(stream) => ask_server(stream, out).await,
        Err(_) => {
            let source = data_dir.join(STORE_FILE);
            let out = out.to_path_buf();
            tokio::task::spawn_blocking(move || {
                store::redb_backend::backup::backup_file(&source, &out)
            })
            .await?
            .context("copying the embedded store (no API server answered on backup.sock)")
        }
    }
}

async fn ask_server(stream: tokio::net::UnixStream, out: &Path) -> anyhow::Result<u64> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (read, mut write) = stream.into_split();
    let request = format!("{}\n", out.display());
    write.write_all(request.as_bytes()).await?;
    let mut answer = String::new();
    BufReader::new(read)
        .read_line(&mut answer)
        .await
        .context("reading the API server's answer on backup.sock")?;
    let answer = answer.trim();
    if let Some(revision) = answer.strip_prefix("ok ") {
        return revision
            .parse()
            .with_context(|| format!("unexpected answer {answer:?}"));
    }
    match answer.strip_prefix("error ") {
        Some(message) => bail!("the API server could not back up its store: {message}"),
        None => bail!("the API server closed backup.sock without an answer ({answer:?})"),
    }
}

/// An etcd snapshot of the cluster behind `endpoints`; returns the store revision it covers
/// at least (read just before the snapshot began).
async fn etcd_snapshot(endpoints: &[String], prefix: &str, out: &Path) -> anyhow::Result<u64> {
    use store::Store;
    let store = store_etcd::EtcdStore::connect(store_etcd::EtcdOptions {
        endpoints: endpoints.to_vec(),
        prefix: prefix.to_string(),
        ..store_etcd::EtcdOptions::default()
    })
    .await
    .with_context(|| format!("connecting to etcd at {}", endpoints.join(",")))?;
    let revision = store.current_revision().await?;
    store
        .snapshot(out)
        .await
        .context("taking an etcd snapshot")?;
    Ok(revision)
}

/// The backup file: `MAGIC`, one JSON header line, then exactly `payload_bytes` of payload
/// whose SHA-256 is in the header. Reading verifies all of it before anything is used.
pub mod format {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::path::Path;

    use anyhow::{Context, bail};
    use serde::{Deserialize, Serialize};
    use sha2::{Digest, Sha256};

    pub const MAGIC: &[u8] = b"KARMADA-RS-BACKUP\n";
    pub const VERSION: u32 = 1;
    /// Longest header line accepted (a garbage file must not be read into memory).
    const MAX_HEADER: u64 = 64 * 1024;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Backend {
        Embedded,
        Etcd,
    }

    impl Backend {
        pub fn name(self) -> &'static str {
            match self {
                Backend::Embedded => "embedded",
                Backend::Etcd => "etcd",
            }
        }
    }

    #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Header {
        pub backend: Backend,
        /// The store revision every object acknowledged before the backup is at or below.
        pub revision: u64,
        /// etcd only: the key prefix the API servers used.
        #[serde(default)]
        pub etcd_prefix: String,
        pub payload_bytes: u64,
        /// Lowercase hex SHA-256 of the payload.
        pub sha256: String,
    }

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Envelope {
        format_version: u32,
        #[serde(flatten)]
        header: Header,
    }

    /// Writes `payload` (a file) with its header to `out`, atomically. Returns the header.
    pub fn write(out: &Path, mut header: Header, payload: &Path) -> anyhow::Result<Header> {
        let (bytes, sha256) = digest(payload)?;
        header.payload_bytes = bytes;
        header.sha256 = sha256;
        let mut line = serde_json::to_vec(&Envelope {
            format_version: VERSION,
            header: header.clone(),
        })?;
        line.push(b'\n');
        let partial = out.with_extension("partial");
        let result = (|| -> anyhow::Result<()> {
            let mut file = std::fs::File::create(&partial)
                .with_context(|| format!("creating {}", partial.display()))?;
            file.write_all(MAGIC)?;
            file.write_all(&line)?;
            let mut source = std::fs::File::open(payload)?;
            std::io::copy(&mut source, &mut file)?;
            file.sync_all()?;
            std::fs::rename(&partial, out)
                .with_context(|| format!("moving the backup to {}", out.display()))
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        result.map(|()| header)
    }

    /// Verifies `file` completely and extracts its payload to `payload_out`. Any mismatch
    /// (not a backup, unknown version, truncated, extended, corrupt) is an error naming it.
    pub fn read(file: &Path, payload_out: &Path) -> anyhow::Result<Header> {
        let what = file.display();
        let mut reader =
            BufReader::new(std::fs::File::open(file).with_context(|| format!("opening {what}"))?);
        let mut magic = vec![0u8; MAGIC.len()];
        if reader.read_exact(&mut magic).is_err() || magic != MAGIC {
            bail!("{what} is not a karmada-rs backup (it does not start with the backup header)");
        }
        let mut line = Vec::new();
        (&mut reader)
            .take(MAX_HEADER)
            .read_until(b'\n', &mut line)?;
        if line.last() != Some(&b'\n') {
            bail!("{what}: the backup header is truncated or too long");
        }
        let envelope: Envelope = serde_json::from_slice(&line)
            .with_context(|| format!("{what}: the backup header is malformed"))?;
        if envelope.format_version != VERSION {
            bail!(
                "{what}: backup format version {} is not supported (this karmadactl reads version {VERSION})",
                envelope.format_version
            );
        }
        let header = envelope.header;
        let mut out = std::fs::File::create(payload_out)
            .with_context(|| format!("creating {}", payload_out.display()))?;
        let mut hasher = Sha256::new();
        let mut remaining = header.payload_bytes;
        let mut buf = vec![0u8; 1 << 16];
        while remaining > 0 {
            let want = usize::try_from(remaining.min(buf.len() as u64)).unwrap_or(buf.len());
            let n = reader.read(&mut buf[..want])?;
            if n == 0 {
                bail!(
                    "{what} is truncated: {remaining} of {} payload bytes are missing",
                    header.payload_bytes
                );
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])?;
            remaining -= n as u64;
        }
        if reader.read(&mut buf[..1])? != 0 {
            bail!("{what} has data after the payload the header describes; it is not intact");
        }
        let actual = hex(&hasher.finalize());
        if actual != header.sha256 {
            bail!(
                "{what} is corrupt: its payload's SHA-256 is {actual}, the header says {}",
                header.sha256
            );
        }
        out.sync_all()?;
        Ok(header)
    }

    fn digest(path: &Path) -> anyhow::Result<(u64, String)> {
        let mut file =
            std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let mut hasher = Sha256::new();
        let bytes = std::io::copy(&mut file, &mut hasher)?;
        Ok((bytes, hex(&hasher.finalize())))
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[cfg(test)]
    #[allow(clippy::unwrap_used)]
    mod tests {
        use super::*;

        fn header() -> Header {
            Header {
                backend: Backend::Etcd,
                revision: 42,
                etcd_prefix: "/k/".into(),
                payload_bytes: 0,
                sha256: String::new(),
            }
        }

        fn backup(dir: &Path, payload: &[u8]) -> std::path::PathBuf {
            let source = dir.join("payload");
            std::fs::write(&source, payload).unwrap();
            let out = dir.join("b.backup");
            write(&out, header(), &source).unwrap();
            out
        }

        #[test]
        fn a_backup_round_trips() {
            let dir = tempfile::tempdir().unwrap();
            let out = backup(dir.path(), b"the payload");
            let extracted = dir.path().join("x");
            let read_back = read(&out, &extracted).unwrap();
            assert_eq!(read_back.revision, 42);
            assert_eq!(read_back.backend, Backend::Etcd);
            assert_eq!(read_back.etcd_prefix, "/k/");
            assert_eq!(read_back.payload_bytes, 11);
            assert_eq!(std::fs::read(&extracted).unwrap(), b"the payload");
            assert!(!dir.path().join("b.partial").exists());
        }

        #[test]
        fn damaged_files_are_refused_with_the_reason() {
            let dir = tempfile::tempdir().unwrap();
            let good = std::fs::read(backup(dir.path(), &[7u8; 1000])).unwrap();
            let header_end = good
                .iter()
                .skip(MAGIC.len())
                .position(|&b| b == b'\n')
                .unwrap()
                + MAGIC.len()
                + 1;
            let mut flipped = good.clone();
            let last = flipped.len() - 1;
            flipped[last] ^= 1;
            let mut versioned = String::from_utf8(good[..header_end].to_vec()).unwrap();
            versioned = versioned.replace("\"formatVersion\":1", "\"formatVersion\":9");
            let mut future = versioned.into_bytes();
            future.extend_from_slice(&good[header_end..]);
            let mut extended = good.clone();
            extended.push(0);
            let cases: Vec<(&str, Vec<u8>, &str)> = vec![
                (
                    "not a backup",
                    b"SQLite format 3\0".to_vec(),
                    "not a karmada-rs backup",
                ),
                ("empty", Vec::new(), "not a karmada-rs backup"),
                (
                    "header cut",
                    good[..MAGIC.len() + 5].to_vec(),
                    "header is truncated",
                ),
                ("payload cut", good[..good.len() - 10].to_vec(), "truncated"),
                ("bit flip", flipped, "corrupt"),
                ("trailing data", extended, "after the payload"),
                ("future version", future, "version 9 is not supported"),
            ];
            for (name, bytes, expected) in cases {
                let file = dir.path().join(format!("{name}.backup"));
                std::fs::write(&file, &bytes).unwrap();
                let error = read(&file, &dir.path().join("out")).unwrap_err();
                assert!(
                    format!("{error:#}").contains(expected),
                    "{name}: {error:#} should mention {expected:?}"
                );
            }
        }
    }
}
