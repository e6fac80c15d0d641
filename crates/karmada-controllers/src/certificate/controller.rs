//! The agent CSR approver and signer: every period, list CertificateSigningRequests and act on
//! each as [`decide`] says.
//!
//! - Deny / Approve: a condition appended through the `approval` subresource, with the read
//!   resourceVersion (a 409 is retried on the next round).
//! - Sign (approved, no certificate yet): first the agent's world — the Cluster (syncMode Pull,
//!   annotated with the CSR that created it), namespaces `karmada-cluster` and `karmada-es-<name>`,
//!   the Lease `karmada-cluster/<name>` and the agent's RBAC ([`super::agent_rbac`]) — then the
//!   certificate through the `status` subresource. Signing last means that once a client sees its
//!   certificate, everything it may touch exists and is authorized. Each step is an idempotent
//!   create, so a crash between steps is repaired by the next round.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use apiserver_auth::signer::CaSigner;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DynamicObject, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::agent_rbac::{self, ClusterOwner, LEASE_NAMESPACE};
use super::approve::{
    AGENT_USER_PREFIX, Action, CONDITION_APPROVED, CONDITION_DENIED, CONDITION_FAILED,
    REASON_AUTO_APPROVED, REASON_CLUSTER_EXISTS, REASON_SIGNING_FAILED, cluster_name_problems,
    decide, request_pem,
};
use crate::cluster::api::clusters;
use crate::keys::{LABEL_KARMADA_SYSTEM, MANAGED_VALUE};
use crate::names::execution_namespace;
use crate::runtime::ControllerError;

/// The annotation naming the CertificateSigningRequest whose approval created a Pull Cluster.
pub const ANNOTATION_REGISTERED_BY: &str = "agent.karmada.io/certificate-signing-request";
/// Validity of agent certificates when the request names none.
pub const DEFAULT_VALIDITY: Duration = Duration::from_secs(365 * 24 * 60 * 60);
/// The shortest validity a request may ask for (Kubernetes' minimum for expirationSeconds).
pub const MIN_VALIDITY: Duration = Duration::from_secs(600);
/// `--cluster-lease-duration`'s default, written into a new Lease.
const LEASE_DURATION_SECONDS: i32 = 40;

/// Settings of the CSR controller.
#[derive(Clone)]
pub struct CertificateControllerConfig {
    /// The CA that signs agent certificates (the control plane's CA).
    pub signer: Arc<CaSigner>,
    /// How often the requests are listed.
    pub period: Duration,
}

impl Debug for CertificateControllerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateControllerConfig")
            .field("period", &self.period)
            .finish_non_exhaustive()
    }
}

/// Runs until `cancel` fires.
pub async fn run(
    client: kube::Client,
    config: CertificateControllerConfig,
    cancel: CancellationToken,
) {
    let api: Api<CertificateSigningRequest> = Api::all(client.clone());
    let mut ticker = tokio::time::interval(config.period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let list = match api.list(&Default::default()).await {
            Ok(list) => list.items,
            Err(err) => {
                tracing::warn!(%err, "listing certificatesigningrequests");
                continue;
            }
        };
        for csr in list {
            let name = csr.metadata.name.clone().unwrap_or_default();
            let result = tokio::select! {
                () = cancel.cancelled() => return,
                r = reconcile(&client, &config, csr) => r,
            };
            match result {
                Err(err) if err.is_conflict() => {
                    tracing::debug!(csr = %name, "conflict; retrying next round")
                }
                Err(err) => {
                    tracing::warn!(csr = %name, %err, "reconciling certificatesigningrequest")
                }
                Ok(()) => {}
            }
        }
    }
}

