//! Field numbers of `autoscaling/v1` HorizontalPodAutoscaler (upstream `generated.proto`), the
//! body kubectl 1.32's `kubectl autoscale` sends. A created object's `status` is the server's to
//! write, so whatever a client puts there is dropped.

use super::messages::{Kind, Message, OBJECT_META, f, opt};

static CROSS_VERSION_OBJECT_REFERENCE: Message = Message {
    fields: &[
        f(1, "kind", Kind::String),
        f(2, "name", Kind::String),
        f(3, "apiVersion", Kind::String),
    ],
};

static HORIZONTAL_POD_AUTOSCALER_SPEC: Message = Message {
    fields: &[
        f(
            1,
            "scaleTargetRef",
            Kind::Message(&CROSS_VERSION_OBJECT_REFERENCE),
        ),
        opt(2, "minReplicas", Kind::Int),
        // No `omitempty` upstream: a maximum of 0 is kept, for validation to refuse by name.
        opt(3, "maxReplicas", Kind::Int),
        opt(4, "targetCPUUtilizationPercentage", Kind::Int),
    ],
};

pub static HORIZONTAL_POD_AUTOSCALER: Message = Message {
    fields: &[
        f(1, "metadata", Kind::Message(&OBJECT_META)),
        f(2, "spec", Kind::Message(&HORIZONTAL_POD_AUTOSCALER_SPEC)),
        f(3, "status", Kind::Ignored),
    ],
};
