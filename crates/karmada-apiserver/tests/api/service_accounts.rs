//! ServiceAccount tokens: the `serviceaccounts/token` subresource (TokenRequest) and the token a
//! `kubernetes.io/service-account-token` Secret gets, checked with the server's own authenticator.

use std::sync::Arc;

use apiserver_auth::authn::TokenAuthenticator;
use apiserver_auth::service_account::{ServiceAccountTokenAuthenticator, TokenIssuer};
use base64::Engine;
use http::{Method, StatusCode};
use karmada_apiserver::ApiServerOptions;
use karmada_apiserver::server::ServiceAccountTokens;
use serde_json::{Value, json};
use store::Store;

use super::harness::Harness;

const SA: &str = "/api/v1/namespaces/default/serviceaccounts";
const CA: &str = "-----BEGIN CERTIFICATE-----\nnot checked here\n-----END CERTIFICATE-----\n";

async fn harness() -> (Harness, ServiceAccountTokenAuthenticator) {
    let dir = tempfile::tempdir().unwrap();
    let issuer = Arc::new(TokenIssuer::load_or_create(dir.path()).unwrap());
    let h = Harness::with_options(ApiServerOptions {
        service_account_tokens: Some(Arc::new(ServiceAccountTokens {
            issuer: Arc::clone(&issuer),
            ca_pem: CA.into(),
        })),
        ..ApiServerOptions::default()
    })
    .await;
    let authn = ServiceAccountTokenAuthenticator::new(issuer, h.store.clone() as Arc<dyn Store>);
    (h, authn)
}

