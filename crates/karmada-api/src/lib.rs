//! Karmada API types.
