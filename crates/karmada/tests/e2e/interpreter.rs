//! Resource interpreter customizations end to end: a CRD workload taught to Karmada after it exists (so the
//! change must apply without a restart) — a CloneSet-like kind by a ResourceInterpreterCustomization (Lua), a
//! Workload kind by a ResourceInterpreterWebhookConfiguration pointing at an HTTPS webhook the test serves — is
//! divided 4/2 by static weights 2:1, its status (written on the members by the test, as its controller would)
//! aggregates onto the template, and a member whose copy turns unhealthy loses it to application failover.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::plane::{Plane, wait_for};

/// A CRD workload kind under test.
pub struct Kind {
    pub group_version: &'static str,
    pub kind: &'static str,
    /// The kind's plural and group, as kubectl names it.
    pub resource: &'static str,
    /// Its CRD, in tests/fixtures.
    pub crd_fixture: &'static str,
}

const CLONESET: Kind = Kind {
    group_version: "workloads.example.io/v1",
    kind: "CloneSet",
    resource: "clonesets.workloads.example.io",
    crd_fixture: "interpreter/clone-crd.yaml",
};
/// Long enough for the test to report the members' first status (until then the copies read as unhealthy, as a
/// CloneSet whose controller has not caught up does) on a loaded machine.
const TOLERATION_SECONDS: u64 = 20;

/// The bundled CloneSet customization, retargeted at this test's group (same scripts, a user's object).
fn customization() -> String {
    let bundled = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../karmada-interpreter/customizations/kruise-cloneset.yaml");
    let text = std::fs::read_to_string(&bundled).expect("the bundled CloneSet customization");
    let retargeted = text
        .replace(
            "apiVersion: apps.kruise.io/v1alpha1",
            &format!("apiVersion: {}", CLONESET.group_version),
        )
        .replace(
            "name: declarative-configuration-cloneset",
            "name: example-cloneset",
        );
    assert_ne!(
        retargeted, text,
        "the target line moved in the bundled file"
    );
    retargeted
}

pub fn apply_text(plane: &Plane, member: Option<&str>, file: &str, text: &str) {
    let path = plane.karmada.file(file, text);
    let path = path.to_str().expect("utf8");
    match member {
        Some(member) => plane
            .member_kubectl(member, &["apply", "-f", path])
            .success(),
        None => plane.kubectl(&["apply", "-f", path]).success(),
    };
}

fn targets(binding: &Value) -> BTreeMap<String, i64> {
    binding["spec"]["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or_default().to_string(),
                c["replicas"].as_i64().unwrap_or_default(),
            )
        })
        .collect()
}

/// Writes the status a CloneSet controller would report for `ready` of the member copy's replicas.
fn report(plane: &Plane, kind: &Kind, member: &str, ready: i64) -> i64 {
    let object = wait_for(&format!("web in {member}"), || {
        plane.member_object(member, &[kind.resource, "web", "-n", "default"])
    });
    let generation = object["metadata"]["generation"].as_i64().unwrap_or(1);
    let replicas = object["spec"]["replicas"].as_i64().unwrap_or_default();
    let status = json!({"status": {"replicas": replicas, "readyReplicas": ready, "availableReplicas": ready,
                                   "updatedReplicas": replicas, "updatedReadyReplicas": ready,
                                   "observedGeneration": generation, "updateRevision": "web-1",
                                   "labelSelector": "app=web"}});
    plane
        .member_kubectl(
            member,
            &[
                "patch",
                kind.resource,
                "web",
                "-n",
                "default",
                "--subresource=status",
                "--type=merge",
                "-p",
                &status.to_string(),
            ],
        )
        .success();
    replicas
}

#[test]
fn a_customized_crd_divides_aggregates_and_fails_over() {
    let plane = Plane::start_with(&["member1", "member2"], &["--enable-failover"]);
    divides_aggregates_and_fails_over(&plane, &CLONESET, || {
        apply_text(&plane, None, "customization.yaml", &customization());
    });
}

