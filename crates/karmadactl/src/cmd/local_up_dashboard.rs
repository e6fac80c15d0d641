//! The dashboard of `local-up`: `karmada dashboard` against the local control plane on a free port (or the
//! one asked for), recorded like the other components so `local-down` stops it. Users log in with a token or
//! by pasting the kubeconfig local-up wrote (its admin client certificate is inline).

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use anyhow::bail;

use super::init::ControlPlane;
use crate::components::{self, Launch};

pub const COMPONENT: &str = "karmada-dashboard";
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts the dashboard unless it runs already; returns its URL.
pub async fn start(plane: &ControlPlane, kubeconfig: &Path, port: u16) -> anyhow::Result<String> {
    let address_file = plane.data_dir.join(format!("{COMPONENT}.url"));
    if components::live_pid(&plane.data_dir, COMPONENT).is_some()
        && let Ok(url) = std::fs::read_to_string(&address_file)
    {
        return Ok(url);
    }
    let _ = std::fs::remove_file(&address_file);
    let args: Vec<OsString> = vec![
        "dashboard".into(),
        "--kubeconfig".into(),
        kubeconfig.as_os_str().to_os_string(),
        "--bind".into(),
        format!("127.0.0.1:{port}").into(),
        "--address-file".into(),
        address_file.as_os_str().to_os_string(),
    ];
    let mut child = components::launch(Launch {
        name: COMPONENT,
        binary: &plane.binary,
        args,
        data_dir: &plane.data_dir,
        exit_with_stdin: plane.exit_with_stdin,
    })?;
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    loop {
        components::check_running(&mut child, &plane.data_dir, COMPONENT)?;
        if let Ok(url) = std::fs::read_to_string(&address_file)
            && url.starts_with("https://")
        {
            return Ok(url);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "the dashboard did not start within {}s; see {}",
                START_TIMEOUT.as_secs(),
                components::log_file(&plane.data_dir, COMPONENT).display()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
