//! The CUDA backend's tests. Compiling every kernel needs only libnvrtc (CI
//! installs it); running them needs a GPU. Each test says when it skips, and
//! REAP_REQUIRE_NVRTC=1 / REAP_REQUIRE_GPU=1 turn a skip into a failure.
#![cfg(feature = "cuda")]

mod common;

use rayon::prelude::*;
use reap::compaction::cuda::runtime::{KeepMode, Variant};
use reap::compaction::cuda::{CudaBackend, WORD_BELOW};
use reap::gpu::{self, Source, Spec};

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
    if let Err(e) = gpu::nvrtc_available() {
        assert!(!required("REAP_REQUIRE_NVRTC"), "REAP_REQUIRE_NVRTC=1 but: {e}");
        skip(format!("SKIPPED every_kernel_compiles_with_nvrtc: {e}"));
        return;
    }
    // Each module owns its sources: the library's and the benchmark's are
    // specialised by element size and keep rule, the workloads' are not.
    let specialised: Vec<&Source> =
        reap::compaction::cuda::runtime::SOURCES.iter().chain(reap::bench::cuda::SOURCES).collect();
    let workloads: Vec<&Source> = reap::trace::cuda::SOURCES.iter().chain(reap::collide::cuda::SOURCES).collect();
    let mut jobs: Vec<(&Source, Spec)> = Vec::new();
    for source in specialised {
        for elem in [4, 8, 16] {
            for keep in KeepMode::ALL {
                let mut v = Variant::new(elem, keep);
                if keep == KeepMode::Predicate {
                    v.predicate = Some(WORD_BELOW.into());
                }
                jobs.push((source, gpu::Specialise::spec(&v)));
            }
        }
    }
    for source in workloads {
        jobs.push((source, Spec::default()));
    }
    let failures: Vec<String> = jobs
        .par_iter()
        .filter_map(|(source, spec)| {
            gpu::compile(source, spec, "compute_90").err().map(|e| format!("{} {:?}: {e}", source.name, spec.defines))
        })
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

/// A counted single-pass launch is at most the resident grid, so at small
/// sizes each block takes one tile and the loop over drawn tiles never turns;
/// with two or three blocks it turns many times, and the counter rewind (the
/// launch's last draw) is exercised on every call.
#[test]
fn counted_single_pass_blocks_loop_over_many_tiles() {
    use reap::compaction::{Algorithm, Operation};
    let Some(mut b) = gpu() else { return };
    for grid in [1, 2, 3] {
        b.tuning.single_pass.counted_grid = grid;
        let mut cfg = reap::verify::Config::new(vec![Algorithm::Lookback, Algorithm::Chained]);
        cfg.operations = vec![Operation::Select, Operation::Partition, Operation::Scan];
        cfg.sizes = vec![1, 4097, 65_553, 300_007];
        cfg.densities = vec![0.5];
        cfg.seed = grid as u64;
        let mut failures = Vec::new();
        let summary = reap::verify::run(&b, &cfg, |case, outcome| {
            if let Err(e) = outcome {
                failures.push(format!("{case}: {e}"));
            }
        });
        assert!(failures.is_empty(), "counted grid {grid}: {} failed:\n{}", summary.failed, failures.join("\n"));
        assert!(summary.passed > 0);
    }
}

