//! FederatedResourceQuota end to end: static assignments become ResourceQuotas in the members (updated and
//! removed with the quota), `overallUsed` follows the scheduled workloads, and with an overall 4 CPU a workload
//! that would make it 5 is refused at the control plane with the resource and what remains, while one that
//! fits is admitted and propagated.

use serde_json::Value;

use crate::plane::{Plane, wait_for};

const QUOTA: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: FederatedResourceQuota
metadata:
  name: team
  namespace: default
spec:
  overall: {cpu: "4"}
  staticAssignments:
  - clusterName: member1
    hard: {cpu: "4"}
  - clusterName: member2
    hard: {cpu: "1"}
"#;

fn workload(name: &str, replicas: u32) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: default
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: main
        image: nginx:1.25
        resources:
          requests: {{cpu: "1", memory: 64Mi}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: {name}
  namespace: default
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: {name}
  placement:
    clusterAffinity:
      clusterNames: [member1]
"#
    )
}

fn member_quota_cpu(plane: &Plane, member: &str) -> Result<String, String> {
    let quota = plane.member_object(member, &["resourcequota", "team", "-n", "default"])?;
    Ok(quota["spec"]["hard"]["cpu"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

fn wait_member_replicas(plane: &Plane, name: &str, replicas: i64) {
    wait_for(
        &format!("{name} with {replicas} replicas in member1"),
        || {
            let object = plane.member_object("member1", &["deployment", name, "-n", "default"])?;
            match object["spec"]["replicas"].as_i64() {
                Some(n) if n == replicas => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    );
}

fn overall_used(plane: &Plane) -> Result<String, String> {
    let quota: Value = plane.object(&["federatedresourcequota", "team", "-n", "default"])?;
    Ok(quota["status"]["overallUsed"]["cpu"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

#[test]
fn a_quota_of_4_cpu_refuses_the_fifth_and_admits_what_fits() {
    let plane = Plane::start(&["member1", "member2"]);
    plane.apply("quota", QUOTA);
    for (member, cpu) in [("member1", "4"), ("member2", "1")] {
        wait_for(
            &format!("the ResourceQuota in {member}"),
            || match member_quota_cpu(&plane, member)? {
                got if got == cpu => Ok(()),
                got => Err(format!("cpu {got:?}\n{}", plane.logs())),
            },
        );
    }

    plane.apply("three", &workload("three", 3));
    wait_member_replicas(&plane, "three", 3);
    wait_for("overallUsed at 3 CPU", || match overall_used(&plane)? {
        used if used == "3" => Ok(()),
        used => Err(used),
    });

    // Two more CPUs would make 5 of 4: the scheduler's placement of the binding is refused.
    plane.apply("two", &workload("two", 2));
    let refused = wait_for("the binding of two to exist", || {
        plane.object(&["resourcebinding", "two-deployment", "-n", "default"])
    });
    assert!(
        refused["spec"]["clusters"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "never placed: {}",
        refused["spec"]
    );
    let denied = plane
        .kubectl(&[
            "patch",
            "resourcebinding",
            "two-deployment",
            "-n",
            "default",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"clusters":[{"name":"member1","replicas":2}]}}"#,
        ])
        .failure()
        .to_string();
    assert!(
        denied.contains("exceeded for resource cpu: requested sum 5, limit 4, remaining 1"),
        "{denied}"
    );

    // One more CPU fits.
    plane.apply("one", &workload("one", 1));
    wait_member_replicas(&plane, "one", 1);
    wait_for("overallUsed at 4 CPU", || match overall_used(&plane)? {
        used if used == "4" => Ok(()),
        used => Err(used),
    });
    let two = plane
        .object(&["resourcebinding", "two-deployment", "-n", "default"])
        .expect("binding");
    assert!(
        two["spec"]["clusters"].as_array().is_none_or(Vec::is_empty),
        "still refused: {}",
        two["spec"]
    );

    // Assignments follow the quota: changed, then gone with it.
    plane.apply(
        "quota",
        &QUOTA.replace("hard: {cpu: \"1\"}", "hard: {cpu: \"2\"}"),
    );
    wait_for("member2's quota raised", || {
        match member_quota_cpu(&plane, "member2")? {
            got if got == "2" => Ok(()),
            got => Err(format!(
                "{got}\n{}",
                plane
                    .kubectl(&[
                        "get",
                        "works",
                        "-A",
                        "-l",
                        "federatedresourcequota.karmada.io/name",
                        "-o",
                        "yaml"
                    ])
                    .stdout
            )),
        }
    });
    plane
        .kubectl(&["delete", "federatedresourcequota", "team", "-n", "default"])
        .success();
    for member in ["member1", "member2"] {
        wait_for(
            &format!("the ResourceQuota gone from {member}"),
            || match plane.member_object(member, &["resourcequota", "team", "-n", "default"]) {
                Err(e) if e.contains("NotFound") || e.contains("not found") => Ok(()),
                other => Err(format!("{other:?}")),
            },
        );
    }
}
