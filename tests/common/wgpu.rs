//! The adapter a wgpu test runs on: REAP_WGPU_ADAPTER's (default: the best
//! one), or a skip with the reason; REAP_REQUIRE_WGPU=1 turns a skip into a
//! failure. Shared by every wgpu test file.

use reap::compaction::wgpu::{AdapterChoice, WgpuBackend};

pub fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// Straight to stderr: the harness captures `eprintln!` of a passing test,
/// and a skip must show in CI's log.
pub fn skip(why: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{why}");
}

pub fn wgpu() -> Option<WgpuBackend> {
    let choice: AdapterChoice = std::env::var("REAP_WGPU_ADAPTER").unwrap_or_default().parse().expect("infallible");
    match WgpuBackend::new(&choice) {
        Ok(b) => {
            skip(format!("wgpu adapter: {} (64-bit atomics: {})", b.name(), b.device().int64_atomics));
            Some(b)
        }
        Err(e) => {
            assert!(!required("REAP_REQUIRE_WGPU"), "REAP_REQUIRE_WGPU=1 but: {e}");
            skip(format!("SKIPPED wgpu test (no usable adapter): {e}"));
            None
        }
    }
}