async fn create_account(h: &Harness, name: &str) -> String {
    let reply = h
        .post(
            SA,
            &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    reply.body["metadata"]["uid"].as_str().unwrap().to_string()
}

/// Waits until the token controller has deleted Secret `name` in `default`.
async fn wait_until_deleted(h: &Harness, name: &str) {
    let path = format!("/api/v1/namespaces/default/secrets/{name}");
    h.wait_for(&format!("secret {name} to be deleted"), async || {
        h.get(&path).await.status == StatusCode::NOT_FOUND
    })
    .await;
}

#[tokio::test]
async fn a_token_request_returns_a_token_the_server_accepts_for_that_account() {
    let (h, authn) = harness().await;
    let uid = create_account(&h, "bot").await;
    let reply = h
        .post(
            &format!("{SA}/bot/token"),
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "spec": {"expirationSeconds": 7200}}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    assert_eq!(reply.body["kind"], "TokenRequest");
    assert_eq!(reply.body["spec"]["expirationSeconds"], 7200);
    assert_eq!(
        reply.body["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    let expires: jiff::Timestamp = reply.body["status"]["expirationTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let lifetime = expires.as_second() - jiff::Timestamp::now().as_second();
    assert!((7100..=7200).contains(&lifetime), "{lifetime}");
    let token = reply.body["status"]["token"].as_str().unwrap();
    let user = authn.authenticate_token(token).await.unwrap().unwrap();
    assert_eq!(user.name, "system:serviceaccount:default:bot");
    assert_eq!(user.uid, uid);

    // An empty body asks for the defaults: an hour, the server's audience.
    let bare = h
        .request(
            Method::POST,
            &format!("{SA}/bot/token"),
            Some("application/json"),
            Vec::new(),
        )
        .await;
    assert_eq!(bare.status, StatusCode::CREATED, "{:?}", bare.body);
    assert_eq!(bare.body["spec"]["expirationSeconds"], 3600);

    // Deleting the account revokes every token it was given.
    assert_eq!(
        h.delete(&format!("{SA}/bot"), None).await.status,
        StatusCode::OK
    );
    assert_eq!(authn.authenticate_token(token).await, Ok(None));
}

#[tokio::test]
async fn bad_token_requests_are_refused_with_the_field_at_fault() {
    let (h, _) = harness().await;
    create_account(&h, "bot").await;
    let cases: [(Value, &str, &str); 3] = [
        (
            json!({"spec": {"expirationSeconds": 60}}),
            "spec.expirationSeconds",
            "may not specify a duration less than 10 minutes",
        ),
        (
            json!({"spec": {"expirationSeconds": 5_000_000_000_i64}}),
            "spec.expirationSeconds",
            "may not specify a duration larger than 2^32 seconds",
        ),
        (
            json!({"spec": {"boundObjectRef": {"kind": "Pod", "name": "p", "apiVersion": "v1"}}}),
            "spec.boundObjectRef",
            "request a token without boundObjectRef",
        ),
    ];
    for (body, field, message) in cases {
        let reply = h.post(&format!("{SA}/bot/token"), &body).await;
        assert_eq!(
            reply.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {:?}",
            reply.body
        );
        assert_eq!(reply.body["details"]["causes"][0]["field"], field, "{body}");
        assert!(reply.message().contains(message), "{}", reply.message());
    }
    let missing = h.post(&format!("{SA}/nobody/token"), &json!({})).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.message(), "serviceaccounts \"nobody\" not found");
    let wrong_kind = h
        .post(&format!("{SA}/bot/token"), &json!({"kind": "ConfigMap"}))
        .await;
    assert_eq!(wrong_kind.status, StatusCode::BAD_REQUEST);
    // A token is created, never read or listed.
    let get = h.get(&format!("{SA}/bot/token")).await;
    assert_eq!(get.status, StatusCode::METHOD_NOT_ALLOWED, "{:?}", get.body);
}

#[tokio::test]
async fn a_service_account_token_secret_is_filled_when_created() {
    let (h, authn) = harness().await;
    let uid = create_account(&h, "deployer").await;
    let secret = |name: &str, account: &str| {
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
               "metadata": {"name": name, "annotations": {"kubernetes.io/service-account.name": account}}})
    };
    let reply = h
        .post(
            "/api/v1/namespaces/default/secrets",
            &secret("deployer-token", "deployer"),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    let annotations = &reply.body["metadata"]["annotations"];
    assert_eq!(
        annotations["kubernetes.io/service-account.uid"],
        uid.as_str()
    );
    let decode = |key: &str| {
        let text = reply.body["data"][key].as_str().unwrap();
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(decode("namespace"), "default");
    assert_eq!(decode("ca.crt"), CA);
    let token = decode("token");
    let user = authn.authenticate_token(&token).await.unwrap().unwrap();
    assert_eq!(user.name, "system:serviceaccount:default:deployer");

    // Deleting the Secret revokes its token.
    assert_eq!(
        h.delete("/api/v1/namespaces/default/secrets/deployer-token", None)
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(authn.authenticate_token(&token).await, Ok(None));

    // No such account: the Secret is stored as sent, without a token, and then deleted, as
    // kube-controller-manager's token controller does.
    let orphan = h
        .post(
            "/api/v1/namespaces/default/secrets",
            &secret("ghost-token", "ghost"),
        )
        .await;
    assert_eq!(orphan.status, StatusCode::CREATED, "{:?}", orphan.body);
    assert!(orphan.body.get("data").is_none(), "{:?}", orphan.body);
    wait_until_deleted(&h, "ghost-token").await;
}

#[tokio::test]
async fn deleting_a_service_account_deletes_its_token_secrets_and_nothing_else() {
    let (h, authn) = harness().await;
    create_account(&h, "builder").await;
    create_account(&h, "other").await;
    let secret = |name: &str, kind: &str, account: &str| {
        json!({"apiVersion": "v1", "kind": "Secret", "type": kind,
               "metadata": {"name": name, "annotations": {"kubernetes.io/service-account.name": account}}})
    };
    for (name, kind, account) in [
        (
            "builder-token",
            "kubernetes.io/service-account-token",
            "builder",
        ),
        (
            "other-token",
            "kubernetes.io/service-account-token",
            "other",
        ),
        ("builder-notes", "Opaque", "builder"),
    ] {
        let reply = h
            .post(
                "/api/v1/namespaces/default/secrets",
                &secret(name, kind, account),
            )
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{:?}", reply.body);
    }
    let token = h
        .get("/api/v1/namespaces/default/secrets/builder-token")
        .await
        .body["data"]["token"]
        .as_str()
        .map(|t| {
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(t).unwrap()).unwrap()
        })
        .unwrap();
    assert!(authn.authenticate_token(&token).await.unwrap().is_some());

    assert_eq!(
        h.delete(&format!("{SA}/builder"), None).await.status,
        StatusCode::OK
    );
    wait_until_deleted(&h, "builder-token").await;
    assert_eq!(authn.authenticate_token(&token).await, Ok(None));
    for kept in ["other-token", "builder-notes"] {
        let reply = h
            .get(&format!("/api/v1/namespaces/default/secrets/{kept}"))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{kept} was deleted");
    }
}

#[tokio::test]
async fn without_a_signing_key_there_is_no_token_subresource() {
    let h = Harness::new().await;
    create_account(&h, "bot").await;
    let reply = h.post(&format!("{SA}/bot/token"), &json!({})).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    // Nor keys to publish.
    for path in ["/.well-known/openid-configuration", "/openid/v1/jwks"] {
        assert_eq!(h.get(path).await.status, StatusCode::NOT_FOUND, "{path}");
    }
}

#[tokio::test]
async fn the_signing_key_is_published_for_oidc_discovery() {
    let (h, _) = harness().await;
    let config = h.get("/.well-known/openid-configuration").await;
    assert_eq!(config.status, StatusCode::OK, "{:?}", config.body);
    assert_eq!(
        config.body["issuer"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert!(
        config.body["jwks_uri"]
            .as_str()
            .unwrap()
            .ends_with("/openid/v1/jwks"),
        "{:?}",
        config.body
    );
    let jwks = h.get("/openid/v1/jwks").await;
    assert_eq!(jwks.status, StatusCode::OK);
    assert_eq!(jwks.body["keys"].as_array().unwrap().len(), 1);
    assert_eq!(jwks.body["keys"][0]["crv"], "P-256");
}
