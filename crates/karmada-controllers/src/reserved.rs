//! What Karmada never propagates (docs/karmada.md, "Reserved namespaces and skipped APIs"): its own namespaces,
//! namespaces matching `--skipped-propagating-namespaces` (regexes, each anchored; default `kube-.*`), its own API
//! groups and a few Kubernetes ones, plus APIs listed in `--skipped-propagating-apis`.

use regex::Regex;

use crate::names::EXECUTION_NAMESPACE_PREFIX;

/// Namespace of Karmada's control-plane components.
pub const KARMADA_SYSTEM_NAMESPACE: &str = "karmada-system";
/// Namespace holding member-cluster credentials.
pub const KARMADA_CLUSTER_NAMESPACE: &str = "karmada-cluster";
/// Default of `--skipped-propagating-namespaces`.
pub const DEFAULT_SKIPPED_NAMESPACES: &[&str] = &["kube-.*"];

/// API groups whose objects the detector never propagates.
pub const NEVER_PROPAGATED_GROUPS: &[&str] = &[
    "cluster.karmada.io",
    "policy.karmada.io",
    "work.karmada.io",
    "config.karmada.io",
    "networking.karmada.io",
    "autoscaling.karmada.io",
    "remedy.karmada.io",
    "apps.karmada.io",
    "events.k8s.io",
    "coordination.k8s.io",
    // A CSR is one requester's request to this control plane's signer; it means nothing in a member.
    "certificates.k8s.io",
];

/// Whether `namespace` is one of Karmada's own (`karmada-system`, `karmada-cluster`, `karmada-es-*`).
pub fn is_reserved_namespace(namespace: &str) -> bool {
    namespace == KARMADA_SYSTEM_NAMESPACE
        || namespace == KARMADA_CLUSTER_NAMESPACE
        || namespace.starts_with(EXECUTION_NAMESPACE_PREFIX)
}

/// A bad `--skipped-propagating-namespaces` or `--skipped-propagating-apis` entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {entry:?}: {message}")]
pub struct FlagError {
    pub flag: &'static str,
    pub entry: String,
    pub message: String,
}

/// Compiled `--skipped-propagating-namespaces`.
#[derive(Clone, Debug)]
pub struct SkippedNamespaces(Vec<Regex>);

impl Default for SkippedNamespaces {
    fn default() -> Self {
        // The default pattern is a constant known to compile; fall back to "nothing skipped" rather than panic.
        Self::new(DEFAULT_SKIPPED_NAMESPACES).unwrap_or(Self(Vec::new()))
    }
}

