//! Prints the pure-core benchmark for 10, 100, 1,000 and 5,000 candidate clusters:
//! `cargo run -p karmada-scheduler --example bench [--release] [-- COUNT...]`.

use karmada_scheduler::bench::{BenchConfig, run};

fn main() -> anyhow::Result<()> {
    let given: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let counts = if given.is_empty() {
        vec![10, 100, 1_000, 5_000]
    } else {
        given
    };
    for clusters in counts {
        let report = run(&BenchConfig::for_clusters(clusters))?;
        println!("{report}");
    }
    Ok(())
}
