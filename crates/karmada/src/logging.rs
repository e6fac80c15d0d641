//! Karmada's (klog's) logging flags on every component: `--logging-format text|json` and `-v N`.
//!
//! klog's verbosity is a number; here it picks how much of our own crates' logging shows, as klog's levels do for
//! Karmada's: 0–1 info, 2–4 also debug, 5–6 also trace, 7 and up trace for the libraries too (the HTTP and
//! client internals, as klog's -v=7+ shows requests). `RUST_LOG`, when set, overrides `-v`.

use clap::{Args, ValueEnum};
use tracing_subscriber::EnvFilter;

/// The crates of this workspace whose logs `-v` raises.
const OWN_TARGETS: [&str; 11] = [
    "karmada",
    "karmada_apiserver",
    "karmada_controllers",
    "karmada_scheduler",
    "karmada_interpreter",
    "member_sim",
    "store",
    "store_etcd",
    "apiserver_auth",
    "apiserver_views",
    "apimachinery",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LoggingFormat {
    /// One line per event: time, level, target, message and fields.
    Text,
    /// One JSON object per event (`timestamp`, `level`, `target`, `fields`), for log collectors.
    Json,
}

/// The logging flags, accepted before or after the subcommand.
#[derive(Args, Debug, Clone)]
pub struct LoggingArgs {
    /// Log format, as Karmada's --logging-format.
    #[arg(long, global = true, value_enum, default_value_t = LoggingFormat::Text)]
    pub logging_format: LoggingFormat,
    /// Log verbosity, as klog's -v: 0–1 info, 2–4 debug, 5–6 trace of karmada's own modules, 7+ trace of the
    /// libraries too. RUST_LOG, when set, takes precedence.
    #[arg(
        short = 'v',
        long = "v",
        global = true,
        default_value_t = 0,
        value_name = "N"
    )]
    pub verbosity: u8,
}

/// The filter directives `-v N` stands for.
pub fn directives(verbosity: u8) -> String {
    let (own, others) = match verbosity {
        0..=1 => ("info", "info"),
        2..=4 => ("debug", "info"),
        5..=6 => ("trace", "info"),
        _ => ("trace", "trace"),
    };
    let mut directives = others.to_string();
    if own != others {
        for target in OWN_TARGETS {
            directives.push_str(&format!(",{target}={own}"));
        }
    }
    directives
}

/// Installs the process's log subscriber, writing to standard error.
pub fn init(args: &LoggingArgs) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(directives(args.verbosity)));
    // Colours only on a terminal: components started in the background log to files.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match args.logging_format {
        LoggingFormat::Text => builder.init(),
        LoggingFormat::Json => builder.json().flatten_event(false).init(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_raises_our_crates_first_and_the_libraries_last() {
        assert_eq!(directives(0), "info");
        assert_eq!(directives(1), "info");
        let debug = directives(4);
        assert!(debug.starts_with("info,"), "{debug}");
        assert!(debug.contains("karmada_controllers=debug"), "{debug}");
        assert!(directives(6).contains("member_sim=trace"));
        assert_eq!(directives(7), "trace");
        // Every directive parses.
        for v in [0, 2, 5, 9] {
            EnvFilter::try_new(directives(v)).expect("valid directives");
        }
    }
}