/// One reconcile of one request.
pub async fn reconcile(
    client: &kube::Client,
    config: &CertificateControllerConfig,
    csr: CertificateSigningRequest,
) -> Result<(), ControllerError> {
    let value = serde_json::to_value(&csr)?;
    let subject = request_pem(&value)
        .and_then(|pem| apiserver_auth::pki::csr_subject(&pem).map_err(|e| e.to_string()));
    let candidate = subject
        .as_ref()
        .ok()
        .and_then(|(cn, _)| cn.strip_prefix(AGENT_USER_PREFIX))
        .filter(|name| cluster_name_problems(name).is_empty())
        .map(str::to_owned);
    let exists = match &candidate {
        Some(name) => clusters(client).get_opt(name).await?.is_some(),
        None => false,
    };
    let action = decide(&value, subject.as_ref().map_err(String::as_str), |_| exists);
    let name = csr.metadata.name.clone().unwrap_or_default();
    match action {
        Action::Skip => Ok(()),
        Action::Deny { reason, message } => {
            tracing::info!(csr = %name, %reason, %message, "denying");
            add_condition(client, csr, CONDITION_DENIED, &reason, &message, "approval").await
        }
        Action::Approve { cluster } => {
            tracing::info!(csr = %name, %cluster, "approving agent certificate request");
            let message =
                format!("Auto approving the karmada-agent client certificate of cluster {cluster}");
            add_condition(
                client,
                csr,
                CONDITION_APPROVED,
                REASON_AUTO_APPROVED,
                &message,
                "approval",
            )
            .await
        }
        Action::Sign { cluster } => sign(client, config, csr, &cluster).await,
    }
}

fn condition(type_: &str, reason: &str, message: &str) -> CertificateSigningRequestCondition {
    let now = Time(jiff::Timestamp::now());
    CertificateSigningRequestCondition {
        type_: type_.to_owned(),
        status: "True".to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now),
    }
}

async fn add_condition(
    client: &kube::Client,
    mut csr: CertificateSigningRequest,
    type_: &str,
    reason: &str,
    message: &str,
    subresource: &str,
) -> Result<(), ControllerError> {
    let name = csr.metadata.name.clone().unwrap_or_default();
    csr.status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new)
        .push(condition(type_, reason, message));
    let api: Api<CertificateSigningRequest> = Api::all(client.clone());
    api.replace_subresource(subresource, &name, &PostParams::default(), &csr)
        .await?;
    Ok(())
}

