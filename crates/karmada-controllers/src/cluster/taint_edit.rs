//! A person's edits of a Cluster's taints — `karmadactl taint`, `cordon` / `uncordon`, and the dashboard's
//! taint and cordon actions all go through here, so the two front ends accept the same specs, answer the same
//! errors and write the same way.
//!
//! Pure: [`parse_taint`] (one `KEY[=VALUE]:EFFECT[-]` argument), [`apply_changes`] (a taint list after the
//! changes, time passed in), [`cordoned`] (with or without the unschedulable taint). Runtime: [`update_taints`]
//! (read the Cluster, change its taints, replace it with the read resourceVersion; a 409 reads again).

use kube::api::PostParams;
use serde_json::{Value, json};

use karmada_api::cluster::TAINT_CLUSTER_UNSCHEDULABLE;

use crate::runtime::resources;

/// The effects a cluster taint may have.
pub const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
/// The accepted forms, quoted by every parse error.
pub const ACCEPTED: &str = "accepted: KEY[=VALUE]:EFFECT to add, KEY[:EFFECT]- to remove; EFFECT is \
                            NoSchedule, PreferNoSchedule or NoExecute";
/// Reads of a Cluster tried when concurrent writers keep changing it (409 Conflict).
const CONFLICT_TRIES: usize = 5;

/// Why a taint edit was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum TaintEditError {
    #[error("invalid taint spec {spec:?}: {why}; {ACCEPTED}")]
    InvalidSpec { spec: String, why: String },
    #[error(
        "cluster already has a taint with key {key:?} and effect {effect:?}; ask to overwrite it (--overwrite) to \
         replace its value"
    )]
    Exists { key: String, effect: String },
    #[error("taint {0:?} not found")]
    Absent(String),
    #[error("cluster {0:?} not found; `karmadactl get clusters` lists the joined clusters")]
    ClusterNotFound(String),
    #[error("cluster {0:?} kept changing while its taints were updated; try again")]
    KeptChanging(String),
    /// The API refused the read or the write (RBAC, the credentials, validation): its Status is kept whole.
    #[error("updating cluster {name}: {source}")]
    Api {
        name: String,
        #[source]
        source: kube::Error,
    },
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

impl TaintChange {
    pub fn is_removal(&self) -> bool {
        matches!(self, TaintChange::Remove { .. })
    }
}

fn invalid(spec: &str, why: String) -> TaintEditError {
    TaintEditError::InvalidSpec {
        spec: spec.to_string(),
        why,
    }
}

fn check_key(key: &str, spec: &str) -> Result<(), TaintEditError> {
    let problems = apimachinery::names::qualified_name_problems(key);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(invalid(
            spec,
            format!("key {key:?}: {}", problems.join("; ")),
        ))
    }
}

fn check_effect(effect: &str, spec: &str) -> Result<(), TaintEditError> {
    if EFFECTS.contains(&effect) {
        Ok(())
    } else {
        Err(invalid(spec, format!("unknown effect {effect:?}")))
    }
}

/// Parses one taint argument.
pub fn parse_taint(spec: &str) -> Result<TaintChange, TaintEditError> {
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
        return Err(invalid(spec, "no effect".into()));
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
            return Err(invalid(
                spec,
                format!("value {v:?}: {}", problems.join("; ")),
            ));
        }
    }
    Ok(TaintChange::Add {
        key: key.to_string(),
        value: value.map(str::to_string),
        effect: effect.to_string(),
    })
}

/// The taint list after `changes`; `now` (RFC 3339) stamps new NoExecute taints' `timeAdded`. Refuses a new
/// value for an existing key and effect unless `overwrite`, and the removal of a taint that is not there.
pub fn apply_changes(
    taints: &[Value],
    changes: &[TaintChange],
    overwrite: bool,
    now: &str,
) -> Result<Vec<Value>, TaintEditError> {
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
                        return Err(TaintEditError::Exists {
                            key: key.clone(),
                            effect: effect.clone(),
                        });
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
                    return Err(TaintEditError::Absent(key.clone()));
                }
            }
        }
    }
    Ok(out)
}

/// Whether `taint` is the one `cordon` adds.
pub fn is_cordon_taint(taint: &Value) -> bool {
    taint["key"] == TAINT_CLUSTER_UNSCHEDULABLE && taint["effect"] == "NoSchedule"
}

/// The taint list with (cordon) or without (uncordon) the unschedulable taint; other taints stay as they are.
pub fn cordoned(taints: &[Value], cordon: bool) -> Vec<Value> {
    let present = taints.iter().any(is_cordon_taint);
    match (cordon, present) {
        (true, true) => taints.to_vec(),
        (true, false) => {
            let mut out = taints.to_vec();
            out.push(json!({"key": TAINT_CLUSTER_UNSCHEDULABLE, "effect": "NoSchedule"}));
            out
        }
        (false, _) => taints
            .iter()
            .filter(|t| !is_cordon_taint(t))
            .cloned()
            .collect(),
    }
}

/// Reads Cluster `name` as `client`, changes its taints with `change`, and replaces it with the read
/// resourceVersion, reading again when another writer got there first. Returns whether anything changed
/// (`dry_run`: whether it would).
pub async fn update_taints(
    client: &kube::Client,
    name: &str,
    dry_run: bool,
    change: impl Fn(&[Value]) -> Result<Vec<Value>, TaintEditError>,
) -> Result<bool, TaintEditError> {
    let api = resources::all(client, &resources::cluster());
    let failed = |source| TaintEditError::Api {
        name: name.to_string(),
        source,
    };
    for _ in 0..CONFLICT_TRIES {
        let Some(mut object) = api.get_opt(name).await.map_err(failed)? else {
            return Err(TaintEditError::ClusterNotFound(name.to_string()));
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
            Err(e) => return Err(failed(e)),
        }
    }
    Err(TaintEditError::KeptChanging(name.to_string()))
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
            ("k=bad value:NoSchedule", None),
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
        assert!(matches!(
            apply_changes(&[], &remove, false, "t"),
            Err(TaintEditError::Absent(_))
        ));
        let evict = parse_taint("maint:NoExecute").unwrap();
        assert_eq!(
            apply_changes(&[], &[evict], false, "2026-01-01T00:00:00Z").unwrap()[0]["timeAdded"],
            "2026-01-01T00:00:00Z"
        );
    }

    #[test]
    fn cordon_is_idempotent_and_keeps_other_taints() {
        let other = json!({"key": "x", "effect": "NoExecute"});
        let once = cordoned(std::slice::from_ref(&other), true);
        assert_eq!(once.len(), 2);
        assert_eq!(cordoned(&once, true), once);
        assert_eq!(cordoned(&once, false), vec![other.clone()]);
        assert_eq!(cordoned(std::slice::from_ref(&other), false), vec![other]);
    }
}
