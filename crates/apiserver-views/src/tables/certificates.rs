//! The printer for `certificates.k8s.io/v1` CertificateSigningRequest, with kubectl's columns.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age::{human_duration, since};
use super::cells::{NONE, list, name, text};
use super::{BuiltinPrinter, Column, age_column, column, name_column};

pub const PRINTER: BuiltinPrinter = BuiltinPrinter {
    columns: COLUMNS,
    cells,
};

const COLUMNS: &[Column] = &[
    name_column(),
    age_column(),
    column(
        "SignerName",
        "Name of the signer asked to sign the request.",
    ),
    column("Requestor", "User who created the request."),
    column(
        "RequestedDuration",
        "Requested validity of the certificate.",
    ),
    column("Condition", "Approval state, and Issued once signed."),
];

fn cells(object: &Value, now: Timestamp) -> Vec<Value> {
    let duration = object["spec"]["expirationSeconds"]
        .as_i64()
        .map_or_else(|| NONE.to_string(), human_duration);
    vec![
        json!(name(object)),
        json!(since(&object["metadata"]["creationTimestamp"], now)),
        json!(text(object, &["spec", "signerName"])),
        json!(text(object, &["spec", "username"])),
        json!(duration),
        json!(condition(object)),
    ]
}

/// `Approved,Issued`, `Denied`, `Pending`...: the types of the conditions that hold, then
/// `Issued` when a certificate is present; `Pending` when there is nothing to say.
pub fn condition(object: &Value) -> String {
    let mut parts: Vec<&str> = list(object, &["status", "conditions"])
        .iter()
        .filter(|c| matches!(c["status"].as_str(), None | Some("") | Some("True")))
        .filter_map(|c| c["type"].as_str())
        .collect();
    if object["status"]["certificate"]
        .as_str()
        .is_some_and(|c| !c.is_empty())
    {
        parts.push("Issued");
    }
    if parts.is_empty() {
        "Pending".to_string()
    } else {
        parts.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_kubectl() {
        let now: Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        let base = json!({
            "metadata": {"name": "agent-m1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"signerName": "kubernetes.io/kube-apiserver-client", "username": "system:bootstrap:abcdef"},
        });
        let cases = [
            (json!({}), "Pending"),
            (
                json!({"conditions": [{"type": "Approved", "status": "True"}]}),
                "Approved",
            ),
            (
                json!({"conditions": [{"type": "Approved", "status": "True"}], "certificate": "LS0t"}),
                "Approved,Issued",
            ),
            (
                json!({"conditions": [{"type": "Denied", "status": "True"}]}),
                "Denied",
            ),
            (
                json!({"conditions": [{"type": "Approved", "status": "False"}]}),
                "Pending",
            ),
        ];
        for (status, want) in cases {
            let mut object = base.clone();
            object["status"] = status;
            let row = cells(&object, now);
            assert_eq!(row.len(), COLUMNS.len());
            assert_eq!(row[0], "agent-m1");
            assert_eq!(row[1], "10m");
            assert_eq!(row[2], "kubernetes.io/kube-apiserver-client");
            assert_eq!(row[3], "system:bootstrap:abcdef");
            assert_eq!(row[4], NONE);
            assert_eq!(row[5], want);
        }
        let mut object = base;
        object["spec"]["expirationSeconds"] = json!(86400);
        assert_eq!(cells(&object, now)[4], "24h");
    }
}
