//! API server views.
