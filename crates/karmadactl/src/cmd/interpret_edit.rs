//! `karmadactl interpret --edit`: one customization's scripts in one Lua file, opened in `KUBE_EDITOR`,
//! `EDITOR` or `vi` as Karmada's command lays it out (`---@name:`, `---@apiVersion:`, `---@kind:`, then a
//! `---@rule: <Operation>` line before each script). `--` lines before the first annotation are the header
//! (ignored); inside a rule they are the script's own Lua comments and kept, which Karmada's command drops.
//! Other `---@` lines (`---@doc:` with `--show-doc`) are ignored. The edited file is read
//! back, checked in the interpreter's sandbox, and written over the customization file; a file that does not
//! read back or check is reopened with the reasons on top, and the customization file is never written with
//! an invalid customization.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use karmada_api::config::{LuaScript, ResourceInterpreterCustomization};
use karmada_interpreter::declarative::{LuaVm, RULES, check_customization};

const COMMENT: &str = "--";
const ANNOTATION: &str = "---@";
const NAME: &str = "---@name:";
const API_VERSION: &str = "---@apiVersion:";
const KIND: &str = "---@kind:";
const RULE: &str = "---@rule:";
const DOC: &str = "---@doc:";

/// The editor to run: `KUBE_EDITOR`, then `EDITOR`, then `vi` (as kubectl).
pub fn editor_from_environment() -> String {
    ["KUBE_EDITOR", "EDITOR"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_string())
}

