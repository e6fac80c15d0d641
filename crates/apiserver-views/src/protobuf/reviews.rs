//! Field numbers of the review kinds kubectl sends as protobuf: `authorization.k8s.io/v1`
//! SelfSubjectAccessReview (`kubectl auth can-i`) and SelfSubjectRulesReview (`kubectl auth can-i --list`),
//! `authentication.k8s.io/v1` SelfSubjectReview (`kubectl auth whoami`) and TokenRequest (`kubectl create token`); SubjectAccessReview and
//! LocalSubjectAccessReview share the access review's messages. A review's `status` is the server's answer, so
//! whatever a client puts there is dropped.

use super::messages::{Kind, Message, OBJECT_META, f, opt, rep};

static RESOURCE_ATTRIBUTES: Message = Message {
    fields: &[
        f(1, "namespace", Kind::String),
        f(2, "verb", Kind::String),
        f(3, "group", Kind::String),
        f(4, "version", Kind::String),
        f(5, "resource", Kind::String),
        f(6, "subresource", Kind::String),
        f(7, "name", Kind::String),
    ],
};

static NON_RESOURCE_ATTRIBUTES: Message = Message {
    fields: &[f(1, "path", Kind::String), f(2, "verb", Kind::String)],
};

static ACCESS_REVIEW_SPEC: Message = Message {
    fields: &[
        f(1, "resourceAttributes", Kind::Message(&RESOURCE_ATTRIBUTES)),
        f(
            2,
            "nonResourceAttributes",
            Kind::Message(&NON_RESOURCE_ATTRIBUTES),
        ),
        f(3, "user", Kind::String),
        rep(4, "groups", Kind::String),
        f(6, "uid", Kind::String),
    ],
};

pub static ACCESS_REVIEW: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&ACCESS_REVIEW_SPEC)),
        f(3, "status", Kind::Ignored),
    ],
};

static RULES_REVIEW_SPEC: Message = Message {
    fields: &[f(1, "namespace", Kind::String)],
};

pub static RULES_REVIEW: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&RULES_REVIEW_SPEC)),
        f(3, "status", Kind::Ignored),
    ],
};

pub static SELF_SUBJECT_REVIEW: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "status", Kind::Ignored),
    ],
};

static BOUND_OBJECT_REFERENCE: Message = Message {
    fields: &[
        f(1, "kind", Kind::String),
        f(2, "apiVersion", Kind::String),
        f(3, "name", Kind::String),
        f(4, "uid", Kind::String),
    ],
};

static TOKEN_REQUEST_SPEC: Message = Message {
    fields: &[
        rep(1, "audiences", Kind::String),
        f(3, "boundObjectRef", Kind::Message(&BOUND_OBJECT_REFERENCE)),
        opt(4, "expirationSeconds", Kind::Int),
    ],
};

/// `authentication.k8s.io/v1` TokenRequest, the body of `kubectl create token` (the
/// `serviceaccounts/token` subresource).
pub static TOKEN_REQUEST: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&TOKEN_REQUEST_SPEC)),
        f(3, "status", Kind::Ignored),
    ],
};
