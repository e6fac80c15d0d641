//! What strategic merge patch and server-side apply need to know about a kind's lists and
//! maps: which lists merge (and by which key) and which maps carry `retainKeys`.
//!
//! Paths are field names from the object root with list positions left out, so the
//! `containers` list of a Deployment is `["spec", "template", "spec", "containers"]` and the
//! `ports` list inside any of its containers is the same path plus `"ports"`.

/// How a list combines with a patch or an applied configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListStrategy {
    /// The list is one value: a patch replaces it whole.
    Atomic,
    /// Elements merge. `key: Some(k)` lists hold objects identified by field `k`;
    /// `key: None` lists are sets of primitive values.
    Merge { key: Option<String> },
}

/// Patch metadata of one kind.
pub trait PatchMeta {
    /// The strategy of the list at `path`. Lists not described are atomic.
    fn list_strategy(&self, path: &[&str]) -> ListStrategy;

    /// Whether the map at `path` (or each object of the list at `path`) has the `retainKeys`
    /// strategy. Informational for clients computing patches: [`super::strategic_merge`]
    /// honours a `$retainKeys` directive wherever it appears.
    fn retain_keys(&self, path: &[&str]) -> bool;
}

/// Metadata for kinds without strategic-merge information (custom resources): every list is
/// atomic, as in a JSON merge patch.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPatchMeta;

impl PatchMeta for NoPatchMeta {
    fn list_strategy(&self, _path: &[&str]) -> ListStrategy {
        ListStrategy::Atomic
    }

    fn retain_keys(&self, _path: &[&str]) -> bool {
        false
    }
}

/// The built-in kinds' merge keys (from the `patchStrategy`/`patchMergeKey` of the Kubernetes
/// API types). Unknown kinds still get the object-metadata rules. The policy, storage,
/// scheduling and autoscaling kinds declare no merge keys of their own: apart from their status
/// conditions every list of theirs is atomic.
#[derive(Clone, Debug)]
pub struct BuiltinPatchMeta {
    kind: String,
}

impl BuiltinPatchMeta {
    pub fn for_kind(kind: &str) -> Self {
        Self {
            kind: kind.to_string(),
        }
    }

    /// Where the PodSpec sits in this kind, if it has one.
    fn pod_spec_path(&self) -> Option<&'static [&'static str]> {
        match self.kind.as_str() {
            "Pod" => Some(&["spec"]),
            "PodTemplate" => Some(&["template", "spec"]),
            "Deployment"
            | "StatefulSet"
            | "DaemonSet"
            | "ReplicaSet"
            | "ReplicationController"
            | "Job" => Some(&["spec", "template", "spec"]),
            "CronJob" => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
            _ => None,
        }
    }

    fn merge(key: &str) -> ListStrategy {
        ListStrategy::Merge {
            key: Some(key.to_string()),
        }
    }
}

const CONTAINER_LISTS: &[&str] = &["containers", "initContainers", "ephemeralContainers"];

fn pod_spec_list(rest: &[&str]) -> Option<ListStrategy> {
    let merge = BuiltinPatchMeta::merge;
    Some(match rest {
        [list] if CONTAINER_LISTS.contains(list) => merge("name"),
        ["volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates"] => merge("name"),
        ["hostAliases"] => merge("ip"),
        ["topologySpreadConstraints"] => merge("topologyKey"),
        [list, "ports"] if CONTAINER_LISTS.contains(list) => merge("containerPort"),
        [list, "env"] if CONTAINER_LISTS.contains(list) => merge("name"),
        [list, "volumeMounts"] if CONTAINER_LISTS.contains(list) => merge("mountPath"),
        [list, "volumeDevices"] if CONTAINER_LISTS.contains(list) => merge("devicePath"),
        _ => return None,
    })
}

