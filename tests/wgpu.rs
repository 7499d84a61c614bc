//! The wgpu backend's tests: every shader variant validated by naga (no
//! adapter needed), then the verify suite and the property tests on whatever
//! adapter wgpu finds (lavapipe in CI). A missing adapter skips with the
//! reason; REAP_REQUIRE_WGPU=1 turns that into a failure.
#![cfg(feature = "wgpu")]

mod common;

#[allow(dead_code)] // not every file uses every helper
#[path = "common/wgpu.rs"]
mod adapter;
use adapter::wgpu;
use reap::compaction::wgpu::runtime::{SOURCES, Variant, WORD_BELOW};
use reap::compaction::wgpu::{AdapterChoice, WgpuBackend};
use reap::compaction::{Algorithm, ELEMENT_SIZES, KeepMode};

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

/// The property tests of every backend (tests/common/properties.rs) on the
/// adapter, one backend shared by all cases; fewer cases than on the CPU
/// (lavapipe runs a case in milliseconds, not microseconds).
mod properties {
    use std::sync::OnceLock;

    use crate::backend_properties;
    use proptest::prelude::*;
    use reap::compaction::wgpu::WgpuBackend;
    use reap::compaction::{Algorithm, ELEMENT_SIZES, Operation, Rejected};
    use reap::verify::{self, CompactCase, Pattern, RemovalOrder, Rule};

    fn shared() -> Option<&'static WgpuBackend> {
        static B: OnceLock<Option<WgpuBackend>> = OnceLock::new();
        B.get_or_init(super::wgpu).as_ref()
    }

    fn backend() -> &'static WgpuBackend {
        shared().expect("checked by `ready`")
    }

    backend_properties!(backend(), 96, WgpuBackend::implements, shared().is_some());
}

/// An adapter that is not there is a typed error that lists the ones that are.
#[test]
fn a_missing_adapter_is_an_error_that_says_what_to_pick() {
    let err = WgpuBackend::new(&AdapterChoice::Name("no adapter is called this".into())).err().expect("refused");
    let text = err.to_string();
    assert!(text.contains("no adapter") || text.contains("finds no"), "{text}");
    let err = WgpuBackend::new(&AdapterChoice::Index(999)).err().expect("refused");
    assert!(err.to_string().contains("999"), "{err}");
}

/// Buffers past the adapter's binding or buffer limit, and tile shapes past
/// its workgroup limits, are typed errors that say what to do: never a wgpu
/// validation abort.
#[test]
fn sizes_past_the_adapters_limits_are_typed_errors() {
    use reap::compaction::{Backend, Error, Keep};
    let Some(mut b) = wgpu() else { return };
    let limits = b.device().limits.clone();
    let over_binding = limits.max_storage_buffer_binding_size / 4 + 1;
    let err = b.alloc::<u32>(over_binding).err().expect("refused");
    let text = err.to_string();
    assert!(matches!(err, Error::Wgpu(_)), "{text}");
    assert!(text.contains("max_storage_buffer_binding_size") || text.contains("max_buffer_size"), "{text}");
    assert!(text.contains("split") && text.contains("--backend"), "{text}");
    let err = b.alloc::<[u32; 8]>(u64::MAX / 64).err().expect("refused");
    assert!(err.to_string().contains("max_buffer_size"), "{err}");
    // A tile that needs more workgroup memory or invocations than the adapter has.
    let input = b.upload(&(0..10_000u32).collect::<Vec<_>>()).expect("upload");
    let mut out = b.alloc::<u32>(10_000).expect("alloc");
    b.tuning.single_pass.block = 2048;
    let err = b.select(Algorithm::Lookback, &input, Keep::Sentinel(3), &mut out).err().expect("refused");
    assert!(matches!(err, Error::Tuning { .. }), "{err}");
    b.tuning.single_pass.block = 1 << 20;
    let err = b.select(Algorithm::Lookback, &input, Keep::Sentinel(3), &mut out).err().expect("refused");
    assert!(matches!(err, Error::Tuning { .. }), "{err}");
}

