//! The CUDA backend's tests. Compiling every kernel needs only libnvrtc (CI
//! installs it); running them needs a GPU. Each test says when it skips, and
//! REAP_REQUIRE_NVRTC=1 / REAP_REQUIRE_GPU=1 turn a skip into a failure.
#![cfg(feature = "cuda")]

mod common;

use rayon::prelude::*;
use reap::compaction::cuda::runtime::{self, KeepMode, SOURCES, Variant};
use reap::compaction::cuda::{CudaBackend, WORD_BELOW};

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// Says why a test skipped where `cargo test` shows it: libtest captures
/// `println!`, not writes to the stderr handle.
fn skip(why: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{why}");
}

#[test]
fn every_kernel_compiles_with_nvrtc() {
    if let Err(e) = runtime::nvrtc_available() {
        assert!(!required("REAP_REQUIRE_NVRTC"), "REAP_REQUIRE_NVRTC=1 but: {e}");
        skip(format!("SKIPPED every_kernel_compiles_with_nvrtc: {e}"));
        return;
    }
    let mut jobs = Vec::new();
    for source in SOURCES {
        for elem in [4, 8, 16] {
            for keep in KeepMode::ALL {
                let mut v = Variant::new(elem, keep);
                if keep == KeepMode::Predicate {
                    v.predicate = Some(WORD_BELOW.into());
                }
                jobs.push((source, v));
            }
        }
    }
    let failures: Vec<String> = jobs
        .par_iter()
        .filter_map(|(source, v)| runtime::compile(source, v, "compute_90").err().map(|e| format!("{v:?}: {e}")))
        .collect();
    assert!(failures.is_empty(), "{} of {} variants failed:\n{}", failures.len(), jobs.len(), failures.join("\n"));
    println!("compiled {} kernel variants with NVRTC", jobs.len());
}

fn gpu() -> Option<CudaBackend> {
    match CudaBackend::new(0) {
        Ok(b) => Some(b),
        Err(e) => {
            assert!(!required("REAP_REQUIRE_GPU"), "REAP_REQUIRE_GPU=1 but: {e}");
            skip(format!("SKIPPED GPU test (no usable CUDA GPU): {e}"));
            None
        }
    }
}

#[test]
fn cuda_backend_passes_the_verify_suite_on_small_sizes() {
    if let Some(b) = gpu() {
        common::verify_small(&b);
    }
}
