//! `karmadactl interpret`, as Karmada's: `--check` validates ResourceInterpreterCustomization files (each
//! script compiles in the same sandbox the controllers use, defines its entry point, and uses nothing the
//! sandbox removes); `--operation` runs one operation of the customization locally on the objects given with
//! `--observed-file`, `--desired-file`, `--status-file` (and `--desired-replica`) and prints the results as
//! YAML documents named as Karmada names them; `--edit` opens the scripts in an editor ([`super::interpret_edit`]).

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use karmada_api::config::ResourceInterpreterCustomization;
use karmada_api::work::AggregatedStatusItem;
use karmada_interpreter::declarative::{LuaVm, RULES, Rule, check_customization, rule_named};
use karmada_interpreter::{ConfigurableInterpreter, Operation, ResourceInterpreter};
use serde_json::{Value, json};

use super::apply::{objects, read_documents};

#[derive(Args, Debug)]
pub struct InterpretArgs {
    /// The ResourceInterpreterCustomization file(s) (`-` reads standard input).
    #[arg(short = 'f', long = "filename", required = true)]
    pub filename: Vec<PathBuf>,
    /// Validate the customizations: syntax, entry points, sandbox rules.
    #[arg(long)]
    pub check: bool,
    /// The operation to run: retain, interpretReplica, interpretComponent, reviseReplica, interpretStatus,
    /// aggregateStatus, interpretHealth, interpretDependency.
    #[arg(long)]
    pub operation: Option<String>,
    /// The object passed as the script's desired object (retain).
    #[arg(long = "desired-file")]
    pub desired_file: Option<PathBuf>,
    /// The object passed as the script's observed object (every operation but retain's first argument).
    #[arg(long = "observed-file")]
    pub observed_file: Option<PathBuf>,
    /// The AggregatedStatusItems passed to aggregateStatus (a list, or one item per document).
    #[arg(long = "status-file")]
    pub status_file: Option<PathBuf>,
    /// The replica count passed to reviseReplica.
    #[arg(long = "desired-replica")]
    pub desired_replica: Option<i64>,
    /// Edit the customization's scripts as one Lua file in KUBE_EDITOR, EDITOR or vi; the file given with -f
    /// is rewritten once the edit checks.
    #[arg(long)]
    pub edit: bool,
    /// With --edit, describe each rule's function above its script.
    #[arg(long = "show-doc")]
    pub show_doc: bool,
}

pub fn run(args: InterpretArgs) -> anyhow::Result<()> {
    let customizations = read_customizations(&args.filename)?;
    if args.edit {
        return super::interpret_edit::run(&args.filename, customizations, args.show_doc);
    }
    if args.check {
        let (report, failed) = check_report(&customizations);
        print!("{report}");
        if failed {
            bail!("some customizations are invalid (see above)");
        }
        return Ok(());
    }
    let Some(name) = args.operation.as_deref() else {
        bail!(
            "one of --check or --operation is required; operations: {}",
            operation_names()
        );
    };
    let Some(rule) = rule_named(name) else {
        bail!(
            "unknown --operation {name:?}; one of: {}",
            operation_names()
        );
    };
    let inputs = Inputs {
        observed: read_object(args.observed_file.as_ref(), "--observed-file")?,
        desired: read_object(args.desired_file.as_ref(), "--desired-file")?,
        status: match &args.status_file {
            Some(path) => Some(read_status_items(path)?),
            None => None,
        },
        desired_replica: args.desired_replica,
    };
    let layer = ConfigurableInterpreter::new(LuaVm::default());
    layer.load(
        &customizations
            .into_iter()
            .map(|(_, c)| c)
            .collect::<Vec<_>>(),
    );
    let results = execute(&layer, rule, &inputs)?;
    print!("{}", render(&results)?);
    Ok(())
}

