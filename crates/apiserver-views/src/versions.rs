//! Kubernetes' version ordering for API versions: GA before beta before alpha, higher numbers
//! first, then anything not in `vN[alpha|beta]M` form in lexical order.

use std::cmp::Ordering;

/// (stability rank, major, minor) where lower ranks sort first; `None` for free-form versions.
fn parse(version: &str) -> Option<(u8, u64, u64)> {
    let rest = version.strip_prefix('v')?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let major: u64 = rest[..digits].parse().ok()?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((0, major, 0));
    }
    for (label, rank) in [("beta", 1), ("alpha", 2)] {
        if let Some(minor) = tail.strip_prefix(label) {
            return Some((rank, major, minor.parse().ok()?));
        }
    }
    None
}

/// Ordering for sorting versions most-preferred first.
pub fn by_preference(a: &str, b: &str) -> Ordering {
    match (parse(a), parse(b)) {
        (Some((rank_a, major_a, minor_a)), Some((rank_b, major_b, minor_b))) => rank_a
            .cmp(&rank_b)
            .then(major_b.cmp(&major_a))
            .then(minor_b.cmp(&minor_a)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::by_preference;

    #[test]
    fn sorts_like_kube() {
        let mut versions = vec![
            "v1alpha1",
            "foo",
            "v1beta1",
            "v2",
            "v1",
            "v1alpha2",
            "v11alpha2",
            "v2beta1",
        ];
        versions.sort_by(|a, b| by_preference(a, b));
        assert_eq!(
            versions,
            [
                "v2",
                "v1",
                "v2beta1",
                "v1beta1",
                "v11alpha2",
                "v1alpha2",
                "v1alpha1",
                "foo"
            ]
        );
    }
}
