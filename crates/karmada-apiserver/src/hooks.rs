//! Seams to what other modules and crates provide: patching and server-side apply
//! ([`crate::patch`]), CRD translation ([`crate::crd`]), built-in defaulting and validation
//! ([`crate::defaults`]), schema walking (`apimachinery::schema`), Karmada admission
//! (`karmada_api::admission`) and the views (`apiserver_views`: discovery, OpenAPI, Tables,
//! protobuf). Keeping every call in one file keeps the request path readable and makes each
//! dependency easy to find.

use apimachinery::{ApiError, FieldError, GroupVersionKind, ResourceDef};
use apiserver_views::tables::IncludeObject;
use serde_json::Value;

pub use crate::patch::PatchType;

/// Kinds Karmada defines (policy, work, cluster, ...).
pub fn karmada_defs() -> Vec<ResourceDef> {
    karmada_api::resource_defs()
}

/// Applies a patch to `live` (`Value::Null` for an apply that creates).
pub fn apply_patch(
    def: &ResourceDef,
    live: &Value,
    kind: PatchType,
    body: &[u8],
    manager: &str,
    force: bool,
    now: jiff::Timestamp,
) -> Result<Value, ApiError> {
    crate::patch::apply_patch(def, live, kind, body, manager, force, now)
}

/// Records a non-apply write by `manager` in `new`'s managedFields.
pub fn record_update(
    def: &ResourceDef,
    old: Option<&Value>,
    new: &mut Value,
    writer: apimachinery::Writer<'_>,
    now: jiff::Timestamp,
) {
    crate::patch::record_update_managed_fields(old, new, writer, &def.api_version(), now);
}

/// The field manager of a write that names none (from the User-Agent).
pub fn default_field_manager(user_agent: Option<&str>) -> String {
    crate::patch::default_field_manager(user_agent)
}

/// Defaults and validates a built-in kind; returns the field errors (422 when non-empty).
pub fn admit_builtin(
    gvk: &GroupVersionKind,
    object: &mut Value,
    old: Option<&Value>,
) -> Vec<FieldError> {
    crate::defaults::default_builtin(gvk, object);
    crate::defaults::validate_builtin(gvk, object, old)
}

/// Karmada admission (defaulting + validation, as karmada-webhook does it): warnings, or the
/// field errors. Kinds Karmada does not own pass unchanged.
pub fn admit_custom(
    gvk: &GroupVersionKind,
    object: &mut Value,
    old: Option<&Value>,
    now: jiff::Timestamp,
) -> Result<Vec<String>, Vec<FieldError>> {
    let operation = if old.is_some() {
        karmada_api::Operation::Update
    } else {
        karmada_api::Operation::Create
    };
    let context = karmada_api::AdmissionContext {
        new_id: uuid::Uuid::new_v4().to_string(),
        now: crate::objects::timestamp(now),
    };
    let warnings = karmada_api::admit(gvk, operation, object, old, &context)?;
    if gvk.group == karmada_api::scheduling::GROUP && gvk.kind == "SchedulerProfile" {
        scheduler_profile_problems(object)?;
    }
    if gvk.group == karmada_api::config::GROUP && gvk.kind == "ResourceInterpreterCustomization" {
        crate::interpreter_customizations::lua_problems(object)?;
    }
    Ok(warnings)
}

/// A SchedulerProfile's plugins and args checked against this build's scheduler plugins (the registry the
/// scheduler of the same build runs), so a typo or a bad argument is refused with its field rather than found
/// when a binding is scheduled.
fn scheduler_profile_problems(object: &Value) -> Result<(), Vec<FieldError>> {
    static REGISTRY: std::sync::OnceLock<Option<karmada_scheduler::framework::Registry>> =
        std::sync::OnceLock::new();
    let Some(registry) = REGISTRY
        .get_or_init(|| karmada_scheduler::default_registry().ok())
        .as_ref()
    else {
        return Ok(());
    };
    let Ok(profile) =
        serde_json::from_value::<karmada_api::scheduling::SchedulerProfile>(object.clone())
    else {
        return Ok(());
    };
    let problems = karmada_scheduler::framework::admission_problems(registry, &profile.spec);
    if problems.is_empty() {
        return Ok(());
    }
    Err(problems
        .into_iter()
        .map(|problem| FieldError::invalid(problem.path, problem.value, problem.message))
        .collect())
}

/// Paths (`spec.foo`) of fields in `object` that `def`'s schema does not know.
pub fn unknown_fields(def: &ResourceDef, object: &Value) -> Vec<String> {
    match &def.schema {
        Some(schema) => apimachinery::schema::unknown_fields(schema, object)
            .into_iter()
            .map(|path| path.trim_start_matches('.').to_string())
            .collect(),
        None => Vec::new(),
    }
}

