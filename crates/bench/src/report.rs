//! The benchmark report: a table on stdout and a section in docs/benchmarks.md.

use std::path::Path;

pub struct Row {
    pub name: String,
    pub ops_per_sec: Option<f64>,
    pub p50_ms: Option<String>,
    pub p99_ms: Option<String>,
    pub target: String,
    pub note: String,
}

pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mem_kb: u64 = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0);
    format!(
        "{cores} cores ({cpu}), {:.1} GiB RAM",
        mem_kb as f64 / 1024.0 / 1024.0
    )
}

/// The machine's 1-minute load average now: a run on a machine others share says how busy it was.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

/// `path` as a reader would type it from the working directory (the repository root when run as documented).
pub fn relative_to_cwd(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(|p| p.display().to_string()))
        .unwrap_or_else(|| path.display().to_string())
}

pub fn render(rows: &[Row]) -> String {
    let mut out = String::from(
        "| measurement | ops/s | p50 ms | p99 ms | target | note |\n|---|---:|---:|---:|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            r.name,
            r.ops_per_sec
                .map(|v| format!("{v:.0}"))
                .unwrap_or_else(|| "–".into()),
            r.p50_ms.clone().unwrap_or_else(|| "–".into()),
            r.p99_ms.clone().unwrap_or_else(|| "–".into()),
            r.target,
            r.note
        ));
    }
    out
}

/// Replaces (or appends) the section headed `## {title}` in the report file.
pub fn write_section(path: &Path, title: &str, body: &str) -> std::io::Result<()> {
    let existing = std::fs::read_to_string(path).unwrap_or_else(|_| {
        "# Benchmarks\n\nMeasured by `karmada-bench` (see each section for its command). Figures are from the machine and \
         date each section names; rerun to refresh.\n"
            .to_string()
    });
    let heading = format!("## {title}\n");
    let mut out = String::new();
    let mut skipping = false;
    let mut replaced = false;
    for line in existing.split_inclusive('\n') {
        if line.starts_with("## ") {
            skipping = line == heading;
            if skipping {
                out.push_str(&heading);
                out.push_str(body);
                out.push('\n');
                replaced = true;
                continue;
            }
        }
        if !skipping {
            out.push_str(line);
        }
    }
    if !replaced {
        if !out.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str(&heading);
        out.push_str(body);
        out.push('\n');
    }
    std::fs::write(path, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_only_its_own_section() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.md");
        write_section(&path, "A", "first\n").unwrap();
        write_section(&path, "B", "second\n").unwrap();
        write_section(&path, "A", "third\n").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("## A\nthird\n") && text.contains("## B\nsecond\n"),
            "{text}"
        );
        assert!(!text.contains("first"));
    }
}
