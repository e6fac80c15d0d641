//! `karmadactl init` / `deinit` / `version` / `api-resources` as a user runs them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::Run;
use test_fixtures::free_port;

fn karmadactl() -> Command {
    // karmadactl lives beside the karmada binary in the target directory; `cargo build --bins`
    // (scripts/test.sh) builds both.
    let dir = Path::new(env!("CARGO_BIN_EXE_karmada"))
        .parent()
        .expect("target dir")
        .to_path_buf();
    let bin = dir.join("karmadactl");
    assert!(bin.is_file(), "build karmadactl first: cargo build --bins");
    Command::new(bin)
}

struct Deinit(PathBuf);

impl Drop for Deinit {
    fn drop(&mut self) {
        let _ = karmadactl()
            .args(["deinit", "--force", "--karmada-data"])
            .arg(&self.0)
            .output();
    }
}

#[test]
fn init_is_idempotent_and_deinit_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("karmada");
    let _cleanup = Deinit(data.clone());
    let port = free_port().to_string();
    let run = |args: &[&str]| Run::from(karmadactl().args(args).output().unwrap());

    let out = run(&[
        "init",
        "--karmada-data",
        data.to_str().unwrap(),
        "--port",
        &port,
    ]);
    let stdout = out.success();
    assert!(stdout.contains("[4/4] control plane ready"), "{stdout}");
    let kubeconfig = data.join("karmada-apiserver.config");
    assert!(kubeconfig.is_file());

    // The kubeconfig has the context the seeds use and works with kubectl.
    let kc = kubeconfig.to_str().unwrap();
    let ns = Run::from(
        Command::new("kubectl")
            .args([
                "--kubeconfig",
                kc,
                "--context",
                "karmada-apiserver",
                "get",
                "ns",
                "default",
            ])
            .output()
            .unwrap(),
    );
    assert!(ns.success().contains("Active"));

    let again = run(&[
        "init",
        "--karmada-data",
        data.to_str().unwrap(),
        "--port",
        &port,
    ]);
    assert!(
        again.success().contains("already running"),
        "{}",
        again.stdout
    );

    let version = run(&["version", "--kubeconfig", kc]);
    let v = version.success();
    assert!(
        v.contains("karmadactl version:") && v.contains("Major:\"1\", Minor:\"32\""),
        "{v}"
    );

    let resources = run(&["api-resources", "--kubeconfig", kc]);
    let table = resources.success();
    assert!(table.lines().next().unwrap().starts_with("NAME"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == [
                    "propagationpolicies",
                    "pp",
                    "policy.karmada.io/v1alpha1",
                    "true",
                    "PropagationPolicy"
                ]),
        "{table}"
    );

    let refused = run(&["deinit", "--karmada-data", data.to_str().unwrap()]);
    assert!(refused.failure().contains("--force"), "{}", refused.stderr);
    assert!(data.exists(), "nothing removed without --force");
    let gone = run(&[
        "deinit",
        "--karmada-data",
        data.to_str().unwrap(),
        "--force",
    ]);
    assert!(gone.success().contains("removed"), "{}", gone.stdout);
    assert!(!data.exists());
}

#[test]
fn clear_errors_for_bad_cli_input() {
    let run = |args: &[&str]| Run::from(karmadactl().args(args).output().unwrap());
    let err = run(&["api-resources", "--kubeconfig", "/nonexistent/kubeconfig"])
        .failure()
        .to_string();
    assert!(
        err.contains("/nonexistent/kubeconfig") && err.contains("karmadactl init"),
        "{err}"
    );
    let err = run(&[
        "api-resources",
        "--kubeconfig",
        "/nonexistent",
        "-o",
        "yaml",
    ])
    .failure()
    .to_string();
    assert!(err.contains("possible values: wide, name"), "{err}");
}
