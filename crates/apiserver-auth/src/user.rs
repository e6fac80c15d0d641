//! Who is making a request, as authentication established it.

/// The group every authenticated user belongs to.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group of requests that carry no credentials.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// Members of this group are allowed everything, without consulting RBAC.
pub const MASTERS_GROUP: &str = "system:masters";
/// The user name of requests that carry no credentials.
pub const ANONYMOUS_USER: &str = "system:anonymous";

/// An authenticated identity (Kubernetes' `user.Info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The cluster administrator (what the generated admin client certificate authenticates as).
    pub fn admin() -> Self {
        Self {
            name: "system:admin".to_owned(),
            uid: String::new(),
            groups: vec![MASTERS_GROUP.to_owned(), AUTHENTICATED_GROUP.to_owned()],
        }
    }

    /// A request without credentials.
    pub fn anonymous() -> Self {
        Self {
            name: ANONYMOUS_USER.to_owned(),
            uid: String::new(),
            groups: vec![UNAUTHENTICATED_GROUP.to_owned()],
        }
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Whether this user bypasses authorization (member of `system:masters`).
    pub fn is_master(&self) -> bool {
        self.in_group(MASTERS_GROUP)
    }
}
