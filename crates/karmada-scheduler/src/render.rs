//! Human renderings of a [`Plan`]: the default table (CLUSTER, REPLICAS, then the explanation lines) and the wide
//! table (every cluster with score, available replicas and the filter that rejected it).
//!
//! Invariant: renderings are derived from the explanation only, so what is printed is what the binding carries.
//! Columns are padded kubectl-style (widest cell plus three spaces).

use std::fmt::Write as _;

use crate::division::TieBreak;
use crate::explain::{ClusterDecision, Explanation};
use crate::plan::Plan;

fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (index, cell) in row.iter().enumerate() {
            if index + 1 == row.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<width$}", width = widths[index] + 3);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn scores(decision: &ClusterDecision) -> String {
    decision
        .scores
        .iter()
        .map(|s| {
            if s.weight == 1 {
                format!("{} {}", s.plugin, s.score)
            } else {
                format!("{} {}×{}", s.plugin, s.score, s.weight)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn list(items: &[crate::division::ClusterReplicas]) -> String {
    items
        .iter()
        .map(|i| format!("{} {}", i.name, i.replicas))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The explanation as indented lines.
pub fn explanation_lines(explanation: &Explanation) -> Vec<String> {
    let mut lines = Vec::new();
    let plugins: Vec<String> = explanation
        .plugins
        .iter()
        .map(|p| {
            if p.weight == 1 {
                p.name.clone()
            } else {
                format!("{}×{}", p.name, p.weight)
            }
        })
        .collect();
    let generation = explanation
        .profile_generation
        .map(|g| format!(", generation {g}"))
        .unwrap_or_default();
    lines.push(format!(
        "scheduler {} (profile {}{generation}): {}",
        explanation.scheduler_name,
        explanation.profile,
        plugins.join(", ")
    ));
    lines.push(format!(
        "strategy {}, {} replica(s)",
        explanation.strategy, explanation.replicas
    ));
    for attempt in &explanation.affinity_attempts {
        lines.push(format!(
            "affinity term {}: {}",
            attempt.name, attempt.message
        ));
    }
    for decision in &explanation.clusters {
        let line = match &decision.filtered_by {
            Some(filter) => {
                let by = if filter.plugin.is_empty() {
                    String::new()
                } else {
                    format!(" by {}", filter.plugin)
                };
                match &filter.detail {
                    Some(detail) => format!(
                        "{}: filtered out{by}: {} ({detail})",
                        decision.name, filter.reason
                    ),
                    None => format!("{}: filtered out{by}: {}", decision.name, filter.reason),
                }
            }
            None => {
                let mut line = format!("{}: score {}", decision.name, decision.score.unwrap_or(0));
                let detail = scores(decision);
                if !detail.is_empty() {
                    let _ = write!(line, " ({detail})");
                }
                if let Some(estimate) = &decision.estimate {
                    let _ = write!(
                        line,
                        "; available {}",
                        decision.available_replicas.unwrap_or(0)
                    );
                    let bound = estimate
                        .limited_by
                        .as_deref()
                        .map(|r| format!(", bounded by {r}"))
                        .unwrap_or_default();
                    let _ = write!(
                        line,
                        " (estimated {} by {:?}{bound})",
                        estimate.replicas, estimate.method
                    );
                    if let Some(note) = &estimate.note {
                        let _ = write!(line, " [{note}]");
                    }
                    if let Some(accurate) = decision.accurate_estimate {
                        let _ = write!(line, " (scheduler estimator {accurate})");
                    }
                }
                if decision.overflow_order > 0 {
                    let _ = write!(line, "; overflow tier {}", decision.overflow_order);
                }
                line.push_str(if decision.selected {
                    "; selected"
                } else {
                    "; not selected"
                });
                if let Some(replicas) = decision.replicas {
                    let _ = write!(line, "; {replicas} replica(s)");
                }
                line
            }
        };
        lines.push(line);
    }
    for group in &explanation.selection.groups {
        lines.push(format!(
            "group {} [{}]: score {}{}",
            group.name,
            group.clusters.join(", "),
            group.score,
            if group.chosen { ", chosen" } else { "" }
        ));
    }
    lines.extend(
        explanation
            .selection
            .notes
            .iter()
            .map(|note| format!("select: {note}")),
    );
    for division in &explanation.divisions {
        let mode = division.mode.map(|m| format!(" {m:?}")).unwrap_or_default();
        let tie = match division.tie_break {
            TieBreak::NameAscending => "name ascending",
            TieBreak::NameDescending => "name descending",
        };
        let mut line = format!(
            "divide{mode} {}: {} replica(s)",
            division.strategy, division.target
        );
        if !division.weights.is_empty() {
            let _ = write!(line, " by weights {}", list(&division.weights));
        }
        if !division.kept.is_empty() {
            let _ = write!(line, "; kept {}", list(&division.kept));
        }
        let _ = write!(
            line,
            " → seats {} (Webster, ties {tie})",
            if division.seats.is_empty() {
                "none".to_string()
            } else {
                list(&division.seats)
            }
        );
        lines.push(line);
        lines.extend(division.notes.iter().map(|note| format!("  {note}")));
    }
    lines.extend(explanation.notes.iter().map(|note| format!("note: {note}")));
    lines
}

impl Plan {
    /// Whether the binding would be scheduled (the CLI exits 0 then).
    pub fn success(&self) -> bool {
        self.scheduled
    }

    fn header(&self) -> String {
        let e = &self.explanation;
        format!(
            "Scheduled: {} ({}): {}\n",
            if e.scheduled { "True" } else { "False" },
            e.reason,
            if e.scheduled {
                e.summary()
            } else {
                e.message.clone()
            }
        )
    }

    fn footer(&self) -> String {
        let mut out = String::from("\nExplanation:\n");
        for line in explanation_lines(&self.explanation) {
            let _ = writeln!(out, "  {line}");
        }
        out
    }

    /// The default rendering: CLUSTER and REPLICAS of the result, then the explanation.
    pub fn render_table(&self) -> String {
        let mut rows = vec![vec!["CLUSTER".to_string(), "REPLICAS".to_string()]];
        rows.extend(
            self.explanation
                .result
                .iter()
                .map(|target| vec![target.name.clone(), target.replicas.to_string()]),
        );
        let mut out = self.header();
        out.push('\n');
        out.push_str(&table(&rows));
        out.push_str(&self.footer());
        out
    }

    /// The wide rendering: every cluster with its score, available replicas, selection and filter reason.
    pub fn render_wide(&self) -> String {
        let mut rows = vec![
            [
                "CLUSTER",
                "REPLICAS",
                "SCORE",
                "AVAILABLE",
                "SELECTED",
                "FILTERED-BY",
                "REASON",
            ]
            .map(str::to_string)
            .to_vec(),
        ];
        for decision in &self.explanation.clusters {
            let dash = || "-".to_string();
            let (plugin, reason) = match &decision.filtered_by {
                Some(filter) => (
                    if filter.plugin.is_empty() {
                        dash()
                    } else {
                        filter.plugin.to_string()
                    },
                    match &filter.detail {
                        Some(detail) => format!("{} ({detail})", filter.reason),
                        None => filter.reason.clone(),
                    },
                ),
                None => (dash(), dash()),
            };
            rows.push(vec![
                decision.name.to_string(),
                decision.replicas.map_or_else(dash, |r| r.to_string()),
                decision.score.map_or_else(dash, |s| s.to_string()),
                decision
                    .estimate
                    .as_ref()
                    .and(decision.available_replicas)
                    .map_or_else(dash, |a| a.to_string()),
                if decision.filtered_by.is_some() {
                    dash()
                } else {
                    decision.selected.to_string()
                },
                plugin,
                reason,
            ]);
        }
        let mut out = self.header();
        out.push('\n');
        out.push_str(&table(&rows));
        out.push_str(&self.footer());
        out
    }
}
