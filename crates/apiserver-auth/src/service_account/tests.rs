use std::sync::{Arc, LazyLock};

use base64::Engine;
use jiff::{Timestamp, ToSpan};
use serde_json::json;
use store::Store;
use store::memory::MemoryStore;

use super::*;

/// One key for every test: generating costs more than the tests themselves.
static ISSUER: LazyLock<Arc<TokenIssuer>> = LazyLock::new(|| {
    let pem = rcgen::KeyPair::generate().unwrap().serialize_pem();
    Arc::new(TokenIssuer::from_pem(&pem).unwrap())
});

fn audiences() -> Vec<String> {
    vec![DEFAULT_ISSUER.to_string()]
}

fn bound(expiration_seconds: i64, audiences: &[String], now: Timestamp) -> String {
    ISSUER
        .issue_bound(
            &BoundToken {
                namespace: "default",
                name: "bot",
                uid: "uid-1",
                audiences,
                expiration_seconds,
            },
            now,
        )
        .unwrap()
}

#[test]
fn a_bound_token_verifies_until_it_expires() {
    let now: Timestamp = "2026-12-02T08:00:00Z".parse().unwrap();
    let token = bound(3600, &audiences(), now);
    let subject = ISSUER.verify(&token, &audiences(), now).unwrap();
    assert_eq!(
        subject,
        TokenSubject {
            namespace: "default".into(),
            name: "bot".into(),
            uid: "uid-1".into(),
            secret: None
        }
    );
    // Within the leeway after expiry, then not.
    let later = now.checked_add(3650.seconds()).unwrap();
    assert!(ISSUER.verify(&token, &audiences(), later).is_ok());
    let expired = now.checked_add(3700.seconds()).unwrap();
    assert_eq!(
        ISSUER.verify(&token, &audiences(), expired),
        Err(Rejection::Expired)
    );
    let early = now.checked_sub(120.seconds()).unwrap();
    assert_eq!(
        ISSUER.verify(&token, &audiences(), early),
        Err(Rejection::Expired)
    );
}

#[test]
fn tokens_for_other_audiences_keys_or_shapes_are_refused() {
    let now = Timestamp::now();
    let elsewhere = bound(3600, &["https://vault.example".to_string()], now);
    assert_eq!(
        ISSUER.verify(&elsewhere, &audiences(), now),
        Err(Rejection::Audience)
    );

    let other_key =
        TokenIssuer::from_pem(&rcgen::KeyPair::generate().unwrap().serialize_pem()).unwrap();
    let foreign = other_key
        .issue_bound(
            &BoundToken {
                namespace: "default",
                name: "bot",
                uid: "uid-1",
                audiences: &audiences(),
                expiration_seconds: 3600,
            },
            now,
        )
        .unwrap();
    assert_eq!(
        ISSUER.verify(&foreign, &audiences(), now),
        Err(Rejection::BadSignature)
    );

    // A claim changed after signing.
    let token = bound(3600, &audiences(), now);
    let parts: Vec<&str> = token.split('.').collect();
    let mut claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    claims["kubernetes.io"]["serviceaccount"]["name"] = json!("admin");
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        parts[2]
    );
    assert_eq!(
        ISSUER.verify(&forged, &audiences(), now),
        Err(Rejection::BadSignature)
    );
    for not_jwt in ["abcdef.0123456789abcdef", "a.b", "a.b.c.d", ""] {
        assert_eq!(
            ISSUER.verify(not_jwt, &audiences(), now),
            Err(Rejection::NotJwt),
            "{not_jwt}"
        );
    }
}

#[test]
fn a_legacy_token_names_its_secret_and_never_expires() {
    let token = ISSUER
        .issue_legacy("ops", "deployer", "uid-9", "deployer-token")
        .unwrap();
    let far = Timestamp::now().checked_add(87600.hours()).unwrap();
    assert_eq!(
        ISSUER.verify(&token, &audiences(), far).unwrap(),
        TokenSubject {
            namespace: "ops".into(),
            name: "deployer".into(),
            uid: "uid-9".into(),
            secret: Some("deployer-token".into())
        }
    );
}

#[test]
fn the_key_is_created_once_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let first = TokenIssuer::load_or_create(dir.path()).unwrap();
    let token = first
        .issue_bound(
            &BoundToken {
                namespace: "default",
                name: "bot",
                uid: "u",
                audiences: &audiences(),
                expiration_seconds: 600,
            },
            Timestamp::now(),
        )
        .unwrap();
    let again = TokenIssuer::load_or_create(dir.path()).unwrap();
    assert!(again.verify(&token, &audiences(), Timestamp::now()).is_ok());
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    std::fs::write(dir.path().join(KEY_FILE), "not a key").unwrap();
    assert!(TokenIssuer::load_or_create(dir.path()).is_err());
}

async fn put(store: &Arc<dyn Store>, key: &str, value: serde_json::Value) {
    store
        .create(key, value.to_string().into_bytes().into())
        .await
        .unwrap();
}

