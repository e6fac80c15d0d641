//! The Python `kubernetes` package (installed by scripts/setup.sh) does CRUD and watches on a
//! Deployment and a PropagationPolicy over HTTPS with the admin client certificate.

use std::path::Path;
use std::process::Command;

use crate::harness::{Run, Server};

fn python_client_crud_and_watch(s: &Server) {
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

crate::harness::on_apiserver_and_member_sim!(python_client_crud_and_watch,);
