//! `karmadactl taint CLUSTER KEY[=VALUE]:EFFECT[-]...`, and the read-modify-write of a Cluster's taints shared
//! with `cordon` / `uncordon`.

use anyhow::{Context, bail};
use clap::Args;
use kube::api::PostParams;
use serde_json::{Value, json};

use super::join::clusters;
use crate::client::ControlPlaneFlags;

pub const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
const ACCEPTED: &str = "accepted: KEY[=VALUE]:EFFECT to add, KEY[:EFFECT]- to remove; EFFECT is NoSchedule, \
                        PreferNoSchedule or NoExecute";

#[derive(Args, Debug)]
pub struct TaintArgs {
    /// Cluster name.
    pub name: String,
    /// Taints: KEY[=VALUE]:EFFECT to add, KEY[:EFFECT]- to remove.
    #[arg(required = true)]
    pub taints: Vec<String>,
    /// Replace a taint with the same key and effect but another value.
    #[arg(long)]
    pub overwrite: bool,
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub control_plane: ControlPlaneFlags,
}

/// One parsed taint argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaintChange {
    Add {
        key: String,
        value: Option<String>,
        effect: String,
    },
    /// Remove the taints with this key (and effect, when given).
    Remove { key: String, effect: Option<String> },
}

fn check_key(key: &str, spec: &str) -> anyhow::Result<()> {
    let problems = apimachinery::names::qualified_name_problems(key);
    if !problems.is_empty() {
        bail!(
            "invalid taint spec {spec:?}: key {key:?}: {}; {ACCEPTED}",
            problems.join("; ")
        );
    }
    Ok(())
}

fn check_effect(effect: &str, spec: &str) -> anyhow::Result<()> {
    if !EFFECTS.contains(&effect) {
        bail!("invalid taint spec {spec:?}: unknown effect {effect:?}; {ACCEPTED}");
    }
    Ok(())
}

/// Parses one taint argument.
pub fn parse_taint(spec: &str) -> anyhow::Result<TaintChange> {
    if let Some(rest) = spec.strip_suffix('-') {
        let (key, effect) = match rest.split_once(':') {
            Some((k, e)) => (k, Some(e)),
            None => (rest, None),
        };
        check_key(key, spec)?;
        if let Some(e) = effect {
            check_effect(e, spec)?;
        }
        return Ok(TaintChange::Remove {
            key: key.to_string(),
            effect: effect.map(str::to_string),
        });
    }
    let Some((key_value, effect)) = spec.rsplit_once(':') else {
        bail!("invalid taint spec {spec:?}: no effect; {ACCEPTED}");
    };
    let (key, value) = match key_value.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (key_value, None),
    };
    check_key(key, spec)?;
    check_effect(effect, spec)?;
    if let Some(v) = value {
        let problems = apimachinery::names::label_value_problems(v);
        if !problems.is_empty() {
            bail!(
                "invalid taint spec {spec:?}: value {v:?}: {}; {ACCEPTED}",
                problems.join("; ")
            );
        }
    }
    Ok(TaintChange::Add {
        key: key.to_string(),
        value: value.map(str::to_string),
        effect: effect.to_string(),
    })
}

/// Applies the changes to a taint list; errors on a conflicting value without `overwrite` or a removal of a
/// taint that is not there.
pub fn apply_changes(
    taints: &[Value],
    changes: &[TaintChange],
    overwrite: bool,
    now: &str,
) -> anyhow::Result<Vec<Value>> {
    let mut out = taints.to_vec();
    for change in changes {
        match change {
            TaintChange::Add { key, value, effect } => {
                let existing = out
                    .iter()
                    .position(|t| t["key"] == json!(key) && t["effect"] == json!(effect));
                let mut taint = json!({"key": key, "effect": effect});
                if let Some(v) = value {
                    taint["value"] = json!(v);
                }
                if effect == "NoExecute" {
                    taint["timeAdded"] = json!(now);
                }
                match existing {
                    Some(i) if out[i].get("value").and_then(Value::as_str) == value.as_deref() => {}
                    Some(_) if !overwrite => {
                        bail!(
                            "cluster already has a taint with key {key:?} and effect {effect:?}; pass --overwrite to replace it"
                        )
                    }
                    Some(i) => out[i] = taint,
                    None => out.push(taint),
                }
            }
            TaintChange::Remove { key, effect } => {
                let before = out.len();
                out.retain(|t| {
                    !(t["key"] == json!(key)
                        && effect.as_ref().is_none_or(|e| t["effect"] == json!(e)))
                });
                if out.len() == before {
                    bail!("taint {key:?} not found");
                }
            }
        }
    }
    Ok(out)
}

