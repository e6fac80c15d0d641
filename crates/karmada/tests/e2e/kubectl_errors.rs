//! Bad input through the real client: each gets the right code and reason, and nothing stored
//! changes. Also authentication and authorization failures.

use crate::harness::{Run, Server};

fn configmap_count(s: &Server) -> usize {
    let list = s
        .kubectl(&["get", "cm", "-n", "default", "-o", "json"])
        .json();
    list["items"].as_array().map(Vec::len).unwrap_or(0)
}

fn raw_post(s: &Server, path: &str, body: &str) -> Run {
    let f = s.file("body", body);
    s.kubectl(&["create", "--raw", path, "-f", f.to_str().unwrap()])
}

fn malformed_and_invalid_bodies_are_rejected_without_side_effects(s: &Server) {
    s.kubectl(&["create", "configmap", "keep", "--from-literal=a=b"])
        .success();
    let before = configmap_count(s);
    let path = "/api/v1/namespaces/default/configmaps";

    let cases: &[(&str, &str)] = &[
        (
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",",
            "BadRequest",
        ),
        (
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"Bad_Name\"}}",
            "Invalid",
        ),
        (
            &format!(
                "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"{}\"}}}}",
                "a".repeat(254)
            ),
            "Invalid",
        ),
        (
            "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"x\"}}",
            "BadRequest",
        ),
        (
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"keep\"}}",
            "AlreadyExists",
        ),
    ];
    for (body, reason) in cases {
        let err = raw_post(s, path, body).failure().to_string();
        assert!(
            err.contains(reason) || err.to_lowercase().contains(&reason.to_lowercase()),
            "{reason} for {body}: {err}"
        );
    }
    let err = raw_post(
        s,
        "/api/v1/namespaces/nope/configmaps",
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}",
    )
    .failure()
    .to_string();
    assert!(err.contains("namespaces \"nope\" not found"), "{err}");
    let big = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"big\"}},\"data\":{{\"a\":\"{}\"}}}}",
        "x".repeat(3 * 1024 * 1024 + 1)
    );
    let err = raw_post(s, path, &big).failure().to_string();
    assert!(err.to_lowercase().contains("too large"), "{err}");
    assert_eq!(
        configmap_count(s),
        before,
        "nothing stored by rejected requests"
    );
}

fn unknown_kinds_fields_and_yaml_errors(s: &Server) {
    let err = s
        .kubectl_stdin(
            &["apply", "-f", "-"],
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
        )
        .failure()
        .to_string();
    assert!(
        err.contains("no matches for kind \"Widget\" in version \"example.com/v1\""),
        "{err}"
    );
    let err = s
        .kubectl_stdin(
            &["apply", "-f", "-"],
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\nbogus: 1\n",
        )
        .failure()
        .to_string();
    assert!(
        err.contains("unknown field \"bogus\""),
        "strict field validation: {err}"
    );
    let err = s
        .kubectl_stdin(
            &["apply", "-f", "-"],
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c\n",
        )
        .failure()
        .to_string();
    assert!(
        err.to_lowercase().contains("yaml") || err.contains("error converting"),
        "{err}"
    );
    let err = s
        .kubectl_stdin(
            &["apply", "-f", "-"],
            "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p}\nspec:\n  resourceSelectors: []\n",
        )
        .failure()
        .to_string();
    assert!(
        err.contains("spec.resourceSelectors"),
        "422 names the field: {err}"
    );
    s.kubectl(&["get", "pp", "p"]).failure();
}

