//! `karmadactl`: the command line of karmada-rs, compatible with Karmada's karmadactl.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod client;
mod cmd;
mod components;
mod discovery;
mod kubeconfig;
mod monitoring;
mod output;
mod printer;
mod progress;

use clap::{CommandFactory, Parser, Subcommand};

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
    /// Display resources of the control plane and/or the member clusters.
    Get(cmd::get::GetArgs),
    /// Mark a cluster unschedulable.
    Cordon(cmd::cordon::CordonArgs),
    /// Mark a cluster schedulable again.
    Uncordon(cmd::cordon::CordonArgs),
    /// Add or remove taints on a cluster.
    Taint(cmd::taint::TaintArgs),
    /// Manage bootstrap tokens for `register`.
    Token(cmd::token::TokenArgs),
    /// Register a member cluster in Pull mode and start its agent.
    Register(cmd::register::RegisterArgs),
    /// Stop a Pull cluster's agent and remove the cluster.
    Unregister(cmd::unregister::UnregisterArgs),
    /// Show a resource template with its binding: placement, explanation, per-cluster status, events.
    Describe(cmd::describe::DescribeArgs),
    /// Take over an object running in a member cluster: template plus a policy with conflictResolution Overwrite.
    Promote(cmd::promote::PromoteArgs),
    /// Apply manifests to the control plane with a PropagationPolicy for each object.
    Apply(cmd::apply::ApplyArgs),
    /// Start a control plane and three simulated member clusters on this machine.
    LocalUp(cmd::local_up::LocalUpArgs),
    /// Stop everything `local-up` started (the data is kept).
    LocalDown(cmd::local_up::LocalDownArgs),
    /// Back up the control plane's store (embedded or etcd) to a file, while it runs.
    Backup(cmd::backup::BackupArgs),
    /// Restore a backup into a fresh data directory.
    Restore(cmd::restore::RestoreArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell).
    Completion(cmd::completion::CompletionArgs),
    /// Check a ResourceInterpreterCustomization or run one of its operations locally.
    Interpret(cmd::interpret::InterpretArgs),
    /// Display resource (CPU/memory) usage of the member clusters' pods or nodes.
    Top(cmd::top::TopArgs),
}

fn main() {
    let cli = Cli::parse();
    if let Command::Completion(args) = &cli.command {
        cmd::completion::run(args, Cli::command(), &mut std::io::stdout().lock());
        return;
    }
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
                    Command::Token(args) => cmd::token::run(args).await,
                    Command::Register(args) => cmd::register::run(args).await,
                    Command::Unregister(args) => cmd::unregister::run(args).await,
                    Command::Describe(args) => cmd::describe::run(args).await,
                    Command::Promote(args) => cmd::promote::run(args).await,
                    Command::Apply(args) => cmd::apply::run(args).await,
                    Command::LocalUp(args) => cmd::local_up::run(args).await,
                    Command::LocalDown(args) => cmd::local_up::run_down(args).await,
                    Command::Backup(args) => cmd::backup::run(args).await,
                    Command::Restore(args) => cmd::restore::run(args).await,
                    Command::Completion(_) => Ok(()),
                    Command::Interpret(args) => cmd::interpret::run(args),
                    Command::Top(args) => cmd::top::run(args).await,
                }
            })
        });
    if let Err(err) = result {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
