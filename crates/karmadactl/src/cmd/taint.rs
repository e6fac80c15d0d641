//! `karmadactl taint CLUSTER KEY[=VALUE]:EFFECT[-]...`. Parsing and applying the specs, and the read-modify-write
//! of the Cluster, are shared with `cordon` and the dashboard ([`karmada_controllers::cluster::taint_edit`]).

use clap::Args;
use karmada_controllers::cluster::taint_edit::{apply_changes, parse_taint, update_taints};

use crate::client::ControlPlaneFlags;

#[derive(Args, Debug)]
pub struct TaintArgs {
    /// Cluster name.
    pub name: String,
    /// Taints: KEY[=VALUE]:EFFECT to add, KEY[:EFFECT]- to remove.
    #[arg(required = true)]
    pub taints: Vec<String>,
    /// Replace a taint with the same key and effect but another value.
    #[arg(long)]
    pub overwrite: bool,
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub control_plane: ControlPlaneFlags,
}

pub async fn run(args: TaintArgs) -> anyhow::Result<()> {
    let changes = args
        .taints
        .iter()
        .map(|t| parse_taint(t))
        .collect::<Result<Vec<_>, _>>()?;
    let path = args.control_plane.path();
    let client = args.control_plane.client_at(&path).await?;
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let changed = update_taints(&client, &args.name, args.dry_run, |t| {
        apply_changes(t, &changes, args.overwrite, &now)
    })
    .await?;
    let removed_only = changes.iter().all(|c| c.is_removal());
    let verb = match (changed, removed_only) {
        (false, _) => "modified (no change)",
        (true, true) => "untainted",
        (true, false) => "tainted",
    };
    let dry = if args.dry_run { " (dry run)" } else { "" };
    println!("cluster/{} {verb}{dry}", args.name);
    Ok(())
}