/// The counted lookback costs what the host-length call costs: the same
/// device time (events) within 5 % + 2 µs, and no more host time to enqueue,
/// at 2^20..2^28 u32 elements with half kept; and it finds the same count.
/// Also prints what a counted call at a 2^28 capacity costs for each n (the
/// price of sizing from the capacity). A timing test: run it on an idle GPU,
/// `cargo test --release --test cuda counted_lookback -- --ignored --nocapture`.
#[test]
#[ignore = "a timing comparison: run on an idle GPU on its own"]
fn counted_lookback_costs_what_the_host_length_call_costs() {
    use reap::compaction::{Algorithm, Backend, Keep, Lens, Report};
    use reap::verify::Harness;
    use std::time::{Duration, Instant};
    let Some(b) = gpu() else { return };
    const REPS: usize = 50;
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let mut rng = fastrand::Rng::with_seed(12);
    let big = 1u64 << 28;
    let input: Vec<u32> = (0..big).map(|_| rng.u32(..)).collect();
    let d_big = b.upload(&input).unwrap();
    let mut d_big_out = b.alloc::<u32>(big).unwrap();
    let pred = b.word_below::<u32>(1 << 31);
    let keep = Keep::Predicate(&*pred);
    let gpu_sync = |b: &CudaBackend| b.synchronize().unwrap();
    println!("n       host µs  counted µs  (enqueue µs/call: host, counted)  counted in a 2^28 capacity µs");
    for log in (20..=28).step_by(2) {
        let n = 1u64 << log;
        let d_in = b.upload(&input[..n as usize]).unwrap();
        let mut d_out = b.alloc::<u32>(n).unwrap();
        let mut words = b.upload(&[n, 0u64]).unwrap();
        let want = b.select(Algorithm::Lookback, &d_in, keep, &mut d_out).unwrap().count().unwrap();
        // Device time per call, each read back alone.
        let (mut host, mut counted, mut in_big) = (Vec::new(), Vec::new(), Vec::new());
        for rep in 0..REPS + 3 {
            let h = b.select(Algorithm::Lookback, &d_in, keep, &mut d_out).unwrap().span().unwrap();
            let lens = Lens { words: &mut words, input: 0, output: 1 };
            let c = b.select_counted(Algorithm::Lookback, &d_in, keep, &mut d_out, lens).unwrap().span().unwrap();
            let lens = Lens { words: &mut words, input: 0, output: 1 };
            let g = b.select_counted(Algorithm::Lookback, &d_big, keep, &mut d_big_out, lens).unwrap().span().unwrap();
            if rep >= 3 {
                host.push(h);
                counted.push(c);
                in_big.push(g);
            }
        }
        assert_eq!(b.download(&words).unwrap()[1], want, "n = 2^{log}: the counted call's count");
        // Host time per call, enqueued back to back.
        let enqueue = |counted: bool, words: &mut _, out: &mut _| {
            gpu_sync(&b);
            let start = Instant::now();
            for _ in 0..REPS {
                if counted {
                    let lens = Lens { words, input: 0, output: 1 };
                    drop(b.select_counted(Algorithm::Lookback, &d_in, keep, out, lens).unwrap());
                } else {
                    drop(b.select(Algorithm::Lookback, &d_in, keep, out).unwrap());
                }
            }
            let t = start.elapsed() / REPS as u32;
            gpu_sync(&b);
            t
        };
        let host_enqueue = enqueue(false, &mut words, &mut d_out);
        let counted_enqueue = enqueue(true, &mut words, &mut d_out);
        let (h, c, g) = (median(host), median(counted), median(in_big));
        println!(
            "2^{log:<4} {:>8.1} {:>10.1}  ({:>6.1}, {:>6.1}) {:>30.1}",
            h.as_secs_f64() * 1e6,
            c.as_secs_f64() * 1e6,
            host_enqueue.as_secs_f64() * 1e6,
            counted_enqueue.as_secs_f64() * 1e6,
            g.as_secs_f64() * 1e6
        );
        assert!(c <= h.mul_f64(1.05) + Duration::from_micros(2), "n = 2^{log}: counted {c:?} vs host {h:?}");
        assert!(
            counted_enqueue <= host_enqueue.mul_f64(1.2) + Duration::from_micros(2),
            "n = 2^{log}: enqueueing a counted call takes {counted_enqueue:?}, a host-length one {host_enqueue:?}"
        );
    }
}

