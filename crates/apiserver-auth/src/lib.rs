//! API server auth.
