//! Container image references split into registry, repository and tag or digest, as Karmada's image
//! overrider sees them: the first path segment is the registry only when it contains `.` or `:` or is
//! `localhost` (so `nginx:1.27` has no registry and `gcr.io/my-project/nginx` has registry `gcr.io`).
//!
//! Invariant: [`ImageRef::parse`] followed by `to_string` gives back the input for every valid reference.

use std::fmt;

use karmada_api::policy::{ImageComponent, OverriderOperator};

/// A parsed image reference.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageRef {
    pub registry: String,
    pub repository: String,
    pub tag: String,
    pub digest: String,
}

impl ImageRef {
    /// Parses `registry/repository:tag` or `registry/repository@digest` (registry, tag and digest optional).
    pub fn parse(image: &str) -> Result<Self, String> {
        if image.is_empty() || image.chars().any(char::is_whitespace) {
            return Err(format!(
                "invalid image {image:?}: expected [registry/]repository[:tag|@digest] without spaces"
            ));
        }
        let (registry, rest) = match image.split_once('/') {
            Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => {
                (first, rest)
            }
            _ => ("", image),
        };
        let (name, tag, digest) = if let Some((name, digest)) = rest.split_once('@') {
            (name, "", digest)
        } else if let Some((name, tag)) = rest.rsplit_once(':') {
            (name, tag, "")
        } else {
            (rest, "", "")
        };
        if name.is_empty() {
            return Err(format!("invalid image {image:?}: the repository is empty"));
        }
        Ok(Self {
            registry: registry.into(),
            repository: name.into(),
            tag: tag.into(),
            digest: digest.into(),
        })
    }

    fn tag_or_digest(&self) -> &str {
        if self.tag.is_empty() {
            &self.digest
        } else {
            &self.tag
        }
    }

    fn set_tag_or_digest(&mut self, value: String) {
        // A digest is `algorithm:hex`; anything else is a tag.
        if value.contains(':') {
            self.digest = value;
            self.tag.clear();
        } else {
            self.tag = value;
            self.digest.clear();
        }
    }

    /// Applies one image overrider: `add` appends the value to the component, `replace` sets it, `remove`
    /// clears it. Errors when the result has no repository.
    pub fn apply(
        &mut self,
        component: ImageComponent,
        operator: OverriderOperator,
        value: &str,
    ) -> Result<(), String> {
        match (component, operator) {
            (ImageComponent::Registry, OverriderOperator::Add) => self.registry.push_str(value),
            (ImageComponent::Registry, OverriderOperator::Replace) => self.registry = value.into(),
            (ImageComponent::Registry, OverriderOperator::Remove) => self.registry.clear(),
            (ImageComponent::Repository, OverriderOperator::Add) => self.repository.push_str(value),
            (ImageComponent::Repository, OverriderOperator::Replace) => {
                self.repository = value.into()
            }
            (ImageComponent::Repository, OverriderOperator::Remove) => self.repository.clear(),
            (ImageComponent::Tag, OverriderOperator::Add) => {
                let combined = format!("{}{value}", self.tag_or_digest());
                self.set_tag_or_digest(combined);
            }
            (ImageComponent::Tag, OverriderOperator::Replace) => {
                self.set_tag_or_digest(value.into())
            }
            (ImageComponent::Tag, OverriderOperator::Remove) => {
                self.tag.clear();
                self.digest.clear();
            }
        }
        if self.repository.is_empty() {
            return Err(format!("the overridden image {self} has no repository"));
        }
        Ok(())
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.registry.is_empty() {
            write!(f, "{}/", self.registry)?;
        }
        f.write_str(&self.repository)?;
        if !self.tag.is_empty() {
            write!(f, ":{}", self.tag)
        } else if !self.digest.is_empty() {
            write!(f, "@{}", self.digest)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn parse_table() {
        let cases = [
            ("nginx", ("", "nginx", "", "")),
            ("nginx:1.27-alpine", ("", "nginx", "1.27-alpine", "")),
            ("library/nginx:1", ("", "library/nginx", "1", "")),
            (
                "gcr.io/my-project/nginx:1.27",
                ("gcr.io", "my-project/nginx", "1.27", ""),
            ),
            ("localhost/app", ("localhost", "app", "", "")),
            ("registry:5000/app:v2", ("registry:5000", "app", "v2", "")),
            (
                "quay.io/app@sha256:abc",
                ("quay.io", "app", "", "sha256:abc"),
            ),
        ];
        for (image, (registry, repository, tag, digest)) in cases {
            let parsed = ImageRef::parse(image).expect("valid");
            assert_eq!(
                (
                    parsed.registry.as_str(),
                    parsed.repository.as_str(),
                    parsed.tag.as_str(),
                    parsed.digest.as_str()
                ),
                (registry, repository, tag, digest),
                "{image}"
            );
            assert_eq!(parsed.to_string(), image);
        }
        for bad in ["", "has space", "gcr.io/:tag"] {
            assert!(ImageRef::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn operator_table() {
        use ImageComponent::{Registry, Repository, Tag};
        use OverriderOperator::{Add, Remove, Replace};
        let cases = [
            (
                "nginx:1.27-alpine",
                Registry,
                Replace,
                "gcr.io/my-project",
                "gcr.io/my-project/nginx:1.27-alpine",
            ),
            (
                "docker.io/nginx:1",
                Registry,
                Add,
                "-mirror",
                "docker.io-mirror/nginx:1",
            ),
            ("docker.io/nginx:1", Registry, Remove, "", "nginx:1"),
            (
                "docker.io/nginx:1",
                Repository,
                Replace,
                "library/httpd",
                "docker.io/library/httpd:1",
            ),
            ("nginx:1", Repository, Add, "-slim", "nginx-slim:1"),
            ("nginx:1", Tag, Replace, "2", "nginx:2"),
            ("nginx:1", Tag, Add, "-alpine", "nginx:1-alpine"),
            ("nginx:1", Tag, Remove, "", "nginx"),
            ("nginx:1", Tag, Replace, "sha256:abc", "nginx@sha256:abc"),
        ];
        for (image, component, operator, value, expected) in cases {
            let mut parsed = ImageRef::parse(image).expect("valid");
            parsed.apply(component, operator, value).expect("applies");
            assert_eq!(
                parsed.to_string(),
                expected,
                "{image} {component:?} {operator:?} {value}"
            );
        }
        let mut parsed = ImageRef::parse("nginx:1").expect("valid");
        assert!(parsed.apply(Repository, Remove, "").is_err());
    }

    proptest! {
        #[test]
        fn parse_then_print_round_trips(
            registry in proptest::option::of("[a-z]{1,8}\\.(io|com)"),
            repository in "[a-z0-9]{1,8}(/[a-z0-9]{1,8}){0,2}",
            tag in proptest::option::of("[a-z0-9.]{1,8}"),
        ) {
            let mut image = String::new();
            if let Some(registry) = &registry { image.push_str(registry); image.push('/'); }
            image.push_str(&repository);
            if let Some(tag) = &tag { image.push(':'); image.push_str(tag); }
            let parsed = ImageRef::parse(&image).map_err(TestCaseError::fail)?;
            prop_assert_eq!(parsed.to_string(), image);
            prop_assert_eq!(parsed.registry, registry.unwrap_or_default());
        }
    }
}
