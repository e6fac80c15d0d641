//! The authorization interface: what a request wants to do, and the decision about it.

use crate::rbac::PolicyRule;
use crate::user::UserInfo;

/// What a request asks to do, in Kubernetes' authorizer terms.
///
/// For resource requests `verb` is one of get, list, watch, create, update, patch, delete,
/// deletecollection; for non-resource requests it is the lower-case HTTP method.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestAttributes {
    pub verb: String,
    /// `""` for the core group.
    pub api_group: String,
    pub resource: String,
    pub subresource: String,
    /// `""` for cluster-scoped requests (or all-namespace lists).
    pub namespace: String,
    pub name: String,
    /// False for requests such as `/healthz` or `/version` that address no resource.
    pub resource_request: bool,
    /// The URL path, used for non-resource requests.
    pub path: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Denied; the reason is for logs (the client sees [`forbidden_message`]).
    Deny(String),
}

impl Decision {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow)
    }
}

#[async_trait::async_trait]
pub trait Authorizer: Send + Sync {
    async fn authorize(&self, user: &UserInfo, attrs: &RequestAttributes) -> Decision;

    /// The rules `user` holds in `namespace`, cluster-wide ones included, as a SelfSubjectRulesReview reports
    /// them (`kubectl auth can-i --list`); `None` when this authorizer cannot enumerate them.
    async fn rules(&self, _user: &UserInfo, _namespace: &str) -> Option<Vec<PolicyRule>> {
        None
    }
}

/// Everything, on every resource and every path: the rules of a user nothing is denied to.
pub fn unrestricted_rules() -> Vec<PolicyRule> {
    let all = || vec!["*".to_owned()];
    vec![
        PolicyRule {
            verbs: all(),
            api_groups: all(),
            resources: all(),
            ..PolicyRule::default()
        },
        PolicyRule {
            verbs: all(),
            non_resource_urls: all(),
            ..PolicyRule::default()
        },
    ]
}

/// Allows everything (plain-HTTP test mode).
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysAllow;

#[async_trait::async_trait]
impl Authorizer for AlwaysAllow {
    async fn authorize(&self, _user: &UserInfo, _attrs: &RequestAttributes) -> Decision {
        Decision::Allow
    }

    async fn rules(&self, _user: &UserInfo, _namespace: &str) -> Option<Vec<PolicyRule>> {
        Some(unrestricted_rules())
    }
}

/// The message of a 403 Status, in the form kube-apiserver uses (kubectl users recognise it).
pub fn forbidden_message(user: &UserInfo, attrs: &RequestAttributes) -> String {
    if !attrs.resource_request {
        let verb = attrs.verb.to_lowercase();
        return format!(
            "forbidden: User \"{}\" cannot {verb} path \"{}\"",
            user.name, attrs.path
        );
    }
    let qualified = if attrs.api_group.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}.{}", attrs.resource, attrs.api_group)
    };
    let subject = if attrs.name.is_empty() {
        format!("{qualified} is forbidden")
    } else {
        format!("{qualified} \"{}\" is forbidden", attrs.name)
    };
    let what = if attrs.subresource.is_empty() {
        format!("resource \"{}\"", attrs.resource)
    } else {
        format!("resource \"{}/{}\"", attrs.resource, attrs.subresource)
    };
    let scope = if attrs.namespace.is_empty() {
        "at the cluster scope".to_owned()
    } else {
        format!("in the namespace \"{}\"", attrs.namespace)
    };
    format!(
        "{subject}: User \"{}\" cannot {} {what} in API group \"{}\" {scope}",
        user.name, attrs.verb, attrs.api_group
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            uid: String::new(),
            groups: vec![],
        }
    }

    fn attrs(
        verb: &str,
        group: &str,
        res: &str,
        sub: &str,
        ns: &str,
        name: &str,
    ) -> RequestAttributes {
        RequestAttributes {
            verb: verb.into(),
            api_group: group.into(),
            resource: res.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
            resource_request: true,
            path: String::new(),
        }
    }

    #[test]
    fn forbidden_messages_match_kube_apiserver_forms() {
        let cases = [
            (
                attrs("create", "apps", "deployments", "", "default", "x"),
                r#"deployments.apps "x" is forbidden: User "alice" cannot create resource "deployments" in API group "apps" in the namespace "default""#,
            ),
            (
                attrs("list", "", "pods", "", "default", ""),
                r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#,
            ),
            (
                attrs("list", "", "nodes", "", "", ""),
                r#"nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope"#,
            ),
            (
                attrs("get", "", "namespaces", "", "", "kube-system"),
                r#"namespaces "kube-system" is forbidden: User "alice" cannot get resource "namespaces" in API group "" at the cluster scope"#,
            ),
            (
                attrs("update", "apps", "deployments", "scale", "ns1", "web"),
                r#"deployments.apps "web" is forbidden: User "alice" cannot update resource "deployments/scale" in API group "apps" in the namespace "ns1""#,
            ),
            (
                RequestAttributes {
                    verb: "get".into(),
                    path: "/metrics".into(),
                    ..Default::default()
                },
                r#"forbidden: User "alice" cannot get path "/metrics""#,
            ),
        ];
        for (a, want) in cases {
            assert_eq!(forbidden_message(&alice(), &a), want, "{a:?}");
        }
    }

    #[tokio::test]
    async fn always_allow_allows() {
        let d = AlwaysAllow
            .authorize(
                &UserInfo::anonymous(),
                &attrs("delete", "", "pods", "", "a", "b"),
            )
            .await;
        assert!(d.is_allowed());
    }

    #[test]
    fn admin_is_master_and_anonymous_is_not() {
        assert!(UserInfo::admin().is_master());
        assert!(!UserInfo::anonymous().is_master());
        assert_eq!(
            UserInfo::anonymous().groups,
            vec![crate::UNAUTHENTICATED_GROUP]
        );
    }
}