impl PatchMeta for BuiltinPatchMeta {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        // Object metadata, at the root or inside a template.
        match path {
            [.., "metadata", "finalizers"] => return ListStrategy::Merge { key: None },
            [.., "metadata", "ownerReferences"] => return Self::merge("uid"),
            ["status", "conditions"] => return Self::merge("type"),
            _ => {}
        }
        if let Some(rest) = self
            .pod_spec_path()
            .and_then(|prefix| path.strip_prefix(prefix))
            && let Some(strategy) = pod_spec_list(rest)
        {
            return strategy;
        }
        match (self.kind.as_str(), path) {
            ("Service", ["spec", "ports"]) => Self::merge("port"),
            _ => ListStrategy::Atomic,
        }
    }

    fn retain_keys(&self, path: &[&str]) -> bool {
        if self.kind == "Deployment" && path == ["spec", "strategy"] {
            return true;
        }
        self.pod_spec_path()
            .and_then(|prefix| path.strip_prefix(prefix))
            .is_some_and(|rest| matches!(rest, ["volumes" | "resourceClaims"]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table() {
        let key = |k: &str| ListStrategy::Merge {
            key: Some(k.to_string()),
        };
        let cases: &[(&str, &[&str], ListStrategy)] = &[
            (
                "Deployment",
                &["spec", "template", "spec", "containers"],
                key("name"),
            ),
            (
                "Deployment",
                &["spec", "template", "spec", "containers", "ports"],
                key("containerPort"),
            ),
            (
                "Deployment",
                &["spec", "template", "spec", "initContainers", "env"],
                key("name"),
            ),
            (
                "Deployment",
                &["spec", "template", "spec", "containers", "volumeMounts"],
                key("mountPath"),
            ),
            (
                "Deployment",
                &["spec", "template", "spec", "volumes"],
                key("name"),
            ),
            (
                "Deployment",
                &["spec", "template", "spec", "tolerations"],
                ListStrategy::Atomic,
            ),
            (
                "Deployment",
                &["spec", "template", "spec", "containers", "args"],
                ListStrategy::Atomic,
            ),
            (
                "Deployment",
                &["spec", "selector", "matchExpressions"],
                ListStrategy::Atomic,
            ),
            ("Deployment", &["status", "conditions"], key("type")),
            (
                "StatefulSet",
                &["spec", "template", "spec", "hostAliases"],
                key("ip"),
            ),
            (
                "StatefulSet",
                &["spec", "volumeClaimTemplates"],
                ListStrategy::Atomic,
            ),
            (
                "CronJob",
                &[
                    "spec",
                    "jobTemplate",
                    "spec",
                    "template",
                    "spec",
                    "containers",
                ],
                key("name"),
            ),
            (
                "CronJob",
                &["spec", "template", "spec", "containers"],
                ListStrategy::Atomic,
            ),
            ("Pod", &["spec", "containers"], key("name")),
            (
                "Pod",
                &["spec", "topologySpreadConstraints"],
                key("topologyKey"),
            ),
            ("Service", &["spec", "ports"], key("port")),
            ("Service", &["spec", "externalIPs"], ListStrategy::Atomic),
            (
                "ConfigMap",
                &["metadata", "finalizers"],
                ListStrategy::Merge { key: None },
            ),
            (
                "Deployment",
                &["spec", "template", "metadata", "finalizers"],
                ListStrategy::Merge { key: None },
            ),
            ("Namespace", &["metadata", "ownerReferences"], key("uid")),
            (
                "ReplicationController",
                &["spec", "template", "spec", "containers"],
                key("name"),
            ),
            ("PodTemplate", &["template", "spec", "volumes"], key("name")),
            (
                "PodTemplate",
                &["template", "spec", "containers", "env"],
                key("name"),
            ),
            (
                "PodDisruptionBudget",
                &["status", "conditions"],
                key("type"),
            ),
            (
                "HorizontalPodAutoscaler",
                &["status", "conditions"],
                key("type"),
            ),
            (
                "HorizontalPodAutoscaler",
                &["spec", "metrics"],
                ListStrategy::Atomic,
            ),
            ("NetworkPolicy", &["spec", "ingress"], ListStrategy::Atomic),
            (
                "NetworkPolicy",
                &["spec", "policyTypes"],
                ListStrategy::Atomic,
            ),
            (
                "PersistentVolume",
                &["spec", "accessModes"],
                ListStrategy::Atomic,
            ),
            ("LimitRange", &["spec", "limits"], ListStrategy::Atomic),
            ("ResourceQuota", &["spec", "scopes"], ListStrategy::Atomic),
            ("StorageClass", &["mountOptions"], ListStrategy::Atomic),
            ("Namespace", &["spec", "finalizers"], ListStrategy::Atomic),
            ("Whatever", &["spec", "containers"], ListStrategy::Atomic),
        ];
        for (kind, path, expected) in cases {
            assert_eq!(
                BuiltinPatchMeta::for_kind(kind).list_strategy(path),
                *expected,
                "{kind} {path:?}"
            );
        }
    }

    #[test]
    fn retain_keys_table() {
        let cases: &[(&str, &[&str], bool)] = &[
            ("Deployment", &["spec", "strategy"], true),
            ("Deployment", &["spec", "template", "spec", "volumes"], true),
            ("Pod", &["spec", "volumes"], true),
            ("StatefulSet", &["spec", "updateStrategy"], false),
            (
                "Deployment",
                &["spec", "template", "spec", "containers"],
                false,
            ),
        ];
        for (kind, path, expected) in cases {
            assert_eq!(
                BuiltinPatchMeta::for_kind(kind).retain_keys(path),
                *expected,
                "{kind} {path:?}"
            );
        }
        assert_eq!(
            NoPatchMeta.list_strategy(&["metadata", "finalizers"]),
            ListStrategy::Atomic
        );
    }
}
