//! What the control plane asked of its API server over a stretch of a benchmark, from the server's
//! `apiserver_request_total` counters: printed beside the figures so a change in cost shows where it came from.

use std::collections::HashMap;

use kube::Client;

/// An API server's `/metrics` exposition.
pub async fn metrics_text(client: &Client) -> anyhow::Result<String> {
    Ok(client
        .request_text(http::Request::get("/metrics").body(Vec::new())?)
        .await?)
}

/// The API server's `apiserver_request_total` counters, by their labels.
#[derive(Default)]
pub struct RequestCounts(HashMap<String, f64>);

impl RequestCounts {
    pub async fn read(client: &Client) -> anyhow::Result<Self> {
        let text = metrics_text(client).await?;
        Ok(Self(
            text.lines()
                .filter_map(|line| {
                    let labels = line.strip_prefix("apiserver_request_total")?;
                    let (labels, value) = labels.rsplit_once(' ')?;
                    Some((labels.to_string(), value.parse().ok()?))
                })
                .collect(),
        ))
    }

    /// The counters of write requests (create, update, patch, delete), by their labels.
    pub fn writes(&self) -> impl Iterator<Item = (String, f64)> + '_ {
        self.0
            .iter()
            .filter(|(labels, _)| {
                ["POST", "PUT", "PATCH", "DELETE"]
                    .iter()
                    .any(|verb| labels.contains(&format!("verb=\"{verb}\"")))
            })
            .map(|(labels, value)| (labels.clone(), *value))
    }

    /// Every counter that grew since `before`, by how much, largest first.
    fn grown_since<'a>(&'a self, before: &RequestCounts) -> Vec<(f64, &'a String)> {
        let mut grown: Vec<(f64, &String)> = self
            .0
            .iter()
            .map(|(k, v)| (v - before.0.get(k).copied().unwrap_or(0.0), k))
            .filter(|(d, _)| *d > 0.0)
            .collect();
        grown.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        grown
    }

    /// Requests served since `before`, of every kind.
    pub fn total_since(&self, before: &RequestCounts) -> f64 {
        self.grown_since(before).iter().map(|(d, _)| d).sum()
    }

    /// Prints, under `title`, every counter that grew since `before`, largest first, and their total.
    pub fn print_since(&self, before: &RequestCounts, title: &str) {
        let grown = self.grown_since(before);
        let total: f64 = grown.iter().map(|(d, _)| d).sum();
        println!("{title} ({total:.0} in all):");
        for (delta, key) in &grown {
            println!("  {delta:>7.0}  {key}");
        }
    }
}
