//! OpenAPI documents: the 30-byte protobuf `/openapi/v2` stub and the `/openapi/v3` index plus
//! per-group-version documents.
//!
//! Why both: kubectl's `kind: List` path still asks for v2 and only needs a parsable document,
//! while v3 PATCH operations carrying `fieldValidation` make kubectl leave validation to the
//! server, and v3 `components.schemas` with `x-kubernetes-group-version-kind` drive `kubectl explain`.
//! Invariant: a document's `?hash=` changes whenever the document does (it is a hash of its bytes).

use apimachinery::ResourceDef;
use serde_json::{Map, Value, json};

use crate::discovery::{groups, in_version, versions};
use crate::hash::fnv1a64;

/// gnostic `openapi_v2.Document{swagger:"2.0", info:{title:"Kubernetes", version:"v1.32.0-x"}}`.
pub const V2_STUB: &[u8] = b"\x0a\x032.0\x12\x17\x0a\x0aKubernetes\x12\x09v1.32.0-x";

/// Content-Type of [`V2_STUB`]. Note the `.v1.0`: the `@v1.0` form kubectl puts in Accept breaks
/// its media-type parser when sent back.
pub const V2_CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `GET /openapi/v3`: every served group-version with a content-addressed URL.
pub fn v3_index(defs: &[ResourceDef]) -> Value {
    let mut paths = Map::new();
    for group in groups(defs) {
        for version in versions(defs, &group) {
            let Some(document) = v3_document(defs, &group, &version) else {
                continue;
            };
            let key = group_version_path(&group, &version);
            let hash = document_hash(&document);
            paths.insert(
                key.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}),
            );
        }
    }
    json!({"paths": paths})
}

/// `api/v1` or `apis/{group}/{version}`: the key in the index and the URL suffix.
pub fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// Upper-case hex of a stable hash of the document's JSON.
pub fn document_hash(document: &Value) -> String {
    format!("{:016X}", fnv1a64(document.to_string().as_bytes()))
}

/// `GET /openapi/v3/apis/{group}/{version}`, or `None` when nothing is served there. Built-in kinds'
/// schemas come with their field descriptions, regenerated (see [`crate::builtin::described_schema`]).
pub fn v3_document(defs: &[ResourceDef], group: &str, version: &str) -> Option<Value> {
    let served: Vec<&ResourceDef> = in_version(defs, group, version).collect();
    if served.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for def in &served {
        add_paths(def, &mut paths);
        add_schemas(def, &mut schemas);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// Upstream's definition name: `io.k8s.api.apps.v1.Deployment` for built-ins, reversed group for
/// others (`io.karmada.policy.v1alpha1.PropagationPolicy`).
pub fn schema_name(def: &ResourceDef) -> String {
    if def.builtin
        && let Some(name) = crate::builtin::schema_name(&def.group, &def.version, &def.kind)
    {
        return name;
    }
    let prefix = if def.group.is_empty() {
        "io.k8s.api.core".to_string()
    } else {
        def.group.split('.').rev().collect::<Vec<_>>().join(".")
    };
    format!("{prefix}.{}.{}", def.version, def.kind)
}

fn add_schemas(def: &ResourceDef, schemas: &mut Map<String, Value>) {
    let name = schema_name(def);
    let described = def
        .builtin
        .then(|| crate::builtin::described_schema(&def.group, &def.version, &def.kind))
        .flatten();
    let mut schema = described
        .or_else(|| def.schema.as_deref().cloned())
        .unwrap_or_else(|| json!({"type": "object"}));
    if crate::schema::publish_int_or_string(&mut schema) {
        schemas.insert(
            crate::schema::INT_OR_STRING_NAME.into(),
            crate::schema::int_or_string_component(),
        );
    }
    if let Value::Object(map) = &mut schema {
        map.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([{"group": def.group, "version": def.version, "kind": def.kind}]),
        );
    }
    schemas.insert(
        format!("{name}List"),
        json!({
            "description": format!("A list of {}.", def.kind),
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "items": {"type": "array", "items": {"$ref": schema_ref(&name)}},
            },
            "x-kubernetes-group-version-kind": [{"group": def.group, "version": def.version, "kind": format!("{}List", def.kind)}],
        }),
    );
    schemas.insert(name, schema);
    if def.scale_subresource.is_some() {
        schemas.insert(SCALE_SCHEMA_NAME.into(), scale_schema());
    }
}

const SCALE_SCHEMA_NAME: &str = "io.k8s.api.autoscaling.v1.Scale";

fn scale_schema() -> Value {
    let mut schema = crate::builtin::scale_schema().unwrap_or_else(|| json!({"type": "object"}));
    if let Value::Object(map) = &mut schema {
        map.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([{"group": "autoscaling", "version": "v1", "kind": "Scale"}]),
        );
    }
    schema
}

