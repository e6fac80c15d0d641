//! Field numbers of the policy kinds kubectl 1.32's generators send as protobuf (upstream
//! `generated.proto`): `create poddisruptionbudget` (`policy/v1`), `create priorityclass`
//! (`scheduling.k8s.io/v1`) and `create quota` (`v1` ResourceQuota). A created object's `status`
//! is the server's to write, so whatever a client puts there is dropped.

use super::messages::{Kind, LABEL_SELECTOR, Message, OBJECT_META, f, opt, rep};

static POD_DISRUPTION_BUDGET_SPEC: Message = Message {
    fields: &[
        opt(1, "minAvailable", Kind::IntOrString),
        opt(2, "selector", Kind::Message(&LABEL_SELECTOR)),
        opt(3, "maxUnavailable", Kind::IntOrString),
        opt(4, "unhealthyPodEvictionPolicy", Kind::String),
    ],
};

pub static POD_DISRUPTION_BUDGET: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&POD_DISRUPTION_BUDGET_SPEC)),
        f(3, "status", Kind::Ignored),
    ],
};

/// `value` has no `omitempty` upstream: a class of priority 0 still says so.
pub static PRIORITY_CLASS: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        opt(2, "value", Kind::Int),
        f(3, "globalDefault", Kind::Bool),
        f(4, "description", Kind::String),
        opt(5, "preemptionPolicy", Kind::String),
    ],
};

static SCOPED_RESOURCE_SELECTOR_REQUIREMENT: Message = Message {
    fields: &[
        f(1, "scopeName", Kind::String),
        f(2, "operator", Kind::String),
        rep(3, "values", Kind::String),
    ],
};

static SCOPE_SELECTOR: Message = Message {
    fields: &[rep(
        1,
        "matchExpressions",
        Kind::Message(&SCOPED_RESOURCE_SELECTOR_REQUIREMENT),
    )],
};

static RESOURCE_QUOTA_SPEC: Message = Message {
    fields: &[
        f(1, "hard", Kind::Map(&Kind::Quantity)),
        rep(2, "scopes", Kind::String),
        opt(3, "scopeSelector", Kind::Message(&SCOPE_SELECTOR)),
    ],
};

pub static RESOURCE_QUOTA: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&RESOURCE_QUOTA_SPEC)),
        f(3, "status", Kind::Ignored),
    ],
};