/// The fallback of Decoupled Fallback, forced: every third tile publishes
/// nothing, so its successors can only go on by reducing it themselves;
/// small tiles make many of them. Select, both partitions and both scans
/// must still match the reference, for `lookback` and `chained`.
#[test]
fn the_lookback_fallback_forced_on_matches_the_reference() {
    let Some(mut b) = wgpu() else { return };
    let t = &mut b.tuning.single_pass;
    (t.block, t.withhold, t.spin, t.chained_spin) = (32, 3, 2, 2);
    let mut cfg = reap::verify::Config::new(vec![Algorithm::Lookback, Algorithm::Chained]);
    cfg.sizes = vec![0, 1, 511, 512, 513, 4097, 20_011];
    cfg.densities = vec![0.0, 0.5, 1.0];
    let mut failures = Vec::new();
    let summary = reap::verify::run(&b, &cfg, |case, outcome| {
        if let Err(e) = outcome {
            failures.push(format!("{case}: {e}"));
        }
    });
    assert!(failures.is_empty(), "{}", failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n"));
    assert!(summary.passed > 100, "only {} cases ran", summary.passed);
}

/// The look-back's shapes: 1 to 4 predecessors read per poll, tile states
/// of two words (what calls of 2^30 elements or more use) as well as one,
/// and tiles staged in workgroup memory as well as scattered directly from
/// registers, each with the fallback forced on, match the reference.
#[test]
fn every_lookback_span_state_width_and_tile_path_matches_the_reference() {
    let Some(mut b) = wgpu() else { return };
    for (span, wide, direct) in [(1, false, true), (3, false, false), (4, true, true), (2, true, false)] {
        let t = &mut b.tuning.single_pass;
        (t.block, t.withhold, t.spin, t.chained_spin) = (32, 5, 2, 2);
        (t.span, t.wide_state, t.direct) = (span, wide, direct);
        let mut cfg = reap::verify::Config::new(vec![Algorithm::Lookback, Algorithm::Chained]);
        cfg.sizes = vec![1, 513, 4097, 20_011];
        cfg.densities = vec![0.0, 0.5, 1.0];
        let mut failures = Vec::new();
        let summary = reap::verify::run(&b, &cfg, |case, outcome| {
            if let Err(e) = outcome {
                failures.push(format!("span {span}, wide {wide}, direct {direct}: {case}: {e}"));
            }
        });
        assert!(failures.is_empty(), "{}", failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n"));
        assert!(summary.passed > 20, "only {} cases ran", summary.passed);
    }
}

/// The look-back's statistics count what happened: every tile but the
/// first looks back, and a withheld tile is reduced by its successor (a
/// fallback). (Without withheld tiles lavapipe may still fall back: it runs
/// few workgroups at a time, so a predecessor can stay silent past MAX_SPIN.)
#[test]
fn the_lookback_statistics_count_tiles_walks_and_fallbacks() {
    use reap::compaction::wgpu::single_pass::last_stats;
    use reap::compaction::{Backend, Keep};
    let Some(mut b) = wgpu() else { return };
    let n = 64 * 1024u32;
    let data: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let input = b.upload(&data).expect("upload");
    let mut out = b.alloc::<u32>(n as u64).expect("alloc");
    let t = &mut b.tuning.single_pass;
    (t.block, t.bytes, t.stats) = (64, 64, true);
    let tiles = (n as u64).div_ceil(64 * 16);
    b.select(Algorithm::Lookback, &input, Keep::Sentinel(7), &mut out).expect("runs");
    let s = last_stats(&b).expect("stats");
    assert_eq!(s.tiles, tiles - 1, "{s:?}");
    let t = &mut b.tuning.single_pass;
    (t.withhold, t.spin) = (4, 1);
    b.select(Algorithm::Lookback, &input, Keep::Sentinel(7), &mut out).expect("runs");
    let s = last_stats(&b).expect("stats");
    // A withheld tile never publishes: its successor must reduce it, unless
    // another successor's offer reached its slot first.
    assert!(s.fallbacks >= 1, "{s:?}");
    let kept: Vec<u32> = data.iter().copied().filter(|&x| x != 7).collect();
    assert_eq!(b.download(&out).expect("download")[..kept.len()], kept[..]);
}

/// Without timestamp queries (an adapter that lacks them, or
/// `REAP_WGPU_TIMESTAMPS=0`) each stage is submitted alone and timed by the
/// host clock, the report says so, and the results are the same.
#[test]
fn without_timestamps_the_host_clock_times_each_stage() {
    use reap::compaction::{Backend, Keep, Report};
    use reap::wgpu_runtime::Features;
    use reap::wgpu_runtime::timer::Clock;
    let Some(with) = wgpu() else { return };
    let choice: AdapterChoice = std::env::var("REAP_WGPU_ADAPTER").unwrap_or_default().parse().expect("infallible");
    let b =
        WgpuBackend::open(&choice, Features { timestamps: false, ..Features::default() }).expect("the same adapter");
    assert!(!b.device().timestamps);
    let host: Vec<u32> = (0..100_003u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let mut outputs = Vec::new();
    for backend in [&with, &b] {
        let input = backend.upload(&host).expect("upload");
        let mut out = backend.alloc::<u32>(host.len() as u64).expect("alloc");
        let r = backend.partition(Algorithm::Lookback, &input, Keep::Sentinel(7), &mut out).expect("runs");
        let phases = r.phases().expect("phases");
        assert_eq!(phases.iter().map(|p| p.name).collect::<Vec<_>>(), ["count", "single-pass"]);
        assert!(phases.iter().all(|p| p.time > std::time::Duration::ZERO), "{phases:?}");
        let clock = if std::ptr::eq(backend, &b) {
            Clock::Host
        } else {
            with.device().timestamps.then_some(Clock::Timestamps).unwrap_or(Clock::Host)
        };
        assert_eq!(r.clock(), clock);
        outputs.push((r.count().expect("count"), backend.download(&out).expect("download")));
    }
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[1].0, host.len() as u64 - host.iter().filter(|&&x| x == 7).count() as u64);
    assert!(b.time_copy(1 << 20, 2).expect("a host-timed copy") > std::time::Duration::ZERO);
}

/// A counted select recorded into a workload's encoder (`record_into`) runs
/// only when that encoder is submitted, and then gives what a submitted call
/// gives: every algorithm, the count in its word and the kept elements in order.
#[test]
fn counted_calls_recorded_into_a_workloads_encoder_run_with_it() {
    use reap::compaction::{Backend, Keep, Lens, Operation};
    let Some(b) = wgpu() else { return };
    let n = 10_000u64;
    let data: Vec<u32> = (0..n as u32).map(|i| if i % 3 == 0 { u32::MAX } else { i }).collect();
    let expected: Vec<u32> = data.iter().copied().filter(|&x| x != u32::MAX).collect();
    let input = b.upload(&data).expect("upload");
    for alg in Algorithm::ALL.into_iter().filter(|a| b.runs(*a) && a.supports(Operation::Select)) {
        let mut words = b.upload(&[n, 7u64]).expect("upload");
        let mut out = b.alloc::<u32>(n).expect("alloc");
        b.record_into(b.device().device.create_command_encoder(&Default::default()));
        let lens = Lens { words: &mut words, input: 0, output: 1 };
        b.select_counted(alg, &input, Keep::Sentinel(u32::MAX), &mut out, lens).expect("records");
        let enc = b.take_recording().expect("the encoder comes back");
        // Not submitted yet: the count word still holds what was uploaded.
        assert_eq!(b.download(&words).expect("download")[1], 7, "{alg:?} ran before its encoder was submitted");
        b.device().queue.submit([enc.finish()]);
        let count = b.download(&words).expect("download")[1];
        assert_eq!(count, expected.len() as u64, "{alg:?}: count");
        let mut got = b.download(&out).expect("download")[..count as usize].to_vec();
        if !alg.stable() {
            got.sort_unstable();
        }
        assert_eq!(got, expected, "{alg:?}: kept elements");
    }
}