fn schema_ref(name: &str) -> String {
    format!("#/components/schemas/{name}")
}

/// `Apps`, `Core`, `Networking`, `RbacAuthorization`, `PolicyKarmadaIo`: the operationId infix.
fn group_camel(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    let trimmed = group.strip_suffix(".k8s.io").unwrap_or(group);
    trimmed.split('.').map(capitalize).collect()
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

fn query(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn write_parameters(with_force: bool) -> Vec<Value> {
    let mut parameters = vec![
        query(
            "dryRun",
            "When present, run all stages but persist nothing. Valid value: All.",
        ),
        query(
            "fieldManager",
            "Name of the actor making the change, recorded for field ownership.",
        ),
        query(
            "fieldValidation",
            "How to treat unknown or duplicate fields: Ignore, Warn or Strict.",
        ),
    ];
    if with_force {
        parameters.push(json!({
            "name": "force", "in": "query",
            "description": "Apply requests only: take ownership of conflicting fields.",
            "schema": {"type": "boolean", "uniqueItems": true},
        }));
    }
    parameters
}

fn list_parameters() -> Vec<Value> {
    vec![
        query("labelSelector", "Restrict the list by labels."),
        query("fieldSelector", "Restrict the list by fields."),
        query("limit", "Maximum number of items to return."),
        query("continue", "Token from a previous page."),
        query("resourceVersion", "Resource version to list or watch from."),
        query("timeoutSeconds", "Timeout for list and watch calls."),
        query("watch", "Stream changes instead of listing."),
    ]
}

fn ok_response(schema_name: &str) -> Value {
    json!({"description": "OK", "content": {"application/json": {"schema": {"$ref": schema_ref(schema_name)}}}})
}

fn json_body(schema_name: &str) -> Value {
    json!({"required": true, "content": {"application/json": {"schema": {"$ref": schema_ref(schema_name)}}}})
}

fn patch_body(builtin: bool) -> Value {
    let mut content = Map::new();
    let mut types = vec![
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if builtin {
        types.push("application/strategic-merge-patch+json");
    }
    for media_type in types {
        content.insert(media_type.into(), json!({"schema": {"type": "object"}}));
    }
    json!({"required": true, "content": content})
}

struct Operation<'a> {
    id: String,
    action: &'a str,
    description: String,
    parameters: Vec<Value>,
    request_body: Option<Value>,
    responses: Value,
}

fn operation(def: &ResourceDef, kind: (&str, &str, &str), op: Operation<'_>) -> Value {
    let (group, version, kind_name) = kind;
    let mut map = Map::new();
    map.insert("description".into(), json!(op.description));
    map.insert("operationId".into(), json!(op.id));
    map.insert(
        "tags".into(),
        json!([format!(
            "{}_{}",
            group_camel(&def.group).to_lowercase(),
            def.version
        )]),
    );
    if !op.parameters.is_empty() {
        map.insert("parameters".into(), Value::Array(op.parameters));
    }
    if let Some(body) = op.request_body {
        map.insert("requestBody".into(), body);
    }
    map.insert("responses".into(), op.responses);
    map.insert("x-kubernetes-action".into(), json!(op.action));
    map.insert(
        "x-kubernetes-group-version-kind".into(),
        json!({"group": group, "version": version, "kind": kind_name}),
    );
    Value::Object(map)
}

fn path_parameters(namespaced: bool, with_name: bool, noun: &str) -> Vec<Value> {
    let mut parameters = Vec::new();
    if with_name {
        parameters.push(json!({"name": "name", "in": "path", "required": true,
            "description": format!("Name of the {noun}."), "schema": {"type": "string", "uniqueItems": true}}));
    }
    if namespaced {
        parameters.push(json!({"name": "namespace", "in": "path", "required": true,
            "description": "Object name and auth scope, such as for teams and projects.",
            "schema": {"type": "string", "uniqueItems": true}}));
    }
    parameters
}

fn add_paths(def: &ResourceDef, paths: &mut Map<String, Value>) {
    let root = format!("/{}", group_version_path(&def.group, &def.version));
    let scope = if def.namespaced { "Namespaced" } else { "" };
    let infix = format!(
        "{}{}{scope}{}",
        group_camel(&def.group),
        capitalize(&def.version),
        def.kind
    );
    let collection = if def.namespaced {
        format!("{root}/namespaces/{{namespace}}/{}", def.plural)
    } else {
        format!("{root}/{}", def.plural)
    };
    let item = format!("{collection}/{{name}}");
    let name = schema_name(def);
    let list_name = format!("{name}List");
    let gvk = (def.group.as_str(), def.version.as_str(), def.kind.as_str());
    let kind = &def.kind;

    let list_op = |id: String| Operation {
        id,
        action: "list",
        description: format!("list or watch objects of kind {kind}"),
        parameters: list_parameters(),
        request_body: None,
        responses: json!({"200": ok_response(&list_name)}),
    };
    let mut collection_path = Map::new();
    collection_path.insert(
        "get".into(),
        operation(def, gvk, list_op(format!("list{infix}"))),
    );
    collection_path.insert(
        "post".into(),
        operation(
            def,
            gvk,
            Operation {
                id: format!("create{infix}"),
                action: "post",
                description: format!("create a {kind}"),
                parameters: write_parameters(false),
                request_body: Some(json_body(&name)),
                responses: json!({"200": ok_response(&name), "201": ok_response(&name)}),
            },
        ),
    );
    collection_path.insert(
        "delete".into(),
        operation(
            def,
            gvk,
            Operation {
                id: format!(
                    "delete{}Collection{scope}{}",
                    capitalize_group_version(def),
                    def.kind
                ),
                action: "deletecollection",
                description: format!("delete collection of {kind}"),
                parameters: list_parameters(),
                request_body: None,
                responses: json!({"200": {"description": "OK"}}),
            },
        ),
    );
    collection_path.insert(
        "parameters".into(),
        Value::Array(path_parameters(def.namespaced, false, kind)),
    );
    paths.insert(collection, Value::Object(collection_path));

    if def.namespaced {
        let all_namespaces = format!("{root}/{}", def.plural);
        let id = format!(
            "list{}{}ForAllNamespaces",
            capitalize_group_version(def),
            def.kind
        );
        paths.insert(
            all_namespaces,
            json!({"get": operation(def, gvk, list_op(id))}),
        );
    }

    paths.insert(
        item.clone(),
        item_path(def, gvk, &infix, &name, def.builtin, kind),
    );
    if def.status_subresource {
        paths.insert(
            format!("{item}/status"),
            item_path(
                def,
                gvk,
                &format!("{infix}Status"),
                &name,
                def.builtin,
                kind,
            ),
        );
    }
    if def.scale_subresource.is_some() {
        let scale_gvk = ("autoscaling", "v1", "Scale");
        paths.insert(
            format!("{item}/scale"),
            item_path(
                def,
                scale_gvk,
                &format!("{infix}Scale"),
                SCALE_SCHEMA_NAME,
                true,
                "Scale",
            ),
        );
    }
}

fn capitalize_group_version(def: &ResourceDef) -> String {
    format!("{}{}", group_camel(&def.group), capitalize(&def.version))
}

/// GET/PUT/PATCH (and DELETE on the object itself) for an item or subresource path.
fn item_path(
    def: &ResourceDef,
    gvk: (&str, &str, &str),
    infix: &str,
    schema: &str,
    builtin: bool,
    noun: &str,
) -> Value {
    let mut path = Map::new();
    path.insert(
        "get".into(),
        operation(
            def,
            gvk,
            Operation {
                id: format!("read{infix}"),
                action: "get",
                description: format!("read the specified {noun}"),
                parameters: Vec::new(),
                request_body: None,
                responses: json!({"200": ok_response(schema)}),
            },
        ),
    );
    path.insert(
        "put".into(),
        operation(
            def,
            gvk,
            Operation {
                id: format!("replace{infix}"),
                action: "put",
                description: format!("replace the specified {noun}"),
                parameters: write_parameters(false),
                request_body: Some(json_body(schema)),
                responses: json!({"200": ok_response(schema), "201": ok_response(schema)}),
            },
        ),
    );
    path.insert(
        "patch".into(),
        operation(
            def,
            gvk,
            Operation {
                id: format!("patch{infix}"),
                action: "patch",
                description: format!("partially update the specified {noun}"),
                parameters: write_parameters(true),
                request_body: Some(patch_body(builtin)),
                responses: json!({"200": ok_response(schema), "201": ok_response(schema)}),
            },
        ),
    );
    if gvk.2 == def.kind && !infix.ends_with("Status") {
        path.insert(
            "delete".into(),
            operation(
                def,
                gvk,
                Operation {
                    id: format!("delete{infix}"),
                    action: "delete",
                    description: format!("delete a {noun}"),
                    parameters: vec![
                        query("dryRun", "When present, persist nothing. Valid value: All."),
                        query("propagationPolicy", "Orphan, Background or Foreground."),
                    ],
                    request_body: None,
                    responses: json!({"200": ok_response(schema), "202": ok_response(schema)}),
                },
            ),
        );
    }
    path.insert(
        "parameters".into(),
        Value::Array(path_parameters(def.namespaced, true, noun)),
    );
    Value::Object(path)
}