/// The path tracer on the GPU: every compaction choice renders the same bits,
/// and the image agrees with the CPU engine's within noise (the arithmetic is
/// the same; only fused multiply-adds differ).
#[test]
fn cuda_tracer_matches_itself_across_algorithms_and_the_cpu() {
    use reap::trace::layout::{CameraLayout, Packed};
    use reap::trace::{Compaction, Engine, RenderSettings, Traversal, cpu::CpuEngine, cuda::CudaEngine, render};
    let Some(b) = gpu() else { return };
    let scene = reap::scene::builtin("cornell").expect("cornell");
    let bvh = reap::bvh::build(&scene.triangles);
    let packed = Packed::new(&scene, &bvh);
    let (w, h) = (64, 48);
    let camera = CameraLayout::new(&scene.camera, w, h);
    let mut settings = RenderSettings {
        width: w,
        height: h,
        spp: 4,
        max_bounces: 6,
        traversal: Traversal::BreadthFirst,
        compact_paths: Compaction::None,
        compact_frontier: Compaction::None,
        seed: 7,
        first_sample: 0,
        max_frontier: 1 << 26,
        descend: reap::trace::DESCEND,
    };
    let choices = Compaction::choices(&b);
    let mut gpu_engine = CudaEngine::new(b, &packed, camera, w, h, 7, 6).expect("engine");
    let mut images = Vec::new();
    for traversal in Traversal::ALL {
        for c in &choices {
            settings.traversal = traversal;
            settings.compact_paths = Compaction::parse(c, gpu_engine.backend(), "paths").unwrap();
            settings.compact_frontier = settings.compact_paths;
            gpu_engine.reset().unwrap();
            render(&mut gpu_engine, &settings, |_| {}).unwrap_or_else(|e| panic!("{c} {traversal:?}: {e}"));
            images.push((format!("{c} {}", traversal.name()), gpu_engine.image().unwrap()));
        }
    }
    // Any descent depth, with and without frontier compaction, renders the same bits.
    settings.traversal = Traversal::BreadthFirst;
    for descend in [1, 5] {
        for c in ["none", "lookback"] {
            settings.descend = descend;
            settings.compact_frontier = Compaction::parse(c, gpu_engine.backend(), "frontier").unwrap();
            gpu_engine.reset().unwrap();
            render(&mut gpu_engine, &settings, |_| {}).unwrap_or_else(|e| panic!("descend {descend} {c}: {e}"));
            images.push((format!("descend {descend} frontier {c}"), gpu_engine.image().unwrap()));
        }
    }
    settings.descend = reap::trace::DESCEND;
    let (first_name, first) = &images[0];
    for (name, img) in &images[1..] {
        let same = bytemuck::cast_slice::<[f32; 4], u32>(img) == bytemuck::cast_slice::<[f32; 4], u32>(first);
        assert!(same, "{name} renders a different image than {first_name}");
    }
    let mut cpu = CpuEngine::new(reap::compaction::CpuBackend::new(), packed, camera, w, h, 7, 6);
    render(&mut cpu, &settings, |_| {}).unwrap();
    let cpu_img = cpu.image().unwrap();
    let mean = |img: &[[f32; 4]]| img.iter().map(|p| (p[0] + p[1] + p[2]) as f64 / p[3] as f64).sum::<f64>();
    let (g, c) = (mean(first), mean(&cpu_img));
    assert!((g - c).abs() <= 1e-3 * c.abs(), "GPU mean {g} vs CPU mean {c}");
}

/// Every host wait goes through the GPU layer's counted helpers: a call that
/// only enqueues makes none, each read-back exactly one.
#[test]
fn cuda_host_waits_are_counted() {
    use reap::compaction::{Algorithm, Backend, Keep, Report};
    use reap::gpu::SyncMark;
    let Some(b) = gpu() else { return };
    let data: Vec<u32> = (0..100_000u32).map(|i| if i % 3 == 0 { u32::MAX } else { i }).collect();
    let mark = SyncMark::now();
    let input = b.upload(&data).expect("upload");
    assert_eq!(mark.on_this_thread(), 1, "an upload from pageable memory counts once");
    let mut output = b.alloc::<u32>(data.len() as u64).expect("alloc");
    // Compile outside the measurement: loading a module is not a host wait on the stream.
    b.select(Algorithm::Lookback, &input, Keep::Sentinel(u32::MAX), &mut output).expect("warm-up").count().unwrap();
    let mark = SyncMark::now();
    let report = b.select(Algorithm::Lookback, &input, Keep::Sentinel(u32::MAX), &mut output).expect("select");
    assert_eq!(mark.on_this_thread(), 0, "select only enqueues");
    let kept = report.count().expect("count");
    assert_eq!(kept, data.iter().filter(|&&x| x != u32::MAX).count() as u64);
    assert_eq!(mark.on_this_thread(), 1, "reading the count is one wait");
    report.phases().expect("phases");
    assert_eq!(mark.on_this_thread(), 2, "reading every phase's time is one wait");
    b.download(&output).expect("download");
    b.synchronize().expect("synchronize");
    assert_eq!(mark.on_this_thread(), 4);
    assert!(mark.in_process() >= 4);
}