/// Prunes unknown fields; custom kinds also get their schema's `default:`s (built-in
/// defaulting is [`admit_builtin`]'s job).
pub fn prune_and_default(def: &ResourceDef, object: &mut Value) {
    if let Some(schema) = &def.schema {
        apimachinery::schema::prune(schema, object);
        if !def.builtin {
            apimachinery::schema::apply_defaults(schema, object);
        }
    }
}

/// Gives a built-in object the shape kube-apiserver's Go types give it: every field Go always
/// serializes is present with its zero value (the `default:`s `apiserver_views` puts in the
/// built-in schemas). Runs on the object about to be stored, after admission and the
/// handlers' own changes, so whoever wrote it (kubectl, a controller, member-sim's kubelet)
/// and however (create, update, patch, apply, status), what is stored and served has that shape.
pub fn shape_builtin(def: &ResourceDef, object: &mut Value) {
    if def.builtin
        && let Some(schema) = &def.schema
    {
        apimachinery::schema::apply_defaults(schema, object);
    }
}

/// The kinds a CustomResourceDefinition defines, or why it is invalid.
pub fn crd_resource_defs(crd: &Value) -> Result<Vec<ResourceDef>, Vec<FieldError>> {
    crate::crd::resource_defs_from_crd(crd)
}

/// The status of an accepted CRD.
pub fn crd_status(crd: &Value, now: jiff::Timestamp) -> Value {
    crate::crd::crd_status(crd, now)
}

/// Aggregated discovery for `/api` (`core = true`) or `/apis`, with its Content-Type.
pub fn aggregated_discovery(
    defs: &[ResourceDef],
    core: bool,
    custom_metrics: bool,
) -> (Value, &'static str) {
    use apiserver_views::discovery;
    let body = if core {
        discovery::aggregated_api(defs)
    } else {
        let mut list = discovery::aggregated_apis(defs);
        if custom_metrics && let Some(items) = list["items"].as_array_mut() {
            items.push(apiserver_views::custom_metrics_api::aggregated_item());
        }
        list
    };
    (body, discovery::AGGREGATED_CONTENT_TYPE)
}

/// Legacy discovery documents: `/api`, `/apis`, `/apis/{g}`, `/api/v1`, `/apis/{g}/{v}`
/// (`custom.metrics.k8s.io`'s own documents are the router's, as they change with the data).
pub fn legacy_discovery(
    defs: &[ResourceDef],
    segments: &[&str],
    address: &str,
    custom_metrics: bool,
) -> Option<Value> {
    use apiserver_views::discovery;
    match segments {
        ["api"] => Some(discovery::legacy_api_versions(address)),
        ["apis"] => {
            let mut list = discovery::legacy_group_list(defs);
            if custom_metrics && let Some(groups) = list["groups"].as_array_mut() {
                groups.push(apiserver_views::custom_metrics_api::group_entry());
            }
            Some(list)
        }
        ["apis", group] => discovery::legacy_group(defs, group),
        ["api", version] => discovery::legacy_resource_list(defs, "", version),
        ["apis", group, version] => discovery::legacy_resource_list(defs, group, version),
        _ => None,
    }
}

/// The `/openapi/v2` protobuf stub and its Content-Type.
pub fn openapi_v2() -> (&'static [u8], &'static str) {
    (
        apiserver_views::openapi::V2_STUB,
        apiserver_views::openapi::V2_CONTENT_TYPE,
    )
}

/// `/openapi/v3` index (`None`) or one group-version document.
pub fn openapi_v3(defs: &[ResourceDef], group_version: Option<(&str, &str)>) -> Option<Value> {
    match group_version {
        None => Some(apiserver_views::openapi::v3_index(defs)),
        Some((group, version)) => apiserver_views::openapi::v3_document(defs, group, version),
    }
}

/// A `meta.k8s.io/v1` Table of `objects`.
pub fn table(def: &ResourceDef, objects: &[Value], include: crate::content::Include) -> Value {
    let include = match include {
        crate::content::Include::None => IncludeObject::None,
        crate::content::Include::Metadata => IncludeObject::Metadata,
        crate::content::Include::Object => IncludeObject::Object,
    };
    apiserver_views::tables::table(def, objects, include, jiff::Timestamp::now())
}

/// Decodes a protobuf body of a built-in kind.
pub fn decode_protobuf(body: &[u8]) -> Result<Value, ApiError> {
    apiserver_views::protobuf::decode(body).map_err(|e| match e {
        apiserver_views::protobuf::DecodeError::UnsupportedKind { .. } => {
            ApiError::unsupported_media_type(e.to_string())
        }
        other => ApiError::bad_request(other.to_string()),
    })
}