/// The customization as the file the user edits.
pub fn render(customization: &ResourceInterpreterCustomization, show_doc: bool) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{NAME} {}\n",
        customization.metadata.name.as_deref().unwrap_or_default()
    ));
    out.push_str(&format!(
        "{API_VERSION} {}\n",
        customization.spec.target.api_version
    ));
    out.push_str(&format!("{KIND} {}\n", customization.spec.target.kind));
    for rule in RULES {
        out.push_str(&format!("{RULE} {}\n", rule.operation.as_str()));
        if show_doc {
            out.push_str(&format!("{DOC} function {}\n", rule.signature()));
        }
        if let Some(script) = rule.script(&customization.spec.customizations) {
            out.push_str(&script.lua_script);
            if !script.lua_script.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    out
}

/// Reads an edited file back into `into` (its name, target and every script are replaced).
pub fn parse(text: &str, into: &mut ResourceInterpreterCustomization) -> Result<(), String> {
    for rule in RULES {
        rule.set_script(&mut into.spec.customizations, None);
    }
    let mut current: Option<(&'static karmada_interpreter::declarative::Rule, String)> = None;
    let finish = |current: Option<(&'static karmada_interpreter::declarative::Rule, String)>,
                  into: &mut ResourceInterpreterCustomization| {
        if let Some((rule, script)) = current
            && !script.trim().is_empty()
        {
            rule.set_script(
                &mut into.spec.customizations,
                Some(LuaScript { lua_script: script }),
            );
        }
    };
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        let value = |prefix: &str| trimmed[prefix.len()..].trim().to_string();
        if trimmed.starts_with(NAME) {
            into.metadata.name = Some(value(NAME)).filter(|n| !n.is_empty());
        } else if trimmed.starts_with(API_VERSION) {
            into.spec.target.api_version = value(API_VERSION);
        } else if trimmed.starts_with(KIND) {
            into.spec.target.kind = value(KIND);
        } else if trimmed.starts_with(RULE) {
            let name = value(RULE);
            let Some(rule) = RULES.iter().find(|r| r.operation.as_str() == name) else {
                return Err(format!(
                    "line {}: unknown rule {name:?}; one of: {}",
                    number + 1,
                    RULES
                        .iter()
                        .map(|r| r.operation.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            };
            finish(current.take(), into);
            current = Some((rule, String::new()));
        } else if trimmed.starts_with(ANNOTATION) {
            // `---@doc:` and annotations of later versions.
        } else if let Some((_, script)) = current.as_mut() {
            script.push_str(line);
            script.push('\n');
        } else if !trimmed.is_empty() && !trimmed.starts_with(COMMENT) {
            return Err(format!(
                "line {}: {line:?} comes before any `{RULE} <Operation>` line",
                number + 1
            ));
        }
    }
    finish(current, into);
    Ok(())
}

/// The file without its header: from the first annotation on.
fn without_header(text: &str) -> String {
    text.lines()
        .skip_while(|line| !line.trim().starts_with(ANNOTATION))
        .collect::<Vec<_>>()
        .join("\n")
}

fn header(reasons: &[String]) -> String {
    let mut out = String::from(
        "-- Edit the customization below. Lines beginning with '--' are ignored, except the\n\
         -- '---@' annotations; an empty file cancels the edit. If the result does not check,\n\
         -- this file is opened again with the reasons here.\n--\n",
    );
    for reason in reasons {
        out.push_str(&format!("-- {reason}\n"));
    }
    if !reasons.is_empty() {
        out.push_str("--\n");
    }
    out
}

/// What an edit ended with.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Saved(String),
    Unchanged,
    Emptied,
}

/// Edits `original` (read from `source`) with `editor` until it checks or the user gives up, and writes the
/// result over `source`.
pub fn edit(
    source: &Path,
    original: &ResourceInterpreterCustomization,
    editor: &str,
    show_doc: bool,
) -> anyhow::Result<Outcome> {
    let vm = LuaVm::new(1, Default::default());
    let scratch = tempfile::Builder::new()
        .prefix("karmadactl-edit-")
        .suffix(".lua")
        .tempfile()
        .context("creating the file to edit")?;
    let (file, path) = scratch.keep().context("keeping the file to edit")?;
    drop(file);
    let mut reasons: Vec<String> = Vec::new();
    let mut previous: Option<String> = None;
    loop {
        let body = match &previous {
            Some(edited) if !reasons.is_empty() => without_header(edited) + "\n",
            _ => render(original, show_doc),
        };
        std::fs::write(&path, header(&reasons) + &body)
            .with_context(|| format!("writing {}", path.display()))?;
        run_editor(editor, &path)?;
        let edited = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        if without_header(&edited).trim().is_empty() {
            let _ = std::fs::remove_file(&path);
            return Ok(Outcome::Emptied);
        }
        if !reasons.is_empty()
            && previous.as_deref().map(without_header) == Some(without_header(&edited))
        {
            bail!(
                "edit cancelled, no valid changes were saved; your last edit is kept in {}",
                path.display()
            );
        }
        previous = Some(edited.clone());
        let mut candidate = original.clone();
        reasons = match parse(&edited, &mut candidate) {
            Err(reason) => vec![reason],
            Ok(()) => problems(&vm, &candidate),
        };
        if !reasons.is_empty() {
            continue;
        }
        let _ = std::fs::remove_file(&path);
        if candidate.metadata.name == original.metadata.name && candidate.spec == original.spec {
            return Ok(Outcome::Unchanged);
        }
        save(source, &candidate)?;
        return Ok(Outcome::Saved(candidate.metadata.name.unwrap_or_default()));
    }
}

fn problems(vm: &LuaVm, customization: &ResourceInterpreterCustomization) -> Vec<String> {
    let mut reasons = Vec::new();
    if customization.metadata.name.is_none() {
        reasons.push(format!("{NAME} is empty: give the customization a name"));
    }
    if customization.spec.target.api_version.is_empty() || customization.spec.target.kind.is_empty()
    {
        reasons.push(format!(
            "{API_VERSION} and {KIND} name the target, e.g. apps/v1 and Deployment"
        ));
    }
    reasons.extend(
        check_customization(vm, customization)
            .into_iter()
            .map(|problem| match problem.line {
                Some(line) => format!("{}: line {line}: {}", problem.path, problem.message),
                None => format!("{}: {}", problem.path, problem.message),
            }),
    );
    reasons
}

fn run_editor(editor: &str, path: &Path) -> anyhow::Result<()> {
    // Through the shell, as kubectl does, so an editor given with arguments (`code --wait`) works.
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("editor")
        .arg(path)
        .status()
        .with_context(|| format!("starting the editor {editor:?} (set KUBE_EDITOR or EDITOR)"))?;
    if !status.success() {
        bail!(
            "the editor {editor:?} exited with {status}; your edit is kept in {}",
            path.display()
        );
    }
    Ok(())
}

/// Writes the customization over `source`, as JSON when the file was JSON.
fn save(source: &Path, customization: &ResourceInterpreterCustomization) -> anyhow::Result<()> {
    let was_json = std::fs::read_to_string(source)
        .map(|text| text.trim_start().starts_with('{'))
        .unwrap_or(false);
    let mut object = serde_json::to_value(customization)?;
    object["apiVersion"] = "config.karmada.io/v1alpha1".into();
    object["kind"] = "ResourceInterpreterCustomization".into();
    let text = if was_json {
        serde_json::to_string_pretty(&object)? + "\n"
    } else {
        serde_saphyr::to_string(&object)?
    };
    std::fs::write(source, text).with_context(|| format!("writing {}", source.display()))
}

/// `--edit` over the files given with `-f`: exactly one customization among them.
pub fn run(
    files: &[PathBuf],
    customizations: Vec<(String, ResourceInterpreterCustomization)>,
    show_doc: bool,
) -> anyhow::Result<()> {
    let [source] = files else {
        bail!("--edit takes one file (-f FILE) holding one ResourceInterpreterCustomization");
    };
    let [(_, original)] = customizations.as_slice() else {
        bail!(
            "only one customization can be edited; {} has {}",
            source.display(),
            customizations.len()
        );
    };
    match edit(source, original, &editor_from_environment(), show_doc)? {
        Outcome::Saved(name) => {
            println!("resourceinterpretercustomization.config.karmada.io/{name} edited")
        }
        Outcome::Unchanged => eprintln!("Edit cancelled, no changes made."),
        Outcome::Emptied => eprintln!("Edit cancelled, the saved file was empty."),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn customization() -> ResourceInterpreterCustomization {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../karmada-interpreter/customizations/kruise-cloneset.yaml"),
        )
        .expect("bundled customization");
        serde_saphyr::from_str(&text).expect("parses")
    }

    /// An editor that runs `script` (a shell snippet over "$1") and counts its runs in `runs`.
    fn editor(dir: &Path, script: &str) -> String {
        let path = dir.join("editor.sh");
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho run >> {}/runs\n{script}\n", dir.display()),
        )
        .expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path.display().to_string()
    }

    fn runs(dir: &Path) -> usize {
        std::fs::read_to_string(dir.join("runs"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    #[test]
    fn render_and_parse_round_trip_every_rule() {
        let original = customization();
        let mut back = ResourceInterpreterCustomization::default();
        parse(
            &(header(&["a reason".into()]) + &render(&original, true)),
            &mut back,
        )
        .expect("parses");
        assert_eq!(back.metadata.name, original.metadata.name);
        assert_eq!(back.spec, original.spec);
        let err = parse("function f() end\n", &mut back).expect_err("no rule");
        assert!(err.contains("before any `---@rule:"), "{err}");
        let err = parse("---@rule: Reticulate\n", &mut back).expect_err("unknown");
        assert!(
            err.contains("unknown rule \"Reticulate\"") && err.contains("InterpretHealth"),
            "{err}"
        );
    }

    #[test]
    fn an_edit_that_checks_is_saved_over_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let source = dir.path().join("customization.yaml");
        std::fs::write(&source, "placeholder").expect("write");
        let editor = editor(
            dir.path(),
            r#"sed -i 's/count = obj.spec.replicas/count = 7/' "$1""#,
        );
        let outcome = edit(&source, &customization(), &editor, false).expect("edit");
        assert_eq!(
            outcome,
            Outcome::Saved("declarative-configuration-cloneset".into())
        );
        let saved: ResourceInterpreterCustomization =
            serde_saphyr::from_str(&std::fs::read_to_string(&source).expect("read")).expect("yaml");
        let script = &saved
            .spec
            .customizations
            .replica_resource
            .expect("replicaResource")
            .lua_script;
        assert!(script.contains("count = 7"), "{script}");
        assert_eq!(
            saved.spec.customizations.retention,
            customization().spec.customizations.retention
        );
    }

    #[test]
    fn an_invalid_edit_reopens_and_never_reaches_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let source = dir.path().join("customization.yaml");
        std::fs::write(&source, "kept as it was").expect("write");
        // The first run breaks a script; the second saves the file unchanged (the user gives up).
        let editor = editor(
            dir.path(),
            &format!(
                r#"[ "$(wc -l < {}/runs)" -gt 1 ] && exit 0; sed -i 's/^function GetReplicas(obj)/function GetReplicas(obj/' "$1""#,
                dir.path().display()
            ),
        );
        let err = edit(&source, &customization(), &editor, false)
            .expect_err("gives up")
            .to_string();
        assert!(err.contains("no valid changes were saved"), "{err}");
        assert_eq!(runs(dir.path()), 2, "reopened once with the reasons");
        assert_eq!(
            std::fs::read_to_string(&source).expect("read"),
            "kept as it was"
        );
    }

    #[test]
    fn an_unchanged_or_emptied_file_changes_nothing() {
        let dir = tempfile::tempdir().expect("dir");
        let source = dir.path().join("customization.yaml");
        std::fs::write(&source, "kept").expect("write");
        assert_eq!(
            edit(
                &source,
                &customization(),
                &editor(dir.path(), "true"),
                false
            )
            .expect("edit"),
            Outcome::Unchanged
        );
        assert_eq!(
            edit(
                &source,
                &customization(),
                &editor(dir.path(), r#": > "$1""#),
                false
            )
            .expect("edit"),
            Outcome::Emptied
        );
        assert_eq!(std::fs::read_to_string(&source).expect("read"), "kept");
    }
}
