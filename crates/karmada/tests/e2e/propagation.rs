//! Propagation end to end, as the seeds do it: plain YAML and Karmada policies applied with kubectl to the control
//! plane, workloads arriving in member-sims with their share of replicas and their overrides, status flowing back
//! onto the template; scaling, conflicts, deletion, an unreachable member and a control-plane restart.

use serde_json::Value;

use crate::harness::field_managers;
use crate::plane::{Plane, wait_for};

fn apply_fixture(plane: &Plane, relative: &str) {
    plane
        .kubectl(&["apply", "-f", &test_fixtures::path_str(relative)])
        .success();
}

/// (replicas, first container image) of a Deployment in a member.
fn member_deployment(
    plane: &Plane,
    member: &str,
    ns: &str,
    name: &str,
) -> Result<(i64, String), String> {
    let object = plane.member_object(member, &["deployment", name, "-n", ns])?;
    Ok((
        object["spec"]["replicas"].as_i64().unwrap_or(-1),
        object["spec"]["template"]["spec"]["containers"][0]["image"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    ))
}

fn wait_replicas(plane: &Plane, expected: &[(&str, i64)], ns: &str, name: &str) {
    for (member, replicas) in expected {
        wait_for(
            &format!("{ns}/{name} with {replicas} replicas in {member}"),
            || {
                let (got, _) = member_deployment(plane, member, ns, name)?;
                if got == *replicas {
                    Ok(())
                } else {
                    Err(format!("{got} replicas\n{}", plane.logs()))
                }
            },
        );
    }
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

#[test]
fn seed_001_weights_override_status_scale_and_delete() {
    seed_001_scenario(&Plane::start(&["cluster-aws", "cluster-gcp"]));
}

/// Seed 001 on `plane` (members cluster-aws and cluster-gcp): 4/2 with the image override on cluster-gcp only,
/// 6 ready on the template, scaling and re-weighting followed, deletion reaching every member.
pub fn seed_001_scenario(plane: &Plane) {
    plane
        .kubectl(&["create", "namespace", "production"])
        .success();
    apply_fixture(plane, "seed-001/propagation-policy.yaml");
    apply_fixture(plane, "seed-001/override-policy.yaml");
    apply_fixture(plane, "seed-001/nginx-deploy.yaml");

    // 6 replicas at 2:1; the registry override on cluster-gcp only.
    wait_replicas(
        plane,
        &[("cluster-aws", 4), ("cluster-gcp", 2)],
        "production",
        "nginx-ha",
    );
    let (_, aws_image) =
        member_deployment(plane, "cluster-aws", "production", "nginx-ha").expect("aws");
    let (_, gcp_image) =
        member_deployment(plane, "cluster-gcp", "production", "nginx-ha").expect("gcp");
    assert_eq!(aws_image, "nginx:1.27-alpine");
    assert_eq!(gcp_image, "gcr.io/my-project/nginx:1.27-alpine");
    // The namespace itself was propagated.
    plane
        .member_kubectl("cluster-gcp", &["get", "namespace", "production"])
        .success();
    let managed = plane
        .member_object(
            "cluster-aws",
            &["deployment", "nginx-ha", "-n", "production"],
        )
        .expect("member object");
    assert_eq!(managed["metadata"]["labels"]["karmada.io/managed"], "true");

    // Status aggregated onto the template: 6 ready.
    wait_for("template status 6/6 ready", || {
        let template = plane.object(&["deployment", "nginx-ha", "-n", "production"])?;
        if template["status"]["readyReplicas"] == 6 {
            Ok(())
        } else {
            Err(format!("{}\n{}", template["status"], plane.logs()))
        }
    });
    // The template carries its members' conditions, so the usual single-cluster checks work on it.
    plane
        .kubectl(&[
            "wait",
            "--for=condition=Available",
            "deployment/nginx-ha",
            "-n",
            "production",
            "--timeout=60s",
        ])
        .success();
    let template = plane
        .object(&["deployment", "nginx-ha", "-n", "production"])
        .expect("template");
    let progressing = condition(&template, "Progressing").expect("Progressing condition");
    assert_eq!(progressing["status"], "True", "{template}");
    assert!(progressing["lastTransitionTime"].is_string(), "{template}");
    let binding = plane
        .object(&["resourcebinding", "nginx-ha-deployment", "-n", "production"])
        .expect("binding");
    assert_eq!(
        condition(&binding, "Scheduled").map(|c| c["status"].clone()),
        Some("True".into())
    );
    // Each component's writes are recorded under its name (its User-Agent), as Karmada's are.
    let show = ["-n", "production", "-o", "json", "--show-managed-fields"];
    let binding = plane
        .kubectl(
            &[
                &["get", "resourcebinding", "nginx-ha-deployment"][..],
                &show,
            ]
            .concat(),
        )
        .json();
    let template = plane
        .kubectl(&[&["get", "deployment", "nginx-ha"][..], &show].concat())
        .json();
    let member = plane
        .member_kubectl(
            "cluster-aws",
            &[&["get", "deployment", "nginx-ha"][..], &show].concat(),
        )
        .json();
    for (object, wanted) in [
        (&binding, ("karmada-scheduler", "")),
        (&binding, ("karmada-scheduler", "status")),
        (&binding, ("karmada-controller-manager", "status")),
        (&template, ("karmada-controller-manager", "")),
        (&template, ("karmada-controller-manager", "status")),
        (&member, ("karmada-controller-manager", "")),
    ] {
        let found = field_managers(object);
        assert!(
            found
                .iter()
                .any(|(manager, subresource)| (manager.as_str(), subresource.as_str()) == wanted),
            "{wanted:?} among {found:?}"
        );
    }

    // Scale 6 → 9 → 3: the members follow 2:1.
    plane
        .kubectl(&[
            "scale",
            "deployment",
            "nginx-ha",
            "-n",
            "production",
            "--replicas=9",
        ])
        .success();
    wait_replicas(
        plane,
        &[("cluster-aws", 6), ("cluster-gcp", 3)],
        "production",
        "nginx-ha",
    );
    plane
        .kubectl(&[
            "scale",
            "deployment",
            "nginx-ha",
            "-n",
            "production",
            "--replicas=3",
        ])
        .success();
    wait_replicas(
        plane,
        &[("cluster-aws", 2), ("cluster-gcp", 1)],
        "production",
        "nginx-ha",
    );

    // Change the weights to 1:2.
    plane
        .kubectl(&[
            "patch",
            "propagationpolicy",
            "nginx-ha-policy",
            "-n",
            "production",
            "--type",
            "json",
            "-p",
            r#"[{"op":"replace","path":"/spec/placement/replicaScheduling/weightPreference/staticWeightList/0/weight","value":1},
                {"op":"replace","path":"/spec/placement/replicaScheduling/weightPreference/staticWeightList/1/weight","value":2}]"#,
        ])
        .success();
    wait_replicas(
        plane,
        &[("cluster-aws", 1), ("cluster-gcp", 2)],
        "production",
        "nginx-ha",
    );

    // Template deleted: gone from every member.
    plane
        .kubectl(&["delete", "deployment", "nginx-ha", "-n", "production"])
        .success();
    for member in ["cluster-aws", "cluster-gcp"] {
        wait_for(&format!("nginx-ha gone from {member}"), || {
            match plane.member_object(member, &["deployment", "nginx-ha", "-n", "production"]) {
                Err(e) if e.contains("NotFound") => Ok(()),
                Err(e) => Err(e),
                Ok(_) => Err("still there".into()),
            }
        });
    }
}

#[test]
fn seed_000_microservices_over_three_regions() {
    let plane = Plane::start(&["member-shanghai", "member-beijing", "member-singapore"]);
    let members = ["member-shanghai", "member-beijing", "member-singapore"];
    plane
        .kubectl(&["create", "namespace", "microservices"])
        .success();
    apply_fixture(&plane, "seed-000/02-namespace-propagation.yaml");
    for member in members {
        wait_for(&format!("namespace microservices in {member}"), || {
            plane
                .member_object(member, &["namespace", "microservices"])
                .map(|_| ())
        });
    }
    apply_fixture(&plane, "seed-000/03-redis-statefulset.yaml");
    apply_fixture(&plane, "seed-000/04-api-server.yaml");
    for member in members {
        wait_for(&format!("redis 2 replicas in {member}"), || {
            let sts = plane.member_object(
                member,
                &["statefulset", "redis-cluster", "-n", "microservices"],
            )?;
            if sts["spec"]["replicas"] == 2 {
                Ok(())
            } else {
                Err(sts["spec"]["replicas"].to_string())
            }
        });
        wait_for(&format!("Service api-server in {member}"), || {
            plane
                .member_object(member, &["service", "api-server", "-n", "microservices"])
                .map(|_| ())
        });
    }
    wait_replicas(
        &plane,
        &[
            ("member-shanghai", 4),
            ("member-beijing", 3),
            ("member-singapore", 2),
        ],
        "microservices",
        "api-server",
    );

    // nginx: spread over 2..3 clusters at 40:40:20.
    plane
        .kubectl(&[
            "create",
            "deployment",
            "nginx",
            "--image",
            "nginx:1.27",
            "--replicas",
            "5",
        ])
        .success();
    apply_fixture(&plane, "seed-000/01-nginx-propagation.yaml");
    wait_for("nginx scheduled within its spread constraint", || {
        let binding = plane.object(&["resourcebinding", "nginx-deployment"])?;
        let clusters = binding["spec"]["clusters"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let total: i64 = clusters
            .iter()
            .map(|c| c["replicas"].as_i64().unwrap_or(0))
            .sum();
        if (2..=3).contains(&clusters.len()) && total == 5 {
            Ok(())
        } else {
            Err(binding["spec"]["clusters"].to_string())
        }
    });
}

#[test]
fn conflict_unreachable_member_and_restart() {
    let mut plane = Plane::start(&["member1", "member2"]);
    // A same-named Deployment already in member1, not made by Karmada.
    plane
        .member_kubectl(
            "member1",
            &[
                "create",
                "deployment",
                "web",
                "--image",
                "nginx:1.25",
                "--replicas",
                "1",
            ],
        )
        .success();
    plane
        .kubectl(&[
            "create",
            "deployment",
            "web",
            "--image",
            "nginx:1.27",
            "--replicas",
            "4",
        ])
        .success();
    let policy = r#"{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy",
        "metadata":{"name":"web","namespace":"default"},
        "spec":{"resourceSelectors":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web"}],
                "placement":{"clusterAffinity":{"clusterNames":["member1","member2"]},
                             "replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted"}}}}"#;
    let file = plane.karmada.file("web-policy.json", policy);
    plane
        .kubectl(&["apply", "-f", file.to_str().expect("utf8")])
        .success();

    // Abort (the default): member1's own Deployment is left alone, the Work says why.
    wait_replicas(&plane, &[("member2", 2)], "default", "web");
    wait_for("Work for member1 Applied=False with the conflict", || {
        let works = plane.object(&["works", "-n", "karmada-es-member1"])?;
        let work = works["items"]
            .as_array()
            .and_then(|items| {
                items.iter().find(|w| {
                    w["metadata"]["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("web-"))
                })
            })
            .cloned()
            .ok_or("no Work yet")?;
        match condition(&work, "Applied") {
            Some(c) if c["status"] == "False" => Ok(c["message"].to_string()),
            other => Err(format!("{other:?}")),
        }
    });
    let (replicas, image) =
        member_deployment(&plane, "member1", "default", "web").expect("member1 web");
    assert_eq!(
        (replicas, image.as_str()),
        (1, "nginx:1.25"),
        "Abort leaves it alone"
    );

    // Overwrite: taken over.
    plane
        .kubectl(&[
            "patch",
            "propagationpolicy",
            "web",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"conflictResolution":"Overwrite"}}"#,
        ])
        .success();
    wait_for("member1 web taken over", || {
        let (replicas, image) = member_deployment(&plane, "member1", "default", "web")?;
        if replicas == 2 && image == "nginx:1.27" {
            Ok(())
        } else {
            Err(format!("{replicas} {image}"))
        }
    });

    // Restart the controllers mid-way through a change: it converges, nothing duplicated.
    plane
        .kubectl(&["scale", "deployment", "web", "--replicas=6"])
        .success();
    plane.restart_components();
    wait_replicas(&plane, &[("member1", 3), ("member2", 3)], "default", "web");
    let works = plane.object(&["works", "-A"]).expect("works");
    let web_works = works["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|w| {
                    w["metadata"]["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("web-"))
                })
                .count()
        })
        .unwrap_or(0);
    assert_eq!(web_works, 2, "one Work per cluster, no duplicates");

    // member2 unreachable: its Work reports the failure; the template change still reaches member1.
    plane.stop_member("member2");
    plane
        .kubectl(&["set", "image", "deployment/web", "nginx=nginx:1.28"])
        .success();
    wait_for("member1 gets the new image", || {
        let (_, image) = member_deployment(&plane, "member1", "default", "web")?;
        if image == "nginx:1.28" {
            Ok(())
        } else {
            Err(image)
        }
    });
}
