//! Merging kubeconfigs: `local-up` puts the control plane's and every member's context in one file.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;

/// The lists of a kubeconfig that hold named entries.
const NAMED_LISTS: [&str; 3] = ["clusters", "users", "contexts"];

/// `base` with every cluster, user and context of `others` added; an entry of the same name is replaced, so
/// merging again is a no-op. `current-context` stays the base's.
pub fn merge(base: &Value, others: &[Value]) -> Value {
    let mut merged = base.clone();
    for list in NAMED_LISTS {
        let mut entries: Vec<Value> = base[list].as_array().cloned().unwrap_or_default();
        for other in others {
            for entry in other[list].as_array().into_iter().flatten() {
                match entries.iter_mut().find(|e| e["name"] == entry["name"]) {
                    Some(existing) => *existing = entry.clone(),
                    None => entries.push(entry.clone()),
                }
            }
        }
        merged[list] = Value::Array(entries);
    }
    merged
}

/// Reads a kubeconfig (YAML or JSON) as a JSON value.
pub fn read(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_saphyr::from_str(&text).with_context(|| format!("parsing kubeconfig {}", path.display()))
}

/// Writes atomically (temp file + rename), readable only by the owner: it holds private keys.
pub fn write(path: &Path, kubeconfig: &Value) -> anyhow::Result<()> {
    let body = serde_json::to_vec_pretty(kubeconfig)?;
    apiserver_auth::files::write_private(path, &body)
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn single(name: &str, server: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": server}}],
            "users": [{"name": format!("{name}-admin"), "user": {}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": format!("{name}-admin")}}],
            "current-context": name,
        })
    }

    #[test]
    fn members_are_added_and_merging_again_changes_nothing() {
        let base = single("karmada-apiserver", "https://127.0.0.1:1");
        let members = [
            single("member1", "https://127.0.0.1:2"),
            single("member2", "https://127.0.0.1:3"),
        ];
        let merged = merge(&base, &members);
        let names = |list: &str| -> Vec<String> {
            merged[list]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| e["name"].as_str().unwrap_or_default().to_string())
                .collect()
        };
        assert_eq!(
            names("contexts"),
            vec!["karmada-apiserver", "member1", "member2"]
        );
        assert_eq!(
            names("users"),
            vec!["karmada-apiserver-admin", "member1-admin", "member2-admin"]
        );
        assert_eq!(merged["current-context"], "karmada-apiserver");
        assert_eq!(merge(&merged, &members), merged);

        // A member that moved replaces its old entry rather than adding a second one.
        let moved = merge(&merged, &[single("member1", "https://127.0.0.1:9")]);
        assert_eq!(moved["clusters"].as_array().map(Vec::len), Some(3));
        assert_eq!(
            moved["clusters"][1]["cluster"]["server"],
            "https://127.0.0.1:9"
        );
    }
}
