//! Karmada's generated names (docs/karmada.md, "Generated names"): binding names, execution namespaces, Work names,
//! `karmadactl promote` policy names and binding reference keys.
//!
//! Invariants: every function is deterministic and total; hashes are FNV-1a 32-bit over the plain string,
//! printed in decimal and passed through Karmada's SafeEncode alphabet, so names match real Karmada's.

/// Prefix of every execution namespace.
pub const EXECUTION_NAMESPACE_PREFIX: &str = "karmada-es-";

/// Alphabet SafeEncode maps characters into (no vowels, no look-alikes).
const SAFE_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

/// FNV-1a, 32 bits.
pub fn fnv1a_32(input: &str) -> u32 {
    input.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// Karmada's SafeEncode: each character becomes `SAFE_ALPHABET[code % 27]`.
pub fn safe_encode(input: &str) -> String {
    input
        .chars()
        .map(|c| {
            let index = (u32::from(c) % 27) as usize;
            char::from(SAFE_ALPHABET[index])
        })
        .collect()
}

/// The hash suffix Karmada appends: SafeEncode of the decimal FNV-1a-32 of `key`.
pub fn hash_suffix(key: &str) -> String {
    safe_encode(&fnv1a_32(key).to_string())
}

fn dotted(name: &str) -> String {
    name.replace(':', ".")
}

/// Name of the (Cluster)ResourceBinding of a template: `lower(name + "-" + kind)` with `:` in the name
/// replaced by `.`. E.g. Deployment `nginx` → `nginx-deployment`.
pub fn binding_name(kind: &str, name: &str) -> String {
    format!("{}-{}", dotted(name), kind).to_lowercase()
}

/// Execution namespace of a member cluster: `karmada-es-<cluster>`.
pub fn execution_namespace(cluster: &str) -> String {
    format!("{EXECUTION_NAMESPACE_PREFIX}{cluster}")
}

/// The cluster an execution namespace belongs to, if `namespace` is one.
pub fn cluster_of_execution_namespace(namespace: &str) -> Option<&str> {
    namespace
        .strip_prefix(EXECUTION_NAMESPACE_PREFIX)
        .filter(|cluster| !cluster.is_empty())
}

/// Name of the Work carrying a template to a member (same in every execution namespace): `n-H` where
/// `n = lower(name with ':' → '.')` and `H` hashes `lower(namespace-n-kind)` (or `lower(n-kind)` when
/// cluster-scoped).
pub fn work_name(kind: &str, name: &str, namespace: &str) -> String {
    let name = dotted(name).to_lowercase();
    let key = if namespace.is_empty() {
        format!("{name}-{kind}")
    } else {
        format!("{namespace}-{name}-{kind}")
    }
    .to_lowercase();
    format!("{name}-{}", hash_suffix(&key))
}

/// Name `karmadactl promote` gives the policy it creates: `lower(name' + "-" + H(namespace + gvk))`, where
/// `gvk` is the group/version/kind string the caller renders.
pub fn promote_policy_name(namespace: &str, gvk: &str, name: &str) -> String {
    format!(
        "{}-{}",
        dotted(name),
        hash_suffix(&format!("{namespace}{gvk}"))
    )
    .to_lowercase()
}

/// Key identifying an independent binding in dependency labels: the hash of `<namespace>/<name>` (or `<name>`
/// when cluster-scoped).
pub fn binding_reference_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        hash_suffix(name)
    } else {
        hash_suffix(&format!("{namespace}/{name}"))
    }
}

/// Label on an attached (dependency) binding pointing at the independent binding that needs it.
pub fn depended_by_label_key(namespace: &str, name: &str) -> String {
    format!(
        "resourcebinding.karmada.io/depended-by-{}",
        binding_reference_key(namespace, name)
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn work_name_vectors_from_the_reference() {
        let cases = [
            ("Deployment", "nginx", "default", "nginx-687f7fb96f"),
            ("Pod", "pod", "", "pod-6c46fd8b9d"),
            ("Service", "nginx", "default", "nginx-64b7849b5"),
            ("Namespace", "test-ns", "", "test-ns-6df4748f89"),
            ("ClusterRole", "system:foo", "", "system.foo-5f7d88f69"),
        ];
        for (kind, name, namespace, expected) in cases {
            assert_eq!(
                work_name(kind, name, namespace),
                expected,
                "{kind} {namespace}/{name}"
            );
        }
    }

    #[test]
    fn binding_names() {
        let cases = [
            ("Deployment", "nginx", "nginx-deployment"),
            ("ClusterRole", "system:foo", "system.foo-clusterrole"),
            ("ConfigMap", "Mixed-Case", "mixed-case-configmap"),
        ];
        for (kind, name, expected) in cases {
            assert_eq!(binding_name(kind, name), expected);
        }
    }

    #[test]
    fn promote_policy_name_vectors() {
        assert_eq!(promote_policy_name("ns-foo", "rand", "foo"), "foo-b4978784");
        assert_eq!(
            promote_policy_name("ns-foo", "rand", "system:foo"),
            "system.foo-b4978784"
        );
    }

    #[test]
    fn fnv_known_values() {
        // Published FNV-1a 32-bit test values.
        assert_eq!(fnv1a_32(""), 0x811c_9dc5);
        assert_eq!(fnv1a_32("a"), 0xe40c_292c);
        assert_eq!(fnv1a_32("foobar"), 0xbf9c_f968);
    }

    #[test]
    fn execution_namespaces_round_trip() {
        assert_eq!(execution_namespace("cluster-aws"), "karmada-es-cluster-aws");
        assert_eq!(
            cluster_of_execution_namespace("karmada-es-cluster-aws"),
            Some("cluster-aws")
        );
        assert_eq!(cluster_of_execution_namespace("karmada-es-"), None);
        assert_eq!(cluster_of_execution_namespace("default"), None);
        assert!(
            depended_by_label_key("default", "web-deployment")
                .starts_with("resourcebinding.karmada.io/depended-by-")
        );
        assert_ne!(
            binding_reference_key("a", "b"),
            binding_reference_key("", "a/b".replace('/', "-").as_str())
        );
    }

    proptest! {
        #[test]
        fn safe_encoding_uses_only_the_alphabet(input in ".{0,40}") {
            let encoded = safe_encode(&input);
            prop_assert_eq!(encoded.chars().count(), input.chars().count());
            prop_assert!(encoded.bytes().all(|b| SAFE_ALPHABET.contains(&b)));
        }

        #[test]
        fn work_names_are_lowercase_and_keep_the_name(name in "[a-zA-Z0-9:.-]{1,30}", kind in "[A-Z][a-z]{1,10}", ns in "[a-z]{0,8}") {
            let work = work_name(&kind, &name, &ns);
            let expected_prefix = format!("{}-", name.replace(':', ".").to_lowercase());
            prop_assert!(work.starts_with(&expected_prefix));
            prop_assert_eq!(work.to_lowercase(), work.clone());
        }
    }
}
