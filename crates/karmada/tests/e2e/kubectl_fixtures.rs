//! `kubectl apply -f` of every file in the repository's tests/fixtures, each with the outcome recorded in
//! docs/compat-fixtures.md: applied with the meaning its comments state (and any normalisation
//! reported as a warning), or rejected with a message that shows the accepted shape.

use crate::harness::Server;

struct Expect {
    file: &'static str,
    outcome: Outcome,
}

enum Outcome {
    /// Applied; each `(namespace, kind/name)` exists afterwards; stderr holds these warnings.
    Applied {
        objects: &'static [(&'static str, &'static str)],
        warnings: &'static [&'static str],
    },
    /// Rejected; stderr holds every fragment.
    Rejected(&'static [&'static str]),
}

use Outcome::*;

fn expectations() -> Vec<Expect> {
    vec![
        Expect {
            file: "api-shape/samples.yaml",
            outcome: Applied {
                objects: &[
                    ("", "namespace/shape"),
                    ("shape", "deployment/web"),
                    ("shape", "service/web"),
                    ("shape", "horizontalpodautoscaler/web"),
                    ("", "storageclass/shape-fast"),
                    ("", "customresourcedefinition/widgets.example.com"),
                ],
                warnings: &[],
            },
        },
        Expect {
            file: "interpreter/clone-crd.yaml",
            outcome: Applied {
                objects: &[(
                    "",
                    "customresourcedefinition/clonesets.workloads.example.io",
                )],
                warnings: &[],
            },
        },
        Expect {
            file: "interpreter/workload-crd.yaml",
            outcome: Applied {
                objects: &[("", "customresourcedefinition/workloads.workload.example.io")],
                warnings: &[],
            },
        },
        Expect {
            file: "interpreter/crds.yaml",
            outcome: Applied {
                objects: &[
                    ("", "customresourcedefinition/statefulsets.apps.kruise.io"),
                    ("", "customresourcedefinition/daemonsets.apps.kruise.io"),
                    ("", "customresourcedefinition/rollouts.argoproj.io"),
                    (
                        "",
                        "customresourcedefinition/helmreleases.helm.toolkit.fluxcd.io",
                    ),
                    ("", "customresourcedefinition/jobs.batch.volcano.sh"),
                    ("", "customresourcedefinition/workflows.argoproj.io"),
                    (
                        "",
                        "customresourcedefinition/kustomizations.kustomize.toolkit.fluxcd.io",
                    ),
                    ("", "customresourcedefinition/pytorchjobs.kubeflow.org"),
                    (
                        "",
                        "customresourcedefinition/flinkdeployments.flink.apache.org",
                    ),
                ],
                warnings: &[],
            },
        },
        Expect {
            file: "interpreter/kruise-cloneset-crd.yaml",
            outcome: Applied {
                objects: &[("", "customresourcedefinition/clonesets.apps.kruise.io")],
                warnings: &[],
            },
        },
        Expect {
            // After its CRD (the files apply in name order).
            file: "interpreter/kruise-cloneset.yaml",
            outcome: Applied {
                objects: &[("default", "clonesets.apps.kruise.io/web")],
                warnings: &[],
            },
        },
        Expect {
            file: "seed-000/01-nginx-propagation.yaml",
            outcome: Applied {
                objects: &[("default", "propagationpolicy/nginx-propagation")],
                warnings: &[
                    "spreadByField: \"Cluster\" has the wrong letter case; stored as \"cluster\"",
                ],
            },
        },
        Expect {
            file: "seed-000/02-namespace-propagation.yaml",
            outcome: Applied {
                objects: &[("default", "propagationpolicy/microservices-propagation")],
                warnings: &[
                    "Namespace is cluster-scoped",
                    "use a ClusterPropagationPolicy",
                ],
            },
        },
        Expect {
            file: "seed-000/03-redis-statefulset.yaml",
            outcome: Applied {
                objects: &[
                    ("microservices", "statefulset/redis-cluster"),
                    ("microservices", "propagationpolicy/redis-propagation"),
                ],
                warnings: &["stored as \"cluster\""],
            },
        },
        Expect {
            file: "seed-000/04-api-server.yaml",
            outcome: Applied {
                objects: &[
                    ("microservices", "deployment/api-server"),
                    ("microservices", "service/api-server"),
                    ("microservices", "propagationpolicy/api-server-propagation"),
                ],
                warnings: &[],
            },
        },
        Expect {
            file: "seed-000/05-multicluster-service.yaml",
            outcome: Applied {
                objects: &[
                    ("microservices", "serviceexport/api-server"),
                    ("microservices", "serviceimport/api-server"),
                ],
                warnings: &[],
            },
        },
        Expect {
            file: "seed-000/06-failover-policy.yaml",
            outcome: Rejected(&[
                "spec.placement.failover",
                "move it to spec.failover",
                "spec.failover.application: {decisionConditions: {tolerationSeconds: <seconds>}",
            ]),
        },
        Expect {
            file: "seed-000/07-scheduler-profile.yaml",
            outcome: Applied {
                objects: &[("", "schedulerprofile/latency-sensitive")],
                warnings: &[],
            },
        },
        Expect {
            file: "seed-001/nginx-deploy.yaml",
            outcome: Applied {
                objects: &[("production", "deployment/nginx-ha")],
                warnings: &[],
            },
        },
        Expect {
            file: "seed-001/override-policy.yaml",
            outcome: Applied {
                objects: &[("production", "overridepolicy/nginx-image-override")],
                warnings: &["moved into spec.overrideRules[0].targetCluster"],
            },
        },
        Expect {
            file: "seed-001/propagation-policy.yaml",
            outcome: Applied {
                objects: &[("production", "propagationpolicy/nginx-ha-policy")],
                warnings: &[],
            },
        },
    ]
}

