//! The review APIs: create-only requests that ask a question and are never stored.
//!
//! - `authorization.k8s.io/v1` SelfSubjectAccessReview (`kubectl auth can-i`), SubjectAccessReview (`kubectl auth
//!   can-i --as`, webhooks asking on someone's behalf), LocalSubjectAccessReview (the same, within one namespace),
//!   SelfSubjectRulesReview (`kubectl auth can-i --list`);
//! - `authentication.k8s.io/v1` SelfSubjectReview (`kubectl auth whoami`).
//!
//! Each answer is the request's object with its `status` filled in, as kube-apiserver returns it (201 Created).
//! Access reviews ask the server's own authorizer, so the answer is the decision a real request would get.
//! The pure parts (decoding a review into authorizer attributes, rendering rules) are separate from [`serve`].

use apimachinery::{ApiError, FieldError};
use apiserver_auth::rbac::PolicyRule;
use apiserver_auth::{Authorizer, Decision, RequestAttributes, UserInfo};
use serde_json::{Map, Value, json};

const AUTHORIZATION: &str = "authorization.k8s.io";
const AUTHENTICATION: &str = "authentication.k8s.io";

/// Which review a request creates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Review {
    SelfSubjectAccess,
    SubjectAccess,
    /// The namespace of the URL.
    LocalSubjectAccess(String),
    SelfSubjectRules,
    SelfSubject,
}

impl Review {
    /// The review a URL path (split into segments) addresses, if any.
    pub(crate) fn parse(segments: &[&str]) -> Option<Review> {
        match segments {
            ["apis", AUTHORIZATION, "v1", "selfsubjectaccessreviews"] => {
                Some(Review::SelfSubjectAccess)
            }
            ["apis", AUTHORIZATION, "v1", "subjectaccessreviews"] => Some(Review::SubjectAccess),
            [
                "apis",
                AUTHORIZATION,
                "v1",
                "namespaces",
                namespace,
                "localsubjectaccessreviews",
            ] => Some(Review::LocalSubjectAccess((*namespace).to_owned())),
            ["apis", AUTHORIZATION, "v1", "selfsubjectrulesreviews"] => {
                Some(Review::SelfSubjectRules)
            }
            ["apis", AUTHENTICATION, "v1", "selfsubjectreviews"] => Some(Review::SelfSubject),
            _ => None,
        }
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Review::SelfSubjectAccess => "SelfSubjectAccessReview",
            Review::SubjectAccess => "SubjectAccessReview",
            Review::LocalSubjectAccess(_) => "LocalSubjectAccessReview",
            Review::SelfSubjectRules => "SelfSubjectRulesReview",
            Review::SelfSubject => "SelfSubjectReview",
        }
    }

    fn group(&self) -> &'static str {
        match self {
            Review::SelfSubject => AUTHENTICATION,
            _ => AUTHORIZATION,
        }
    }

    /// What creating this review asks of the authorizer (the default roles let every user create the self
    /// reviews; the others need a grant).
    pub(crate) fn request_attributes(&self, path: &str) -> RequestAttributes {
        RequestAttributes {
            verb: "create".into(),
            api_group: self.group().into(),
            resource: format!("{}s", self.kind().to_ascii_lowercase()),
            namespace: match self {
                Review::LocalSubjectAccess(namespace) => namespace.clone(),
                _ => String::new(),
            },
            resource_request: true,
            path: path.into(),
            ..RequestAttributes::default()
        }
    }

    fn invalid(&self, errors: &[FieldError]) -> ApiError {
        ApiError::invalid(self.group(), self.kind(), "", errors)
    }
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The authorizer attributes an access review's `spec` asks about; `url_namespace` is set for a
/// LocalSubjectAccessReview, whose resource attributes must name that namespace.
fn access_attributes(
    review: &Review,
    spec: &Value,
    url_namespace: Option<&str>,
) -> Result<RequestAttributes, ApiError> {
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (resource, non_resource) {
        (Some(attributes), None) => {
            let namespace = str_field(attributes, "namespace");
            if let Some(expected) = url_namespace
                && namespace != expected
            {
                return Err(review.invalid(&[FieldError::invalid(
                    "spec.resourceAttributes.namespace",
                    json!(namespace),
                    format!("must be {expected:?}, the namespace of the request's URL"),
                )]));
            }
            Ok(RequestAttributes {
                verb: str_field(attributes, "verb").into(),
                api_group: str_field(attributes, "group").into(),
                resource: str_field(attributes, "resource").into(),
                subresource: str_field(attributes, "subresource").into(),
                namespace: namespace.into(),
                name: str_field(attributes, "name").into(),
                resource_request: true,
                path: String::new(),
            })
        }
        (None, Some(attributes)) if url_namespace.is_none() => Ok(RequestAttributes {
            verb: str_field(attributes, "verb").into(),
            path: str_field(attributes, "path").into(),
            resource_request: false,
            ..RequestAttributes::default()
        }),
        (None, Some(_)) => Err(review.invalid(&[FieldError::invalid(
            "spec.nonResourceAttributes",
            json!({}),
            "disallowed on a namespaced review: ask with spec.resourceAttributes",
        )])),
        _ => Err(review.invalid(&[FieldError::invalid(
            "spec.resourceAttributes",
            json!(resource.is_some()),
            "exactly one of spec.resourceAttributes (namespace, verb, group, resource, subresource, name) or \
             spec.nonResourceAttributes (path, verb) must be set",
        )])),
    }
}

