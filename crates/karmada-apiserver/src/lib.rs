//! API server.
