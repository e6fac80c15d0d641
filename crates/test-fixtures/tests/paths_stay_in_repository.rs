//! Fails when any source file names a path outside the repository: an absolute path of one machine (`/work/...`,
//! `/home/...`, `/root/...`), a relative path that climbs out of the repository from its crate's directory (what
//! `CARGO_MANIFEST_DIR` joins resolve against), or the old `shared/fixtures` folder beside the clone. A clean clone
//! in any directory must run the same tests this tree runs.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

use std::path::{Path, PathBuf};

use test_fixtures::{normalize, repository_root};

/// Absolute path prefixes that only exist on some machine.
const MACHINE_PREFIXES: &[&str] = &["/work/", "/home/", "/root/", "/shared/"];

/// One offending string literal: the file, its line and the literal.
#[derive(Debug, PartialEq)]
struct Escape {
    file: PathBuf,
    line: usize,
    literal: String,
}

/// One string literal of a source file.
#[derive(Debug, PartialEq)]
struct Literal<'a> {
    line: usize,
    text: &'a str,
    /// The argument of `include_str!`/`include_bytes!`, which resolve against the including file's directory.
    included: bool,
}

/// The string literals in `source` with the line each starts on (quotes excluded; escapes kept as written).
fn string_literals(source: &str) -> Vec<Literal<'_>> {
    let bytes = source.as_bytes();
    let mut literals = Vec::new();
    let (mut line, mut i) = (1, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => line += 1,
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                // A line comment: its quotes are prose, not literals.
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => {
                // A char literal such as '"': skip it whole.
                i += 3;
                continue;
            }
            b'\'' if bytes.get(i + 1) == Some(&b'\\') => {
                // An escaped char literal such as '\"' or '\u{22}': skip to its closing quote.
                i = source[i + 3..]
                    .find('\'')
                    .map_or(bytes.len(), |e| i + 3 + e + 1);
                continue;
            }
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < bytes.len() && bytes[j] != b'"' {
                    if bytes[j] == b'\\' {
                        j += 1;
                    }
                    j += 1;
                }
                let end = j.min(bytes.len());
                let before = source[..i].trim_end();
                let included =
                    before.ends_with("include_str!(") || before.ends_with("include_bytes!(");
                literals.push(Literal {
                    line,
                    text: &source[start..end],
                    included,
                });
                line += source[start..end].matches('\n').count();
                i = end + 1;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    literals
}

/// Whether `literal`, resolved against `base` when relative, names a place outside `root`.
fn escapes(literal: &str, base: &Path, root: &Path) -> bool {
    if MACHINE_PREFIXES.iter().any(|p| literal.starts_with(p))
        || literal.contains("shared/fixtures")
    {
        return true;
    }
    // `concat!(env!("CARGO_MANIFEST_DIR"), "/../x")` and `.join("../x")` both climb from the crate directory.
    let relative = literal
        .strip_prefix('/')
        .filter(|r| r.starts_with(".."))
        .unwrap_or(literal);
    if relative.starts_with("../") || relative == ".." {
        return !normalize(&base.join(relative)).starts_with(root);
    }
    false
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn scan(root: &Path) -> Vec<Escape> {
    let mut found = Vec::new();
    let crates = root.join("crates");
    for entry in std::fs::read_dir(&crates).unwrap_or_else(|e| panic!("{}: {e}", crates.display()))
    {
        let crate_dir = entry.expect("directory entry").path();
        let mut files = Vec::new();
        rust_files(&crate_dir, &mut files);
        for file in files {
            // This file's own test cases and prefixes name the forbidden paths on purpose.
            if file == root.join(file!()) {
                continue;
            }
            let source = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let file_dir = file.parent().unwrap_or(&crate_dir);
            for literal in string_literals(&source) {
                let base = if literal.included {
                    file_dir
                } else {
                    &crate_dir
                };
                if escapes(literal.text, base, root) {
                    found.push(Escape {
                        file: file.clone(),
                        line: literal.line,
                        literal: literal.text.to_string(),
                    });
                }
            }
        }
    }
    // Shell scripts run from the repository root: no machine paths, nothing above it.
    for script in ["scripts", ".ci"] {
        let dir = root.join(script);
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let file = entry.expect("directory entry").path();
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            for (index, line) in text.lines().enumerate() {
                if line.trim_start().starts_with('#') {
                    continue;
                }
                for word in
                    line.split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '=')
                {
                    if MACHINE_PREFIXES.iter().any(|p| word.starts_with(p))
                        || word.contains("shared/fixtures")
                        || word.starts_with("../")
                    {
                        found.push(Escape {
                            file: file.clone(),
                            line: index + 1,
                            literal: word.to_string(),
                        });
                    }
                }
            }
        }
    }
    found
}

#[test]
fn no_source_file_names_a_path_outside_the_repository() {
    let root = repository_root();
    let found = scan(&root);
    let report: Vec<String> = found
        .iter()
        .map(|e| format!("{}:{}: {:?}", e.file.display(), e.line, e.literal))
        .collect();
    assert!(
        found.is_empty(),
        "paths outside the repository (put fixtures in tests/fixtures and reach them through \
         test_fixtures::path; find crate files from CARGO_MANIFEST_DIR):\n{}",
        report.join("\n")
    );
}

#[test]
fn the_scan_sees_every_way_out() {
    let root = Path::new("/repo");
    let crate_dir = root.join("crates/demo");
    let source = r#"
        let a = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
        let b = std::fs::read("/work/shared/fixtures/seed-000/x.yaml");
        let c = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../elsewhere");
        let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures"); // inside: fine
        let e = "a \"quoted\" ../../../../x"; // not a path that starts with ..
        let f = '"'; let g = "/home/someone/.kube/config";
        // "/work/in/a/comment" is prose
        const R: &str = include_str!("../../../../monitoring/rules.yaml"); // from crates/demo/src/a/b.rs: inside
        const S: &str = include_str!("../../../../../outside.yaml");
    "#;
    let file_dir = crate_dir.join("src/a");
    let flagged: Vec<(usize, &str)> = string_literals(source)
        .into_iter()
        .filter(|l| {
            escapes(
                l.text,
                if l.included { &file_dir } else { &crate_dir },
                root,
            )
        })
        .map(|l| (l.line, l.text))
        .collect();
    assert_eq!(
        flagged,
        vec![
            (2, "../../../shared/fixtures"),
            (3, "/work/shared/fixtures/seed-000/x.yaml"),
            (4, "/../../../elsewhere"),
            (7, "/home/someone/.kube/config"),
            (10, "../../../../../outside.yaml"),
        ]
    );
}

#[test]
fn fixtures_are_found_inside_the_repository() {
    let path = test_fixtures::path("seed-001/nginx-deploy.yaml");
    assert!(path.starts_with(repository_root()), "{}", path.display());
    assert_eq!(
        test_fixtures::document("seed-001/nginx-deploy.yaml")["metadata"]["name"],
        "nginx-ha"
    );
    assert_eq!(
        test_fixtures::documents("seed-000/04-api-server.yaml").len(),
        3
    );
    let files = test_fixtures::yaml_files();
    assert!(
        files.contains(&"seed-000/05-multicluster-service.yaml".to_string()),
        "{files:?}"
    );
}

#[test]
#[should_panic(expected = "leaves")]
fn a_fixture_path_that_climbs_out_is_refused() {
    test_fixtures::path("../../Cargo.toml");
}
