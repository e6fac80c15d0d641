//! The verbs on resources, as async functions over [`ApiServer`] that speak API objects, not
//! HTTP: the router calls them for requests, and the background controllers (garbage
//! collector, namespace finalizer) call the same functions so every write follows one set of
//! rules.

mod convert;
pub mod create;
pub mod delete;
pub mod event_list;
pub mod read;
pub mod scale;
pub mod token_request;
pub mod update;

use apimachinery::{ApiError, FieldError, ResourceDef, StatusCause, StatusDetails};
use serde_json::Value;

use crate::server::ApiServer;

/// `fieldValidation`: what to do with unknown or duplicate fields in a body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    Strict,
    Warn,
    Ignore,
}

impl FieldValidation {
    pub fn parse(value: Option<&str>) -> Result<Self, ApiError> {
        match value {
            None | Some("") | Some("Ignore") => Ok(Self::Ignore),
            Some("Warn") => Ok(Self::Warn),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: \"{other}\": supported values: \"Ignore\", \"Strict\", \"Warn\""
            ))),
        }
    }
}

/// Options every write carries.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    pub dry_run: bool,
    pub field_manager: String,
    pub field_validation: FieldValidation,
    /// Server-side apply: take ownership of conflicting fields.
    pub force: bool,
    /// Fields the body repeated (reported like unknown fields).
    pub duplicate_fields: Vec<String>,
    /// The write is a server-side apply (which records its own managedFields).
    pub apply: bool,
}

impl WriteOptions {
    /// Options for the server's own writes.
    pub fn internal(manager: &str) -> Self {
        Self {
            dry_run: false,
            field_manager: manager.to_string(),
            field_validation: FieldValidation::Ignore,
            force: false,
            duplicate_fields: Vec::new(),
            apply: false,
        }
    }
}

/// The outcome of a successful write.
#[derive(Clone, Debug)]
pub struct Written {
    pub code: u16,
    pub object: Value,
    pub warnings: Vec<String>,
    /// The response body when it could be spliced from the bytes just stored (see
    /// [`crate::storage::response_json`]); otherwise `object` is serialized.
    pub json: Option<String>,
}

/// `dryRun`: only `All` is accepted.
pub fn parse_dry_run<'a>(values: impl IntoIterator<Item = &'a str>) -> Result<bool, ApiError> {
    let mut dry_run = false;
    for value in values {
        match value {
            "All" => dry_run = true,
            "" => {}
            other => {
                return Err(ApiError::bad_request(format!(
                    "dryRun: Unsupported value: \"{other}\": supported values: \"All\""
                )));
            }
        }
    }
    Ok(dry_run)
}

/// Applies fieldValidation to a decoded body: 400 under Strict, warnings under Warn, pruning
/// of unknown fields under Ignore (and always for custom kinds, which also get schema defaults).
pub(crate) fn validate_fields(
    def: &ResourceDef,
    object: &mut Value,
    options: &WriteOptions,
) -> Result<Vec<String>, ApiError> {
    let mut problems: Vec<String> = match options.field_validation {
        // Ignore only prunes below; skip the second schema walk.
        FieldValidation::Ignore => Vec::new(),
        _ => crate::hooks::unknown_fields(def, object)
            .into_iter()
            .map(|path| format!("unknown field \"{path}\""))
            .collect(),
    };
    problems.extend(
        options
            .duplicate_fields
            .iter()
            .map(|path| format!("duplicate field \"{path}\"")),
    );
    let mut warnings = Vec::new();
    match options.field_validation {
        FieldValidation::Strict if !problems.is_empty() => {
            let message = if problems.len() == 1 {
                format!("strict decoding error: {}", problems[0])
            } else {
                format!("strict decoding error: {}", problems.join(", "))
            };
            return Err(ApiError::bad_request(message));
        }
        FieldValidation::Warn => warnings = problems,
        _ => {}
    }
    // Unknown fields never reach the store (typed decoding drops them upstream); custom kinds
    // also get their schema's defaults.
    crate::hooks::prune_and_default(def, object);
    Ok(warnings)
}

/// Runs admission for `def`: defaulting and validation for built-in kinds, Karmada's rules
/// (and schema-driven nothing else) for custom kinds. Returns warnings, or 422.
pub(crate) fn admit(
    server: &ApiServer,
    def: &ResourceDef,
    object: &mut Value,
    old: Option<&Value>,
) -> Result<Vec<String>, ApiError> {
    let started = std::time::Instant::now();
    let admitted = admit_unmetered(def, object, old);
    // Karmada's own kinds are admitted by what karmada-webhook's webhooks do, named as its webhooks are.
    let webhook = (!def.builtin && def.group.ends_with("karmada.io"))
        .then(|| format!("{}.karmada.io", def.kind.to_ascii_lowercase()));
    server.metrics.observe_admission(
        if old.is_some() { "UPDATE" } else { "CREATE" },
        webhook.as_deref(),
        admitted.is_err(),
        started.elapsed(),
    );
    admitted
}

fn admit_unmetered(
    def: &ResourceDef,
    object: &mut Value,
    old: Option<&Value>,
) -> Result<Vec<String>, ApiError> {
    let gvk = def.gvk();
    let result: Result<Vec<String>, Vec<FieldError>> = if def.builtin {
        let errors = crate::hooks::admit_builtin(&gvk, object, old);
        if errors.is_empty() {
            Ok(Vec::new())
        } else {
            Err(errors)
        }
    } else {
        crate::hooks::admit_custom(&gvk, object, old, jiff::Timestamp::now())
    };
    result.map_err(|errors| {
        let name = crate::objects::name_of(object).to_string();
        ApiError::invalid(&def.group, &def.kind, &name, &errors)
    })
}

/// 404 for a missing object of `def`.
/// How often a write that lost a race to another writer is redone before the client gets the 409.
const RACE_ATTEMPTS: usize = 16;

/// Runs one read-check-write `attempt` until it is not overtaken by another writer (`None`), as kube-apiserver
/// redoes an update from a fresh read; the client's own preconditions fail inside the attempt, with their 409.
pub(crate) async fn redo_lost_races<F, Fut>(
    def: &ResourceDef,
    name: &str,
    mut attempt: F,
) -> Result<Written, ApiError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<Written>, ApiError>>,
{
    for _ in 0..RACE_ATTEMPTS {
        if let Some(written) = attempt().await? {
            return Ok(written);
        }
    }
    Err(ApiError::conflict(&def.group, &def.plural, name))
}

pub fn not_found(def: &ResourceDef, name: &str) -> ApiError {
    ApiError::not_found(&def.group, &def.plural, name)
}

/// Checks that `namespace` exists and is not terminating, before creating `name` of `def` in it.
pub(crate) async fn require_namespace(
    server: &ApiServer,
    def: &ResourceDef,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    let registry = server.registry();
    let Some(ns_def) = registry.lookup("", "v1", "namespaces") else {
        return Ok(());
    };
    match server.read_object(&ns_def, None, namespace).await? {
        None => Err(ApiError::not_found("", "namespaces", namespace)),
        Some((ns, _)) if crate::objects::is_deleting(&ns) => {
            let cause = format!("namespace {namespace} is being terminated");
            let mut err = ApiError::forbidden(format!(
                "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                def.group_resource()
            ));
            err.details = Some(StatusDetails {
                causes: vec![StatusCause::new(
                    "NamespaceTerminating",
                    cause,
                    "metadata.namespace",
                )],
                ..StatusDetails::named(&def.group, &def.plural, name)
            });
            Err(err)
        }
        Some(_) => Ok(()),
    }
}
