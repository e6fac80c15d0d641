//! Which CertificateSigningRequests the agent CSR approver acts on, and how (pure).
//!
//! A request is ours when it asks signer `kubernetes.io/kube-apiserver-client` for a subject
//! `CN=system:karmada:agent:<cluster>, O=system:karmada:agents` and was created by a bootstrap
//! token user (`system:bootstrap:<id>`, which the API server stamps, so it cannot be forged).
//! Requests of other signers or users are left alone (someone else may approve them); requests
//! of bootstrap users for any other subject, or for an invalid cluster name, are denied.
//! A new Cluster name that is already registered is denied too: a token holder must not take
//! over an existing member.

use base64::Engine;
use serde_json::Value;

/// The signer of client certificates for the control plane's API server.
pub const SIGNER_KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";
/// Prefix of an agent's user name (its certificate CN); the cluster name follows.
pub const AGENT_USER_PREFIX: &str = "system:karmada:agent:";
/// The group of every agent (its certificate O).
pub const AGENTS_GROUP: &str = "system:karmada:agents";
/// Prefix of bootstrap token users.
pub const BOOTSTRAP_USER_PREFIX: &str = "system:bootstrap:";
/// Karmada's limit on cluster names.
pub const MAX_CLUSTER_NAME_LENGTH: usize = 48;

pub const CONDITION_APPROVED: &str = "Approved";
pub const CONDITION_DENIED: &str = "Denied";
pub const CONDITION_FAILED: &str = "Failed";
pub const REASON_AUTO_APPROVED: &str = "AutoApproved";
pub const REASON_INVALID_SUBJECT: &str = "InvalidAgentSubject";
pub const REASON_INVALID_CLUSTER_NAME: &str = "InvalidClusterName";
pub const REASON_CLUSTER_EXISTS: &str = "ClusterAlreadyExists";
pub const REASON_INVALID_REQUEST: &str = "InvalidRequest";
pub const REASON_SIGNING_FAILED: &str = "SigningFailed";

/// The user name of the agent of `cluster`.
pub fn agent_user(cluster: &str) -> String {
    format!("{AGENT_USER_PREFIX}{cluster}")
}

/// What to do with one CertificateSigningRequest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Not ours, or already finished (denied, failed, issued).
    Skip,
    /// Deny with this reason and message.
    Deny { reason: String, message: String },
    /// Approve the request of the agent of this cluster.
    Approve { cluster: String },
    /// Approved already: set up the agent's access, then sign.
    Sign { cluster: String },
}

/// The subject the CSR asks for: its CN and Os.
pub type Subject = (String, Vec<String>);

/// Decides about `csr`. `subject` is the parsed request (`Err` with a message when unreadable);
/// `cluster_exists` tells whether the Cluster named by the subject exists already.
pub fn decide(
    csr: &Value,
    subject: Result<&Subject, &str>,
    cluster_exists: impl Fn(&str) -> bool,
) -> Action {
    let spec = &csr["spec"];
    if spec["signerName"].as_str() != Some(SIGNER_KUBE_APISERVER_CLIENT) {
        return Action::Skip;
    }
    let requestor = spec["username"].as_str().unwrap_or_default();
    if !requestor.starts_with(BOOTSTRAP_USER_PREFIX) {
        return Action::Skip;
    }
    let holds = |type_: &str| {
        csr["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter().any(|c| {
                c["type"].as_str() == Some(type_)
                    && matches!(c["status"].as_str(), None | Some("True"))
            })
        })
    };
    let issued = csr["status"]["certificate"]
        .as_str()
        .is_some_and(|c| !c.is_empty());
    if issued || holds(CONDITION_DENIED) || holds(CONDITION_FAILED) {
        return Action::Skip;
    }
    let (common_name, groups) = match subject {
        Ok(subject) => subject,
        Err(message) => {
            return Action::Deny {
                reason: REASON_INVALID_REQUEST.into(),
                message: format!(
                    "the request is not a readable PEM certificate request: {message}"
                ),
            };
        }
    };
    let Some(cluster) = common_name.strip_prefix(AGENT_USER_PREFIX) else {
        return deny_subject(common_name, groups);
    };
    if groups.len() != 1 || groups[0] != AGENTS_GROUP {
        return deny_subject(common_name, groups);
    }
    let problems = cluster_name_problems(cluster);
    if !problems.is_empty() {
        return Action::Deny {
            reason: REASON_INVALID_CLUSTER_NAME.into(),
            message: format!("invalid cluster name {cluster:?}: {}", problems.join("; ")),
        };
    }
    if holds(CONDITION_APPROVED) {
        return Action::Sign {
            cluster: cluster.to_owned(),
        };
    }
    if cluster_exists(cluster) {
        return Action::Deny {
            reason: REASON_CLUSTER_EXISTS.into(),
            message: format!(
                "cluster {cluster:?} is already registered; unregister it first or choose another name"
            ),
        };
    }
    Action::Approve {
        cluster: cluster.to_owned(),
    }
}

fn deny_subject(common_name: &str, groups: &[String]) -> Action {
    Action::Deny {
        reason: REASON_INVALID_SUBJECT.into(),
        message: format!(
            "a bootstrap token may only request CN={AGENT_USER_PREFIX}<cluster>, O={AGENTS_GROUP}; got CN={common_name:?}, O={groups:?}"
        ),
    }
}