/// The user a SubjectAccessReview asks about.
fn subject_of(review: &Review, spec: &Value) -> Result<UserInfo, ApiError> {
    let user = UserInfo {
        name: str_field(spec, "user").into(),
        uid: str_field(spec, "uid").into(),
        groups: crate::objects::string_list(spec.get("groups")),
    };
    if user.name.is_empty() && user.groups.is_empty() {
        return Err(review.invalid(&[FieldError::invalid(
            "spec.user",
            json!(""),
            "at least one of spec.user or spec.groups must be set",
        )]));
    }
    Ok(user)
}

fn access_status(decision: Decision) -> Value {
    match decision {
        Decision::Allow => json!({"allowed": true}),
        Decision::Deny(reason) => json!({"allowed": false, "reason": reason}),
    }
}

/// A SelfSubjectRulesReview's status: resource rules and non-resource rules apart, as kube-apiserver reports them.
fn rules_status(rules: Option<Vec<PolicyRule>>) -> Value {
    let Some(rules) = rules else {
        return json!({"resourceRules": [], "nonResourceRules": [], "incomplete": true,
                       "evaluationError": "this server's authorizer cannot list rules"});
    };
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in rules {
        if !rule.resources.is_empty() {
            let mut entry = Map::new();
            entry.insert("verbs".into(), json!(rule.verbs));
            entry.insert("apiGroups".into(), json!(rule.api_groups));
            entry.insert("resources".into(), json!(rule.resources));
            if !rule.resource_names.is_empty() {
                entry.insert("resourceNames".into(), json!(rule.resource_names));
            }
            resource_rules.push(Value::Object(entry));
        }
        if !rule.non_resource_urls.is_empty() {
            non_resource_rules
                .push(json!({"verbs": rule.verbs, "nonResourceURLs": rule.non_resource_urls}));
        }
    }
    json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false})
}

fn user_info(user: &UserInfo) -> Value {
    let mut info = Map::new();
    info.insert("username".into(), json!(user.name));
    if !user.uid.is_empty() {
        info.insert("uid".into(), json!(user.uid));
    }
    info.insert("groups".into(), json!(user.groups));
    Value::Object(info)
}

/// The review object a request sent: JSON, or protobuf as kubectl sends it (`content_type`); an empty body is an
/// empty review.
pub(crate) fn decode(
    review: &Review,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    let protobuf =
        content_type.is_some_and(|t| t.starts_with(apiserver_views::protobuf::CONTENT_TYPE));
    let object: Value = if protobuf {
        crate::hooks::decode_protobuf(body)?
    } else {
        serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the body of a {} is not JSON ({e}); send a JSON object with its spec",
                review.kind()
            ))
        })?
    };
    let kind = str_field(&object, "kind");
    if !kind.is_empty() && kind != review.kind() {
        return Err(ApiError::bad_request(format!(
            "this URL creates a {}, the body is a {kind}",
            review.kind()
        )));
    }
    Ok(object)
}

/// Answers the review `object` created by `user`.
pub(crate) async fn serve(
    authorizer: &dyn Authorizer,
    user: &UserInfo,
    review: &Review,
    mut object: Value,
) -> Result<Value, ApiError> {
    let Some(map) = object.as_object_mut() else {
        return Err(ApiError::bad_request(format!(
            "the body of a {} must be a JSON object with its spec",
            review.kind()
        )));
    };
    let spec = map.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = match review {
        Review::SelfSubjectAccess => {
            let attributes = access_attributes(review, &spec, None)?;
            access_status(authorizer.authorize(user, &attributes).await)
        }
        Review::SubjectAccess => {
            let attributes = access_attributes(review, &spec, None)?;
            let subject = subject_of(review, &spec)?;
            access_status(authorizer.authorize(&subject, &attributes).await)
        }
        Review::LocalSubjectAccess(namespace) => {
            let attributes = access_attributes(review, &spec, Some(namespace))?;
            let subject = subject_of(review, &spec)?;
            access_status(authorizer.authorize(&subject, &attributes).await)
        }
        Review::SelfSubjectRules => {
            rules_status(authorizer.rules(user, str_field(&spec, "namespace")).await)
        }
        Review::SelfSubject => json!({"userInfo": user_info(user)}),
    };
    map.insert("apiVersion".into(), json!(format!("{}/v1", review.group())));
    map.insert("kind".into(), json!(review.kind()));
    let metadata = map.entry("metadata").or_insert_with(|| json!({}));
    if let (Some(metadata), Review::LocalSubjectAccess(namespace)) =
        (metadata.as_object_mut(), review)
    {
        metadata.insert("namespace".into(), json!(namespace));
    }
    map.insert("status".into(), status);
    Ok(object)
}

