//! CertificateSigningRequest fields the API server owns: who asked.

use serde_json::{Value, json};

use crate::user::UserInfo;

/// Sets `spec.username`, `spec.uid` and `spec.groups` of a CertificateSigningRequest being
/// created to the authenticated user, whatever the client sent: approvers decide on them, so a
/// client must not be able to claim another identity.
pub fn stamp_requestor(object: &mut Value, user: &UserInfo) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        spec.insert("username".into(), json!(user.name));
        spec.insert("groups".into(), json!(user.groups));
        if user.uid.is_empty() {
            spec.remove("uid");
        } else {
            spec.insert("uid".into(), json!(user.uid));
        }
        spec.remove("extra");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_claims_are_replaced_by_the_authenticated_user() {
        let mut csr = json!({"spec": {"request": "LS0t", "username": "system:admin",
            "groups": ["system:masters"], "uid": "x", "extra": {"a": ["b"]}}});
        let user = UserInfo {
            name: "system:bootstrap:abcdef".into(),
            uid: String::new(),
            groups: vec!["system:bootstrappers".into(), "system:authenticated".into()],
        };
        stamp_requestor(&mut csr, &user);
        assert_eq!(
            csr["spec"],
            json!({"request": "LS0t", "username": "system:bootstrap:abcdef",
                "groups": ["system:bootstrappers", "system:authenticated"]})
        );
        let mut empty = json!({});
        stamp_requestor(&mut empty, &user);
        assert_eq!(empty["spec"]["username"], "system:bootstrap:abcdef");
    }
}
