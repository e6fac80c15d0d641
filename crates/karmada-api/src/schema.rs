//! Hand-written schema pieces for fields whose Rust type says too little (embedded objects, free-form values)
//! or too much (object metadata, which the API server validates itself).

use schemars::{Schema, SchemaGenerator, json_schema};

/// Object metadata: validated by the API server's own metadata rules, so only its shape is declared here.
pub(crate) fn object_meta(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "Standard object metadata: name, namespace, labels, annotations and the fields the server manages.",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// An arbitrary JSON value.
pub(crate) fn any_value(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "x-kubernetes-preserve-unknown-fields": true })
}

/// An object whose fields are not described (kept as given).
pub(crate) fn preserved_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true })
}

/// A list of complete Kubernetes objects.
pub(crate) fn embedded_objects(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": {
            "type": "object",
            "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true,
        },
    })
}
