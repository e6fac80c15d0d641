//! Runs the scheduler-core benchmark for one cluster count (for profiling): `cargo run --release -p
//! karmada-scheduler --example bench_core -- 100`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let clusters = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(100);
    let report = karmada_scheduler::bench::run(&karmada_scheduler::bench::BenchConfig {
        decisions: 100_000,
        ..karmada_scheduler::bench::BenchConfig::for_clusters(clusters)
    })?;
    println!("{report}");
    Ok(())
}
