//! `process_*` metrics, as every Go component of Kubernetes and Karmada exposes them (client_golang's process
//! collector): read from `/proc` by the maintained `metrics-process` crate when a scrape asks, so they cost
//! nothing between scrapes.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

/// Encodes the running process's metrics on each scrape.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessCollector;

impl ProcessCollector {
    /// Adds the `process_*` families to `registry`.
    pub fn register(registry: &mut Registry) {
        registry.register_collector(Box::new(ProcessCollector));
    }
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let process = metrics_process::collector::collect();
        if let Some(seconds) = process.cpu_seconds_total {
            let metric = ConstCounter::new(seconds);
            metric.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                MetricType::Counter,
            )?)?;
        }
        let gauges = [
            (
                "process_open_fds",
                "Number of open file descriptors",
                process.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors",
                process.max_fds,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                process.virtual_memory_bytes,
            ),
            (
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes",
                process.virtual_memory_max_bytes,
            ),
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                process.resident_memory_bytes,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds",
                process.start_time_seconds,
            ),
            (
                "process_threads",
                "Number of OS threads in the process",
                process.threads,
            ),
        ];
        for (name, help, value) in gauges {
            if let Some(value) = value {
                ConstGauge::new(value).encode(encoder.encode_descriptor(
                    name,
                    help,
                    None,
                    MetricType::Gauge,
                )?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_reads_this_process() {
        let mut registry = Registry::default();
        ProcessCollector::register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("# TYPE process_cpu_seconds counter"),
            "{text}"
        );
        let value = |name: &str| -> f64 {
            text.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
                .unwrap_or_else(|| panic!("{name} missing in\n{text}"))
        };
        assert!(value("process_resident_memory_bytes") > 1e6);
        assert!(value("process_threads") >= 1.0);
        assert!(value("process_open_fds") >= 3.0);
        assert!(value("process_start_time_seconds") > 1.6e9);
        assert!(value("process_cpu_seconds_total") >= 0.0);
    }
}
