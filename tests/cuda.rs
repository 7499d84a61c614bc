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
    // The tracer's stages do not depend on the element or keep rule.
    jobs.push((&runtime::WAVEFRONT, Variant::new(4, KeepMode::Flags)));
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
