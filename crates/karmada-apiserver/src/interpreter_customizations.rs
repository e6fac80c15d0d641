//! Admission of ResourceInterpreterCustomizations beyond their shape (which `karmada_api::admit` checks):
//! every script compiles in the interpreter's sandbox and defines its entry point, and no two customizations
//! script the same operation of the same kind — each refused with the field path and, for Lua errors, the
//! script line.

use apimachinery::{ApiError, FieldError};
use karmada_api::config::ResourceInterpreterCustomization;
use karmada_interpreter::declarative::{LuaVm, RULES, check_customization};
use serde_json::Value;

use crate::handlers::read::{ListParams, list_objects};
use crate::server::ApiServer;
use apimachinery::ResourceDef;

fn is_customization(def: &ResourceDef) -> bool {
    !def.builtin
        && def.group == karmada_api::config::GROUP
        && def.kind == "ResourceInterpreterCustomization"
}

/// The scripts' problems (syntax with its line, missing entry point, names the sandbox removes).
pub fn lua_problems(object: &Value) -> Result<(), Vec<FieldError>> {
    static VM: std::sync::OnceLock<LuaVm> = std::sync::OnceLock::new();
    let Ok(customization) =
        serde_json::from_value::<ResourceInterpreterCustomization>(object.clone())
    else {
        // Shape errors are reported by karmada_api's admission.
        return Ok(());
    };
    let problems = check_customization(
        VM.get_or_init(|| LuaVm::new(2, Default::default())),
        &customization,
    );
    if problems.is_empty() {
        return Ok(());
    }
    Err(problems
        .into_iter()
        .map(|problem| {
            let script = object
                .pointer(&format!("/{}", problem.path.replace('.', "/")))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let shown = problem
                .line
                .and_then(|line| script.lines().nth(line.saturating_sub(1) as usize))
                .unwrap_or_default()
                .trim();
            let detail = match problem.line {
                Some(line) => format!("line {line}: {}", problem.message),
                None => problem.message,
            };
            FieldError::invalid(problem.path, Value::String(shown.to_string()), detail)
        })
        .collect())
}

/// Refuses `object` when another customization already scripts one of its operations for the same kind.
pub async fn check_conflicts(
    server: &ApiServer,
    def: &ResourceDef,
    object: &Value,
) -> Result<(), ApiError> {
    if !is_customization(def) {
        return Ok(());
    }
    let Ok(new) = serde_json::from_value::<ResourceInterpreterCustomization>(object.clone()) else {
        return Ok(());
    };
    let name = new.metadata.name.clone().unwrap_or_default();
    let list = list_objects(server, def, None, &ListParams::parse(&def.kind, |_| None)?).await?;
    let mut errors = Vec::new();
    for item in list
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Ok(other) = serde_json::from_value::<ResourceInterpreterCustomization>(item.clone())
        else {
            continue;
        };
        let other_name = other.metadata.name.clone().unwrap_or_default();
        if other_name == name || other.spec.target != new.spec.target {
            continue;
        }
        for rule in RULES {
            if rule.script(&new.spec.customizations).is_some()
                && rule.script(&other.spec.customizations).is_some()
            {
                errors.push(FieldError::duplicate(
                    format!("spec.customizations.{}", rule.field),
                    Value::String(format!(
                        "{} of {} {} is already customized by ResourceInterpreterCustomization {other_name}: one customization per kind and operation",
                        rule.operation, new.spec.target.api_version, new.spec.target.kind
                    )),
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(&def.group, &def.kind, &name, &errors))
    }
}
