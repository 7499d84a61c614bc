//! The path tracer on the GPU: its images against the CPU engine and itself,
//! its host waits per frame, its frontier bound and its 8-bit hand-off.

use super::gpu;
use reap::trace::cuda::CudaEngine;
use reap::trace::layout::{CameraLayout, Packed};
use reap::trace::{Compaction, EngineSetup, Estimator, RenderSettings, Traversal};

/// The built-in Cornell box packed for an engine, with its camera at `w`×`h`.
fn cornell(w: u32, h: u32) -> (Packed, CameraLayout) {
    let scene = reap::scene::builtin("cornell").expect("cornell");
    let bvh = reap::bvh::build(&scene.triangles);
    (Packed::new(&scene, &bvh), CameraLayout::new(&scene.camera, w, h))
}

/// The Cornell box on a CUDA engine at `w`×`h`; `None` where no GPU is present.
fn cornell_on_the_gpu(w: u32, h: u32, seed: u32, max_bounces: u32) -> Option<CudaEngine> {
    let b = gpu()?;
    let (packed, camera) = cornell(w, h);
    let setup = EngineSetup { packed: &packed, camera, width: w, height: h, seed, max_bounces };
    Some(CudaEngine::new(b, setup).expect("engine"))
}

/// The settings these tests start from: one frame per sample from sample 0,
/// depth-first, no compaction, next-event estimation with MIS.
fn settings_for(w: u32, h: u32, spp: u32, max_bounces: u32, seed: u32) -> RenderSettings {
    RenderSettings {
        width: w,
        height: h,
        spp,
        max_bounces,
        estimator: Estimator::Mis,
        traversal: Traversal::DepthFirst,
        compact_paths: Compaction::None,
        compact_frontier: Compaction::None,
        seed,
        first_sample: 0,
        max_frontier: 1 << 26,
        fusion: Default::default(),
        descend: reap::trace::DESCEND,
        block_levels: reap::trace::BlockLevels::Auto,
        group_levels: 0,
        bvh: reap::trace::BVH,
    }
}

/// The path tracer on the GPU: every compaction choice renders the same bits,
/// and the image agrees with the CPU engine's within noise (the arithmetic is
/// the same; only fused multiply-adds differ).
#[test]
fn cuda_tracer_matches_itself_across_algorithms_and_the_cpu() {
    use reap::trace::{Engine, cpu::CpuEngine, render};
    let (w, h) = (64, 48);
    let Some(mut gpu_engine) = cornell_on_the_gpu(w, h, 7, 6) else { return };
    let mut settings = RenderSettings { traversal: Traversal::BreadthFirst, ..settings_for(w, h, 4, 6, 7) };
    let choices = Compaction::choices(gpu_engine.backend());
    let mut images = Vec::new();
    for traversal in Traversal::ALL {
        for c in &choices {
            // Fused sites (lookback, chained, atomic) and the same algorithms as a separate pass.
            for fusion in reap::compaction::Fusion::ALL {
                settings.traversal = traversal;
                settings.fusion = fusion;
                settings.compact_paths = Compaction::parse(c, gpu_engine.backend(), "paths").unwrap();
                settings.compact_frontier = settings.compact_paths;
                gpu_engine.reset().unwrap();
                let frames = render(&mut gpu_engine, &settings, |_| {})
                    .unwrap_or_else(|e| panic!("{c} {traversal:?} {fusion:?}: {e}"));
                let fused = reap::trace::paths_site(&gpu_engine, &settings) == Some(reap::compaction::SitePath::Fused);
                assert_eq!(frames[0].paths_site.is_some(), *c != "none", "{c}: the site's path is reported");
                let name = format!("{c} {} {}", traversal.name(), if fused { "fused" } else { "separate" });
                images.push((name, gpu_engine.image().unwrap()));
            }
        }
    }
    settings.fusion = Default::default();
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
    let (packed, camera) = cornell(w, h);
    let mut cpu = CpuEngine::new(reap::compaction::CpuBackend::new(), packed, camera, w, h, 7, 6);
    render(&mut cpu, &settings, |_| {}).unwrap();
    let cpu_img = cpu.image().unwrap();
    let mean = |img: &[[f32; 4]]| img.iter().map(|p| (p[0] + p[1] + p[2]) as f64 / p[3] as f64).sum::<f64>();
    let (g, c) = (mean(first), mean(&cpu_img));
    assert!((g - c).abs() <= 1e-3 * c.abs(), "GPU mean {g} vs CPU mean {c}");
}

