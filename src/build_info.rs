//! What reap was built from, for the files and reports a run writes: one
//! place below the workloads and the bench harness, so neither imports it
//! from the other.

/// reap's commit, embedded by build.rs ("unknown" outside a git checkout).
pub const GIT_COMMIT: &str = env!("REAP_GIT_COMMIT");

/// reap's crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
