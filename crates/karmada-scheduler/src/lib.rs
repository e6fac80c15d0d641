//! Karmada scheduler.
