//! The one way tests find the repository's fixtures: `tests/fixtures` at the repository root, resolved from this
//! crate's own `CARGO_MANIFEST_DIR`, so a clone of the repository needs nothing beside it. Every function panics
//! with the path it tried, because these are only called from tests, where a missing fixture is a failure.
//! Also the one way tests pick free loopback ports ([`free_port`], [`free_ports`]).
// A library reports through its caller (return values, tracing), never by printing.
#![warn(clippy::print_stdout)]
// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::path::{Component, Path, PathBuf};

mod ports;
pub use ports::{free_port, free_ports};

use serde_json::Value;

/// `rows` as text columns padded to their widest cell, two spaces apart: the form of the
/// snapshot files that pin large tables (`expect_file!`), readable in a diff.
pub fn aligned_columns(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            format!("{}\n", cells.join("  ").trim_end())
        })
        .collect()
}

/// The repository root (two levels above this crate).
pub fn repository_root() -> PathBuf {
    normalize(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// `tests/fixtures` in the repository.
pub fn dir() -> PathBuf {
    repository_root().join("tests/fixtures")
}

/// The fixture at `relative` (e.g. `seed-001/nginx-deploy.yaml`), which must exist inside [`dir`].
pub fn path(relative: &str) -> PathBuf {
    let path = normalize(&dir().join(relative));
    assert!(
        path.starts_with(dir()),
        "fixture path {relative:?} leaves {}: name a file under it",
        dir().display()
    );
    assert!(
        path.is_file(),
        "fixture {} does not exist: fixtures live in tests/fixtures of the repository",
        path.display()
    );
    path
}

/// The fixture's path as a string, for command lines (`kubectl apply -f`).
pub fn path_str(relative: &str) -> String {
    path(relative).to_string_lossy().into_owned()
}

/// The fixture's text.
pub fn text(relative: &str) -> String {
    let path = path(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every non-empty YAML document of the fixture, as JSON.
pub fn documents(relative: &str) -> Vec<Value> {
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(&text(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"));
    documents.into_iter().filter(|d| !d.is_null()).collect()
}

/// The fixture's single YAML document, as JSON.
pub fn document(relative: &str) -> Value {
    let mut documents = documents(relative);
    assert_eq!(
        documents.len(),
        1,
        "{relative} holds {} documents; use documents()",
        documents.len()
    );
    documents.remove(0)
}

/// Every `.yaml`/`.yml` file under [`dir`], sorted, as paths relative to it (`seed-000/01-...yaml`).
pub fn yaml_files() -> Vec<String> {
    let root = dir();
    let mut found = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(folder) = stack.pop() {
        let entries =
            std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
                .path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let relative = path
                    .strip_prefix(&root)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                found.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    found
}

/// `path` with `.` and `..` resolved lexically (the fixtures need not exist for the containment check).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
