//! Test helper: the seed fixtures users apply, read from the shared fixtures directory.

use std::path::Path;

use serde_json::Value;

/// The single YAML document of `relative` (e.g. `seed-001/nginx-deploy.yaml`) as JSON.
pub(crate) fn load(relative: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures")
        .join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