#[tokio::test]
async fn the_authenticator_accepts_tokens_only_while_what_they_name_exists() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let authn = ServiceAccountTokenAuthenticator::new(Arc::clone(&ISSUER), Arc::clone(&store));
    let account_key = "/registry/core/serviceaccounts/default/bot";
    put(
        &store,
        account_key,
        json!({"metadata": {"name": "bot", "namespace": "default", "uid": "uid-1"}}),
    )
    .await;
    let token = bound(3600, &audiences(), Timestamp::now());
    let user = authn.authenticate_token(&token).await.unwrap().unwrap();
    assert_eq!(user.name, "system:serviceaccount:default:bot");
    assert_eq!(user.uid, "uid-1");
    assert_eq!(
        user.groups,
        [
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ]
    );
    // Not a JWT: some other authenticator's business.
    assert_eq!(
        authn.authenticate_token("abcdef.0123456789abcdef").await,
        Ok(None)
    );

    // A legacy token while its Secret holds it.
    let legacy = ISSUER
        .issue_legacy("default", "bot", "uid-1", "bot-token")
        .unwrap();
    assert_eq!(
        authn.authenticate_token(&legacy).await,
        Ok(None),
        "no Secret yet"
    );
    let encoded = base64::engine::general_purpose::STANDARD.encode(&legacy);
    put(
        &store,
        "/registry/core/secrets/default/bot-token",
        json!({"type": SECRET_TYPE, "metadata": {"name": "bot-token"}, "data": {"token": encoded}}),
    )
    .await;
    assert!(authn.authenticate_token(&legacy).await.unwrap().is_some());

    // The ServiceAccount deleted and created again (a new uid): every old token is refused.
    store.delete(account_key, None).await.unwrap();
    assert_eq!(authn.authenticate_token(&token).await, Ok(None));
    put(
        &store,
        account_key,
        json!({"metadata": {"name": "bot", "namespace": "default", "uid": "uid-2"}}),
    )
    .await;
    assert_eq!(authn.authenticate_token(&token).await, Ok(None));
    assert_eq!(authn.authenticate_token(&legacy).await, Ok(None));
}

#[test]
fn a_remembered_token_still_expires_and_a_forged_one_is_never_remembered() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let authn = ServiceAccountTokenAuthenticator::new(Arc::clone(&ISSUER), store);
    let now: Timestamp = "2026-12-02T08:00:00Z".parse().unwrap();
    let token = bound(3600, &audiences(), now);
    assert!(authn.verify(&token, now).is_ok());
    assert_eq!(authn.verified.lock().len(), 1);
    assert!(authn.verify(&token, now).is_ok(), "served from memory");
    let later = now.checked_add(2.hours()).unwrap();
    assert_eq!(authn.verify(&token, later), Err(Rejection::Expired));

    let mut forged = token.clone();
    forged.truncate(token.len() - 4);
    forged.push_str("AAAA");
    assert_eq!(authn.verify(&forged, now), Err(Rejection::BadSignature));
    assert_eq!(authn.verified.lock().len(), 1);
}

/// The published key verifies what the issuer signs: rebuilt from the JWK's coordinates alone, it checks a
/// token's signature, and a flipped coordinate does not.
#[test]
fn the_published_jwk_verifies_issued_tokens() {
    let now: Timestamp = "2026-12-02T08:00:00Z".parse().unwrap();
    let token = bound(3600, &audiences(), now);
    let (signing_input, signature) = token.rsplit_once('.').unwrap();
    let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
    let jwk = ISSUER.public_jwk();
    assert_eq!(jwk["kty"], "EC");
    assert_eq!(jwk["crv"], "P-256");
    assert_eq!(jwk["alg"], "ES256");
    let header: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(token.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        jwk["kid"], header["kid"],
        "the token names the published key"
    );
    let coordinate = |name: &str| URL_SAFE_NO_PAD.decode(jwk[name].as_str().unwrap()).unwrap();
    let (x, y) = (coordinate("x"), coordinate("y"));
    assert_eq!((x.len(), y.len()), (32, 32));
    let point = |x: &[u8], y: &[u8]| [&[4u8][..], x, y].concat();
    let verifies = |point: Vec<u8>| {
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .verify(signing_input.as_bytes(), &signature)
            .is_ok()
    };
    assert!(verifies(point(&x, &y)));
    let mut other_y = y.clone();
    other_y[31] ^= 1;
    assert!(!verifies(point(&x, &other_y)));
    assert_eq!(ISSUER.jwks()["keys"][0], jwk);
    let config = ISSUER.openid_configuration("https://127.0.0.1:6443/openid/v1/jwks");
    assert_eq!(config["issuer"], DEFAULT_ISSUER);
    assert_eq!(config["jwks_uri"], "https://127.0.0.1:6443/openid/v1/jwks");
    assert_eq!(
        config["id_token_signing_alg_values_supported"],
        json!(["ES256"])
    );
}
