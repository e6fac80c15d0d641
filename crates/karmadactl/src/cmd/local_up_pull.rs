//! The Pull-mode member of `local-up`: registered as a user would — `karmadactl token create
//! --print-register-command`, then that `karmadactl register` command with the member's kubeconfig — so
//! local-up exercises the same path. Its agent lives in `DIR/agents/NAME/`; a second local-up restarts a
//! stopped agent from the kubeconfig register left there.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

use super::init::{ControlPlane, KARMADA_CONTEXT};
use super::register::agent_process::{self, AgentLaunch};

/// The `karmadactl register ...` arguments (after `karmadactl`) in `token create --print-register-command`'s
/// output.
pub fn register_arguments(output: &str) -> Option<Vec<String>> {
    let line = output
        .lines()
        .find(|l| l.trim_start().starts_with("karmadactl register "))?;
    Some(
        line.split_whitespace()
            .skip(1)
            .map(str::to_string)
            .collect(),
    )
}

fn karmadactl() -> anyhow::Result<Command> {
    let exe = std::env::current_exe().context("locating karmadactl itself")?;
    Ok(Command::new(exe))
}

/// Registers `name` in Pull mode unless its Cluster exists; restarts its agent when it is registered but its
/// agent is not running. Returns what was done.
pub async fn register_member(
    plane: &ControlPlane,
    karmada: &kube::Client,
    name: &str,
    member_kubeconfig: &Path,
) -> anyhow::Result<String> {
    let dir = agent_process::agent_dir(&plane.data_dir, name);
    if let Some(existing) = super::join::clusters(karmada).get_opt(name).await? {
        let mode = existing.data["spec"]["syncMode"]
            .as_str()
            .unwrap_or("Push")
            .to_string();
        if mode != "Pull" {
            return Ok(format!("is already joined ({mode} mode)"));
        }
        if let Some(pid) = agent_process::live_pid(&dir) {
            return Ok(format!(
                "is already registered (Pull mode, agent pid {pid})"
            ));
        }
        if !dir.join(agent_process::KUBECONFIG_FILE).is_file() {
            bail!(
                "cluster {name} is registered in Pull mode but its agent's kubeconfig is missing from {}; \
                 run `karmadactl unregister {name} --karmada-data {} --kubeconfig {}` and local-up again",
                dir.display(),
                plane.data_dir.display(),
                plane.kubeconfig().display()
            );
        }
        let (pid, _child) = agent_process::start(&AgentLaunch {
            binary: &plane.binary,
            dir: &dir,
            cluster: name,
            cluster_kubeconfig: member_kubeconfig,
            cluster_context: Some(name),
            extra_args: Vec::new(),
        })?;
        return Ok(format!(
            "is already registered; its agent was restarted (Pull mode, agent pid {pid})"
        ));
    }

    let kubeconfig = plane.kubeconfig();
    let token = blocking_output(
        karmadactl()?
            .args(["token", "create", "--print-register-command", "--ttl", "1h"])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--karmada-context", KARMADA_CONTEXT]),
    )
    .await
    .context("creating a bootstrap token")?;
    let Some(register) = register_arguments(&token) else {
        bail!(
            "`karmadactl token create --print-register-command` printed no register command: {token}"
        );
    };
    let mut command = karmadactl()?;
    command
        .args(&register)
        .args(["--cluster-name", name, "--cluster-context", name])
        .arg("--cluster-kubeconfig")
        .arg(member_kubeconfig)
        .arg("--karmada-data")
        .arg(&plane.data_dir)
        .arg("--karmada-binary")
        .arg(&plane.binary);
    blocking_output(&mut command).await?;
    Ok(format!(
        "registered (Pull mode, agent in {})",
        dir.display()
    ))
}

/// Runs a command off the async threads; fails with its stderr.
async fn blocking_output(command: &mut Command) -> anyhow::Result<String> {
    command.stdin(std::process::Stdio::null());
    let mut command = std::mem::replace(command, Command::new("true"));
    let output = tokio::task::spawn_blocking(move || command.output())
        .await?
        .context("running karmadactl")?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        bail!(
            "{}{}",
            String::from_utf8_lossy(&output.stderr).trim(),
            if stdout.is_empty() {
                String::new()
            } else {
                format!("\n{stdout}")
            }
        );
    }
    Ok(stdout)
}

/// Stops every agent under `DATA/agents/`. Returns how many were running.
pub async fn stop_agents(data_dir: &Path) -> anyhow::Result<usize> {
    let mut stopped = 0;
    let agents = data_dir.join("agents");
    for entry in std::fs::read_dir(&agents).into_iter().flatten().flatten() {
        let dir = entry.path();
        let pid = agent_process::live_pid(&dir);
        if agent_process::stop(&dir).await? {
            let name = entry.file_name().to_string_lossy().into_owned();
            match pid {
                Some(pid) => println!("stopped karmada-agent of {name} (pid {pid})"),
                None => println!("stopped karmada-agent of {name}"),
            }
            stopped += 1;
        }
    }
    Ok(stopped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_register_command_is_read_from_token_output() {
        let out = "karmadactl register 127.0.0.1:32443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:00ff\n";
        assert_eq!(
            register_arguments(out),
            Some(
                [
                    "register",
                    "127.0.0.1:32443",
                    "--token",
                    "abcdef.0123456789abcdef",
                    "--discovery-token-ca-cert-hash",
                    "sha256:00ff"
                ]
                .iter()
                .map(|s| s.to_string())
                .collect()
            )
        );
        assert_eq!(register_arguments("abcdef.0123456789abcdef\n"), None);
    }
}