/// Every host wait goes through the GPU layer's counted helpers: a call that
/// only enqueues makes none, each read-back exactly one.
/// A frame runs on the device from its start to its end: the host waits
/// exactly twice per frame, both at the end (the frame's words, then the
/// stage times), for both traversals, with and without compaction at either
/// site. No count is read inside the frame, so none sizes a launch.
#[test]
fn cuda_frame_waits_for_the_device_twice_at_its_end_only() {
    use reap::compaction::Algorithm;
    use reap::cuda_runtime::SyncMark;
    use reap::trace::render;
    let (w, h) = (64, 48);
    let Some(mut engine) = cornell_on_the_gpu(w, h, 7, 6) else { return };
    let base = settings_for(w, h, 3, 6, 7);
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
    use reap::trace::{Engine, TraceError, frontier_guard, guard_frontier, render};
    let (w, h) = (32, 32);
    let Some(mut e) = cornell_on_the_gpu(w, h, 7, 4) else { return };
    guard_frontier(&mut e, 1 << 16).expect("guard");
    let settings =
        RenderSettings { traversal: Traversal::BreadthFirst, max_frontier: 3000, ..settings_for(w, h, 1, 4, 7) };
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
    use reap::trace::{Engine, render, tonemap};
    let (w, h) = (61, 59);
    let Some(mut e) = cornell_on_the_gpu(w, h, 3, 6) else { return };
    let black = e.rgba8().expect("the image before any sample").to_vec();
    assert_eq!(black.len(), (w * h) as usize);
    assert!(black.iter().all(|p| *p == [0, 0, 0, 255]), "no sample yet: every pixel black and opaque");
    let mut first_sample = 0;
    let mut shown = Vec::new();
    for spp in [1, 3] {
        let settings = RenderSettings { first_sample, ..settings_for(w, h, spp, 6, 3) };
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

/// A textured square (a 3×2 texture, so a swapped width and height or a
/// flipped v shows) filling the view under a sky of 1: the GPU's texture
/// lookups (texture.cuh, the packed UVs, texture table and texels) give the
/// CPU's image pixel by pixel, and the image's mean is the texture's.
#[test]
fn cuda_textured_square_matches_the_cpu() {
    use glam::Vec3;
    use reap::trace::{Engine, cpu::CpuEngine, render};
    let Some(b) = gpu() else { return };
    let scene = super::analytic::textured_square();
    let texture = scene.textures[0].clone();
    let bvh = reap::bvh::build(&scene.triangles);
    let packed = Packed::new(&scene, &bvh);
    let (w, h) = (32, 32);
    let camera = CameraLayout::new(&scene.camera, w, h);
    let settings = RenderSettings { max_frontier: 1 << 20, ..settings_for(w, h, 2, 2, 7) };
    let setup = EngineSetup { packed: &packed, camera, width: w, height: h, seed: 7, max_bounces: 2 };
    let mut gpu_engine = CudaEngine::new(b, setup).expect("engine");
    render(&mut gpu_engine, &settings, |_| {}).expect("the GPU renders");
    let mut cpu = CpuEngine::new(reap::compaction::CpuBackend::new(), packed, camera, w, h, 7, 2);
    render(&mut cpu, &settings, |_| {}).expect("the CPU renders");
    let (g, c) = (gpu_engine.image().unwrap(), cpu.image().unwrap());
    for (i, (g, c)) in g.iter().zip(&c).enumerate() {
        // Only fused multiply-adds differ: the hit points, hence the UVs, by a few ulps.
        let worst = (0..3).map(|k| (g[k] - c[k]).abs()).fold(0.0f32, f32::max);
        assert!(worst <= 1e-3 && g[3] == c[3], "pixel {i}: GPU {g:?} vs CPU {c:?}");
    }
    // The view covers exactly one tile: the image's mean is the texels' (stratified pixels: well within 1e-2).
    let mean: Vec3 = c.iter().map(|p| Vec3::new(p[0], p[1], p[2]) / p[3]).sum::<Vec3>() / c.len() as f32;
    assert!((mean - texture.mean()).abs().max_element() < 1e-2, "mean {mean} vs the texture's {}", texture.mean());
}

/// Split-frame rendering on one GPU with one engine per band (the bodies of
/// tests/common/shard.rs, as on the CPU): two and three bands of rows sum to
/// the whole image bit for bit, both traversals, with and without a fused
/// site; and an edge that moves between samples, the moved rows' sums moved
/// on the device through the engines' sum pointers and streams.
#[test]
fn cuda_bands_of_rows_sum_to_the_whole_image() {
    use reap::compaction::Algorithm;
    let (w, h) = (61, 47);
    if gpu().is_none() {
        return;
    }
    let make = || cornell_on_the_gpu(w, h, 7, 6).expect("the GPU answered a moment ago");
    let lookback = Compaction::With(Algorithm::Lookback);
    for traversal in Traversal::ALL {
        for c in [Compaction::None, lookback] {
            let s = RenderSettings { traversal, compact_paths: c, compact_frontier: c, ..settings_for(w, h, 2, 6, 7) };
            super::shard::split_frames_sum_to_the_whole_image(make, &s, &[&[30, 17], &[1, 40, 6]]);
        }
        let s = RenderSettings {
            traversal,
            compact_paths: lookback,
            compact_frontier: lookback,
            ..settings_for(w, h, 1, 6, 7)
        };
        super::shard::a_moving_band_edge_keeps_the_image(make, &s, &[20, 9, 33, 33], move_rows);
    }
    super::shard::bad_shards_are_typed_errors(make(), &settings_for(w, h, 1, 6, 7));
}

/// Moves the sums of `pixels` from one engine to another on the same device:
/// copied on the new owner's stream, then zeroed on the old owner's.
fn move_rows(from: &mut CudaEngine, to: &mut CudaEngine, pixels: std::ops::Range<u64>) {
    let (offset, bytes) = (16 * pixels.start, 16 * (pixels.end - pixels.start) as usize);
    // The old owner's last frame must have landed before its sums are read on another stream.
    reap::cuda_runtime::synchronize(from.stream(), "finishing the old owner's frames").expect("sync");
    // SAFETY: both ranges lie inside the two engines' image-sized sums, distinct allocations on one device.
    let copy = unsafe {
        reap::cuda_runtime::copy_dtod(
            to.stream(),
            to.sums_ptr() + offset,
            from.sums_ptr() + offset,
            bytes,
            "moving sums",
        )
    };
    copy.expect("copy");
    // The copy must have read the rows before the old owner's stream zeroes them.
    reap::cuda_runtime::synchronize(to.stream(), "finishing the copy").expect("sync");
    // SAFETY: the range lies inside the old owner's sums; enqueued on its stream, before its next frame.
    let r =
        unsafe { cudarc::driver::sys::cuMemsetD8Async(from.sums_ptr() + offset, 0, bytes, from.stream().cu_stream()) };
    r.result().expect("zeroing the moved rows at their old owner");
}

/// A split render over every GPU here (NCCL moves the rows whose band
/// changes and gathers the image): the same bits as one GPU. Needs two GPUs;
/// NCCL refuses two ranks on one device.
#[test]
fn cuda_split_over_gpus_gathers_the_one_gpu_image() {
    use reap::compaction::Algorithm;
    use reap::compaction::cuda::CudaBackend;
    let (w, h) = (61, 47);
    if gpu().is_none() {
        return;
    }
    let count = reap::cuda_runtime::device_count().expect("a GPU opened");
    if count < 2 {
        super::skip(format!("SKIPPED cuda_split_over_gpus: {count} GPU here, a split needs two"));
        return;
    }
    let make = |d: usize| {
        let (packed, camera) = cornell(w, h);
        let setup = EngineSetup { packed: &packed, camera, width: w, height: h, seed: 7, max_bounces: 6 };
        CudaEngine::new(CudaBackend::new(d).expect("device"), setup).expect("engine")
    };
    let lookback = Compaction::With(Algorithm::Lookback);
    for traversal in Traversal::ALL {
        let s = RenderSettings {
            traversal,
            compact_paths: lookback,
            compact_frontier: lookback,
            ..settings_for(w, h, 2, 6, 7)
        };
        let mut bands = vec![1u32; count];
        bands[0] = h - (count as u32 - 1);
        super::shard::split_renders_the_whole_image(make, &s, count, bands);
    }
}

/// A frame recorded as a CUDA graph (the second of a configuration) is
/// replayed from then on: a replayed frame runs no stage on the host (it
/// records no timing event, so it enqueues no per-level launch), keeps its
/// per-stage times from the graph's event nodes, and renders the bits that
/// streamed frames render; a changed camera streams again. Fused single-pass
/// sites, a separate single-pass pass, a multi-pass algorithm (scratch made
/// and freed inside the graph), both traversals.
#[test]
fn cuda_replayed_frames_launch_nothing_from_the_host_and_render_the_same_bits() {
    use reap::compaction::{Algorithm, Fusion};
    use reap::replay::{FramePath, Graphs};
    use reap::trace::{Engine, render};
    let (w, h) = (64, 48);
    let Some(mut graphs) = cornell_on_the_gpu(w, h, 7, 6) else { return };
    let mut streamed = cornell_on_the_gpu(w, h, 7, 6).expect("a second engine");
    streamed.set_graphs(Graphs::Off);
    let runs = [
        (Algorithm::Lookback, Fusion::Auto),
        (Algorithm::Atomic, Fusion::Off),
        (Algorithm::Horn, Fusion::Auto),
        (Algorithm::Chained, Fusion::Auto),
    ];
    for (alg, fusion) in runs {
        for traversal in Traversal::ALL {
            let c = Compaction::With(alg);
            let s = RenderSettings {
                traversal,
                compact_paths: c,
                compact_frontier: c,
                fusion,
                ..settings_for(w, h, 2, 6, 7)
            };
            let what = format!("{} {} {}", alg.name(), fusion.name(), traversal.name());
            graphs.reset().unwrap();
            streamed.reset().unwrap();
            let first = render(&mut graphs, &s, |_| {}).unwrap_or_else(|e| panic!("{what}: {e}"));
            let paths: Vec<_> = first.iter().map(|f| f.graph).collect();
            assert_eq!(paths, [Some(FramePath::Streamed), Some(FramePath::Captured)], "{what}");
            let (events, counts) = (graphs.host_events(), graphs.graph_counts());
            let rest = RenderSettings { spp: 3, first_sample: 2, ..s.clone() };
            let replayed = render(&mut graphs, &rest, |_| {}).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(replayed.iter().all(|f| f.graph == Some(FramePath::Replayed)), "{what}: {replayed:?}");
            assert_eq!(graphs.host_events(), events, "{what}: a replayed frame enqueued stages from the host");
            assert_eq!(graphs.graph_counts().replayed, counts.replayed + 3, "{what}");
            for f in &replayed {
                assert_eq!(f.stages.len(), first[1].stages.len(), "{what}: the replay times every stage");
                assert!(f.frame_ms > 0.0 && f.stages.iter().all(|(_, t)| *t >= 0.0), "{what}: {:?}", f.stages);
                assert_eq!(f.queue[0], (w * h) as u64, "{what}: the counts come from the replay's words");
            }
            // The same five samples, every frame streamed.
            let all = render(&mut streamed, &RenderSettings { spp: 5, ..s.clone() }, |_| {}).unwrap();
            assert!(all.iter().all(|f| f.graph == Some(FramePath::Streamed)), "{what}");
            assert!(graphs.image().unwrap() == streamed.image().unwrap(), "{what}: replayed frames render other bits");
            assert_eq!(replayed.last().unwrap().alive, all.last().unwrap().alive, "{what}");
        }
    }
    // A moved camera is another configuration: streamed, then recorded again.
    let s = settings_for(w, h, 1, 6, 7);
    let (_, camera) = cornell(w, h);
    graphs.set_camera(CameraLayout { origin: [camera.origin[0] + 0.01, camera.origin[1], camera.origin[2]], ..camera });
    let f = render(&mut graphs, &s, |_| {}).unwrap();
    assert_eq!(f[0].graph, Some(FramePath::Streamed), "a moved camera replayed the old camera's frame");
}

/// The 8-wide BVH on the GPU (tests/common/wide.rs): both traversals over it
/// find the binary BVH's hits and render its image, bit for bit, with fused
/// and separate sites; and the GPU's hit keys are the CPU's.
#[test]
fn cuda_wide_bvh_finds_the_binary_hits_and_the_cpus() {
    use reap::trace::cpu::CpuEngine;
    if gpu().is_none() {
        return;
    }
    let make = |spec: &str, w, h, bounces| {
        let (packed, camera) = super::wide::packed(spec, w, h);
        let setup = EngineSetup { packed: &packed, camera, width: w, height: h, seed: 3, max_bounces: bounces };
        CudaEngine::new(gpu().expect("the GPU"), setup).expect("engine")
    };
    // Not `none`: its wide frontier keeps 8 slots an item per level, past any --max-frontier on sphereflake.
    let algorithms = ["lookback", "chained", "blelloch"];
    let on_gpu = super::wide::wide_finds_the_binary_hits(make, |e| e.hits().expect("hits"), &algorithms);
    let cpu = |spec: &str, w, h, bounces| {
        let (packed, camera) = super::wide::packed(spec, w, h);
        CpuEngine::new(reap::compaction::CpuBackend::new(), packed, camera, w, h, 3, bounces)
    };
    let on_cpu = super::wide::wide_finds_the_binary_hits(cpu, CpuEngine::hits, &["lookback"]);
    // The triangle test rounds alike on both, but the second rays' directions come from shading, where the
    // GPU fuses multiply-adds: a ray turned by an ulp may meet another triangle. Most keys must agree.
    for (scene, (g, c)) in on_gpu.iter().zip(&on_cpu).enumerate() {
        let same = g.iter().zip(c).filter(|(a, b)| a == b).count();
        println!("scene {scene}: {same} of {} second-bounce hit keys agree between the GPU and the CPU", g.len());
        assert!(same * 3 >= g.len() * 2, "scene {scene}: only {same} of {} hit keys agree", g.len());
    }
}
