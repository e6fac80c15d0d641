//! The tokio runtime each component runs on, and how many worker threads it gets.
//!
//! Servers (the API server, member-sim, the load balancer, the dashboard) get one worker per core.
//! Clients of the API server (controller-manager, scheduler, agent, scheduler estimator) spend most
//! of their time waiting on it and get half the cores: on a small host they share with the API
//! server, a second worker mostly wakes up to find nothing to steal. Propagation benchmark, 2
//! cores, 1,000 Deployments at 20/s: one worker instead of two cut the controller-manager's CPU per
//! paced workload from 12.8/12.3 ms to 10.3/11.0 ms and the scheduler's from 2.4 to 2.0 ms, with
//! distribution P50/P99 16.5/34.6 ms against 18.3/36.5 and bindings scheduled 297/s against 264/s.

use clap::Args;

/// The runtime flag, accepted before or after the subcommand.
#[derive(Args, Debug, Clone)]
pub struct RuntimeArgs {
    /// Worker threads of the async runtime (default: one per core for servers, half the cores
    /// for the controller-manager, scheduler, agent and scheduler estimator, three per core in
    /// all-in-one).
    #[arg(long, global = true, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,
}

/// What a component does with its threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Serves clients: one worker per core.
    Server,
    /// A client of the API server: half the cores.
    Client,
    /// The API server, controllers and scheduler in one process: as many workers as the three
    /// processes it replaces would have.
    AllInOne,
}

/// Worker threads for `role` on `cores` cores, unless `given`.
pub fn worker_threads(role: Role, cores: usize, given: Option<u16>) -> usize {
    if let Some(given) = given {
        return usize::from(given);
    }
    let cores = cores.max(1);
    match role {
        Role::Server => cores,
        Role::Client => cores.div_ceil(2),
        // With one per core, a controller's burst of work queued the API server's answers behind
        // it (propagation benchmark, 2 cores: distribution P99 155-320 ms with 2 workers, 53 ms
        // with 6; three processes 46-55 ms on the same host).
        Role::AllInOne => 3 * cores,
    }
}

/// The multi-threaded runtime for `role`.
pub fn build(role: Role, args: &RuntimeArgs) -> std::io::Result<tokio::runtime::Runtime> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads(role, cores, args.worker_threads))
        .enable_all()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_role_and_the_flag_wins() {
        let table = [
            (Role::Server, 2, None, 2),
            (Role::Server, 8, None, 8),
            (Role::Client, 1, None, 1),
            (Role::Client, 2, None, 1),
            (Role::Client, 3, None, 2),
            (Role::Client, 8, None, 4),
            (Role::AllInOne, 2, None, 6),
            (Role::Client, 2, Some(3), 3),
            (Role::Server, 0, None, 1),
        ];
        for (role, cores, given, want) in table {
            assert_eq!(
                worker_threads(role, cores, given),
                want,
                "{role:?} on {cores} cores, flag {given:?}"
            );
        }
    }

    #[test]
    fn the_flag_refuses_zero_threads() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            runtime: RuntimeArgs,
        }
        use clap::Parser;
        let error = Cli::try_parse_from(["karmada", "--worker-threads", "0"])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("--worker-threads"), "{error}");
        let parsed = Cli::try_parse_from(["karmada", "--worker-threads", "4"])
            .map(|c| c.runtime.worker_threads);
        assert_eq!(parsed.ok().flatten(), Some(4));
    }
}
