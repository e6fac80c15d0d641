//! `karmada`: the karmada-rs server binary. One binary, one subcommand per component.

// Tests may run long (a scenario reads top to bottom); product functions may not (workspace lints).
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod agent;
mod all_in_one;
mod apiserver;
mod backup_socket;
mod component;
mod controller_manager;
mod controller_set;
mod dashboard;
mod features;
mod kubeconfig;
mod lb;
mod logging;
mod member_sim;
mod process;
mod runtime;
mod scheduler;
mod scheduler_estimator;

use clap::{Parser, Subcommand};

/// jemalloc rather than glibc's malloc: in the propagation benchmark the control plane spent a quarter of the
/// controller-manager's CPU in glibc's allocator, and jemalloc cut CPU per workload by about a quarter with
/// lower RSS at the end of the run (its options are in .cargo/config.toml).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "karmada",
    version,
    about = "karmada-rs control plane components"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    logging: logging::LoggingArgs,
    #[command(flatten)]
    runtime: runtime::RuntimeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run the API server on the embedded store (or in memory).
    Apiserver(apiserver::ApiserverArgs),
    /// Run simulated member clusters, or inject faults into one.
    MemberSim(member_sim::MemberSimArgs),
    /// Run the controllers (cluster and cluster status) against the API server.
    ControllerManager(Box<controller_manager::ControllerManagerArgs>),
    /// Run the Pull-mode agent of one member cluster.
    Agent(agent::AgentArgs),
    /// Run the scheduler: place ResourceBindings on member clusters.
    Scheduler(scheduler::SchedulerArgs),
    /// Run the scheduler estimator of one member cluster (gRPC): how many replicas its nodes can still take.
    SchedulerEstimator(scheduler_estimator::SchedulerEstimatorArgs),
    /// Run the API server, the controllers and the scheduler in one process, the components reaching the API
    /// in memory.
    AllInOne(Box<all_in_one::AllInOneArgs>),
    /// Run a TCP load balancer in front of several API server replicas.
    Lb(lb::LbArgs),
    /// Run the web dashboard (HTTPS) against the control plane, each user logged in with their own token.
    Dashboard(dashboard::DashboardArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Transparent huge pages turn a server's many partly used heap regions into whole 2 MiB
    // pages: 80 MiB of RSS for nothing in the API server benchmark. The opt-out is per process.
    let _ = nix::sys::prctl::set_thp_disable(true);
    logging::init(&cli.logging);
    let role = match cli.command {
        Command::AllInOne(_) => runtime::Role::AllInOne,
        Command::ControllerManager(_)
        | Command::Agent(_)
        | Command::Scheduler(_)
        | Command::SchedulerEstimator(_) => runtime::Role::Client,
        Command::Apiserver(_) | Command::MemberSim(_) | Command::Lb(_) | Command::Dashboard(_) => {
            runtime::Role::Server
        }
    };
    let runtime = runtime::build(role, &cli.runtime)?;
    let result = match cli.command {
        Command::Apiserver(args) => runtime.block_on(apiserver::run(args)),
        Command::MemberSim(args) => runtime.block_on(member_sim::run(args)),
        Command::ControllerManager(args) => runtime.block_on(controller_manager::run(*args)),
        Command::Agent(args) => runtime.block_on(agent::run(args)),
        Command::Scheduler(args) => runtime.block_on(scheduler::run(args)),
        Command::SchedulerEstimator(args) => runtime.block_on(scheduler_estimator::run(args)),
        Command::AllInOne(args) => runtime.block_on(all_in_one::run(*args)),
        Command::Lb(args) => runtime.block_on(lb::run(args)),
        Command::Dashboard(args) => runtime.block_on(dashboard::run(args)),
    };
    // Every owned task has stopped by now; what may remain is a blocked stdin read, which must
    // not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    result
}
