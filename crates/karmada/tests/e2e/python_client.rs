//! The Python `kubernetes` package (installed by scripts/setup.sh) does CRUD and watches on a
//! Deployment and a PropagationPolicy over HTTPS with the admin client certificate.

use std::path::Path;
use std::process::Command;

use crate::harness::{Run, Server};

#[test]
fn python_client_crud_and_watch() {
    let s = Server::start();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/crud_watch.py");
    let out = Run::from(
        Command::new("python3")
            .arg(script)
            .arg(&s.kubeconfig)
            .output()
            .expect("python3"),
    );
    let stdout = out.success();
    assert!(
        stdout.contains("python client: all checks passed"),
        "{stdout}\n{}",
        out.stderr
    );
    assert!(!stdout.contains("FAIL"), "{stdout}");
}
