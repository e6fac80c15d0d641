//! One module per view. Each renders the inner HTML of `<main>` from the API with the session's client; the
//! router wraps it in the layout, or returns it alone when the page's script re-fetches it (`?fragment=1`).

pub mod actions;
pub mod explanation;
pub mod failover;
pub mod login;
pub mod overrides;
pub mod overview;
pub mod policies;
pub mod services;
pub mod workload;

/// A rendered view.
pub struct View {
    pub title: String,
    pub content: String,
    /// The live endpoint for this view, if it updates.
    pub live: Option<String>,
}

/// Formats a replica count or resource cell, "" for none.
pub fn opt_number(value: Option<i64>) -> String {
    value.map(|n| n.to_string()).unwrap_or_default()
}

/// A link to the workload page of `binding`'s template, shown as `Kind/name`.
pub fn workload_link(binding: &serde_json::Value) -> String {
    use crate::api::text;
    use crate::html::{esc, query_value};
    format!(
        "<a href=\"/workloads/{}/{}\">{}/{}</a>",
        query_value(text(binding, "/metadata/namespace")),
        query_value(text(binding, "/metadata/name")),
        esc(text(binding, "/spec/resource/kind")),
        esc(text(binding, "/spec/resource/name"))
    )
}