fn operation_names() -> String {
    RULES
        .iter()
        .map(|rule| lower_camel(rule.operation.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn lower_camel(name: &str) -> String {
    let mut chars = name.chars();
    chars
        .next()
        .map(|first| first.to_ascii_lowercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// The customizations of the files, each with the source it came from.
fn read_customizations(
    files: &[PathBuf],
) -> anyhow::Result<Vec<(String, ResourceInterpreterCustomization)>> {
    let mut out = Vec::new();
    for file in files {
        for object in objects(read_documents(file)?) {
            let source = object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map_or_else(|| file.display().to_string(), str::to_string);
            if object["kind"] != "ResourceInterpreterCustomization" {
                bail!(
                    "{source} in {}: a ResourceInterpreterCustomization is expected, not {}",
                    file.display(),
                    object["kind"]
                );
            }
            let customization = serde_json::from_value(object).with_context(|| {
                format!(
                    "{source} in {}: not a valid ResourceInterpreterCustomization",
                    file.display()
                )
            })?;
            out.push((source, customization));
        }
    }
    if out.is_empty() {
        bail!(
            "no ResourceInterpreterCustomization in {}",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(out)
}

/// Karmada's `--check` report, and whether anything failed.
pub fn check_report(
    customizations: &[(String, ResourceInterpreterCustomization)],
) -> (String, bool) {
    let vm = LuaVm::new(1, Default::default());
    let mut out = String::new();
    let mut failed = false;
    for (source, customization) in customizations {
        out.push_str("-----------------------------------\n");
        out.push_str(&format!("SOURCE: {source}\n"));
        let target = &customization.spec.target;
        if target.kind.is_empty() {
            out.push_str("target.kind no set\n");
            failed = true;
            continue;
        }
        if target.api_version.is_empty() {
            out.push_str("target.apiVersion no set\n");
            failed = true;
            continue;
        }
        out.push_str(&format!(
            "TARGET: {} {}\t\nRULERS:\n",
            target.api_version, target.kind
        ));
        let problems = check_customization(&vm, customization);
        for rule in RULES {
            out.push_str(&format!("    {}:\t", rule.operation.as_str()));
            if rule.script(&customization.spec.customizations).is_none() {
                out.push_str("UNSET\n");
                continue;
            }
            let path = rule.path();
            let mine: Vec<String> = problems
                .iter()
                .filter(|p| p.path == path)
                .map(|p| match p.line {
                    Some(line) => format!("line {line}: {}", p.message),
                    None => p.message.clone(),
                })
                .collect();
            if mine.is_empty() {
                out.push_str("PASS\n");
            } else {
                failed = true;
                out.push_str(&format!("ERROR: {}\t\n", mine.join("; ")));
            }
        }
    }
    (out, failed)
}

/// The objects an operation may read.
pub struct Inputs {
    pub observed: Option<Value>,
    pub desired: Option<Value>,
    pub status: Option<Vec<AggregatedStatusItem>>,
    pub desired_replica: Option<i64>,
}

fn read_object(path: Option<&PathBuf>, flag: &str) -> anyhow::Result<Option<Value>> {
    let Some(path) = path else { return Ok(None) };
    let mut found = objects(read_documents(path)?);
    match found.len() {
        1 => Ok(found.pop()),
        n => bail!(
            "{flag} {}: exactly one object expected, found {n}",
            path.display()
        ),
    }
}

fn read_status_items(path: &PathBuf) -> anyhow::Result<Vec<AggregatedStatusItem>> {
    let mut items = Vec::new();
    for document in read_documents(path)? {
        let list = match document {
            Value::Null => continue,
            Value::Array(list) => list,
            one => vec![one],
        };
        for item in list {
            items.push(serde_json::from_value(item).with_context(|| {
                format!("--status-file {}: each item needs clusterName and status (an AggregatedStatusItem)", path.display())
            })?);
        }
    }
    Ok(items)
}

fn need<'a>(value: &'a Option<Value>, flag: &str, rule: &Rule) -> anyhow::Result<&'a Value> {
    value.as_ref().with_context(|| {
        format!(
            "--operation {} needs {flag}",
            lower_camel(rule.operation.as_str())
        )
    })
}

/// Runs `rule`'s script and names its results as Karmada does.
pub fn execute(
    layer: &ConfigurableInterpreter,
    rule: &Rule,
    inputs: &Inputs,
) -> anyhow::Result<Vec<(&'static str, Value)>> {
    let observed = || need(&inputs.observed, "--observed-file", rule);
    let failed = |e: karmada_interpreter::InterpretError| {
        anyhow::anyhow!("Execute {} error: {e}", rule.operation)
    };
    Ok(match rule.operation {
        Operation::Retain => {
            let desired = need(&inputs.desired, "--desired-file", rule)?;
            vec![(
                "retained",
                layer.retain(desired, observed()?).map_err(failed)?,
            )]
        }
        Operation::InterpretReplica => {
            let info = layer.get_replicas(observed()?).map_err(failed)?;
            vec![
                ("replica", json!(info.replicas)),
                ("requires", serde_json::to_value(info.requirements)?),
            ]
        }
        Operation::InterpretComponent => {
            vec![(
                "components",
                serde_json::to_value(layer.get_components(observed()?).map_err(failed)?)?,
            )]
        }
        Operation::ReviseReplica => {
            let replicas = inputs
                .desired_replica
                .context("--operation reviseReplica needs --desired-replica")?;
            vec![(
                "revised",
                layer
                    .revise_replica(observed()?, replicas)
                    .map_err(failed)?,
            )]
        }
        Operation::InterpretStatus => {
            vec![(
                "status",
                layer
                    .reflect_status(observed()?)
                    .map_err(failed)?
                    .unwrap_or(Value::Null),
            )]
        }
        Operation::AggregateStatus => {
            let items = inputs
                .status
                .as_deref()
                .context("--operation aggregateStatus needs --status-file")?;
            vec![(
                "aggregatedStatus",
                layer.aggregate_status(observed()?, items).map_err(failed)?,
            )]
        }
        Operation::InterpretHealth => {
            vec![(
                "healthy",
                json!(layer.interpret_health(observed()?).map_err(failed)?),
            )]
        }
        Operation::InterpretDependency => {
            vec![(
                "dependencies",
                serde_json::to_value(layer.get_dependencies(observed()?).map_err(failed)?)?,
            )]
        }
    })
}

/// Karmada's result listing: one YAML document per result, headed `# [i/n] name:`.
pub fn render(results: &[(&'static str, Value)]) -> anyhow::Result<String> {
    let mut out = String::new();
    for (i, (name, value)) in results.iter().enumerate() {
        out.push_str(&format!("---\n# [{}/{}] {name}:\n", i + 1, results.len()));
        out.push_str(&serde_saphyr::to_string(value)?);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundled() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../karmada-interpreter/customizations/kruise-cloneset.yaml")
    }

    fn layer() -> ConfigurableInterpreter {
        let layer = ConfigurableInterpreter::new(LuaVm::default());
        let customizations: Vec<_> = read_customizations(&[bundled()])
            .expect("read")
            .into_iter()
            .map(|(_, c)| c)
            .collect();
        layer.load(&customizations);
        layer
    }

    fn clone_set() -> Value {
        objects(
            read_documents(&test_fixtures::path("interpreter/kruise-cloneset.yaml"))
                .expect("fixture"),
        )
        .remove(0)
    }

    #[test]
    fn check_passes_the_bundled_file_and_reports_each_broken_rule() {
        let good = read_customizations(&[bundled()]).expect("read");
        let (report, failed) = check_report(&good);
        assert!(!failed, "{report}");
        assert!(
            report.contains("TARGET: apps.kruise.io/v1alpha1 CloneSet"),
            "{report}"
        );
        assert!(
            report.contains("    InterpretReplica:\tPASS\n")
                && report.contains("    InterpretComponent:\tUNSET\n"),
            "{report}"
        );
        let mut broken = good[0].1.clone();
        if let Some(script) = broken.spec.customizations.replica_resource.as_mut() {
            script.lua_script =
                "function GetReplicas(obj)\n  return obj.spec.replicas +\nend".into();
        }
        if let Some(script) = broken.spec.customizations.retention.as_mut() {
            script.lua_script =
                "function Retain(desired, observed)\n  return io.open('/etc/passwd')\nend".into();
        }
        let (report, failed) = check_report(&[("broken".into(), broken)]);
        assert!(failed);
        assert!(
            report.contains("    InterpretReplica:\tERROR: line 3: invalid Lua"),
            "{report}"
        );
        assert!(
            report.contains("    Retain:\tERROR: line 2: io is not available"),
            "{report}"
        );
        assert!(report.contains("    AggregateStatus:\tPASS"), "{report}");
    }

    #[test]
    fn operations_print_karmadas_named_results() {
        let layer = layer();
        let inputs = Inputs {
            observed: Some(clone_set()),
            desired: None,
            status: None,
            desired_replica: Some(2),
        };
        let replica = execute(
            &layer,
            rule_named("interpretReplica").expect("rule"),
            &inputs,
        )
        .expect("run");
        assert_eq!(
            render(&replica).expect("render"),
            "---\n# [1/2] replica:\n6\n---\n# [2/2] requires:\nresourceRequest:\n  cpu: 500m\n  memory: 1Gi\n"
        );
        let revised =
            execute(&layer, rule_named("reviseReplica").expect("rule"), &inputs).expect("run");
        assert_eq!(revised[0].0, "revised");
        assert_eq!(revised[0].1["spec"]["replicas"], 2);
        let health = execute(
            &layer,
            rule_named("interpretHealth").expect("rule"),
            &inputs,
        )
        .expect("run");
        assert_eq!(
            render(&health).expect("render"),
            "---\n# [1/1] healthy:\nfalse\n"
        );
        let items: Vec<AggregatedStatusItem> = serde_json::from_value(json!([
            {"clusterName": "m1", "status": {"replicas": 4, "availableReplicas": 4}},
            {"clusterName": "m2", "status": {"replicas": 2, "availableReplicas": 1}}]))
        .expect("items");
        let inputs = Inputs {
            status: Some(items),
            ..inputs
        };
        let aggregated = execute(
            &layer,
            rule_named("aggregateStatus").expect("rule"),
            &inputs,
        )
        .expect("run");
        assert_eq!(aggregated[0].0, "aggregatedStatus");
        assert_eq!(aggregated[0].1["status"]["availableReplicas"], 5);
        // Missing inputs say which flag to add.
        let bare = Inputs {
            observed: Some(clone_set()),
            desired: None,
            status: None,
            desired_replica: None,
        };
        let error =
            execute(&layer, rule_named("retain").expect("rule"), &bare).expect_err("needs desired");
        assert!(error.to_string().contains("--desired-file"), "{error}");
        let error = execute(&layer, rule_named("reviseReplica").expect("rule"), &bare)
            .expect_err("needs replicas");
        assert!(error.to_string().contains("--desired-replica"), "{error}");
    }
}
