//! Checks of a customization before it is stored or used: each script compiles (the Lua error's line is
//! reported), defines its operation's function, and names nothing the sandbox takes away.

use karmada_api::config::ResourceInterpreterCustomization;

use super::luavm::{LuaError, LuaVm};
use super::rules::RULES;

/// One problem with a customization, at a field path such as
/// `spec.customizations.replicaResource.luaScript`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckError {
    pub path: String,
    /// The script line the problem is on (1-based), when known.
    pub line: Option<u32>,
    pub message: String,
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}: line {line}: {}", self.path, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

/// Names a script may not use (the sandbox removes them; they would fail on the first call).
const UNAVAILABLE: &[&str] = &[
    "io.",
    "debug.",
    "package.",
    "os.execute",
    "os.exit",
    "os.getenv",
    "os.remove",
    "os.rename",
    "os.tmpname",
    "os.clock",
    "os.difftime",
    "os.setlocale",
    "dofile",
    "loadfile",
    "loadstring",
    "load",
    "setfenv",
    "getfenv",
    "setmetatable",
    "getmetatable",
    "rawset",
    "rawget",
    "rawequal",
    "collectgarbage",
    "module",
    "newproxy",
    "string.rep",
    "string.dump",
];

/// Every problem with `customization`'s scripts; empty when it is usable.
pub fn check_customization(
    vm: &LuaVm,
    customization: &ResourceInterpreterCustomization,
) -> Vec<CheckError> {
    let mut errors = Vec::new();
    let mut any = false;
    for rule in RULES {
        let Some(script) = rule.script(&customization.spec.customizations) else {
            continue;
        };
        any = true;
        let path = rule.path();
        if let Some((line, name)) = unavailable_name(&script.lua_script) {
            errors.push(CheckError {
                path: path.clone(),
                line: Some(line),
                message: format!("{name} is not available to resource interpreter customizations (the sandbox allows the base, table, string, math libraries, os.time, os.date and require(\"kube\"))"),
            });
        }
        if let Err(error) = vm.check(&script.lua_script, rule.entry_point, rule.field) {
            errors.push(match error {
                LuaError::Syntax { line, message } => CheckError {
                    path,
                    line: Some(line),
                    message: format!("invalid Lua: {message}"),
                },
                LuaError::MissingEntryPoint(entry) => CheckError {
                    path,
                    line: None,
                    message: format!("the script must define the global function {entry} (the entry point of {})", rule.operation),
                },
                other => CheckError {
                    path,
                    line: None,
                    message: format!("the script fails when loaded: {other}"),
                },
            });
        }
    }
    if !any {
        errors.push(CheckError {
            path: "spec.customizations".into(),
            line: None,
            message: format!(
                "at least one script is required: {}",
                RULES
                    .iter()
                    .map(|rule| rule.field)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    errors
}

/// The first use of an unavailable name outside comments and strings, with its line.
fn unavailable_name(source: &str) -> Option<(u32, &'static str)> {
    for (index, line) in source.lines().enumerate() {
        let code = strip_strings_and_comment(line);
        for name in UNAVAILABLE {
            let mut from = 0;
            while let Some(found) = code[from..].find(name) {
                let start = from + found;
                let before = code[..start].chars().next_back();
                let after = code[start + name.len()..].trim_start().chars().next();
                let word_start = !before
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ':');
                let used = name.ends_with('.') || matches!(after, Some('(' | '"' | '\'' | '{'));
                if word_start && used {
                    return Some((
                        u32::try_from(index + 1).unwrap_or(u32::MAX),
                        name.trim_end_matches('.'),
                    ));
                }
                from = start + name.len();
            }
        }
    }
    None
}

/// `line` with string literals blanked and a trailing `--` comment cut (long strings and block comments are
/// left as they are: this is a hint, the VM is the guard).
fn strip_strings_and_comment(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == '\\' {
                    chars.next();
                } else if c == q {
                    quote = None;
                }
                out.push(' ');
            }
            None => {
                if c == '"' || c == '\'' {
                    quote = Some(c);
                    out.push(' ');
                } else if c == '-' && chars.peek() == Some(&'-') {
                    break;
                } else {
                    out.push(c);
                }
            }
        }
    }
    out
}