/// Reads the Cluster, changes its taints with `change`, and writes it back with the read resourceVersion,
/// retrying when another writer got there first. Returns whether anything changed.
pub async fn update_taints(
    client: &kube::Client,
    name: &str,
    dry_run: bool,
    change: impl Fn(&[Value]) -> anyhow::Result<Vec<Value>>,
) -> anyhow::Result<bool> {
    let api = clusters(client);
    for _ in 0..5 {
        let Some(mut object) = api.get_opt(name).await.context("reading the cluster")? else {
            bail!(
                "cluster {name:?} not found; `karmadactl get clusters` lists the joined clusters"
            );
        };
        let current = object
            .data
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let desired = change(&current)?;
        if desired == current {
            return Ok(false);
        }
        if dry_run {
            return Ok(true);
        }
        object.data["spec"]["taints"] = Value::Array(desired);
        match api.replace(name, &PostParams::default(), &object).await {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(e).context(format!("updating cluster {name}")),
        }
    }
    bail!("cluster {name:?} kept changing while its taints were updated; try again")
}

pub async fn run(args: TaintArgs) -> anyhow::Result<()> {
    let changes = args
        .taints
        .iter()
        .map(|t| parse_taint(t))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let path = args.control_plane.path();
    let client = args.control_plane.client_at(&path).await?;
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let changed = update_taints(&client, &args.name, args.dry_run, |t| {
        apply_changes(t, &changes, args.overwrite, &now)
    })
    .await?;
    let removed_only = changes
        .iter()
        .all(|c| matches!(c, TaintChange::Remove { .. }));
    let verb = match (changed, removed_only) {
        (false, _) => "modified (no change)",
        (true, true) => "untainted",
        (true, false) => "tainted",
    };
    let dry = if args.dry_run { " (dry run)" } else { "" };
    println!("cluster/{} {verb}{dry}", args.name);
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn taint_specs_parse_or_say_what_is_accepted() {
        let add = |k: &str, v: Option<&str>, e: &str| TaintChange::Add {
            key: k.into(),
            value: v.map(Into::into),
            effect: e.into(),
        };
        let table: Vec<(&str, Option<TaintChange>)> = vec![
            (
                "dedicated=gpu:NoSchedule",
                Some(add("dedicated", Some("gpu"), "NoSchedule")),
            ),
            (
                "example.com/maint:NoExecute",
                Some(add("example.com/maint", None, "NoExecute")),
            ),
            (
                "dedicated:NoSchedule-",
                Some(TaintChange::Remove {
                    key: "dedicated".into(),
                    effect: Some("NoSchedule".into()),
                }),
            ),
            (
                "dedicated-",
                Some(TaintChange::Remove {
                    key: "dedicated".into(),
                    effect: None,
                }),
            ),
            ("dedicated=gpu", None),
            ("dedicated=gpu:Sometimes", None),
            ("bad key:NoSchedule", None),
            (":NoSchedule", None),
        ];
        for (spec, want) in table {
            match (parse_taint(spec), want) {
                (Ok(got), Some(want)) => assert_eq!(got, want, "{spec}"),
                (Err(err), None) => assert!(
                    err.to_string().contains("KEY[=VALUE]:EFFECT"),
                    "{spec}: {err}"
                ),
                (got, want) => panic!("{spec}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn changes_apply_with_overwrite_rules() {
        let existing = vec![json!({"key": "a", "value": "1", "effect": "NoSchedule"})];
        let set = |v: &str| {
            vec![TaintChange::Add {
                key: "a".into(),
                value: Some(v.into()),
                effect: "NoSchedule".into(),
            }]
        };
        assert_eq!(
            apply_changes(&existing, &set("1"), false, "t").unwrap(),
            existing
        );
        assert!(
            apply_changes(&existing, &set("2"), false, "t")
                .unwrap_err()
                .to_string()
                .contains("--overwrite")
        );
        assert_eq!(
            apply_changes(&existing, &set("2"), true, "t").unwrap()[0]["value"],
            "2"
        );
        let remove = vec![TaintChange::Remove {
            key: "a".into(),
            effect: None,
        }];
        assert!(
            apply_changes(&existing, &remove, false, "t")
                .unwrap()
                .is_empty()
        );
        assert!(apply_changes(&[], &remove, false, "t").is_err());
    }
}
