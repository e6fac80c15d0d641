//! The scheduler's explanation (the binding annotation `scheduling.karmada.io/explanation`) as tables: one
//! row per cluster with the filter verdict, each plugin's score, the total, the estimate and the replicas.

use std::fmt::Write;

use karmada_scheduler::explain::{ClusterDecision, Explanation};

use crate::html::{esc, table};
use crate::views::opt_number;

/// The explanation from the annotation's JSON; `Err` says why it cannot be shown.
pub fn parse(annotation: &str) -> Result<Explanation, String> {
    serde_json::from_str(annotation)
        .map_err(|e| format!("the explanation annotation does not parse: {e}"))
}

/// The verdict cell of one cluster.
pub fn verdict(decision: &ClusterDecision) -> String {
    match &decision.filtered_by {
        Some(filter) => {
            let detail = filter
                .detail
                .as_deref()
                .map(|d| format!(" <span class=\"muted\">({})</span>", esc(d)))
                .unwrap_or_default();
            format!(
                "<span class=\"bad\">filtered by {}</span>: {}{detail}",
                esc(&filter.plugin),
                esc(&filter.reason)
            )
        }
        None => "<span class=\"ok\">feasible</span>".to_string(),
    }
}

/// The whole explanation section.
pub fn render(explanation: &Explanation) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<dl id=\"explanation-summary\"><dt>Result</dt><dd>{}</dd><dt>Strategy</dt><dd>{}</dd>\
         <dt>Replicas</dt><dd>{}</dd><dt>Reason</dt><dd>{}</dd><dt>Scheduler</dt><dd>{} (profile {})</dd>",
        esc(&explanation.summary()),
        esc(&explanation.strategy),
        explanation.replicas,
        esc(&explanation.reason),
        esc(&explanation.scheduler_name),
        esc(&explanation.profile),
    );
    if let Some(affinity) = &explanation.affinity_name {
        let _ = write!(out, "<dt>Affinity</dt><dd>{}</dd>", esc(affinity));
    }
    out.push_str("</dl>");
    let rows: Vec<Vec<String>> = explanation
        .clusters
        .iter()
        .map(|decision| {
            let scores = decision
                .scores
                .iter()
                .map(|s| format!("{} {}×{}", esc(&s.plugin), s.score, s.weight))
                .collect::<Vec<_>>()
                .join(", ");
            let name = esc(&decision.name);
            vec![
                name.clone(),
                verdict(decision),
                scores,
                format!(
                    "<span class=\"score\" data-cluster=\"{name}\">{}</span>",
                    opt_number(decision.score)
                ),
                opt_number(decision.available_replicas),
                if decision.selected {
                    "yes".into()
                } else {
                    "no".into()
                },
                opt_number(decision.replicas),
            ]
        })
        .collect();
    out.push_str(&table(
        "scores",
        &[
            "Cluster",
            "Filter verdict",
            "Plugin scores (score×weight)",
            "Score",
            "Available",
            "Selected",
            "Replicas",
        ],
        &rows,
    ));
    if !explanation.notes.is_empty() {
        out.push_str("<ul class=\"muted\">");
        for note in &explanation.notes {
            let _ = write!(out, "<li>{}</li>", esc(note));
        }
        out.push_str("</ul>");
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const ANNOTATION: &str = r#"{"schedulerName":"default-scheduler","profile":"default","plugins":[],
      "strategy":"StaticWeight","replicas":3,
      "clusters":[
        {"name":"m1","scores":[{"plugin":"ClusterLocality","score":100,"weight":1}],"score":100,"availableReplicas":9,"selected":true,"replicas":2},
        {"name":"<m2>","filteredBy":{"plugin":"TaintToleration","reason":"cluster(s) had untolerated taint","detail":"x=y"},"selected":false}
      ],
      "selection":{"groups":[]},"result":[{"name":"m1","replicas":2}],"scheduled":true,"reason":"Success","message":"ok"}"#;

    #[test]
    fn rows_show_verdicts_scores_and_replicas_escaped() {
        let explanation = parse(ANNOTATION).unwrap();
        let html = render(&explanation);
        assert!(html.contains("ClusterLocality 100×1"), "{html}");
        assert!(html.contains("data-cluster=\"m1\">100</span>"), "{html}");
        assert!(
            html.contains("filtered by TaintToleration</span>: cluster(s) had untolerated taint"),
            "{html}"
        );
        assert!(
            html.contains("&lt;m2&gt;") && !html.contains("<m2>"),
            "{html}"
        );
        assert!(html.contains("m1: 2 (StaticWeight, 3 replicas)"), "{html}");
    }

    #[test]
    fn garbage_says_it_does_not_parse() {
        assert!(parse("{").unwrap_err().contains("does not parse"));
    }
}
