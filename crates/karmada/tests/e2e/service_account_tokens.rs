//! ServiceAccount tokens with the real kubectl: `kubectl create token` (a protobuf TokenRequest),
//! the token used as kubectl's credentials, RBAC deciding what it may do, a legacy token Secret
//! filled on creation, and deleting the ServiceAccount revoking both.

use crate::harness::Server;

#[test]
fn kubectl_create_token_gives_credentials_rbac_governs_and_deletion_revokes() {
    let s = Server::start();
    s.kubectl(&["create", "serviceaccount", "bot"]).success();
    let token = s
        .kubectl(&["create", "token", "bot", "--duration=1h"])
        .success()
        .to_string()
        .trim()
        .to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    s.kubectl(&["config", "set-credentials", "bot", "--token", &token])
        .success();
    let whoami = s
        .kubectl(&["--user=bot", "auth", "whoami"])
        .success()
        .to_string();
    assert!(
        whoami.contains("system:serviceaccount:default:bot"),
        "{whoami}"
    );
    assert!(
        whoami.contains("system:serviceaccounts:default"),
        "{whoami}"
    );

    let denied = s
        .kubectl(&["--user=bot", "get", "configmaps"])
        .failure()
        .to_string();
    assert!(
        denied.contains(
            "User \"system:serviceaccount:default:bot\" cannot list resource \"configmaps\""
        ),
        "{denied}"
    );
    // OIDC discovery, open to every ServiceAccount by the default binding: the issuer, and keys that include
    // the one this token names.
    let config = s
        .kubectl(&[
            "--user=bot",
            "get",
            "--raw",
            "/.well-known/openid-configuration",
        ])
        .json();
    assert_eq!(
        config["issuer"], "https://kubernetes.default.svc.cluster.local",
        "{config}"
    );
    let jwks_uri = config["jwks_uri"].as_str().expect("jwks_uri");
    assert!(
        jwks_uri.starts_with("https://") && jwks_uri.ends_with("/openid/v1/jwks"),
        "{jwks_uri}"
    );
    let jwks = s
        .kubectl(&["--user=bot", "get", "--raw", "/openid/v1/jwks"])
        .json();
    let header: serde_json::Value = serde_json::from_slice(
        &base64::Engine::decode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            token.split('.').next().expect("header"),
        )
        .expect("base64url"),
    )
    .expect("json");
    let key = &jwks["keys"][0];
    assert_eq!(key["kid"], header["kid"], "{jwks}");
    assert_eq!((&key["kty"], &key["alg"]), (&"EC".into(), &"ES256".into()));

    s.kubectl(&[
        "create",
        "rolebinding",
        "bot-view",
        "--clusterrole=view",
        "--serviceaccount=default:bot",
    ])
    .success();
    s.kubectl(&["--user=bot", "get", "configmaps"]).success();

    let short = s
        .kubectl(&["create", "token", "bot", "--duration=1m"])
        .failure()
        .to_string();
    assert!(
        short.contains("spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"),
        "{short}"
    );

    // A legacy token Secret, as `argocd cluster add` creates one, is filled on creation.
    s.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bot-token\n  annotations: {kubernetes.io/service-account.name: bot}\n\
         type: kubernetes.io/service-account-token\n",
    )
    .success();
    let secret = s
        .kubectl(&["get", "secret", "bot-token", "-o", "json"])
        .json();
    for key in ["token", "ca.crt", "namespace"] {
        assert!(secret["data"][key].is_string(), "{key} in {secret}");
    }
    let legacy = s
        .kubectl(&["get", "secret", "bot-token", "-o", "jsonpath={.data.token}"])
        .success()
        .to_string();
    let legacy = String::from_utf8(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, legacy.trim()).unwrap(),
    )
    .unwrap();
    s.kubectl(&["config", "set-credentials", "legacy", "--token", &legacy])
        .success();
    s.kubectl(&["--user=legacy", "get", "configmaps"]).success();

    s.kubectl(&["delete", "serviceaccount", "bot"]).success();
    for user in ["--user=bot", "--user=legacy"] {
        let revoked = s
            .kubectl(&[user, "get", "configmaps"])
            .failure()
            .to_string();
        assert!(revoked.contains("Unauthorized"), "{user}: {revoked}");
    }
}
