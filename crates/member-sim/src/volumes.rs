//! A simulated volume provisioner: every pending PersistentVolumeClaim is bound at once to a
//! volume named `pvc-<stable id>`, with the capacity it requested. PersistentVolume objects are
//! not created.

use serde_json::{Value, json};

use crate::meta;
use crate::naming;
use crate::objects::{Objects, Write};
use crate::outcome::Outcome;

/// The simulated volume name for a claim (stable for its namespace and name).
pub fn volume_name(claim: &Value) -> String {
    let seed = format!("{}/{}", meta::namespace(claim), meta::name(claim));
    let a = naming::fnv32a(seed.as_bytes());
    let b = naming::fnv32a(format!("volume:{seed}").as_bytes());
    let c = naming::fnv32a(format!("claim:{seed}").as_bytes());
    format!(
        "pvc-{a:08x}-{:04x}-{:04x}-{:04x}-{c:08x}{:04x}",
        b >> 16,
        b & 0xffff,
        c >> 16,
        a & 0xffff
    )
}

/// Binds every claim that is not Bound yet.
pub fn reconcile(objects: &Objects) -> Outcome {
    let mut outcome = Outcome::default();
    for claim in objects.list("PersistentVolumeClaim") {
        if meta::is_terminating(claim) {
            continue;
        }
        let volume = match meta::str_at(claim, "/spec/volumeName") {
            "" => volume_name(claim),
            existing => existing.to_string(),
        };
        let mut updated = claim.clone();
        meta::set_path(&mut updated, &["spec", "volumeName"], json!(volume));
        meta::set_path(
            &mut updated,
            &["metadata", "annotations", "pv.kubernetes.io/bind-completed"],
            json!("yes"),
        );
        if updated != *claim {
            outcome.write(Write::Update(updated));
            continue;
        }
        let mut status = json!({"phase": "Bound"});
        if let Some(modes) = claim.pointer("/spec/accessModes") {
            meta::set_path(&mut status, &["accessModes"], modes.clone());
        }
        if let Some(storage) = claim.pointer("/spec/resources/requests/storage") {
            meta::set_path(&mut status, &["capacity", "storage"], storage.clone());
        }
        if claim.get("status") != Some(&status) {
            outcome.write(Write::UpdateStatus(meta::with_status(claim, status)));
        }
    }
    outcome
}
