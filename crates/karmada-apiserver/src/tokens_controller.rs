//! The cleanup half of kube-controller-manager's token controller: a `kubernetes.io/service-account-token` Secret
//! whose ServiceAccount does not exist, or exists with another uid than the Secret records, is deleted. So deleting
//! a ServiceAccount takes its token Secrets with it, and a token Secret written for a missing account goes too. (The
//! filling half runs as the Secret is created: [`crate::handlers::token_request::fill_token_secret`].)
//!
//! Level-triggered and restart-safe: a sweep of every namespace at start, then a sweep of the namespace of each
//! deleted ServiceAccount, and a check of each token Secret as it is written. Runs only on a server that mints
//! tokens.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::{ApiError, ResourceDef};
use apiserver_auth::service_account::{
    SECRET_TYPE, SERVICE_ACCOUNT_NAME_ANNOTATION, SERVICE_ACCOUNT_UID_ANNOTATION,
};
use futures::StreamExt;
use serde_json::Value;
use store::{EventKind, RangeRequest};

use crate::background;
use crate::handlers::delete::{DeleteOptions, delete_object};
use crate::objects;
use crate::server::ApiServer;
use crate::storage;

const RETRY_TICK: Duration = Duration::from_millis(200);

/// Runs until the server's shutdown token is cancelled.
pub async fn run(server: Arc<ApiServer>) {
    if server.options.service_account_tokens.is_none() {
        return;
    }
    background::run_until_shutdown(&server, "token controller restarting", RETRY_TICK, || {
        watch_and_clean(&server)
    })
    .await;
}

struct Defs {
    accounts: Arc<ResourceDef>,
    secrets: Arc<ResourceDef>,
}

async fn watch_and_clean(server: &ApiServer) -> Result<(), ApiError> {
    let registry = server.registry();
    let (Some(accounts), Some(secrets)) = (
        registry.lookup("", "v1", "serviceaccounts"),
        registry.lookup("", "v1", "secrets"),
    ) else {
        return Ok(());
    };
    let defs = Defs { accounts, secrets };
    let revision = background::current_revision(server).await?;
    let mut account_events = background::watch_kind(server, &defs.accounts, revision).await?;
    let mut secret_events = background::watch_kind(server, &defs.secrets, revision).await?;
    sweep(server, &defs, None).await?;
    loop {
        tokio::select! {
            event = account_events.next() => match event {
                None => return Ok(()),
                Some(Err(err)) => return Err(storage::store_error(err)),
                Some(Ok(event)) if event.kind == EventKind::Delete => {
                    let account = storage::decode(&defs.accounts, &event.kv)?;
                    let namespace = objects::meta_str(&account, "namespace").unwrap_or_default().to_string();
                    sweep(server, &defs, Some(&namespace)).await?;
                }
                Some(Ok(_)) => {}
            },
            event = secret_events.next() => match event {
                None => return Ok(()),
                Some(Err(err)) => return Err(storage::store_error(err)),
                Some(Ok(event)) if event.kind == EventKind::Put => {
                    let secret = storage::decode(&defs.secrets, &event.kv)?;
                    clean(server, &defs, &secret).await?;
                }
                Some(Ok(_)) => {}
            },
        }
    }
}

/// Checks every token Secret in `namespace` (every namespace: `None`).
async fn sweep(server: &ApiServer, defs: &Defs, namespace: Option<&str>) -> Result<(), ApiError> {
    let page = server
        .store
        .range(RangeRequest {
            prefix: storage::collection_prefix(&defs.secrets, namespace),
            ..RangeRequest::default()
        })
        .await
        .map_err(storage::store_error)?;
    for kv in &page.kvs {
        let secret = storage::decode(&defs.secrets, kv)?;
        clean(server, defs, &secret).await?;
    }
    Ok(())
}

/// Deletes `secret` if it is a token Secret whose ServiceAccount is gone.
async fn clean(server: &ApiServer, defs: &Defs, secret: &Value) -> Result<(), ApiError> {
    let Some(account_name) = token_account(secret) else {
        return Ok(());
    };
    if objects::is_deleting(secret) {
        return Ok(());
    }
    let namespace = objects::meta_str(secret, "namespace").unwrap_or_default();
    let account = server
        .read_object(&defs.accounts, Some(namespace), account_name)
        .await?
        .map(|(account, _)| account);
    if !orphaned(secret, account.as_ref()) {
        return Ok(());
    }
    let name = objects::name_of(secret).to_string();
    let options = DeleteOptions {
        // The Secret read, not one created again under its name since.
        precondition_uid: objects::meta_str(secret, "uid").map(str::to_string),
        ..DeleteOptions::default()
    };
    match delete_object(server, &defs.secrets, Some(namespace), &name, &options).await {
        Ok(_) => {
            tracing::info!(namespace, secret = %name, account = account_name, "deleted the token Secret of a missing ServiceAccount");
            Ok(())
        }
        Err(err) if err.code == 404 || err.code == 409 => Ok(()),
        Err(err) => Err(err),
    }
}

/// The ServiceAccount a token Secret names; `None` for other Secrets.
fn token_account(secret: &Value) -> Option<&str> {
    if secret.get("type").and_then(Value::as_str) != Some(SECRET_TYPE) {
        return None;
    }
    secret
        .pointer("/metadata/annotations")?
        .get(SERVICE_ACCOUNT_NAME_ANNOTATION)?
        .as_str()
}

/// Whether a token Secret's account is gone: absent, or present with another uid than the Secret records.
fn orphaned(secret: &Value, account: Option<&Value>) -> bool {
    let Some(account) = account else {
        return true;
    };
    let recorded = secret
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(SERVICE_ACCOUNT_UID_ANNOTATION))
        .and_then(Value::as_str)
        .filter(|uid| !uid.is_empty());
    recorded.is_some_and(|uid| Some(uid) != objects::meta_str(account, "uid"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn secret(kind: &str, annotations: Value) -> Value {
        json!({"type": kind, "metadata": {"name": "t", "namespace": "ns", "annotations": annotations}})
    }

    #[test]
    fn only_token_secrets_name_an_account() {
        let named = json!({SERVICE_ACCOUNT_NAME_ANNOTATION: "bot"});
        assert_eq!(
            token_account(&secret(SECRET_TYPE, named.clone())),
            Some("bot")
        );
        assert_eq!(token_account(&secret("Opaque", named)), None);
        assert_eq!(token_account(&secret(SECRET_TYPE, json!({}))), None);
    }

    #[test]
    fn a_secret_is_orphaned_when_its_account_is_missing_or_another() {
        let account = json!({"metadata": {"name": "bot", "uid": "u1"}});
        // (recorded uid annotation, account present, orphaned)
        let table = [
            (None, true, false),
            (Some("u1"), true, false),
            (Some(""), true, false),
            (Some("u0"), true, true),
            (None, false, true),
            (Some("u1"), false, true),
        ];
        for (uid, present, expected) in table {
            let mut annotations = json!({SERVICE_ACCOUNT_NAME_ANNOTATION: "bot"});
            if let Some(uid) = uid {
                annotations[SERVICE_ACCOUNT_UID_ANNOTATION] = json!(uid);
            }
            let secret = secret(SECRET_TYPE, annotations);
            let found = present.then_some(&account);
            assert_eq!(orphaned(&secret, found), expected, "{uid:?} {present}");
        }
    }
}
