//! The embedded store's backup socket, `DATA/backup.sock`: only the API server process may open
//! the store file, so `karmadactl backup` asks it, over this Unix socket, to write a consistent
//! copy (one read transaction) while it keeps serving. Access is the file system's: whoever can
//! reach the socket in the data directory could read the store file itself.
//!
//! Protocol: the client sends one line, the absolute path to write the copy to; the server
//! answers one line, `ok REVISION` or `error MESSAGE`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use store::redb_backend::RedbStore;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

/// The socket's file name inside the data directory (karmadactl uses the same name).
pub const SOCKET_FILE: &str = "backup.sock";

/// Listens on `DATA/backup.sock` until `cancel`; returns the task serving it.
pub fn spawn(
    data_dir: &Path,
    store: Arc<RedbStore>,
    cancel: CancellationToken,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let path = data_dir.join(SOCKET_FILE);
    // A socket file left by a killed server would make bind fail.
    let _ = std::fs::remove_file(&path);
    let listener =
        UnixListener::bind(&path).with_context(|| format!("binding {}", path.display()))?;
    Ok(tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                () = cancel.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        tracing::warn!(%error, "backup socket accept failed");
                        continue;
                    }
                },
            };
            // One backup at a time is plenty, and keeps the task tree flat.
            tokio::select! {
                () = cancel.cancelled() => break,
                () = serve_one(stream, &store) => {}
            }
        }
        let _ = std::fs::remove_file(&path);
    }))
}

async fn serve_one(stream: UnixStream, store: &RedbStore) {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    // Bounds the request: a path, not a stream of garbage.
    let mut reader = BufReader::new(read.take(8192));
    let answer = match reader.read_line(&mut line).await {
        Ok(0) | Err(_) => return,
        Ok(_) => {
            let out = PathBuf::from(line.trim_end_matches(['\r', '\n']));
            if !out.is_absolute() {
                format!("error backup path {} is not absolute\n", out.display())
            } else {
                match store.backup_to(&out).await {
                    Ok(revision) => {
                        tracing::info!(path = %out.display(), revision, "store backed up");
                        format!("ok {revision}\n")
                    }
                    Err(error) => format!("error {}\n", error.to_string().replace('\n', " ")),
                }
            }
        }
    };
    let _ = write.write_all(answer.as_bytes()).await;
}
