//! `karmada all-in-one`: the API server, controllers and scheduler in one process give the same outcomes as the
//! three processes, serve both components' metrics on one endpoint, and sign Pull agents' certificates with the
//! API server's own CA when no other is named.

use crate::harness::{karmadactl, metrics_from_log};
use crate::plane::{Plane, wait_for};
use crate::propagation::seed_001_scenario;
use crate::pull::{AgentGuard, register_args};

#[test]
fn all_in_one_runs_seed_001_serves_one_metrics_endpoint_and_registers_a_pull_member() {
    let mut plane = Plane::start_all_in_one(&["cluster-aws", "cluster-gcp"]);
    seed_001_scenario(&plane);

    let metrics = wait_for("the components' metrics", || {
        let body = metrics_from_log(&plane.karmada.log())?;
        let scheduled = body.lines().any(|line| {
            line.starts_with("karmada_scheduler_schedule_attempts_total{")
                && line.contains("result=\"scheduled\"")
                && !line.ends_with(" 0")
        });
        if scheduled { Ok(body) } else { Err(body) }
    });
    assert!(
        metrics.contains("karmada_binding_replicas"),
        "the controllers' metrics are served beside the scheduler's:\n{metrics}"
    );

    // A Pull member registers with a bootstrap token: its agent's certificate is signed with DATA/pki/ca.crt
    // although no --cluster-signing-* flag was given, and the agent applies what is propagated to it.
    let kubeconfig = plane.karmada.kubeconfig.to_str().expect("utf8").to_string();
    let printed = karmadactl(&[
        "token",
        "create",
        "--print-register-command",
        "--kubeconfig",
        &kubeconfig,
    ]);
    let mut register = register_args(printed.success());
    let agents = AgentGuard {
        data: plane.karmada.dir.path().join("register-data"),
    };
    plane.add_member("pull1");
    register.extend(
        [
            "--cluster-name",
            "pull1",
            "--cluster-kubeconfig",
            plane.member_kubeconfig("pull1").to_str().expect("utf8"),
            "--karmada-data",
            agents.data.to_str().expect("utf8"),
            "--cluster-status-update-frequency",
            "1s",
        ]
        .map(str::to_string),
    );
    let register: Vec<&str> = register.iter().map(String::as_str).collect();
    karmadactl(&register).success();
    plane.wait_ready("pull1");
    let csrs = plane.kubectl(&["get", "csr"]);
    assert!(
        csrs.success().contains("Approved,Issued"),
        "{}",
        csrs.stdout
    );

    plane
        .karmada
        .kubectl_stdin(
            &["apply", "-f", "-"],
            r#"{"apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "pulled", "namespace": "default"}, "data": {"mode": "pull"}},
                {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                 "metadata": {"name": "pulled", "namespace": "default"},
                 "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "pulled"}],
                          "placement": {"clusterAffinity": {"clusterNames": ["pull1"]}}}}]}"#,
        )
        .success();
    wait_for("the ConfigMap pulled into pull1", || {
        let object = plane.member_object("pull1", &["configmap", "pulled", "-n", "default"])?;
        if object["data"]["mode"] == "pull" {
            Ok(())
        } else {
            Err(object.to_string())
        }
    });
}