fn every_fixture_file_applies_or_is_rejected_as_documented(s: &Server) {
    // The seeds create their namespaces before applying (`kubectl create ns ...`).
    s.kubectl(&["create", "namespace", "microservices"])
        .success();
    s.kubectl(&["create", "namespace", "production"]).success();
    let expected = expectations();
    let files = test_fixtures::yaml_files();
    assert!(
        !files.is_empty(),
        "fixtures found at {}",
        test_fixtures::dir().display()
    );
    for rel in &files {
        let expect = expected.iter().find(|e| e.file == rel.as_str()).unwrap_or_else(|| {
            panic!(
                "no recorded outcome for fixture {rel}: add it here and to docs/compat-fixtures.md"
            )
        });
        let run = s.kubectl(&["apply", "-f", &test_fixtures::path_str(rel)]);
        match &expect.outcome {
            Applied { objects, warnings } => {
                run.success();
                for warning in *warnings {
                    assert!(
                        run.stderr.contains(warning),
                        "{rel}: warning {warning:?} in:\n{}",
                        run.stderr
                    );
                }
                for (namespace, object) in *objects {
                    let mut args = vec!["get", object];
                    if !namespace.is_empty() {
                        args.extend(["-n", namespace]);
                    }
                    s.kubectl(&args).success();
                }
            }
            Rejected(fragments) => {
                let err = run.failure();
                for fragment in *fragments {
                    assert!(
                        err.contains(fragment),
                        "{rel}: expected {fragment:?} in:\n{err}"
                    );
                }
            }
        }
    }
    // Stated meanings: the override targets cluster-gcp only; the 2:1 weights are kept.
    let op = s
        .kubectl(&[
            "get",
            "op",
            "nginx-image-override",
            "-n",
            "production",
            "-o",
            "json",
        ])
        .json();
    assert_eq!(
        op["spec"]["overrideRules"][0]["targetCluster"]["clusterNames"],
        serde_json::json!(["cluster-gcp"])
    );
    let pp = s
        .kubectl(&[
            "get",
            "pp",
            "nginx-ha-policy",
            "-n",
            "production",
            "-o",
            "json",
        ])
        .json();
    let weights: Vec<i64> =
        pp["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["weight"].as_i64().unwrap())
            .collect();
    assert_eq!(weights, [2, 1]);
    // Nothing of the rejected file was stored.
    s.kubectl(&["get", "pp", "api-server-propagation", "-n", "default"])
        .failure();
}

crate::harness::on_apiserver_and_member_sim!(
    every_fixture_file_applies_or_is_rejected_as_documented,
);