/// A frame runs on the device from its start to its end: the host waits
/// exactly twice per frame, both at the end (the frame's words, then the
/// stage times), for both traversals, with and without compaction at either
/// site. No count is read inside the frame, so none sizes a launch.
#[test]
fn cuda_frame_waits_for_the_device_twice_at_its_end_only() {
    use reap::compaction::Algorithm;
    use reap::gpu::SyncMark;
    use reap::trace::layout::{CameraLayout, Packed};
    use reap::trace::{Compaction, RenderSettings, Traversal, cuda::CudaEngine, render};
    let Some(b) = gpu() else { return };
    let scene = reap::scene::builtin("cornell").expect("cornell");
    let bvh = reap::bvh::build(&scene.triangles);
    let packed = Packed::new(&scene, &bvh);
    let (w, h) = (64, 48);
    let camera = CameraLayout::new(&scene.camera, w, h);
    let mut engine = CudaEngine::new(b, &packed, camera, w, h, 7, 6).expect("engine");
    let base = RenderSettings {
        width: w,
        height: h,
        spp: 3,
        max_bounces: 6,
        traversal: Traversal::DepthFirst,
        compact_paths: Compaction::None,
        compact_frontier: Compaction::None,
        seed: 7,
        first_sample: 0,
        max_frontier: 1 << 26,
        descend: reap::trace::DESCEND,
    };
    let lookback = Compaction::With(Algorithm::Lookback);
    for traversal in Traversal::ALL {
        for compact in [Compaction::None, lookback] {
            let settings =
                RenderSettings { traversal, compact_paths: compact, compact_frontier: compact, ..base.clone() };
            let what = format!("{} {}", traversal.name(), compact.name());
            // The warm-up compiles the kernels and lets the frontier grow to what a frame needs.
            render(&mut engine, &settings, |_| {}).unwrap_or_else(|e| panic!("{what} warm-up: {e}"));
            let mark = SyncMark::now();
            let frames = render(&mut engine, &settings, |_| {}).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(
                mark.on_this_thread(),
                2 * frames.len() as u64,
                "{what}: host waits for {} frames",
                frames.len()
            );
            let f = &frames[0];
            assert!(f.wall_ms >= f.frame_ms, "{what}: the wall clock holds the frame's stages");
            assert_eq!(f.queue[0], (w * h) as u64, "{what}: the counts come from the words");
            assert!(f.alive[0] > 0 && f.shadow_rays[0] > 0, "{what}: {f:?}");
            if traversal == Traversal::BreadthFirst {
                assert!(f.frontier[0].len() > 1 && !f.shadow_frontier[0].is_empty(), "{what}: levels recorded");
            }
        }
    }
}

/// A frame whose frontier would pass --max-frontier returns the clear
/// error, and nothing is written past the frontier's capacity (a poisoned
/// guard region is read back intact); the failed frame accumulates nothing.
#[test]
fn cuda_frontier_past_max_frontier_is_an_error_and_nothing_is_written_past_it() {
    use reap::trace::layout::{CameraLayout, Packed};
    use reap::trace::{
        Compaction, Engine, RenderSettings, TraceError, Traversal, cuda::CudaEngine, frontier_guard, guard_frontier,
        render,
    };
    let Some(b) = gpu() else { return };
    let scene = reap::scene::builtin("cornell").expect("cornell");
    let bvh = reap::bvh::build(&scene.triangles);
    let packed = Packed::new(&scene, &bvh);
    let (w, h) = (32, 32);
    let camera = CameraLayout::new(&scene.camera, w, h);
    let mut e = CudaEngine::new(b, &packed, camera, w, h, 7, 4).expect("engine");
    guard_frontier(&mut e, 1 << 16).expect("guard");
    let settings = RenderSettings {
        width: w,
        height: h,
        spp: 1,
        max_bounces: 4,
        traversal: Traversal::BreadthFirst,
        compact_paths: Compaction::None,
        compact_frontier: Compaction::None,
        seed: 7,
        first_sample: 0,
        max_frontier: 3000,
        descend: reap::trace::DESCEND,
    };
    match render(&mut e, &settings, |_| {}) {
        Err(err @ TraceError::FrontierTooLarge { items, max: 3000, .. }) => {
            assert!(items > 3000 && err.to_string().contains("--max-frontier"), "{err}");
        }
        other => panic!("expected FrontierTooLarge, got {other:?}"),
    }
    let (capacity, intact) = frontier_guard(&mut e).expect("reads").expect("a frontier was made");
    assert_eq!(capacity, 3000);
    assert!(intact, "a slot past the frontier's capacity was written");
    assert!(e.image().expect("image").iter().all(|p| *p == [0.0; 4]), "a failed frame accumulated");
}

