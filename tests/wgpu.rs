//! The wgpu backend's tests: every shader variant validated by naga (no
//! adapter needed), then the verify suite and the property tests on whatever
//! adapter wgpu finds (lavapipe in CI). A missing adapter skips with the
//! reason; REAP_REQUIRE_WGPU=1 turns that into a failure.
#![cfg(feature = "wgpu")]

mod common;

use reap::compaction::wgpu::runtime::{SOURCES, Variant, WORD_BELOW};
use reap::compaction::wgpu::{AdapterChoice, WgpuBackend};
use reap::compaction::{Algorithm, ELEMENT_SIZES, KeepMode};

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

fn skip(why: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{why}");
}

/// The adapter REAP_WGPU_ADAPTER names (default: the best one), or a skip.
fn wgpu() -> Option<WgpuBackend> {
    let choice: AdapterChoice = std::env::var("REAP_WGPU_ADAPTER").unwrap_or_default().parse().expect("infallible");
    match WgpuBackend::new(&choice) {
        Ok(b) => {
            skip(format!("wgpu adapter: {}", b.name()));
            Some(b)
        }
        Err(e) => {
            assert!(!required("REAP_REQUIRE_WGPU"), "REAP_REQUIRE_WGPU=1 but: {e}");
            skip(format!("SKIPPED wgpu test (no usable adapter): {e}"));
            None
        }
    }
}

/// Every shader under every element size, keep rule and workgroup helper
/// (subgroups on and off) passes naga's validation: what wgpu would refuse
/// at pipeline creation fails here, with no adapter.
#[test]
fn every_shader_variant_validates_with_naga() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for source in SOURCES {
        for elem in ELEMENT_SIZES {
            for keep in KeepMode::ALL {
                for subgroups in [false, true] {
                    let predicate = (keep == KeepMode::Predicate).then(|| WORD_BELOW.into());
                    let v = Variant::new(elem, keep, predicate, subgroups);
                    let text = source.assemble(v.prelude());
                    if let Err(e) = reap::wgpu_runtime::pipelines::validate(source.name, &text, subgroups) {
                        failures.push(format!("{elem}B {keep:?} subgroups={subgroups}: {e}"));
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {checked} variants fail:\n{}", failures.len(), failures.join("\n"));
}

/// The verify suite (tests/common) for one algorithm on the adapter.
fn verify_one(alg: Algorithm) {
    if let Some(b) = wgpu() {
        common::verify_small_of(&b, vec![alg]);
    }
}

/// One test per catalog algorithm the backend runs, named after it.
macro_rules! verify_each {
    ($($test:ident => $name:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            verify_one($name.parse().expect("a catalog name"));
        }
    )*};
}

verify_each! {
    verify_horn => "horn",
    verify_sengupta => "sengupta",
    verify_blelloch => "blelloch",
    verify_roger => "roger",
    verify_billeter_prefix_scattered => "billeter-prefix-scattered",
    verify_billeter_prefix_staged => "billeter-prefix-staged",
    verify_billeter_prefix_buffered => "billeter-prefix-buffered",
    verify_billeter_prefix_selective => "billeter-prefix-selective",
    verify_billeter_popc_scattered => "billeter-popc-scattered",
    verify_billeter_popc_staged => "billeter-popc-staged",
    verify_billeter_popc_buffered => "billeter-popc-buffered",
    verify_billeter_popc_selective => "billeter-popc-selective",
    verify_chained => "chained",
    verify_lookback => "lookback",
    verify_atomic => "atomic",
    verify_redzone_block => "redzone-block",
    verify_redzone_grid => "redzone-grid",
}

/// Every algorithm the wgpu backend runs has its test above.
#[test]
fn every_wgpu_algorithm_has_a_verify_test() {
    let names = include_str!("wgpu.rs");
    for a in Algorithm::ALL.iter().filter(|a| WgpuBackend::implements(**a)) {
        assert!(names.contains(&format!("=> \"{}\"", a.name())), "no verify test for {}", a.name());
    }
}
