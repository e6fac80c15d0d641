//! `karmadactl cordon|uncordon CLUSTER`: adds or removes the taint `cluster.karmada.io/unschedulable:NoSchedule`,
//! which keeps new workloads off the cluster without touching what already runs there.

use clap::Args;
use serde_json::{Value, json};

use super::taint::update_taints;
use crate::client::ControlPlaneFlags;

pub const TAINT_UNSCHEDULABLE: &str = "cluster.karmada.io/unschedulable";

#[derive(Args, Debug)]
pub struct CordonArgs {
    /// Cluster name.
    pub name: String,
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub control_plane: ControlPlaneFlags,
}

fn is_cordon_taint(t: &Value) -> bool {
    t["key"] == TAINT_UNSCHEDULABLE && t["effect"] == "NoSchedule"
}

/// The taint list with (cordon) or without (uncordon) the unschedulable taint.
pub fn cordoned(taints: &[Value], cordon: bool) -> Vec<Value> {
    let present = taints.iter().any(is_cordon_taint);
    match (cordon, present) {
        (true, true) => taints.to_vec(),
        (true, false) => {
            let mut out = taints.to_vec();
            out.push(json!({"key": TAINT_UNSCHEDULABLE, "effect": "NoSchedule"}));
            out
        }
        (false, _) => taints
            .iter()
            .filter(|t| !is_cordon_taint(t))
            .cloned()
            .collect(),
    }
}

pub async fn run(args: CordonArgs, cordon: bool) -> anyhow::Result<()> {
    let path = args.control_plane.path();
    let client = args.control_plane.client_at(&path).await?;
    let changed = update_taints(&client, &args.name, args.dry_run, |t| {
        Ok(cordoned(t, cordon))
    })
    .await?;
    let verb = if cordon { "cordoned" } else { "uncordoned" };
    let already = if changed { "" } else { "already " };
    let dry = if args.dry_run { " (dry run)" } else { "" };
    println!("cluster/{} {already}{verb}{dry}", args.name);
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn cordon_is_idempotent_and_keeps_other_taints() {
        let other = json!({"key": "x", "effect": "NoExecute"});
        let once = cordoned(std::slice::from_ref(&other), true);
        assert_eq!(once.len(), 2);
        assert_eq!(cordoned(&once, true), once);
        assert_eq!(cordoned(&once, false), vec![other]);
    }
}