/// The viewer's hand-off: the 8-bit image the GPU converts and reads back
/// through its pinned staging buffer, against the CPU twin of the conversion
/// (src/trace/tonemap.rs) on the same sums. The two may differ by one step
/// where CUDA's `powf` rounds differently from the CPU's; nowhere by more.
/// Read after more samples too, so the reused staging buffer is seen to
/// follow the sums. An odd size leaves the last block partly empty.
#[test]
fn cuda_rgba8_matches_the_cpu_tonemap_of_its_sums() {
    use reap::trace::layout::{CameraLayout, Packed};
    use reap::trace::{Compaction, Engine, RenderSettings, Traversal, cuda::CudaEngine, render, tonemap};
    let Some(b) = gpu() else { return };
    let scene = reap::scene::builtin("cornell").expect("cornell");
    let bvh = reap::bvh::build(&scene.triangles);
    let packed = Packed::new(&scene, &bvh);
    let (w, h) = (61, 59);
    let camera = CameraLayout::new(&scene.camera, w, h);
    let mut e = CudaEngine::new(b, &packed, camera, w, h, 3, 6).expect("engine");
    let black = e.rgba8().expect("the image before any sample").to_vec();
    assert_eq!(black.len(), (w * h) as usize);
    assert!(black.iter().all(|p| *p == [0, 0, 0, 255]), "no sample yet: every pixel black and opaque");
    let mut first_sample = 0;
    let mut shown = Vec::new();
    for spp in [1, 3] {
        let settings = RenderSettings {
            width: w,
            height: h,
            spp,
            max_bounces: 6,
            traversal: Traversal::DepthFirst,
            compact_paths: Compaction::None,
            compact_frontier: Compaction::None,
            seed: 3,
            first_sample,
            max_frontier: 1 << 26,
            descend: reap::trace::DESCEND,
        };
        render(&mut e, &settings, |_| {}).expect("render");
        first_sample += spp;
        let want: Vec<[u8; 4]> = e.image().expect("sums").into_iter().map(tonemap::trace_tonemap).collect();
        let got = e.rgba8().expect("the 8-bit image").to_vec();
        assert_eq!(got.len(), want.len());
        let mut off_by_one = 0;
        for (i, (g, c)) in got.iter().zip(&want).enumerate() {
            let worst = g.iter().zip(c).map(|(a, b)| (*a as i32 - *b as i32).abs()).max().unwrap_or(0);
            assert!(worst <= 1 && g[3] == 255, "pixel {i} after {first_sample} spp: GPU {g:?}, CPU twin {c:?}");
            off_by_one += (worst == 1) as usize;
        }
        assert!(off_by_one * 100 <= got.len(), "{off_by_one} of {} pixels differ from the CPU twin", got.len());
        let lit = got.iter().filter(|p| p[0] > 40 || p[1] > 40 || p[2] > 40).count();
        assert!(lit * 2 > got.len(), "the Cornell box is lit: {lit} of {} pixels", got.len());
        shown.push(got);
    }
    assert_ne!(shown[0], shown[1], "the staging buffer follows the sums after more samples");
}

// ---- The collision demo (issue 7): the GPU engine against brute force, the
// CPU engine, and itself under every compaction choice and both sorts. The
// kernels are compiled without FMA contraction, so results are compared bit
// for bit, several frames included.

#[path = "common/collide_redo.rs"]
mod collide_redo;

mod collide {
    use super::{collide_redo, gpu};
    use reap::collide::cpu::CpuCollide;
    use reap::collide::cuda::CudaCollide;
    use reap::collide::layout::{Body, Contact, LEAF, Node, World, pack};
    use reap::collide::scenario::{self, Scenario};
    use reap::collide::{CollideSettings, Compaction, Engine, FrameStats, Frontier, SortMethod, frame, physics};
    use reap::compaction::Algorithm;
    use reap::compaction::cuda::CudaBackend;

    /// `none` quadruples the frontier every level: room for a small tree's depth.
    const MAX_FRONTIER: u64 = 1 << 28;

    fn settings(compact_pairs: Compaction, sort: SortMethod) -> CollideSettings {
        CollideSettings { compact_pairs, sort, iterations: 4, max_frontier: MAX_FRONTIER }
    }

    fn lookback() -> CollideSettings {
        settings(Compaction::With(Algorithm::Lookback), SortMethod::Fast)
    }

