//! Discovery of the review resources (`authorization.k8s.io/v1` access and rules reviews,
//! `authentication.k8s.io/v1` SelfSubjectReview): create-only, never stored, so they have no
//! `ResourceDef` and are listed here with the one verb they take. kubectl needs them in discovery
//! to map `kubectl create -f` of a review to its URL.

use serde_json::{Value, json};

struct ReviewResource {
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
}

const VERSION: &str = "v1";

const REVIEWS: &[ReviewResource] = &[
    ReviewResource {
        group: "authentication.k8s.io",
        kind: "SelfSubjectReview",
        plural: "selfsubjectreviews",
        namespaced: false,
    },
    ReviewResource {
        group: "authorization.k8s.io",
        kind: "LocalSubjectAccessReview",
        plural: "localsubjectaccessreviews",
        namespaced: true,
    },
    ReviewResource {
        group: "authorization.k8s.io",
        kind: "SelfSubjectAccessReview",
        plural: "selfsubjectaccessreviews",
        namespaced: false,
    },
    ReviewResource {
        group: "authorization.k8s.io",
        kind: "SelfSubjectRulesReview",
        plural: "selfsubjectrulesreviews",
        namespaced: false,
    },
    ReviewResource {
        group: "authorization.k8s.io",
        kind: "SubjectAccessReview",
        plural: "subjectaccessreviews",
        namespaced: false,
    },
];

/// The review groups, in order.
fn groups() -> Vec<&'static str> {
    let mut groups: Vec<&str> = REVIEWS.iter().map(|r| r.group).collect();
    groups.dedup();
    groups
}

fn in_group(group: &str) -> impl Iterator<Item = &'static ReviewResource> + '_ {
    REVIEWS.iter().filter(move |r| r.group == group)
}

fn scope(review: &ReviewResource) -> &'static str {
    if review.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    }
}

/// Items of the aggregated `/apis` document.
pub(crate) fn aggregated_items() -> Vec<Value> {
    groups()
        .into_iter()
        .map(|group| {
            let resources: Vec<Value> = in_group(group)
                .map(|r| {
                    json!({"resource": r.plural, "responseKind": {"group": group, "version": VERSION, "kind": r.kind},
                           "scope": scope(r), "singularResource": r.kind.to_ascii_lowercase(), "verbs": ["create"]})
                })
                .collect();
            json!({"metadata": {"name": group, "creationTimestamp": null},
                   "versions": [{"version": VERSION, "resources": resources, "freshness": "Current"}]})
        })
        .collect()
}

fn api_group(group: &str) -> Value {
    let version = json!({"groupVersion": format!("{group}/{VERSION}"), "version": VERSION});
    json!({"name": group, "versions": [version], "preferredVersion": version})
}

/// Entries of the legacy `APIGroupList`.
pub(crate) fn legacy_groups() -> Vec<Value> {
    groups().into_iter().map(api_group).collect()
}

/// The legacy `APIGroup` of a review group.
pub(crate) fn legacy_group(group: &str) -> Option<Value> {
    groups().contains(&group).then(|| {
        let mut document = api_group(group);
        if let Value::Object(map) = &mut document {
            map.insert("kind".into(), json!("APIGroup"));
            map.insert("apiVersion".into(), json!("v1"));
        }
        document
    })
}

/// The legacy `APIResourceList` of a review group's version.
pub(crate) fn legacy_resource_list(group: &str, version: &str) -> Option<Value> {
    if version != VERSION || !groups().contains(&group) {
        return None;
    }
    let resources: Vec<Value> = in_group(group)
        .map(|r| {
            json!({"name": r.plural, "singularName": r.kind.to_ascii_lowercase(), "namespaced": r.namespaced,
                   "kind": r.kind, "verbs": ["create"]})
        })
        .collect();
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group}/{VERSION}"),
                "resources": resources}),
    )
}