/// Creates `kind`'s CRD everywhere and a `web` workload of 6 replicas under a Divided 2:1 policy with
/// application failover, checks it is not divided until `teach` teaches Karmada the kind, then checks the
/// division, the status aggregation and the failover of an unhealthy copy.
pub fn divides_aggregates_and_fails_over(plane: &Plane, kind: &Kind, teach: impl FnOnce()) {
    let crd = std::fs::read_to_string(test_fixtures::path(kind.crd_fixture)).expect("crd fixture");
    for member in [None, Some("member1"), Some("member2")] {
        apply_text(plane, member, "crd.yaml", &crd);
    }
    let workload = json!({"apiVersion": kind.group_version, "kind": kind.kind,
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                       "resources": {"requests": {"cpu": "100m"}}}]}}}});
    // The CRD's API is served a moment after the CRD is stored.
    wait_for("the CloneSet created", || {
        let path = plane.karmada.file("web.json", &workload.to_string());
        let run = plane.kubectl(&["apply", "-f", path.to_str().expect("utf8")]);
        if run.ok() { Ok(()) } else { Err(run.stderr) }
    });
    let policy = json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"resourceSelectors": [{"apiVersion": kind.group_version, "kind": kind.kind, "name": "web"}],
                 "propagateDeps": true,
                 "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                               "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                   "weightPreference": {"staticWeightList": [
                                       {"targetCluster": {"clusterNames": ["member1"]}, "weight": 2},
                                       {"targetCluster": {"clusterNames": ["member2"]}, "weight": 1}]}}},
                 "failover": {"application": {"decisionConditions": {"tolerationSeconds": TOLERATION_SECONDS}, "purgeMode": "Directly"}}}});
    apply_text(plane, None, "policy.json", &policy.to_string());
    // Without a customization the kind has no replicas: the binding says 0.
    let binding_name = &format!("web-{}", kind.kind.to_ascii_lowercase());
    let binding = wait_for("a binding without replicas", || {
        plane.object(&["resourcebinding", binding_name, "-n", "default"])
    });
    assert_eq!(
        binding["spec"]["replicas"].as_i64().unwrap_or_default(),
        0,
        "{}",
        binding["spec"]
    );

    teach();
    wait_for("6 replicas divided 4/2", || {
        let binding = plane.object(&["resourcebinding", binding_name, "-n", "default"])?;
        let placed = targets(&binding);
        if binding["spec"]["replicas"] == 6
            && binding["spec"]["replicaRequirements"]["resourceRequest"]["cpu"] == "100m"
            && placed == BTreeMap::from([("member1".into(), 4), ("member2".into(), 2)])
        {
            Ok(())
        } else {
            Err(format!("{}\n{}", binding["spec"], plane.logs()))
        }
    });
    for (member, replicas) in [("member1", 4), ("member2", 2)] {
        wait_for(&format!("{replicas} replicas in {member}"), || {
            let object = plane.member_object(member, &[kind.resource, "web", "-n", "default"])?;
            if object["spec"]["replicas"] == replicas {
                Ok(())
            } else {
                Err(object["spec"].to_string())
            }
        });
        report(plane, kind, member, replicas);
    }
    wait_for("the members' status aggregated on the template", || {
        let template = plane.object(&[kind.resource, "web", "-n", "default"])?;
        let status = &template["status"];
        if status["replicas"] == 6
            && status["availableReplicas"] == 6
            && status["labelSelector"] == "app=web"
        {
            Ok(())
        } else {
            let binding = plane.object(&["resourcebinding", binding_name, "-n", "default"])?;
            let works = plane.kubectl(&["get", "works", "-A", "-o", "json"]).stdout;
            Err(format!(
                "{status}\nbinding status: {}\nworks: {works}\n{}",
                binding["status"],
                plane.logs()
            ))
        }
    });

    // member1's copy turns unhealthy (1 of 4 available): after tolerationSeconds it is evicted and member2 runs all six.
    report(plane, kind, "member1", 1);
    wait_for("application failover off member1", || {
        let binding = plane.object(&["resourcebinding", binding_name, "-n", "default"])?;
        let placed = targets(&binding);
        if placed == BTreeMap::from([("member2".into(), 6)]) {
            Ok(())
        } else {
            Err(format!(
                "{}\n{}\n{}",
                binding["spec"],
                binding["status"],
                plane.logs()
            ))
        }
    });
    wait_for("member2 runs six", || {
        let object = plane.member_object("member2", &[kind.resource, "web", "-n", "default"])?;
        if object["spec"]["replicas"] == 6 {
            Ok(())
        } else {
            Err(object["spec"].to_string())
        }
    });
}