/// Problems with a cluster name (a DNS-1123 label of at most 48 characters).
pub fn cluster_name_problems(name: &str) -> Vec<String> {
    let mut problems = apimachinery::names::dns1123_label_problems(name);
    if name.len() > MAX_CLUSTER_NAME_LENGTH {
        problems.push(format!(
            "must be no more than {MAX_CLUSTER_NAME_LENGTH} characters"
        ));
    }
    problems
}

/// The PEM text of `spec.request` (base64 in JSON).
pub fn request_pem(csr: &Value) -> Result<String, String> {
    let encoded = csr["spec"]["request"]
        .as_str()
        .ok_or_else(|| "spec.request is missing".to_string())?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("spec.request is not base64: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "spec.request is not PEM text".to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn csr(signer: &str, user: &str, status: Value) -> Value {
        json!({"spec": {"signerName": signer, "username": user, "request": "x"}, "status": status})
    }

    fn subject(cn: &str, os: &[&str]) -> Subject {
        (cn.to_owned(), os.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn decisions() {
        let agent = subject("system:karmada:agent:m1", &[AGENTS_GROUP]);
        let client = SIGNER_KUBE_APISERVER_CLIENT;
        let boot = "system:bootstrap:abcdef";
        let approved = json!({"conditions": [{"type": "Approved", "status": "True"}]});
        let none = |_: &str| false;
        let taken = |name: &str| name == "m1";
        type Case<'a> = (&'a str, Value, Result<Subject, &'a str>, bool, Action);
        let cases: Vec<Case<'_>> = vec![
            (
                "fresh agent request",
                csr(client, boot, json!({})),
                Ok(agent.clone()),
                false,
                Action::Approve {
                    cluster: "m1".into(),
                },
            ),
            (
                "approved, not issued",
                csr(client, boot, approved.clone()),
                Ok(agent.clone()),
                true,
                Action::Sign {
                    cluster: "m1".into(),
                },
            ),
            (
                "issued",
                {
                    let mut c = csr(client, boot, approved.clone());
                    c["status"]["certificate"] = json!("LS0t");
                    c
                },
                Ok(agent.clone()),
                false,
                Action::Skip,
            ),
            (
                "other signer",
                csr("example.com/other", boot, json!({})),
                Ok(agent.clone()),
                false,
                Action::Skip,
            ),
            (
                "not a bootstrap user",
                csr(client, "alice", json!({})),
                Ok(agent.clone()),
                false,
                Action::Skip,
            ),
            (
                "denied already",
                csr(
                    client,
                    boot,
                    json!({"conditions": [{"type": "Denied", "status": "True"}]}),
                ),
                Ok(agent.clone()),
                false,
                Action::Skip,
            ),
            (
                "admin subject",
                csr(client, boot, json!({})),
                Ok(subject("system:admin", &["system:masters"])),
                false,
                Action::Deny {
                    reason: REASON_INVALID_SUBJECT.into(),
                    message: String::new(),
                },
            ),
            (
                "extra group",
                csr(client, boot, json!({})),
                Ok(subject(
                    "system:karmada:agent:m1",
                    &[AGENTS_GROUP, "system:masters"],
                )),
                false,
                Action::Deny {
                    reason: REASON_INVALID_SUBJECT.into(),
                    message: String::new(),
                },
            ),
            (
                "bad cluster name",
                csr(client, boot, json!({})),
                Ok(subject("system:karmada:agent:Bad_Name", &[AGENTS_GROUP])),
                false,
                Action::Deny {
                    reason: REASON_INVALID_CLUSTER_NAME.into(),
                    message: String::new(),
                },
            ),
            (
                "duplicate cluster",
                csr(client, boot, json!({})),
                Ok(agent.clone()),
                true,
                Action::Deny {
                    reason: REASON_CLUSTER_EXISTS.into(),
                    message: String::new(),
                },
            ),
            (
                "unreadable request",
                csr(client, boot, json!({})),
                Err("garbage"),
                false,
                Action::Deny {
                    reason: REASON_INVALID_REQUEST.into(),
                    message: String::new(),
                },
            ),
        ];
        for (what, object, subject, exists, want) in cases {
            let got = if exists {
                decide(&object, subject.as_ref().map_err(|e| *e), taken)
            } else {
                decide(&object, subject.as_ref().map_err(|e| *e), none)
            };
            match (&got, &want) {
                (Action::Deny { reason, message }, Action::Deny { reason: want, .. }) => {
                    assert_eq!(reason, want, "{what}");
                    assert!(!message.is_empty(), "{what}");
                }
                _ => assert_eq!(got, want, "{what}"),
            }
        }
    }

    #[test]
    fn request_pem_decodes_base64() {
        let encoded = base64::engine::general_purpose::STANDARD.encode("PEM");
        assert_eq!(
            request_pem(&json!({"spec": {"request": encoded}})).unwrap(),
            "PEM"
        );
        assert!(request_pem(&json!({"spec": {}})).is_err());
        assert!(request_pem(&json!({"spec": {"request": "!!"}})).is_err());
    }
}
