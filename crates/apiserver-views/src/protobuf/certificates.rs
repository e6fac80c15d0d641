//! Field numbers of `certificates.k8s.io/v1` CertificateSigningRequest (upstream `generated.proto`):
//! kubectl sends it as protobuf with `certificate approve|deny` (PUT on `/approval`).
//!
//! `spec.extra` (a map of string lists) is not listed: the API server never stores it, so an object read back
//! and sent again does not carry it.

use super::messages::{Kind, Message, OWNER_REFERENCE, f, opt, rep};

/// ObjectMeta as a client sends back an object it read: with `managedFields` (dropped; the stored ones are
/// kept).
static OBJECT_META: Message = Message {
    fields: &[
        f(1, "name", Kind::String),
        f(2, "generateName", Kind::String),
        f(3, "namespace", Kind::String),
        f(5, "uid", Kind::String),
        f(6, "resourceVersion", Kind::String),
        f(7, "generation", Kind::Int),
        f(8, "creationTimestamp", Kind::Time),
        f(11, "labels", Kind::Map(&Kind::String)),
        f(12, "annotations", Kind::Map(&Kind::String)),
        rep(13, "ownerReferences", Kind::Message(&OWNER_REFERENCE)),
        rep(14, "finalizers", Kind::String),
        rep(17, "managedFields", Kind::Ignored),
    ],
};

static CONDITION: Message = Message {
    fields: &[
        f(1, "type", Kind::String),
        f(2, "reason", Kind::String),
        f(3, "message", Kind::String),
        f(4, "lastUpdateTime", Kind::Time),
        f(5, "lastTransitionTime", Kind::Time),
        f(6, "status", Kind::String),
    ],
};

static SPEC: Message = Message {
    fields: &[
        f(1, "request", Kind::Bytes),
        f(2, "username", Kind::String),
        f(3, "uid", Kind::String),
        rep(4, "groups", Kind::String),
        rep(5, "usages", Kind::String),
        f(7, "signerName", Kind::String),
        opt(8, "expirationSeconds", Kind::Int),
    ],
};

static STATUS: Message = Message {
    fields: &[
        rep(1, "conditions", Kind::Message(&CONDITION)),
        f(2, "certificate", Kind::Bytes),
    ],
};

pub static CERTIFICATE_SIGNING_REQUEST: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&SPEC)),
        f(3, "status", Kind::Message(&STATUS)),
    ],
};
