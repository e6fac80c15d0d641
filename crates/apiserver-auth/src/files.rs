//! Credential files on disk (keys, certificates, kubeconfigs holding keys): written whole or not at all, and
//! readable only by their owner when they hold a secret.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Permissions of a file holding a secret.
pub const OWNER_ONLY: u32 = 0o600;

/// Writes `contents` to `path` atomically with `mode`: into a temporary file beside it, flushed to disk, then
/// renamed over `path`, so a reader (or a crash) sees the old file or the new one, never a part.
pub fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> std::io::Result<()> {
    // Beside the target (same filesystem, so the rename is atomic), unique to this process.
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    let written = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Writes a file holding a secret: atomically, owner-only.
pub fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    write_atomic(path, contents, OWNER_ONLY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaces_whole_files_owner_only_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("karmada.config");
        fs::write(&path, "old").expect("old file");
        write_private(&path, b"new contents").expect("written");
        assert_eq!(fs::read_to_string(&path).expect("read"), "new contents");
        let mode = fs::metadata(&path).expect("metadata").permissions().mode() & 0o777;
        assert_eq!(mode, OWNER_ONLY);
        let names: Vec<String> = fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["karmada.config".to_string()]);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("no-such-dir").join("key.pem");
        assert!(write_private(&missing, b"secret").is_err());
        let target = dir.path().join("key.pem");
        fs::write(&target, "old").expect("old");
        // A directory in the temporary file's place makes the write fail before the rename.
        let mut tmp = target.as_os_str().to_owned();
        tmp.push(format!(".{}.tmp", std::process::id()));
        fs::create_dir(PathBuf::from(&tmp)).expect("blocking dir");
        assert!(write_private(&target, b"new").is_err());
        assert_eq!(fs::read_to_string(&target).expect("read"), "old");
    }
}
