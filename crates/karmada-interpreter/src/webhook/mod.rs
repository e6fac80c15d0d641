//! Interpreter webhooks (Karmada's `ResourceInterpreterWebhookConfiguration`): operations a webhook's rules
//! claim are answered by POSTing a `ResourceInterpreterContext` to it and reading the response back.
//!
//! The layer itself does no I/O: the embedding supplies a [`WebhookCaller`] that delivers a context to a
//! webhook (HTTPS, caBundle, timeout) and returns the answer, so the request building and the response checks
//! here stay pure and are tested with a caller that answers in process.
//!
//! Precedence is Karmada's: Lua customizations, then webhooks, then third-party built-ins, then native. Among
//! webhooks, the configurations are taken in name order and their webhooks in the order listed; the first whose
//! rules match answers.

mod context;
mod layer;
mod rules;

pub use context::{CONTEXT_API_VERSION, CONTEXT_KIND, CONTEXT_VERSION};
pub use layer::{WebhookCaller, WebhookInterpreter};
pub use rules::matches;

#[cfg(test)]
mod tests;
