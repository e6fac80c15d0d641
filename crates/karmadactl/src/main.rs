//! `karmadactl`: the command line of karmada-rs, compatible with Karmada's karmadactl.

mod client;
mod cmd;
mod printer;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "karmadactl",
    version,
    about = "karmadactl controls a karmada-rs control plane"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a control plane on this machine in the background, on the embedded store.
    Init(cmd::init::InitArgs),
    /// Stop the control plane started by `init` and remove its data directory.
    Deinit(cmd::deinit::DeinitArgs),
    /// Print the client (and, when reachable, server) version.
    Version(cmd::version::VersionArgs),
    /// Print the resource types the control plane serves.
    ApiResources(cmd::api_resources::ApiResourcesArgs),
    /// Preview where workloads would be scheduled, and why, without changing anything.
    Plan(cmd::plan::PlanArgs),
    /// Register a member cluster in Push mode.
    Join(cmd::join::JoinArgs),
    /// Remove a member cluster registered with `join`.
    Unjoin(cmd::unjoin::UnjoinArgs),
    /// Display clusters (the server's table, or YAML/JSON).
    Get(cmd::get::GetArgs),
    /// Mark a cluster unschedulable.
    Cordon(cmd::cordon::CordonArgs),
    /// Mark a cluster schedulable again.
    Uncordon(cmd::cordon::CordonArgs),
    /// Add or remove taints on a cluster.
    Taint(cmd::taint::TaintArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| {
            runtime.block_on(async {
                match cli.command {
                    Command::Init(args) => cmd::init::run(args).await,
                    Command::Deinit(args) => cmd::deinit::run(args).await,
                    Command::Version(args) => cmd::version::run(args).await,
                    Command::ApiResources(args) => cmd::api_resources::run(args).await,
                    Command::Plan(args) => cmd::plan::run(args).await,
                    Command::Join(args) => cmd::join::run(args).await,
                    Command::Unjoin(args) => cmd::unjoin::run(args).await,
                    Command::Get(args) => cmd::get::run(args).await,
                    Command::Cordon(args) => cmd::cordon::run(args, true).await,
                    Command::Uncordon(args) => cmd::cordon::run(args, false).await,
                    Command::Taint(args) => cmd::taint::run(args).await,
                }
            })
        });
    if let Err(err) = result {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
