//! Fails when the workspace's dependency declarations drift: a dependency two crates declare themselves (its
//! version and source belong in `[workspace.dependencies]`, once), or a workspace dependency no crate uses.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use test_fixtures::repository_root;

/// One dependency line of a manifest's dependency tables: its name and whether it defers to the workspace.
#[derive(Debug, PartialEq)]
struct Declared {
    name: String,
    from_workspace: bool,
}

/// The dependencies a manifest declares (`[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`, and
/// their `[target.'...'.*]` forms). The manifests here keep one dependency per line, as `cargo fmt`-style TOML.
fn declared(manifest: &str) -> Vec<Declared> {
    let mut in_dependencies = false;
    let mut found = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line.ends_with("dependencies]");
            continue;
        }
        if !in_dependencies || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        let (name, dotted_workspace) = match key.strip_suffix(".workspace") {
            Some(name) => (name, true),
            None => (key, false),
        };
        let from_workspace = dotted_workspace || value.replace(' ', "").contains("workspace=true");
        found.push(Declared {
            name: name.trim_matches('"').to_string(),
            from_workspace,
        });
    }
    found
}

/// The names in `[workspace.dependencies]` of the root manifest.
fn workspace_dependencies(root_manifest: &str) -> BTreeSet<String> {
    let mut inside = false;
    let mut names = BTreeSet::new();
    for line in root_manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[workspace.dependencies]";
            continue;
        }
        if inside
            && !line.starts_with('#')
            && let Some((key, _)) = line.split_once('=')
        {
            names.insert(key.trim().to_string());
        }
    }
    names
}

fn crate_manifests(root: &Path) -> Vec<(String, String)> {
    let mut manifests: Vec<(String, String)> = std::fs::read_dir(root.join("crates"))
        .expect("crates/ is readable")
        .map(|entry| entry.expect("a crates/ entry").path().join("Cargo.toml"))
        .filter(|path| path.is_file())
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a manifest is readable");
            (path.display().to_string(), text)
        })
        .collect();
    manifests.sort();
    manifests
}

#[test]
fn every_dependency_is_declared_once() {
    let root = repository_root();
    let root_manifest =
        std::fs::read_to_string(root.join("Cargo.toml")).expect("the root Cargo.toml");
    let workspace = workspace_dependencies(&root_manifest);
    let manifests = crate_manifests(&root);
    assert!(manifests.len() > 5, "found only {} crates", manifests.len());

    let mut direct: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut used = BTreeSet::new();
    for (path, text) in &manifests {
        for dependency in declared(text) {
            if dependency.from_workspace {
                used.insert(dependency.name);
            } else {
                direct
                    .entry(dependency.name)
                    .or_default()
                    .push(path.clone());
            }
        }
    }
    let repeated: Vec<String> = direct
        .iter()
        .filter(|(name, crates)| crates.len() > 1 || workspace.contains(*name))
        .map(|(name, crates)| format!("{name} in {}", crates.join(", ")))
        .collect();
    assert!(
        repeated.is_empty(),
        "declare these once in [workspace.dependencies] and use `name.workspace = true`: {repeated:?}"
    );
    let unused: Vec<&String> = workspace.difference(&used).collect();
    assert!(
        unused.is_empty(),
        "[workspace.dependencies] that no crate uses (remove them): {unused:?}"
    );
}

#[test]
fn the_scan_reads_every_declaration_form() {
    let manifest = r#"
[package]
name = "x"
version.workspace = true

[dependencies]
serde.workspace = true
tokio = { workspace = true, features = ["rt"] }
# a comment = "1"
prost = "0.14"

[target.'cfg(unix)'.dev-dependencies]
"quoted" = { version = "1" }
"#;
    let names: Vec<(String, bool)> = declared(manifest)
        .into_iter()
        .map(|d| (d.name, d.from_workspace))
        .collect();
    assert_eq!(
        names,
        vec![
            ("serde".to_string(), true),
            ("tokio".to_string(), true),
            ("prost".to_string(), false),
            ("quoted".to_string(), false),
        ]
    );
    let workspace = workspace_dependencies(
        "[workspace]\nmembers = []\n[workspace.dependencies]\n# in-tree\nstore = { path = \"crates/store\" }\nserde = \"1\"\n[profile.dev]\ndebug = 0\n",
    );
    assert_eq!(
        workspace,
        BTreeSet::from(["store".to_string(), "serde".to_string()])
    );
}