impl SkippedNamespaces {
    /// Compiles each pattern anchored as `^(?:pattern)$`.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, FlagError> {
        patterns
            .iter()
            .map(|pattern| {
                let pattern = pattern.as_ref();
                Regex::new(&format!("^(?:{pattern})$")).map_err(|e| FlagError {
                    flag: "--skipped-propagating-namespaces",
                    entry: pattern.to_string(),
                    message: format!("not a valid regular expression: {e}"),
                })
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    pub fn matches(&self, namespace: &str) -> bool {
        self.0.iter().any(|regex| regex.is_match(namespace))
    }
}

/// One `--skipped-propagating-apis` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
enum SkippedApi {
    Group(String),
    GroupVersion(String, String),
    Kinds(String, String, Vec<String>),
}

/// Compiled `--skipped-propagating-apis`: entries separated by `;`, each `group`, `group/version` or
/// `group/version/Kind,Kind2` (the core group is written `v1` alone or with an empty group, e.g. `/v1/Event`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkippedApis(Vec<SkippedApi>);

impl SkippedApis {
    pub fn parse(flag: &str) -> Result<Self, FlagError> {
        let mut entries = Vec::new();
        for entry in flag.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            let parts: Vec<&str> = entry.split('/').collect();
            let parsed = match parts.as_slice() {
                [group] => SkippedApi::Group((*group).to_string()),
                [group, version] => {
                    SkippedApi::GroupVersion((*group).to_string(), (*version).to_string())
                }
                [group, version, kinds] if !kinds.is_empty() => SkippedApi::Kinds(
                    (*group).to_string(),
                    (*version).to_string(),
                    kinds.split(',').map(|k| k.trim().to_string()).collect(),
                ),
                _ => {
                    return Err(FlagError {
                        flag: "--skipped-propagating-apis",
                        entry: entry.to_string(),
                        message: "expected group, group/version or group/version/Kind,Kind2".into(),
                    });
                }
            };
            entries.push(parsed);
        }
        Ok(Self(entries))
    }

    pub fn matches(&self, api_version: &str, kind: &str) -> bool {
        let (group, version) = split_api_version(api_version);
        self.0.iter().any(|entry| match entry {
            SkippedApi::Group(g) => g == group,
            SkippedApi::GroupVersion(g, v) => g == group && v == version,
            SkippedApi::Kinds(g, v, kinds) => {
                g == group && v == version && kinds.iter().any(|k| k == kind)
            }
        })
    }
}

/// `(group, version)` of an apiVersion; the core group is empty.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// Whether the detector never propagates objects of this apiVersion/kind (before the flag-given skips).
pub fn is_never_propagated_api(api_version: &str, kind: &str) -> bool {
    let (group, _) = split_api_version(api_version);
    NEVER_PROPAGATED_GROUPS.contains(&group) || (group.is_empty() && kind == "Event")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_and_skipped_namespaces() {
        let skipped = SkippedNamespaces::default();
        let cases = [
            ("karmada-system", true, false),
            ("karmada-cluster", true, false),
            ("karmada-es-member1", true, false),
            ("kube-system", false, true),
            ("kube-public", false, true),
            ("my-kube-ns", false, false),
            ("default", false, false),
        ];
        for (namespace, reserved, skipped_by_regex) in cases {
            assert_eq!(is_reserved_namespace(namespace), reserved, "{namespace}");
            assert_eq!(skipped.matches(namespace), skipped_by_regex, "{namespace}");
        }
        let custom = SkippedNamespaces::new(&["team-.*", "legacy"]).expect("valid");
        assert!(
            custom.matches("team-a") && custom.matches("legacy") && !custom.matches("legacy-2")
        );
        let error = SkippedNamespaces::new(&["("]).expect_err("invalid regex");
        assert!(
            error
                .to_string()
                .contains("--skipped-propagating-namespaces"),
            "{error}"
        );
    }

    #[test]
    fn never_propagated_apis() {
        let cases = [
            ("policy.karmada.io/v1alpha1", "PropagationPolicy", true),
            ("work.karmada.io/v1alpha2", "ResourceBinding", true),
            ("v1", "Event", true),
            ("events.k8s.io/v1", "Event", true),
            ("coordination.k8s.io/v1", "Lease", true),
            ("certificates.k8s.io/v1", "CertificateSigningRequest", true),
            ("apps/v1", "Deployment", false),
            ("v1", "ConfigMap", false),
        ];
        for (api_version, kind, never) in cases {
            assert_eq!(
                is_never_propagated_api(api_version, kind),
                never,
                "{api_version} {kind}"
            );
        }
    }

    #[test]
    fn skipped_apis_flag() {
        let skipped = SkippedApis::parse("example.com; batch/v1; apps/v1/DaemonSet,StatefulSet")
            .expect("valid");
        let cases = [
            ("example.com/v1", "Widget", true),
            ("batch/v1", "Job", true),
            ("batch/v2", "Job", false),
            ("apps/v1", "DaemonSet", true),
            ("apps/v1", "Deployment", false),
        ];
        for (api_version, kind, expected) in cases {
            assert_eq!(
                skipped.matches(api_version, kind),
                expected,
                "{api_version} {kind}"
            );
        }
        assert!(SkippedApis::parse("a/b/c/d").is_err());
        assert_eq!(
            SkippedApis::parse("").expect("empty"),
            SkippedApis::default()
        );
    }
}