async fn sign(
    client: &kube::Client,
    config: &CertificateControllerConfig,
    csr: CertificateSigningRequest,
    cluster: &str,
) -> Result<(), ControllerError> {
    let csr_name = csr.metadata.name.clone().unwrap_or_default();
    let Some(owner) = ensure_cluster(client, cluster, &csr_name).await? else {
        let message = format!(
            "cluster {cluster:?} was registered by another request meanwhile; unregister it first or choose another name"
        );
        return add_condition(
            client,
            csr,
            CONDITION_FAILED,
            REASON_CLUSTER_EXISTS,
            &message,
            "status",
        )
        .await;
    };
    ensure_namespace(client, LEASE_NAMESPACE).await?;
    ensure_namespace(client, &execution_namespace(cluster)).await?;
    ensure_lease(client, &owner).await?;
    let (role, binding) = agent_rbac::cluster_scoped(&owner);
    ensure::<ClusterRole>(Api::all(client.clone()), role).await?;
    ensure::<ClusterRoleBinding>(Api::all(client.clone()), binding).await?;
    for (role, binding) in [
        agent_rbac::lease_scoped(&owner),
        agent_rbac::execution_scoped(&owner),
    ] {
        let namespace = role["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        ensure::<Role>(Api::namespaced(client.clone(), &namespace), role).await?;
        ensure::<RoleBinding>(Api::namespaced(client.clone(), &namespace), binding).await?;
    }

    let validity = csr
        .spec
        .expiration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .map_or(DEFAULT_VALIDITY, |s| {
            Duration::from_secs(s).max(MIN_VALIDITY)
        });
    let pem = String::from_utf8_lossy(&csr.spec.request.0).into_owned();
    let signer = Arc::clone(&config.signer);
    let signed = tokio::task::spawn_blocking(move || signer.sign_client_csr(&pem, validity))
        .await
        .map_err(|e| ControllerError::Invalid(format!("signing task failed: {e}")))?;
    match signed {
        Ok(certificate) => {
            let mut csr = csr;
            csr.status.get_or_insert_with(Default::default).certificate =
                Some(ByteString(certificate.into_bytes()));
            let api: Api<CertificateSigningRequest> = Api::all(client.clone());
            api.replace_status(&csr_name, &PostParams::default(), &csr)
                .await?;
            tracing::info!(csr = %csr_name, %cluster, "issued agent certificate");
            Ok(())
        }
        Err(err) => {
            let message = format!("signing failed: {err}");
            add_condition(
                client,
                csr,
                CONDITION_FAILED,
                REASON_SIGNING_FAILED,
                &message,
                "status",
            )
            .await
        }
    }
}

/// The Cluster this request registers, created if absent. `None` when a Cluster of that name
/// exists that another request created (or that was joined in Push mode).
async fn ensure_cluster(
    client: &kube::Client,
    cluster: &str,
    csr_name: &str,
) -> Result<Option<ClusterOwner>, ControllerError> {
    let api = clusters(client);
    let existing = match api.get_opt(cluster).await? {
        Some(existing) => existing,
        None => {
            let object: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "cluster.karmada.io/v1alpha1",
                "kind": "Cluster",
                "metadata": {"name": cluster, "annotations": {ANNOTATION_REGISTERED_BY: csr_name}},
                "spec": {"syncMode": "Pull"},
            }))?;
            match api.create(&PostParams::default(), &object).await {
                Ok(created) => created,
                Err(kube::Error::Api(s)) if s.code == 409 => api.get(cluster).await?,
                Err(e) => return Err(e.into()),
            }
        }
    };
    let ours = existing
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_REGISTERED_BY))
        .is_some_and(|by| by == csr_name);
    Ok(ours.then(|| ClusterOwner {
        name: cluster.to_owned(),
        uid: existing.metadata.uid.clone().unwrap_or_default(),
    }))
}

async fn ensure_namespace(client: &kube::Client, name: &str) -> Result<(), ControllerError> {
    let namespace: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {LABEL_KARMADA_SYSTEM: MANAGED_VALUE}},
    }))?;
    let api: Api<Namespace> = Api::all(client.clone());
    if api.get_opt(name).await?.is_some() {
        return Ok(());
    }
    create_tolerating_exists(&api, &namespace).await
}

async fn ensure_lease(client: &kube::Client, owner: &ClusterOwner) -> Result<(), ControllerError> {
    let lease: Lease = serde_json::from_value(json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": owner.name,
            "namespace": LEASE_NAMESPACE,
            "ownerReferences": [{
                "apiVersion": "cluster.karmada.io/v1alpha1",
                "kind": "Cluster",
                "name": owner.name,
                "uid": owner.uid,
            }],
        },
        "spec": {"holderIdentity": owner.name, "leaseDurationSeconds": LEASE_DURATION_SECONDS},
    }))?;
    let api: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    create_tolerating_exists(&api, &lease).await
}

async fn ensure<K>(api: Api<K>, object: Value) -> Result<(), ControllerError>
where
    K: kube::Resource + Clone + Debug + Serialize + DeserializeOwned,
{
    let typed: K = serde_json::from_value(object)?;
    create_tolerating_exists(&api, &typed).await
}

async fn create_tolerating_exists<K>(api: &Api<K>, object: &K) -> Result<(), ControllerError>
where
    K: kube::Resource + Clone + Debug + Serialize + DeserializeOwned,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_hold() {
        let c = condition(CONDITION_APPROVED, REASON_AUTO_APPROVED, "ok");
        assert_eq!(c.status, "True");
        assert_eq!(c.type_, "Approved");
        assert_eq!(c.reason.as_deref(), Some("AutoApproved"));
    }
}