    /// Every leaf pair whose boxes overlap, by testing all n² / 2 of them.
    fn brute_force(bodies: &[Body]) -> Vec<u64> {
        let leaves: Vec<Node> = bodies
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let (min, max) = physics::aabb(b);
                Node { min, left: i as u32, max, right: LEAF }
            })
            .collect();
        let mut pairs = Vec::new();
        for i in 0..leaves.len() {
            for j in i + 1..leaves.len() {
                if physics::overlap(&leaves[i], &leaves[j]) {
                    pairs.push(pack(i as u32, j as u32));
                }
            }
        }
        pairs
    }

    fn bits<T: bytemuck::Pod>(v: &[T]) -> &[u32] {
        bytemuck::cast_slice(v)
    }

    fn first_difference(a: &[Body], b: &[Body]) -> String {
        let differs = |(x, y): (&Body, &Body)| bytemuck::bytes_of(x) != bytemuck::bytes_of(y);
        match a.iter().zip(b).position(differs) {
            Some(i) => format!("body {i}: {:?} vs {:?}", a[i], b[i]),
            None => format!("{} vs {} bodies", a.len(), b.len()),
        }
    }

    /// One frame from `state`: what it found and where it left the bodies.
    struct Outcome {
        stats: FrameStats,
        candidates: Vec<u64>,
        contacts: Vec<Contact>,
        nodes: Vec<Node>,
        after: Vec<Body>,
    }

    fn one_frame<E: Engine>(e: &mut E, s: &CollideSettings, state: &[Body]) -> Outcome {
        e.set_bodies(state).expect("set_bodies");
        let mut f = Frontier::new(e).expect("frontier");
        let stats =
            frame(e, s, &mut f, 0).unwrap_or_else(|err| panic!("{} {}: {err}", s.compact_pairs.name(), s.sort.name()));
        Outcome {
            stats,
            candidates: e.candidate_pairs().expect("candidates"),
            contacts: e.contact_list().expect("contacts"),
            nodes: e.nodes().expect("nodes"),
            after: e.bodies().expect("bodies"),
        }
    }

    /// A state with many contacts: a pile that has fallen for a while.
    fn settled(b: CudaBackend, n: u32, frames: u32) -> (CudaCollide, World, Vec<Body>) {
        let (world, bodies) = scenario::build(Scenario::Pile, n, 3).expect("scenario");
        let mut e = CudaCollide::new(b, world, &bodies).expect("engine");
        let s = lookback();
        let mut f = Frontier::new(&e).expect("frontier");
        for i in 0..frames {
            frame(&mut e, &s, &mut f, i).expect("frame");
        }
        let state = e.bodies().expect("bodies");
        (e, world, state)
    }

    fn assert_same(name: &str, got: &Outcome, want: &Outcome, want_name: &str) {
        assert_eq!(got.candidates, want.candidates, "{name}: candidates differ from {want_name}");
        assert!(
            bits(&got.contacts) == bits(&want.contacts),
            "{name}: contacts differ from {want_name} ({} vs {})",
            got.contacts.len(),
            want.contacts.len()
        );
        // Nodes compare as floats: a box bound of zero may carry either sign (min / max of ±0).
        assert!(got.nodes == want.nodes, "{name}: the hierarchy differs from {want_name}'s");
        assert_eq!(got.stats.candidates, want.stats.candidates, "{name}");
        assert_eq!(got.stats.contacts, want.stats.contacts, "{name}");
        assert!(
            bits(&got.after) == bits(&want.after),
            "{name} vs {want_name}: {}",
            first_difference(&got.after, &want.after)
        );
    }

    #[test]
    fn cuda_collide_broad_phase_is_brute_force() {
        let Some(mut b) = gpu() else { return };
        for sc in Scenario::ALL {
            for n in [1, 2, 3, 50, 700] {
                let (world, bodies) = scenario::build(sc, n, 11).expect("scenario");
                let mut e = CudaCollide::new(b, world, &bodies).expect("engine");
                let s = lookback();
                let mut f = Frontier::new(&e).expect("frontier");
                // A fresh spawn has no touching pair: the frames after it have some.
                for i in 0..30 {
                    let before = e.bodies().expect("bodies");
                    frame(&mut e, &s, &mut f, i).expect("frame");
                    let found = e.candidate_pairs().expect("candidates");
                    assert_eq!(found, brute_force(&before), "{} n={n} frame {i}", sc.name());
                }
                b = e.into_backend();
            }
        }
        let (mut e, _, state) = settled(b, 1000, 60);
        let got = one_frame(&mut e, &lookback(), &state);
        let want = brute_force(&state);
        assert!(!want.is_empty(), "the settled pile has no overlapping pair");
        assert_eq!(got.candidates, want, "the settled pile");
    }

    #[test]
    fn cuda_collide_is_the_same_under_every_compaction_and_sort() {
        let Some(b) = gpu() else { return };
        let choices: Vec<&str> = Compaction::choices(&b);
        let sorts = SortMethod::choices(&b);
        // Small, so that `none` (4^level slots) stays within MAX_FRONTIER.
        let (mut e, _, state) = settled(b, 200, 80);
        let reference = one_frame(&mut e, &lookback(), &state);
        assert!(reference.stats.contacts > 0, "the settled pile has no contact");
        for c in &choices {
            let s = settings(Compaction::parse(c, e.backend(), "compact-pairs").unwrap(), SortMethod::Fast);
            let got = one_frame(&mut e, &s, &state);
            assert_same(&format!("compaction {c}"), &got, &reference, "lookback");
            assert_eq!(got.stats.live, reference.stats.live, "compaction {c}: live pairs per level");
            if *c != "none" {
                assert_eq!(got.stats.frontier, reference.stats.frontier, "compaction {c}: frontier sizes");
            }
        }
        for sort in &sorts {
            let s = settings(Compaction::With(Algorithm::Lookback), SortMethod::parse(sort, e.backend()).unwrap());
            let got = one_frame(&mut e, &s, &state);
            assert_same(&format!("sort {sort}"), &got, &reference, "fast");
        }
    }

    #[test]
    fn cuda_collide_matches_the_cpu_engine_on_one_frame() {
        let Some(b) = gpu() else { return };
        let (mut e, world, state) = settled(b, 3000, 60);
        let mut cpu = CpuCollide::new(world, &state).expect("cpu engine");
        for s in [lookback(), settings(Compaction::With(Algorithm::Atomic), SortMethod::Split(Algorithm::Lookback))] {
            let got = one_frame(&mut e, &s, &state);
            let want = one_frame(&mut cpu, &lookback(), &state);
            assert!(want.stats.contacts > 0, "the settled pile has no contact");
            assert_same(&format!("cuda {} {}", s.compact_pairs.name(), s.sort.name()), &got, &want, "the CPU");
            assert_eq!(got.stats.live, want.stats.live, "live pairs per level");
        }
        // `none` on both, on a pile small enough for it.
        let (mut e, world, state) = settled(e.into_backend(), 200, 80);
        let mut cpu = CpuCollide::new(world, &state).expect("cpu engine");
        let none = settings(Compaction::None, SortMethod::Fast);
        let (got, want) = (one_frame(&mut e, &none, &state), one_frame(&mut cpu, &none, &state));
        assert_same("cuda none", &got, &want, "the CPU's none");
        assert_eq!(got.stats.frontier, want.stats.frontier, "none: frontier sizes");
        assert_eq!(got.stats.live, want.stats.live, "none: live pairs per level");
    }

    /// Bit-identical trajectories: the GPU adds the solver's fixed-point sums
    /// in another order than the CPU, which integer addition does not see, and
    /// every float operation rounds as the CPU's does (no FMA contraction).
    #[test]
    fn cuda_collide_simulates_bit_identical_to_the_cpu() {
        let Some(mut b) = gpu() else { return };
        for sc in Scenario::ALL {
            let (world, bodies) = scenario::build(sc, 1500, 5).expect("scenario");
            let mut g = CudaCollide::new(b, world, &bodies).expect("engine");
            let mut c = CpuCollide::new(world, &bodies).expect("cpu engine");
            let s = lookback();
            let (mut fg, mut fc) = (Frontier::new(&g).unwrap(), Frontier::new(&c).unwrap());
            let mut contacts = 0;
            for i in 0..60 {
                let sg = frame(&mut g, &s, &mut fg, i).expect("gpu frame");
                let sc_ = frame(&mut c, &s, &mut fc, i).expect("cpu frame");
                assert_eq!((sg.candidates, sg.contacts), (sc_.candidates, sc_.contacts), "{} frame {i}", sc.name());
                let (bg, bc) = (g.bodies().unwrap(), c.bodies().unwrap());
                assert!(bits(&bg) == bits(&bc), "{} frame {i}: {}", sc.name(), first_difference(&bg, &bc));
                contacts += sg.contacts;
            }
            assert!(contacts > 0, "{}: 60 frames without a contact test nothing", sc.name());
            b = g.into_backend();
        }
    }

    /// A steady-state frame waits on the device twice, both in `end_frame`
    /// (the words, the stage times): the pair walk, the narrow phase and the
    /// solver read every count on the device, with compaction or without.
    #[test]
    fn cuda_collide_frame_waits_twice() {
        use reap::gpu::SyncMark;
        let Some(b) = gpu() else { return };
        let steady = |e: &mut CudaCollide, s: &CollideSettings, state: &[Body]| {
            let what = format!("{} {} on {} bodies", s.compact_pairs.name(), s.sort.name(), state.len());
            e.set_bodies(state).expect("set_bodies");
            let mut f = Frontier::new(e).expect("frontier");
            // Warm-up: compiles the kernels, sizes the frontier, the lists and the level bound.
            for i in 0..3 {
                frame(e, s, &mut f, i).expect("warm-up frame");
            }
            let mark = SyncMark::now();
            let st = frame(e, s, &mut f, 3).expect("frame");
            assert_eq!(f.attempts(), 1, "{what}: the measured frame was redone");
            assert_eq!(mark.on_this_thread(), 2, "{what}: host waits in one frame");
            assert!(st.contacts > 0 && st.live.len() > 2, "{what}: the frame found nothing: {:?}", st.live);
            assert!(st.wall_ms >= st.frame_ms, "{what}: the wall clock holds the frame's stages");
        };
        let (mut e, _, state) = settled(b, 3000, 40);
        steady(&mut e, &lookback(), &state);
        steady(&mut e, &settings(Compaction::With(Algorithm::Atomic), SortMethod::Split(Algorithm::Lookback)), &state);
        // `none` keeps every dead slot: a small pile.
        let (mut e, _, state) = settled(e.into_backend(), 200, 60);
        steady(&mut e, &settings(Compaction::None, SortMethod::Fast), &state);
    }

    /// tests/common/collide_redo.rs on the GPU: short frames are redone and
    /// find what the CPU finds; an overflow is refused without moving a body.
    #[test]
    fn cuda_collide_redoes_short_frames_and_refuses_overflow() {
        let Some(b) = gpu() else { return };
        let (mut e, world, state) = settled(b, 1500, 60);
        collide_redo::short_frames_are_redone_and_find_the_same(&mut e, &lookback(), &state);
        let mut cpu = CpuCollide::new(world, &state).expect("cpu engine");
        let (want, got) = (one_frame(&mut cpu, &lookback(), &state), one_frame(&mut e, &lookback(), &state));
        assert_same("cuda after redone frames", &got, &want, "the CPU");
        collide_redo::an_overflowing_frontier_is_refused_and_moves_no_body(&mut e, &state);
        let (mut e, _, state) = settled(e.into_backend(), 150, 80);
        collide_redo::short_frames_are_redone_and_find_the_same(
            &mut e,
            &settings(Compaction::None, SortMethod::Fast),
            &state,
        );
    }

    /// The fast sort orders equal codes by body id, as the split sort does,
    /// across tiles (2048 keys) and with long runs of equal digits.
    #[test]
    fn cuda_fast_sort_equals_the_split_sort() {
        let Some(b) = gpu() else { return };
        let (world, mut bodies) = scenario::build(Scenario::Gas, 9000, 2).expect("scenario");
        // Put the bodies on 37 points, so that most Morton codes repeat.
        for (i, body) in bodies.iter_mut().enumerate() {
            let k = (i * 7919 % 37) as f32;
            body.pos = [world.min[0] + 1.0 + k * 0.5, world.min[1] + 1.0 + (k * 0.3) % 2.0, world.min[2] + 1.0];
        }
        let mut e = CudaCollide::new(b, world, &bodies).expect("engine");
        let mut cpu = CpuCollide::new(world, &bodies).expect("cpu engine");
        let mut trees = Vec::new();
        // The build stages alone: a frame's words, none of them used.
        let (mut words, mut cpu_words) = (e.alloc::<u64>(4).unwrap(), vec![0u64; 4]);
        for sort in [SortMethod::Fast, SortMethod::Split(Algorithm::Lookback), SortMethod::Split(Algorithm::Horn)] {
            e.begin_frame(&mut words, 4).unwrap();
            e.codes().unwrap();
            e.sort(sort).unwrap();
            e.build().unwrap();
            e.refit().unwrap();
            e.end_frame(&words).unwrap();
            trees.push((sort.name(), e.nodes().unwrap()));
        }
        cpu.begin_frame(&mut cpu_words, 4).unwrap();
        cpu.codes().unwrap();
        cpu.sort(SortMethod::Fast).unwrap();
        cpu.build().unwrap();
        cpu.refit().unwrap();
        cpu.end_frame(&cpu_words).unwrap();
        let want = cpu.nodes().unwrap();
        for (name, tree) in &trees {
            assert!(*tree == want, "sort {name} on the GPU builds another hierarchy than the CPU");
        }
        let n = bodies.len();
        let mut leaves: Vec<u32> = want[n - 1..].iter().map(|l| l.left).collect();
        leaves.sort_unstable();
        assert_eq!(leaves, (0..n as u32).collect::<Vec<_>>(), "the leaves are not a permutation of the bodies");
    }
}
