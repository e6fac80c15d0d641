//! `karmada-bench`: measures the control plane and writes `docs/benchmarks.md`.
//!
//! `cargo run --release -p bench -- apiserver` starts a release `karmada apiserver` on the
//! embedded store, drives it over HTTPS from 16 concurrent clients, measures the raw store in
//! the same run, prints a table and writes the report.
#![cfg_attr(test, allow(clippy::too_many_lines))]

mod api_requests;
mod apiserver;
mod bindings;
mod clusters;
mod creates;
mod dashboard;
mod failover;
mod fhpa;
mod interpreter;
mod live_scheduler;
mod mcs;
mod member_sim;
mod process;
mod propagation;
mod report;
mod restart;
mod scale;
mod scheduler;
mod scrape;
mod stats;
mod store_latency;
mod workload_kind;

use clap::{Parser, Subcommand};

/// The allocator of the `karmada` binary: the in-process benchmarks (the live scheduler) run the components'
/// code and should allocate as they do.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(name = "karmada-bench", about = "karmada-rs benchmarks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// API server and store: create, update, get, list, watch fan-out, memory.
    Apiserver(apiserver::Args),
    /// The scheduler's pure core at 10 to 5,000 candidate clusters.
    Scheduler(scheduler::Args),
    /// The live scheduler with a 5-plugin profile, with and without the members' estimators.
    LiveScheduler(live_scheduler::Args),
    /// Simulated member clusters: idle memory, memory per 1,000 nodes, 100 clusters' start.
    MemberSim(member_sim::Args),
    /// Propagation end to end: distribution latency, throughput, control-plane memory per 1,000 workloads.
    Propagation(propagation::Args),
    /// Clusters: join latency, join to Ready, status collection CPU and RSS with 100 Push members.
    Clusters(clusters::Args),
    /// FederatedHPA: CPU of one evaluation round of 1,000 FederatedHPAs over 10 members.
    Fhpa(fhpa::Args),
    /// Resource interpreter: cost per call of GetReplicas and AggregateStatus through Lua with warm VMs.
    Interpreter(interpreter::Args),
    /// Failover: a member made unreachable, time until its replicas are Ready elsewhere (500 workloads).
    Failover(failover::Args),
    /// Metrics: CPU and bytes of one scrape of the controller-manager (1,000 workloads × 10 members), series per
    /// component.
    Scrape(scrape::Args),
    /// Multi-cluster Services: provider endpoint change → consumer DNS answer, and DNS queries per second.
    Mcs(mcs::Args),
    /// Scale: 100 members in one member-sim, 5,000 workloads half Duplicated, half Divided: time until all
    /// applied, distribution latency, CPU per (workload × member), RSS, idle cluster status collection.
    Scale(scale::Args),
    /// Restart: with many workloads propagated, the controller-manager and scheduler restarted (time to steady
    /// state, writes made), then the API server (time to /readyz).
    Restart(restart::Args),
    /// Dashboard: first paint of the overview in headless chromium with 10,000 ResourceBindings.
    Dashboard(dashboard::Args),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Apiserver(args) => apiserver::run(args).await,
        Command::Fhpa(args) => fhpa::run(args).await,
        Command::Restart(args) => restart::run(args).await,
        Command::Scheduler(args) => scheduler::run(args).await,
        Command::LiveScheduler(args) => live_scheduler::run(args).await,
        Command::MemberSim(args) => member_sim::run(args).await,
        Command::Propagation(args) => propagation::run(args).await,
        Command::Clusters(args) => clusters::run(args).await,
        Command::Failover(args) => failover::run(args).await,
        Command::Interpreter(args) => interpreter::run(args).await,
        Command::Scrape(args) => scrape::run(args).await,
        Command::Mcs(args) => mcs::run(args).await,
        Command::Scale(args) => scale::run(args).await,
        Command::Dashboard(args) => dashboard::run(args).await,
    }
}
