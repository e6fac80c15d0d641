//! `karmadactl cordon|uncordon CLUSTER`: adds or removes the taint `cluster.karmada.io/unschedulable:NoSchedule`,
//! which keeps new workloads off the cluster without touching what already runs there. The taint logic is
//! shared with the dashboard ([`karmada_controllers::cluster::taint_edit`]).

use clap::Args;
use karmada_controllers::cluster::taint_edit::{cordoned, update_taints};

use crate::client::ControlPlaneFlags;

#[derive(Args, Debug)]
pub struct CordonArgs {
    /// Cluster name.
    pub name: String,
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub control_plane: ControlPlaneFlags,
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
