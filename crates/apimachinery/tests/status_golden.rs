//! Status bodies byte for byte as kube-apiserver writes them. Each golden file under
//! `tests/golden/status/` is one compact body in kube-apiserver's field order (`kind, apiVersion,
//! metadata, status, message, reason, details, code`; empty `omitempty` fields absent), following
//! the examples in Kubernetes' API conventions and the bodies its `apierrors` constructors give.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::path::PathBuf;

use apimachinery::status::success_status;
use apimachinery::{ApiError, FieldError, Status};
use serde_json::json;

fn golden(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/status")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading golden file {}: {e}", path.display()));
    text.trim_end().to_string()
}

fn too_many_requests() -> ApiError {
    let mut err = ApiError::new(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
    );
    err.retry_after_seconds = Some(1);
    err
}

#[test]
fn error_bodies_match_kube_apiserver_bytes() {
    let cases: Vec<(&str, ApiError)> = vec![
        ("not-found-core", ApiError::not_found("", "pods", "grafana")),
        (
            "not-found-group",
            ApiError::not_found("apps", "deployments", "web"),
        ),
        ("not-found-path", ApiError::not_found_path()),
        (
            "already-exists",
            ApiError::already_exists("", "configmaps", "settings"),
        ),
        ("conflict", ApiError::conflict("apps", "deployments", "web")),
        (
            "invalid",
            ApiError::invalid(
                "apps",
                "Deployment",
                "web",
                &[FieldError::invalid(
                    "spec.replicas",
                    json!(-1),
                    "must be greater than or equal to 0",
                )],
            ),
        ),
        ("unauthorized", ApiError::unauthorized()),
        ("expired", ApiError::expired(3, 17)),
        ("too-many-requests", too_many_requests()),
    ];
    for (name, err) in cases {
        assert_eq!(err.status().to_json(), golden(name), "{name}");
        // The JSON value used for watch ERROR events keeps the same order.
        assert_eq!(err.to_status().to_string(), golden(name), "{name} as value");
    }
}

#[test]
fn delete_success_body_matches_kube_apiserver_bytes() {
    let body = success_status(
        "",
        "configmaps",
        "settings",
        "0c9d3f1e-5b1a-4c55-9e0a-3f0a4c2d8e11",
    );
    assert_eq!(body.to_string(), golden("delete-success"));
}

#[test]
fn golden_bodies_read_back_into_the_same_bytes() {
    // A Status read from kube-apiserver (e.g. relayed from a member) serializes unchanged.
    for name in [
        "not-found-core",
        "invalid",
        "delete-success",
        "too-many-requests",
        "not-found-path",
    ] {
        let status: Status = serde_json::from_str(&golden(name)).expect(name);
        assert_eq!(status.to_json(), golden(name), "{name}");
    }
}
