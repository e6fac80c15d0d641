//! ServiceAccount tokens: the `serviceaccounts/token` subresource (`kubectl create token`, an
//! `authentication.k8s.io/v1` TokenRequest answered with a signed, expiring token), and the token
//! that a `kubernetes.io/service-account-token` Secret gets when it is created.

use apimachinery::{ApiError, FieldError, ResourceDef};
use apiserver_auth::service_account::{
    BoundToken, SECRET_TYPE, SERVICE_ACCOUNT_NAME_ANNOTATION, SERVICE_ACCOUNT_UID_ANNOTATION,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::not_found;
use crate::objects;
use crate::server::ApiServer;

/// Without `expirationSeconds` a token lasts an hour, as kube-apiserver defaults it.
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
const MIN_EXPIRATION_SECONDS: i64 = 600;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// POST `.../serviceaccounts/{name}/token`: 201 with the TokenRequest and its token.
pub async fn create_token(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: &str,
    name: &str,
    body: Value,
) -> Result<Value, ApiError> {
    let Some(tokens) = server.options.service_account_tokens.as_ref() else {
        return Err(ApiError::not_found_path());
    };
    if let Some(kind) = body.get("kind").and_then(Value::as_str)
        && !kind.is_empty()
        && kind != "TokenRequest"
    {
        return Err(ApiError::bad_request(format!(
            "this URL creates a TokenRequest, the body is a {kind}"
        )));
    }
    let empty = Map::new();
    let spec = body
        .get("spec")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let audiences = requested_audiences(spec, tokens.issuer.issuer());
    let expiration_seconds = requested_expiration(spec, name)?;
    let (account, _) = server
        .read_object(def, Some(namespace), name)
        .await?
        .ok_or_else(|| not_found(def, name))?;
    let uid = objects::meta_str(&account, "uid").unwrap_or_default();
    let now = jiff::Timestamp::now();
    let token = tokens
        .issuer
        .issue_bound(
            &BoundToken {
                namespace,
                name,
                uid,
                audiences: &audiences,
                expiration_seconds,
            },
            now,
        )
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let expires = jiff::Timestamp::from_second(now.as_second() + expiration_seconds)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": null},
        "spec": {"audiences": audiences, "expirationSeconds": expiration_seconds, "boundObjectRef": null},
        "status": {"token": token, "expirationTimestamp": expires.to_string()},
    }))
}

fn requested_audiences(spec: &Map<String, Value>, issuer: &str) -> Vec<String> {
    let audiences = objects::string_list(spec.get("audiences"));
    if audiences.is_empty() {
        vec![issuer.to_string()]
    } else {
        audiences
    }
}

fn requested_expiration(spec: &Map<String, Value>, name: &str) -> Result<i64, ApiError> {
    let invalid = |value: Value, detail: &str| {
        ApiError::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            name,
            &[FieldError::invalid("spec.expirationSeconds", value, detail)],
        )
    };
    if spec.get("boundObjectRef").is_some_and(|r| !r.is_null()) {
        return Err(ApiError::invalid(
            "authentication.k8s.io",
            "TokenRequest",
            name,
            &[FieldError::invalid(
                "spec.boundObjectRef",
                spec.get("boundObjectRef").cloned().unwrap_or(Value::Null),
                "tokens bound to a Pod, Secret or Node are not supported by this server; request a token without boundObjectRef (its lifetime is then bounded by expirationSeconds)",
            )],
        ));
    }
    match spec.get("expirationSeconds") {
        None | Some(Value::Null) => Ok(DEFAULT_EXPIRATION_SECONDS),
        Some(value) => match value.as_i64() {
            Some(seconds) if seconds < MIN_EXPIRATION_SECONDS => Err(invalid(
                value.clone(),
                "may not specify a duration less than 10 minutes",
            )),
            Some(seconds) if seconds > MAX_EXPIRATION_SECONDS => Err(invalid(
                value.clone(),
                "may not specify a duration larger than 2^32 seconds",
            )),
            Some(seconds) => Ok(seconds),
            None => Err(invalid(
                value.clone(),
                "must be a whole number of seconds, e.g. 3600",
            )),
        },
    }
}

/// Fills a new `kubernetes.io/service-account-token` Secret with a token for the ServiceAccount
/// its annotation names (plus `ca.crt` and `namespace`), as kube-controller-manager's token
/// controller does shortly after creation. Other Secrets, and one whose ServiceAccount does not
/// exist (or has another uid than the Secret names), are left as they are.
pub async fn fill_token_secret(
    server: &ApiServer,
    namespace: &str,
    secret: &mut Value,
) -> Result<(), ApiError> {
    let Some(tokens) = server.options.service_account_tokens.as_ref() else {
        return Ok(());
    };
    if secret.get("type").and_then(Value::as_str) != Some(SECRET_TYPE) {
        return Ok(());
    }
    let annotation = |key: &str| {
        secret
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let Some(account_name) = annotation(SERVICE_ACCOUNT_NAME_ANNOTATION) else {
        return Ok(());
    };
    let registry = server.registry();
    let Some(def) = registry.lookup("", "v1", "serviceaccounts") else {
        return Ok(());
    };
    let Some((account, _)) = server
        .read_object(&def, Some(namespace), &account_name)
        .await?
    else {
        return Ok(());
    };
    let uid = objects::meta_str(&account, "uid")
        .unwrap_or_default()
        .to_string();
    if annotation(SERVICE_ACCOUNT_UID_ANNOTATION).is_some_and(|named| named != uid) {
        return Ok(());
    }
    let secret_name = objects::name_of(secret).to_string();
    let token = tokens
        .issuer
        .issue_legacy(namespace, &account_name, &uid, &secret_name)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let meta = objects::meta_mut(secret)?;
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(annotations) = annotations.as_object_mut() {
        annotations.insert(SERVICE_ACCOUNT_UID_ANNOTATION.into(), Value::String(uid));
    }
    let Some(map) = secret.as_object_mut() else {
        return Ok(());
    };
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(data) = data.as_object_mut() {
        data.insert("token".into(), Value::String(STANDARD.encode(token)));
        data.insert(
            "ca.crt".into(),
            Value::String(STANDARD.encode(&tokens.ca_pem)),
        );
        data.insert(
            "namespace".into(),
            Value::String(STANDARD.encode(namespace)),
        );
    }
    Ok(())
}