#[test]
fn authentication_and_rbac() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "admintoken,alice-admin,1,\"system:masters\"\nreadtoken,bob,2,\"\"\n",
    )
    .unwrap();
    let s = Server::start_with(&["--token-auth-file", tokens.to_str().unwrap()]);
    let cfg = std::fs::read_to_string(&s.kubeconfig).unwrap();
    let cfg: serde_json::Value = serde_json::from_str(&cfg).unwrap();
    let server_url = cfg["clusters"][0]["cluster"]["server"]
        .as_str()
        .unwrap()
        .to_string();
    let ca = cfg["clusters"][0]["cluster"]["certificate-authority-data"]
        .as_str()
        .unwrap()
        .to_string();
    let with_token = |token: &str| {
        let body = serde_json::json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "t",
            "clusters": [{"name": "t", "cluster": {"server": server_url, "certificate-authority-data": ca}}],
            "users": [{"name": "t", "user": if token.is_empty() { serde_json::json!({}) } else { serde_json::json!({"token": token}) }}],
            "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
        });
        let path = dir.path().join(format!(
            "kc-{}",
            if token.is_empty() { "anon" } else { token }
        ));
        std::fs::write(&path, body.to_string()).unwrap();
        path
    };
    let run = |kc: &std::path::Path, args: &[&str]| -> Run {
        Run::from(
            std::process::Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(kc)
                .args(args)
                .output()
                .unwrap(),
        )
    };

    let bad = with_token("wrong");
    let err = run(&bad, &["get", "ns"]).failure().to_string();
    assert!(
        err.contains("You must be logged in to the server"),
        "401 for a bad token: {err}"
    );

    // bob is bound only to the read-only `view` role.
    s.kubectl(&[
        "create",
        "clusterrolebinding",
        "bob-view",
        "--clusterrole=view",
        "--user=bob",
    ])
    .success();
    let bob = with_token("readtoken");
    run(&bob, &["get", "configmaps", "-n", "default"]).success();
    let err = run(&bob, &["create", "configmap", "nope", "--from-literal=a=b"])
        .failure()
        .to_string();
    assert!(
        err.contains("configmaps is forbidden: User \"bob\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""),
        "{err}"
    );
    // kubectl auth asks the review APIs the same authorizer: bob may read, not write.
    assert_eq!(
        run(&bob, &["auth", "can-i", "list", "configmaps"])
            .success()
            .trim(),
        "yes"
    );
    let denied = run(&bob, &["auth", "can-i", "create", "configmaps"]);
    assert_eq!(denied.code, 1, "can-i answers no with exit code 1");
    assert!(denied.stdout.starts_with("no"), "{}", denied.stdout);
    let rules = run(&bob, &["auth", "can-i", "--list", "-n", "default"])
        .success()
        .to_string();
    let configmaps = rules
        .lines()
        .find(|l| l.starts_with("configmaps "))
        .unwrap_or_else(|| panic!("configmaps in the rules: {rules}"));
    assert!(configmaps.contains("[get list watch]"), "{rules}");
    let whoami = run(&bob, &["auth", "whoami"]).success().to_string();
    assert!(
        whoami
            .lines()
            .any(|l| l.starts_with("Username") && l.ends_with("bob")),
        "{whoami}"
    );
    let admin = with_token("admintoken");
    // An administrator asks on bob's behalf with a SubjectAccessReview, found through discovery.
    let review = dir.path().join("review.json");
    std::fs::write(
        &review,
        serde_json::json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "bob", "resourceAttributes": {"verb": "delete", "resource": "configmaps", "namespace": "default"}}})
        .to_string(),
    )
    .unwrap();
    let answer = run(
        &admin,
        &[
            "create",
            "-f",
            review.to_str().unwrap(),
            "-o",
            "jsonpath={.status.allowed}",
        ],
    );
    assert_eq!(answer.success(), "false");
    // kubectl --as: the administrator asks as bob and gets bob's answers; bob may not impersonate anyone.
    assert_eq!(
        run(
            &admin,
            &["auth", "can-i", "list", "configmaps", "--as", "bob"]
        )
        .success()
        .trim(),
        "yes"
    );
    let as_bob = run(
        &admin,
        &["auth", "can-i", "delete", "configmaps", "--as", "bob"],
    );
    assert_eq!(as_bob.code, 1, "{}", as_bob.stderr);
    assert!(
        as_bob
            .stdout
            .starts_with("no - RBAC: no rule bound to user \"bob\""),
        "{}",
        as_bob.stdout
    );
    let err = run(&bob, &["get", "configmaps", "--as", "alice-admin"])
        .failure()
        .to_string();
    assert!(
        err.contains(
            "users \"alice-admin\" is forbidden: User \"bob\" cannot impersonate resource \"users\""
        ),
        "{err}"
    );
    assert_eq!(
        run(
            &admin,
            &["auth", "can-i", "delete", "clusters.cluster.karmada.io"]
        )
        .success()
        .trim(),
        "yes"
    );
    run(
        &admin,
        &["create", "configmap", "yes", "--from-literal=a=b"],
    )
    .success();

    // kubectl prompts for a password when a kubeconfig has no credentials, so the anonymous
    // user is checked with the kube crate: discovery and objects are forbidden, health is open.
    let anon = with_token("");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(&anon).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        let client = kube::Client::try_from(config).unwrap();
        let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
            kube::Api::all(client.clone());
        match namespaces.list(&Default::default()).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 403);
                assert!(
                    status
                        .message
                        .contains("User \"system:anonymous\" cannot list resource \"namespaces\""),
                    "{}",
                    status.message
                );
            }
            other => panic!("anonymous list must be forbidden: {other:?}"),
        }
        let ready = client
            .request_text(http::Request::get("/readyz").body(Vec::new()).unwrap())
            .await
            .unwrap();
        assert_eq!(ready, "ok");
    });
}

crate::harness::on_apiserver_and_member_sim!(
    malformed_and_invalid_bodies_are_rejected_without_side_effects,
    unknown_kinds_fields_and_yaml_errors,
);
