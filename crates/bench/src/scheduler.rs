//! Scheduler pure-core benchmark: decisions per second and latency for growing numbers of
//! candidate clusters, with spread constraints and dynamic weights, on one core.

use karmada_scheduler::bench::{BenchConfig, run as run_bench};

use crate::report::{self, Row};
use crate::stats::ms;

#[derive(clap::Args)]
pub struct Args {
    /// Candidate cluster counts to measure.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000,5000")]
    pub clusters: Vec<usize>,
    #[arg(long, default_value = "docs/benchmarks.md")]
    pub report: std::path::PathBuf,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for clusters in &args.clusters {
        let config = BenchConfig::for_clusters(*clusters);
        let result = tokio::task::spawn_blocking(move || run_bench(&config))
            .await?
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        rows.push(Row {
            name: format!("schedule one binding, {clusters} candidate clusters"),
            ops_per_sec: Some(result.decisions_per_second),
            p50_ms: Some(ms(result.p50)),
            p99_ms: Some(ms(result.p99)),
            target: if *clusters == 100 {
                "≥ 20,000/s, p99 ≤ 1 ms".into()
            } else {
                "–".into()
            },
            note: format!(
                "{} decisions, {} scheduled",
                result.decisions, result.scheduled
            ),
        });
    }
    let table = report::render(&rows);
    println!("{table}");
    let body = format!(
        "Command: `cargo build --release --bins && ./target/release/karmada-bench scheduler`\n\n\
         Machine: {}. Date: {}. The pure scheduling core (Filter → Score → Select → AssignReplicas with a spread \
         constraint over clusters and dynamic weights by available replicas) on one thread. Karmada's published \
         end-to-end scheduler throughput is about 22 bindings/s (reference/karmada.md §8).\n\n{table}",
        report::machine(),
        jiff::Zoned::now().strftime("%Y-%m-%d %H:%M %Z"),
    );
    report::write_section(&args.report, "Scheduler core", &body)?;
    println!("wrote {}", args.report.display());
    Ok(())
}
