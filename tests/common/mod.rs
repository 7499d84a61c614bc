//! One test body per property, shared by every backend's test file.

#[macro_use]
pub mod properties;

use reap::compaction::Algorithm;
use reap::verify::{self, Harness};

/// The verify suite on sizes that cross every block, warp and P boundary,
/// all algorithms, all operations, every element size and keep rule.
#[allow(dead_code)]
pub fn verify_small<B: Harness>(backend: &B) {
    verify_small_of(backend, Algorithm::ALL.to_vec());
}

/// [`verify_small`] for these algorithms only.
#[allow(dead_code)]
pub fn verify_small_of<B: Harness>(backend: &B, algorithms: Vec<Algorithm>) {
    let mut cfg = verify::Config::new(algorithms);
    cfg.sizes = vec![0, 1, 2, 31, 32, 33, 63, 64, 65, 1023, 1024, 1025, 4097, 20_011];
    cfg.densities = vec![0.0, 0.02, 0.5, 1.0];
    let mut failures = Vec::new();
    let summary = verify::run(backend, &cfg, |case, outcome| {
        if let Err(e) = outcome {
            failures.push(format!("{case}: {e}"));
        }
    });
    assert!(
        failures.is_empty(),
        "{} passed, {} failed:\n{}",
        summary.passed,
        summary.failed,
        failures.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(summary.passed > 0, "the suite ran no case");
}
