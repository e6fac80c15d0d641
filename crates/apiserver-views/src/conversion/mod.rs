//! Built-in kinds served at a version other than the one they are stored at, and the conversion
//! between the two. Today that is `autoscaling/v1` HorizontalPodAutoscaler over stored
//! `autoscaling/v2` objects: kubectl 1.32's `kubectl autoscale` and many charts still write v1.
//!
//! Every other kind is served at its storage version (or, for custom resources, converted with
//! the `None` strategy by rewriting `apiVersion`), so these functions leave them untouched.

mod hpa_v1;

use apimachinery::{FieldError, ResourceDef};
use serde_json::Value;

#[cfg(test)]
mod tests;

pub use hpa_v1::ROUND_TRIP_ANNOTATIONS as HPA_ROUND_TRIP_ANNOTATIONS;

/// A HorizontalPodAutoscaler of either served version in its v2 shape (for printing); a v1 object
/// whose annotations do not convert is shown with its CPU target alone.
pub(crate) fn hpa_as_v2(object: &Value) -> std::borrow::Cow<'_, Value> {
    if object.get("apiVersion").and_then(Value::as_str) != Some("autoscaling/v1") {
        return std::borrow::Cow::Borrowed(object);
    }
    let converted = hpa_v1::to_v2(object).or_else(|_| {
        let mut bare = object.clone();
        hpa_v1::drop_round_trip_annotations(&mut bare);
        hpa_v1::to_v2(&bare)
    });
    std::borrow::Cow::Owned(converted.unwrap_or_else(|_| object.clone()))
}

fn is_hpa(def: &ResourceDef) -> bool {
    def.builtin && def.group == "autoscaling" && def.kind == "HorizontalPodAutoscaler"
}

/// Whether [`to_storage`] or [`to_served`] can change an object of `def` (a HorizontalPodAutoscaler, of
/// either version); every other kind passes through untouched.
pub fn applies_to(def: &ResourceDef) -> bool {
    is_hpa(def)
}

/// The version `def`'s objects are stored at, when `def` is a view converted from it.
pub fn storage_version(def: &ResourceDef) -> Option<&'static str> {
    (is_hpa(def) && def.version == "v1").then_some("v2")
}

/// A stored object as `def`'s version shows it. Identity for kinds served as stored.
pub fn to_served(def: &ResourceDef, stored: Value) -> Value {
    if storage_version(def).is_some() {
        hpa_v1::from_v2(&stored)
    } else {
        stored
    }
}

/// An object written at `def`'s version as it is to be stored. Identity for kinds served as
/// stored, except that a v2 HorizontalPodAutoscaler sheds the annotations only v1 views carry.
pub fn to_storage(def: &ResourceDef, served: Value) -> Result<Value, Box<FieldError>> {
    if storage_version(def).is_some() {
        return hpa_v1::to_v2(&served);
    }
    let mut served = served;
    if is_hpa(def) {
        hpa_v1::drop_round_trip_annotations(&mut served);
    }
    Ok(served)
}