#[cfg(test)]
mod tests {
    use apiserver_auth::rbac::{ClusterRole, ClusterRoleBinding, RbacPolicy, Role, RoleBinding};
    use serde_json::from_value;

    use super::*;

    /// An authorizer over a fixed RBAC policy.
    struct Fixed(RbacPolicy);

    #[async_trait::async_trait]
    impl Authorizer for Fixed {
        async fn authorize(&self, user: &UserInfo, attrs: &RequestAttributes) -> Decision {
            self.0.authorize(user, attrs)
        }

        async fn rules(&self, user: &UserInfo, namespace: &str) -> Option<Vec<PolicyRule>> {
            Some(self.0.rules_for(user, namespace))
        }
    }

    /// alice may read Deployments everywhere and create ConfigMaps in `team-a`.
    fn policy() -> Fixed {
        let reader: ClusterRole = from_value(json!({"metadata": {"name": "reader"}, "rules": [
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]}]}))
        .expect("role");
        let reader_binding: ClusterRoleBinding = from_value(json!({"metadata": {"name": "r"},
            "roleRef": {"kind": "ClusterRole", "name": "reader"},
            "subjects": [{"kind": "User", "name": "alice"}]}))
        .expect("binding");
        let writer: Role = from_value(
            json!({"metadata": {"name": "cm", "namespace": "team-a"}, "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]}),
        )
        .expect("role");
        let writer_binding: RoleBinding = from_value(json!({"metadata": {"name": "w", "namespace": "team-a"},
            "roleRef": {"kind": "Role", "name": "cm"}, "subjects": [{"kind": "User", "name": "alice"}]}))
        .expect("binding");
        Fixed(RbacPolicy::from_objects(
            &[writer],
            &[reader],
            &[writer_binding],
            &[reader_binding],
        ))
    }

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            uid: "u-1".into(),
            groups: vec!["system:authenticated".into()],
        }
    }

    async fn answer(review: Review, user: &UserInfo, body: Value) -> Result<Value, ApiError> {
        serve(&policy(), user, &review, body).await
    }

    #[tokio::test]
    async fn access_reviews_answer_with_the_authorizers_decision() {
        let ask = |namespace: &str, verb: &str, group: &str, resource: &str| {
            json!({"spec": {"resourceAttributes":
                {"namespace": namespace, "verb": verb, "group": group, "resource": resource}}})
        };
        // (review, body, allowed)
        let cases = vec![
            (
                Review::SelfSubjectAccess,
                ask("", "list", "apps", "deployments"),
                true,
            ),
            (
                Review::SelfSubjectAccess,
                ask("", "delete", "apps", "deployments"),
                false,
            ),
            (
                Review::SelfSubjectAccess,
                ask("team-a", "create", "", "configmaps"),
                true,
            ),
            (
                Review::SelfSubjectAccess,
                ask("team-b", "create", "", "configmaps"),
                false,
            ),
            (
                Review::SubjectAccess,
                {
                    let mut body = ask("team-a", "create", "", "configmaps");
                    body["spec"]["user"] = json!("alice");
                    body
                },
                true,
            ),
            (
                Review::SubjectAccess,
                {
                    let mut body = ask("team-a", "create", "", "configmaps");
                    body["spec"]["user"] = json!("bob");
                    body
                },
                false,
            ),
            (
                Review::LocalSubjectAccess("team-a".into()),
                {
                    let mut body = ask("team-a", "create", "", "configmaps");
                    body["spec"]["user"] = json!("alice");
                    body
                },
                true,
            ),
        ];
        for (review, body, allowed) in cases {
            let answer = answer(review.clone(), &alice(), body.clone())
                .await
                .expect("answered");
            assert_eq!(answer["status"]["allowed"], allowed, "{review:?} {body}");
            assert_eq!(answer["kind"], review.kind());
            assert_eq!(answer["apiVersion"], "authorization.k8s.io/v1");
            assert_eq!(answer["spec"], body["spec"], "the question is echoed");
            if !allowed {
                assert!(
                    answer["status"]["reason"]
                        .as_str()
                        .is_some_and(|r| !r.is_empty())
                );
            }
        }
    }

    #[tokio::test]
    async fn malformed_reviews_are_invalid_with_the_field_and_the_accepted_form() {
        // (review, body, field, message fragment)
        let cases = vec![
            (
                Review::SelfSubjectAccess,
                json!({"spec": {}}),
                "spec.resourceAttributes",
                "exactly one of",
            ),
            (
                Review::SubjectAccess,
                json!({"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}}),
                "spec.user",
                "spec.user or spec.groups",
            ),
            (
                Review::LocalSubjectAccess("team-a".into()),
                json!({"spec": {"user": "alice", "resourceAttributes": {"namespace": "team-b", "verb": "get"}}}),
                "spec.resourceAttributes.namespace",
                "\"team-a\"",
            ),
            (
                Review::LocalSubjectAccess("team-a".into()),
                json!({"spec": {"user": "alice", "nonResourceAttributes": {"path": "/healthz", "verb": "get"}}}),
                "spec.nonResourceAttributes",
                "spec.resourceAttributes",
            ),
        ];
        for (review, body, field, fragment) in cases {
            let err = answer(review.clone(), &alice(), body)
                .await
                .expect_err("invalid");
            assert_eq!(
                (err.code, err.reason.as_str()),
                (422, "Invalid"),
                "{review:?}"
            );
            let status = err.to_status();
            assert_eq!(status["details"]["causes"][0]["field"], field, "{review:?}");
            assert!(
                err.message.contains(fragment),
                "{review:?}: {}",
                err.message
            );
        }
        for (content_type, body) in [
            (Some("application/json"), &b"{not json"[..]),
            (
                Some("application/vnd.kubernetes.protobuf"),
                &b"k8s\0\x0a\xff"[..],
            ),
            (None, &br#"{"kind": "SubjectAccessReview"}"#[..]),
        ] {
            let err =
                decode(&Review::SelfSubjectAccess, content_type, body).expect_err("bad request");
            assert_eq!(
                (err.code, err.reason.as_str()),
                (400, "BadRequest"),
                "{}",
                err.message
            );
        }
        assert_eq!(
            decode(&Review::SelfSubject, None, b"").expect("empty"),
            json!({})
        );
    }

    #[tokio::test]
    async fn rules_review_lists_cluster_wide_and_namespace_rules() {
        let in_team_a = answer(
            Review::SelfSubjectRules,
            &alice(),
            json!({"spec": {"namespace": "team-a"}}),
        )
        .await
        .expect("answered");
        assert_eq!(
            in_team_a["status"]["resourceRules"],
            json!([
                {"verbs": ["get", "list"], "apiGroups": ["apps"], "resources": ["deployments"]},
                {"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"]}])
        );
        assert_eq!(in_team_a["status"]["incomplete"], false);
        let elsewhere = answer(
            Review::SelfSubjectRules,
            &alice(),
            json!({"spec": {"namespace": "team-b"}}),
        )
        .await
        .expect("answered");
        assert_eq!(
            elsewhere["status"]["resourceRules"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        let admin = answer(
            Review::SelfSubjectRules,
            &UserInfo::admin(),
            json!({"spec": {"namespace": "x"}}),
        )
        .await
        .expect("answered");
        assert_eq!(
            admin["status"]["nonResourceRules"][0]["nonResourceURLs"],
            json!(["*"])
        );
    }

    #[tokio::test]
    async fn self_subject_review_says_who_the_caller_is() {
        let answer = answer(Review::SelfSubject, &alice(), json!({}))
            .await
            .expect("answered");
        assert_eq!(answer["apiVersion"], "authentication.k8s.io/v1");
        assert_eq!(
            answer["status"]["userInfo"],
            json!({"username": "alice", "uid": "u-1", "groups": ["system:authenticated"]})
        );
    }

    #[test]
    fn paths_name_their_review() {
        let split = |path: &str| -> Option<Review> {
            let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
            Review::parse(&segments)
        };
        assert_eq!(
            split("/apis/authorization.k8s.io/v1/namespaces/team-a/localsubjectaccessreviews"),
            Some(Review::LocalSubjectAccess("team-a".into()))
        );
        assert_eq!(
            split("/apis/authentication.k8s.io/v1/selfsubjectreviews"),
            Some(Review::SelfSubject)
        );
        assert_eq!(
            split("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/x"),
            None
        );
        let attributes = Review::LocalSubjectAccess("team-a".into()).request_attributes("/p");
        assert_eq!(
            (attributes.resource.as_str(), attributes.namespace.as_str()),
            ("localsubjectaccessreviews", "team-a")
        );
    }
}
