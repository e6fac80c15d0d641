//! Impersonation (`kubectl --as`, `--as-group`, `--as-uid`): a request carrying `Impersonate-User`,
//! `Impersonate-Group` or `Impersonate-Uid` runs as the user it names, once the caller is allowed the
//! `impersonate` verb on each — users, groups and service accounts in the core group, uids in
//! `authentication.k8s.io` — as kube-apiserver decides it. `Impersonate-Extra-*` is refused: this server's users
//! carry no extra attributes, and dropping them silently would answer for someone else.

use apimachinery::ApiError;
use apiserver_auth::{
    AUTHENTICATED_GROUP, Authorizer, RequestAttributes, UNAUTHENTICATED_GROUP, UserInfo,
    forbidden_message,
};
use http::HeaderMap;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

fn header_values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect()
}

fn impersonate(group: &str, resource: &str, namespace: &str, name: &str) -> RequestAttributes {
    RequestAttributes {
        verb: "impersonate".into(),
        api_group: group.into(),
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        resource_request: true,
        ..RequestAttributes::default()
    }
}

/// The user a request acts as: `caller`, or the one its impersonation headers name once `caller` may act as
/// them.
pub(crate) async fn effective_user(
    authorizer: &dyn Authorizer,
    caller: UserInfo,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
    let user = header_values(headers, USER).first().copied();
    let groups = header_values(headers, GROUP);
    let uid = header_values(headers, UID).first().copied();
    if headers.keys().any(|k| k.as_str().starts_with(EXTRA_PREFIX)) {
        return Err(ApiError::forbidden(
            "Impersonate-Extra-* headers are not supported by this API server: impersonate with \
             Impersonate-User, Impersonate-Group and Impersonate-Uid only (kubectl --as, --as-group, --as-uid)",
        ));
    }
    let Some(name) = user else {
        if groups.is_empty() && uid.is_none() {
            return Ok(caller);
        }
        return Err(ApiError::bad_request(
            "requested impersonation of groups or a uid without a user: set Impersonate-User too (kubectl --as)",
        ));
    };
    let service_account = name
        .strip_prefix(SERVICE_ACCOUNT_PREFIX)
        .and_then(|rest| rest.split_once(':'));
    let mut checks = vec![match service_account {
        Some((namespace, account)) => impersonate("", "serviceaccounts", namespace, account),
        None => impersonate("", "users", "", name),
    }];
    checks.extend(groups.iter().map(|g| impersonate("", "groups", "", g)));
    checks.extend(uid.map(|u| impersonate("authentication.k8s.io", "uids", "", u)));
    for attributes in &checks {
        if !authorizer.authorize(&caller, attributes).await.is_allowed() {
            return Err(ApiError::forbidden(forbidden_message(&caller, attributes)));
        }
    }
    let mut impersonated = UserInfo {
        name: name.into(),
        uid: uid.unwrap_or_default().into(),
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
    };
    if let (Some((namespace, _)), true) = (service_account, groups.is_empty()) {
        impersonated.groups.push("system:serviceaccounts".into());
        impersonated
            .groups
            .push(format!("system:serviceaccounts:{namespace}"));
    }
    let implied = if name == apiserver_auth::ANONYMOUS_USER {
        UNAUTHENTICATED_GROUP
    } else {
        AUTHENTICATED_GROUP
    };
    if !impersonated.in_group(implied) {
        impersonated.groups.push(implied.into());
    }
    Ok(impersonated)
}

#[cfg(test)]
mod tests {
    use apiserver_auth::Decision;
    use http::HeaderValue;

    use super::*;

    /// alice may impersonate bob and the group `devs`, nothing else.
    struct Policy;

    #[async_trait::async_trait]
    impl Authorizer for Policy {
        async fn authorize(&self, user: &UserInfo, attrs: &RequestAttributes) -> Decision {
            let allowed = user.name == "alice"
                && attrs.verb == "impersonate"
                && matches!(
                    (attrs.resource.as_str(), attrs.name.as_str()),
                    ("users", "bob") | ("groups", "devs")
                );
            if allowed {
                Decision::Allow
            } else {
                Decision::Deny("no".into())
            }
        }
    }

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            uid: String::new(),
            groups: vec![AUTHENTICATED_GROUP.into()],
        }
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[tokio::test]
    async fn the_request_acts_as_the_named_user_when_the_caller_may_impersonate_them() {
        let none = effective_user(&Policy, alice(), &headers(&[]))
            .await
            .expect("caller");
        assert_eq!(none, alice());
        let bob = effective_user(
            &Policy,
            alice(),
            &headers(&[("impersonate-user", "bob"), ("impersonate-group", "devs")]),
        )
        .await
        .expect("allowed");
        assert_eq!(bob.name, "bob");
        assert_eq!(
            bob.groups,
            vec!["devs".to_string(), AUTHENTICATED_GROUP.to_string()]
        );
    }

    #[tokio::test]
    async fn impersonation_the_caller_may_not_do_is_refused_with_kube_apiservers_message() {
        // (headers, status code, message fragment)
        type Headers = Vec<(&'static str, &'static str)>;
        let cases: Vec<(Headers, u16, &str)> = vec![
            (
                vec![("impersonate-user", "carol")],
                403,
                "users \"carol\" is forbidden: User \"alice\" cannot impersonate resource \"users\"",
            ),
            (
                vec![
                    ("impersonate-user", "bob"),
                    ("impersonate-group", "system:masters"),
                ],
                403,
                "groups \"system:masters\" is forbidden",
            ),
            (
                vec![("impersonate-user", "system:serviceaccount:ns1:robot")],
                403,
                "cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"ns1\"",
            ),
            (vec![("impersonate-group", "devs")], 400, "without a user"),
            (
                vec![
                    ("impersonate-user", "bob"),
                    ("impersonate-extra-scopes", "x"),
                ],
                403,
                "Impersonate-Extra-*",
            ),
        ];
        for (pairs, code, fragment) in cases {
            let err = effective_user(&Policy, alice(), &headers(&pairs))
                .await
                .expect_err("refused");
            assert_eq!(err.code, code, "{pairs:?}: {}", err.message);
            assert!(err.message.contains(fragment), "{pairs:?}: {}", err.message);
        }
    }
}
