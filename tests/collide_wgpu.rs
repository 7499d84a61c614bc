//! The collision demo on wgpu (issue 30): every collide shader validates with
//! naga (no adapter needed); on whatever adapter wgpu finds (lavapipe in CI)
//! the engine finds the brute-force candidates and the CPU engine's contacts,
//! moves the bodies as the CPU does, and gives one result under every sort
//! and every pair-frontier compaction. A missing adapter skips with the
//! reason; REAP_REQUIRE_WGPU=1 turns that into a failure.
#![cfg(feature = "wgpu")]

#[allow(dead_code)] // not every file uses every helper
#[path = "common/wgpu.rs"]
mod adapter;
use adapter::{skip, wgpu};
use reap::collide::wgpu::shader_sources;
use reap::wgpu_runtime::pipelines::validate;

/// What wgpu would refuse at pipeline creation fails here, with no adapter.
#[test]
fn every_collide_shader_validates_with_naga() {
    let sources = shader_sources();
    assert!(sources.len() >= 2, "the collide module and the fast sort");
    let failures: Vec<String> = sources.iter().filter_map(|(name, text)| validate(name, text, false).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[path = "common/collide_brute.rs"]
mod collide_brute;
#[path = "common/collide_frame.rs"]
mod collide_frame;
#[path = "common/collide_redo.rs"]
mod collide_redo;

use collide_brute::brute_force;
use collide_frame::{Outcome, bits, first_difference, one_frame};
use reap::collide::cpu::CpuCollide;
use reap::collide::layout::{Body, Contact, Node, World};
use reap::collide::scenario::{self, Scenario};
use reap::collide::wgpu::{CollideTuning, WgpuCollide};
use reap::collide::{CollideSettings, Compaction, Engine, Frontier, Fusion, SitePath, SortMethod, frame};
use reap::compaction::Algorithm;
use reap::compaction::wgpu::{AdapterChoice, WgpuBackend};

/// `none` quadruples the frontier every level: room for a small tree's depth.
const MAX_FRONTIER: u64 = 1 << 24;

fn settings(compact_pairs: Compaction, sort: SortMethod) -> CollideSettings {
    collide_frame::settings(compact_pairs, sort, MAX_FRONTIER)
}

fn lookback() -> CollideSettings {
    settings(Compaction::With(Algorithm::Lookback), SortMethod::Fast)
}

/// A state with many contacts: a pile that has fallen for a while (run on
/// the CPU, which is faster than lavapipe and the reference anyway).
fn settled(n: u32, frames: u32) -> (World, Vec<Body>) {
    let (world, bodies) = scenario::build(Scenario::Pile, n, 3).expect("scenario");
    let mut e = CpuCollide::new(world, &bodies).expect("engine");
    let s = lookback();
    let mut f = Frontier::new(&e).expect("frontier");
    for i in 0..frames {
        frame(&mut e, &s, &mut f, i).expect("frame");
    }
    (world, e.bodies().expect("bodies"))
}

/// One wgpu frame against another (a different sort or compaction): the
/// solver's sums are fixed point, so the order in which contacts and
/// candidates were appended changes nothing, and everything matches bit for bit.
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
    assert_eq!((got.stats.candidates, got.stats.contacts), (want.stats.candidates, want.stats.contacts), "{name}");
    assert!(
        bits(&got.after) == bits(&want.after),
        "{name} vs {want_name}: {}",
        first_difference(&got.after, &want.after)
    );
}

/// How far the narrow phase and the solver may round from the CPU with the
/// guards off (`CollideTuning::exact` false): WGSL cannot forbid FMA
/// contraction, so a product fused into an add rounds once where the CPU
/// rounds twice. On lavapipe one frame then stays within a few ULP and 40
/// frames within 1e-5 (positions) and 3e-5 (velocities); the bounds leave a
/// margin of ten. With the guards on (the default) lavapipe matches the CPU
/// bit for bit, and the tests require it.
const CONTACT_TOLERANCE: f32 = 1e-4;
const POSITION_TOLERANCE: f32 = 1e-4;
const VELOCITY_TOLERANCE: f32 = 3e-4;

/// Whether the adapter is lavapipe, whose division and square root round
/// correctly: there the guarded shaders must match the CPU bit for bit.
/// Elsewhere (Vulkan lets division and sqrt err by a few ULP) the stated
/// tolerance applies.
fn rounds_like_the_cpu(b: &WgpuBackend) -> bool {
    b.name().contains("llvmpipe")
}

/// The same hierarchy: bit for bit where the adapter rounds like the CPU;
/// elsewhere the same children and leaves, with every box within `tol` (a
/// leaf's box is grown by the body's reach, a sqrt of its speed, which an
/// adapter's compiler may round otherwise).
fn assert_same_tree(name: &str, got: &[Node], want: &[Node], exact: bool, tol: f32) {
    if exact {
        assert!(got == want, "{name}: the hierarchy differs from the CPU's");
        return;
    }
    assert_eq!(got.len(), want.len(), "{name}: node count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!((g.left, g.right), (w.left, w.right), "{name}: node {i} has other children");
        let worst = (0..3).map(|k| (g.min[k] - w.min[k]).abs().max((g.max[k] - w.max[k]).abs())).fold(0.0, f32::max);
        assert!(worst <= tol, "{name}: node {i}'s box is {worst:e} from the CPU's: {g:?} {w:?}");
    }
}

/// The same contacts (pairs, slots, counts) with every float within `tol`.
fn assert_close_contacts(name: &str, got: &[Contact], want: &[Contact], tol: f32) {
    assert_eq!(got.len(), want.len(), "{name}: contact count");
    for (g, w) in got.iter().zip(want) {
        assert_eq!((g.a, g.b, g.slot), (w.a, w.b, w.slot), "{name}: other contacts");
        let (gf, wf): (&[f32], &[f32]) = (
            bytemuck::cast_slice(&bits(std::slice::from_ref(g))[2..15]),
            bytemuck::cast_slice(&bits(std::slice::from_ref(w))[2..15]),
        );
        let worst = gf.iter().zip(wf).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        assert!(worst <= tol, "{name}: contact {g:?} is {worst:e} from the CPU's {w:?}");
    }
}

/// The largest difference of positions and of velocities.
fn drift(a: &[Body], b: &[Body]) -> (f32, f32) {
    let most = |f: fn(&Body) -> [f32; 3]| {
        a.iter().zip(b).flat_map(|(x, y)| (0..3).map(move |k| (f(x)[k] - f(y)[k]).abs())).fold(0.0f32, f32::max)
    };
    (most(|b| b.pos), most(|b| b.vel))
}

/// The wgpu engine's broad phase finds exactly the brute-force pairs, and
/// one frame from a settled pile finds the CPU engine's candidates, tree and
/// live pairs per level, and its contacts and motion bit for bit (within the
/// stated tolerance where division and sqrt round otherwise).
#[test]
fn wgpu_collide_matches_brute_force_and_the_cpu_engine() {
    let Some(mut b) = wgpu() else { return };
    for sc in Scenario::ALL {
        for n in [1, 2, 3, 60] {
            let (world, bodies) = scenario::build(sc, n, 11).expect("scenario");
            let mut e = WgpuCollide::new(b, world, &bodies).expect("engine");
            let s = lookback();
            let mut f = Frontier::new(&e).expect("frontier");
            for i in 0..6 {
                let before = e.bodies().expect("bodies");
                frame(&mut e, &s, &mut f, i).unwrap_or_else(|err| panic!("{} n={n} frame {i}: {err}", sc.name()));
                let found = e.candidate_pairs().expect("candidates");
                assert_eq!(found, brute_force(e.world(), &before), "{} n={n} frame {i}", sc.name());
            }
            b = e.into_backend();
        }
    }
    let (world, state) = settled(300, 60);
    let exact = rounds_like_the_cpu(&b);
    let mut e = WgpuCollide::new(b, world, &state).expect("engine");
    let mut cpu = CpuCollide::new(world, &state).expect("cpu engine");
    for s in [lookback(), settings(Compaction::With(Algorithm::Atomic), SortMethod::Split(Algorithm::Lookback))] {
        let name = format!("wgpu {} {}", s.compact_pairs.name(), s.sort.name());
        let got = one_frame(&mut e, &s, &state);
        let want = one_frame(&mut cpu, &lookback(), &state);
        assert!(want.stats.contacts > 0, "the settled pile has no contact");
        assert_eq!(got.candidates, brute_force(&world, &state), "{name}: the settled pile");
        assert_eq!(got.candidates, want.candidates, "{name}: candidates differ from the CPU's");
        assert_same_tree(&name, &got.nodes, &want.nodes, exact, 1e-4);
        assert_eq!((got.stats.candidates, got.stats.contacts), (want.stats.candidates, want.stats.contacts), "{name}");
        assert_eq!(got.stats.live, want.stats.live, "{name}: live pairs per level");
        if exact {
            assert_same(&name, &got, &want, "the CPU");
        } else {
            assert_close_contacts(&name, &got.contacts, &want.contacts, CONTACT_TOLERANCE);
            let (dp, dv) = drift(&got.after, &want.after);
            assert!(dp <= POSITION_TOLERANCE && dv <= VELOCITY_TOLERANCE, "{name}: bodies {dp:e} / {dv:e} away");
        }
        assert!(got.stats.frame_ms > 0.0 && !got.stats.stages.is_empty(), "{name}: the stages were not timed");
    }
}

/// Frame after frame beside the CPU engine, every scenario: the candidates
/// are the brute-force pairs of the wgpu engine's own bodies and the counts
/// are the CPU's; where the guarded shaders round as the CPU does
/// (lavapipe), the bodies and the contacts (impulses included) are the CPU's
/// bit for bit over 40 frames, warm starting from the second frame with
/// contacts on; halfway both candidate lists shrink to one slot, and the
/// redone frame must warm start from the frame before it. Rounded otherwise
/// (the guards off, or another adapter's division and sqrt), each frame
/// starts from the CPU's bodies without restitution and ends within the
/// tolerance: the speculative contacts' thresholds turn a last-bit
/// difference into a different trajectory within a few frames.
#[test]
fn wgpu_collide_tracks_the_cpu_engine() {
    let Some(mut b) = wgpu() else { return };
    for exact in [true, false] {
        let bitwise = exact && rounds_like_the_cpu(&b);
        // Every scenario with its split impulse, and two with soft contacts (solve and relax passes).
        let soft = [Scenario::Pile, Scenario::Drum].map(|sc| (sc, reap::collide::physics::SOFT_HERTZ));
        for (sc, hertz) in Scenario::ALL.map(|sc| (sc, 0.0)).into_iter().chain(soft) {
            let (mut world, bodies) = scenario::build(sc, 300, 5).expect("scenario");
            world.contact_hertz = hertz;
            if !bitwise {
                // A contact that a substep closes has a depth of zero give or take the rounding,
                // and its sign picks the next substep's target: the bounce, or none (solver.rs
                // `contact_impulse`). Rounded otherwise, a fast contact bounces on one side only.
                world.restitution = 0.0;
            }
            let tuning = CollideTuning { exact, ..Default::default() };
            let mut g = WgpuCollide::with_tuning(b, world, &bodies, tuning).expect("engine");
            let mut c = CpuCollide::new(world, &bodies).expect("cpu engine");
            let s = lookback();
            let (mut fg, mut fc) = (Frontier::new(&g).expect("frontier"), Frontier::new(&c).expect("frontier"));
            let mut contacts = 0;
            for i in 0..40 {
                if i == 20 {
                    g.set_candidate_capacity(1).expect("a small list");
                    c.set_candidate_capacity(1).expect("a small list");
                }
                if !bitwise {
                    // Each frame from the CPU's bodies (neither engine warm starts then): frame
                    // after frame, the contacts' speculative thresholds part the two trajectories.
                    let state = c.bodies().expect("bodies");
                    g.set_bodies(&state).expect("set_bodies");
                    c.set_bodies(&state).expect("set_bodies");
                }
                let before = g.bodies().expect("bodies");
                let sg = frame(&mut g, &s, &mut fg, i).unwrap_or_else(|e| panic!("{} frame {i}: {e}", sc.name()));
                let sc_ = frame(&mut c, &s, &mut fc, i).expect("cpu frame");
                let name = format!("{} ({} Hz) frame {i} (exact {exact})", sc.name(), hertz);
                assert_eq!(g.candidate_pairs().expect("candidates"), brute_force(g.world(), &before), "{name}");
                assert_eq!((sg.candidates, sg.contacts), (sc_.candidates, sc_.contacts), "{name}");
                if i == 20 && (sg.candidates > 1 || sg.contacts > 2) {
                    assert!(fg.attempts() > 1, "{name}: a list of one slot did not redo the frame");
                }
                let (bg, bc) = (g.bodies().expect("bodies"), c.bodies().expect("bodies"));
                if bitwise {
                    assert!(bits(&bg) == bits(&bc), "{name}: {}", first_difference(&bg, &bc));
                    let (cg, cc) = (g.contact_list().expect("contacts"), c.contact_list().expect("contacts"));
                    assert!(bits(&cg) == bits(&cc), "{name}: the contacts' impulses differ");
                }
                let (dp, dv) = drift(&bg, &bc);
                assert!(dp <= POSITION_TOLERANCE && dv <= VELOCITY_TOLERANCE, "{name}: bodies {dp:e} / {dv:e} away");
                contacts += sg.contacts;
            }
            assert!(contacts > 0, "{}: 40 frames without a contact test nothing", sc.name());
            b = g.into_backend();
        }
    }
}

/// A stable fused site whose predecessor never publishes (every second tile
/// withheld) gives up waiting instead of hanging: the driver redoes the
/// frame through the separate pass, the engine keeps that site off from
/// then on, and the frame's result is the separate pass's, bit for bit.
#[test]
fn wgpu_collide_a_stalled_stable_site_redoes_the_frame_separately() {
    let Some(mut b) = wgpu() else { return };
    let (world, state) = settled(120, 60);
    let reference = {
        let mut e = WgpuCollide::new(b, world, &state).expect("engine");
        let r = one_frame(&mut e, &CollideSettings { fusion: Fusion::Off, ..lookback() }, &state);
        b = e.into_backend();
        r
    };
    for a in [Algorithm::Lookback, Algorithm::Chained] {
        // Small tiles, so that a level of this small pile spans several (the swept boxes of its
        // resting bodies barely reach past them, so its levels are narrow).
        let tuning = CollideTuning { site_withhold: 2, workgroup: 32, ..Default::default() };
        let mut e = WgpuCollide::with_tuning(b, world, &state, tuning).expect("engine");
        assert!(e.fuses(a), "{a} fuses before any stall");
        let got = one_frame(&mut e, &settings(Compaction::With(a), SortMethod::Fast), &state);
        assert!(!e.fuses(a), "{a}: a stall turns the stable site off");
        assert_eq!(got.stats.pairs_site, Some(SitePath::Separate), "{a}: the redone frame ran separately");
        assert_same(&format!("{a} stalled"), &got, &reference, "lookback separate");
        b = e.into_backend();
    }
}

/// Every pair-frontier compaction (and `none`) and every sort give one
/// result bit for bit: candidates, tree, contacts with their impulses, the
/// bodies after the frame, the live pairs and the frontier per level. The
/// append orders differ between them; the fixed-point sums do not see it.
#[test]
fn wgpu_collide_is_the_same_under_every_compaction_and_sort() {
    let Some(b) = wgpu() else { return };
    let choices: Vec<String> = Compaction::choices(&b).iter().map(|c| c.to_string()).collect();
    let sorts = SortMethod::choices(&b);
    assert!(choices.len() > 5 && sorts.len() > 5, "{choices:?} {sorts:?}");
    // Small, so that `none` (4^level slots) stays within MAX_FRONTIER.
    let (world, state) = settled(120, 60);
    let mut e = WgpuCollide::new(b, world, &state).expect("engine");
    let reference = one_frame(&mut e, &lookback(), &state);
    assert!(reference.stats.contacts > 0, "the settled pile has no contact");
    for c in &choices {
        let compaction = Compaction::parse(c, e.backend(), "compact-pairs").expect("a listed choice parses");
        let got = one_frame(&mut e, &settings(compaction, SortMethod::Fast), &state);
        let what = format!("compaction {c}");
        assert_same(&what, &got, &reference, "lookback");
        assert_eq!(got.stats.live, reference.stats.live, "{what}: live pairs per level");
        if c != "none" {
            assert_eq!(got.stats.frontier, reference.stats.frontier, "{what}: frontier sizes");
        }
    }
    // Every single-pass algorithm fuses into the pair walk on wgpu (compaction/site.wgsl): fused and
    // separate alike, and the stable ones' levels hold the separate select's pairs in its order.
    for a in [Algorithm::Lookback, Algorithm::Chained, Algorithm::Atomic] {
        // Fused unless a stable site stalled before (site.wgsl): checked per frame below.
        let fused = settings(Compaction::With(a), SortMethod::Fast);
        for fusion in reap::compaction::Fusion::ALL {
            let got = one_frame(&mut e, &CollideSettings { fusion, ..fused.clone() }, &state);
            let what = format!("{a}, fusion {}", fusion.name());
            // Unless the site stalled (site.wgsl) and the frame was redone separately.
            if e.fuses(a) {
                assert_eq!(got.stats.pairs_site.map(|p| p == SitePath::Fused), Some(fusion == Fusion::Auto), "{what}");
            }
            assert_same(&what, &got, &reference, "lookback");
            assert_eq!(got.stats.live, reference.stats.live, "{what}: live pairs per level");
            assert_eq!(got.stats.frontier, reference.stats.frontier, "{what}: frontier sizes");
        }
    }
    for sort in &sorts {
        let s = settings(Compaction::With(Algorithm::Lookback), SortMethod::parse(sort, e.backend()).expect("parses"));
        let got = one_frame(&mut e, &s, &state);
        assert_same(&format!("sort {sort}"), &got, &reference, "fast");
    }
}

/// The solver's sums with native 64-bit atomics (sums64.wgsl) and with two
/// u32 atomics each (sums32.wgsl): the same integers, so the same bits.
#[test]
fn wgpu_collide_is_the_same_with_and_without_64_bit_atomics() {
    let Some(b) = wgpu() else { return };
    if !b.device().int64_atomics {
        skip(format!("SKIPPED the 64-bit atomics comparison: {} has no 64-bit atomics or REAP_WGPU_INT64=0", b.name()));
        return;
    }
    let choice: AdapterChoice = std::env::var("REAP_WGPU_ADAPTER").unwrap_or_default().parse().expect("infallible");
    let no_int64 = reap::wgpu_runtime::Features { int64_atomics: false, ..Default::default() };
    let b32 = WgpuBackend::open(&choice, no_int64).expect("the same adapter without 64-bit atomics");
    assert!(!b32.device().int64_atomics, "64-bit atomics were turned off");
    let (world, state) = settled(200, 80);
    let mut e64 = WgpuCollide::new(b, world, &state).expect("engine");
    let mut e32 = WgpuCollide::new(b32, world, &state).expect("engine");
    let want = one_frame(&mut e32, &lookback(), &state);
    assert!(want.stats.contacts > 0, "the settled pile has no contact");
    let got = one_frame(&mut e64, &lookback(), &state);
    assert_same("64-bit atomics", &got, &want, "two u32 atomics");
}

/// tests/common/collide_redo.rs on wgpu: short frames are redone and find
/// what the normal frame finds; an overflow is refused without moving a body.
#[test]
fn wgpu_collide_redoes_short_frames_and_refuses_overflow() {
    let Some(b) = wgpu() else { return };
    let (world, state) = settled(300, 60);
    let mut e = WgpuCollide::new(b, world, &state).expect("engine");
    collide_redo::short_frames_are_redone_and_find_the_same(&mut e, &lookback(), &state);
    // Through the fused `atomic` site a level's total past the capacity is the overflow.
    let atomic = settings(Compaction::With(Algorithm::Atomic), SortMethod::Fast);
    collide_redo::short_frames_are_redone_and_find_the_same(&mut e, &atomic, &state);
    collide_redo::an_overflowing_frontier_is_refused_and_moves_no_body(&mut e, &state);
    let (world, state) = settled(100, 60);
    let mut e = WgpuCollide::new(e.into_backend(), world, &state).expect("engine");
    collide_redo::short_frames_are_redone_and_find_the_same(
        &mut e,
        &settings(Compaction::None, SortMethod::Fast),
        &state,
    );
}

/// The fast sort orders equal codes by body id, as the split sort does,
/// across tiles and with long runs of equal digits: every sort builds the
/// CPU's hierarchy.
#[test]
fn wgpu_fast_sort_equals_the_split_sort() {
    let Some(b) = wgpu() else { return };
    let (world, mut bodies) = scenario::build(Scenario::Gas, 3000, 2).expect("scenario");
    // Put the bodies on 37 points, so that most Morton codes repeat.
    for (i, body) in bodies.iter_mut().enumerate() {
        let k = (i * 7919 % 37) as f32;
        body.pos = [world.min[0] + 1.0 + k * 0.5, world.min[1] + 1.0 + (k * 0.3) % 2.0, world.min[2] + 1.0];
    }
    let exact = rounds_like_the_cpu(&b);
    let mut e = WgpuCollide::new(b, world, &bodies).expect("engine");
    let mut cpu = CpuCollide::new(world, &bodies).expect("cpu engine");
    let mut trees = Vec::new();
    // The build stages alone: a frame's words, none of them used.
    let (mut words, mut cpu_words) = (e.alloc::<u64>(4).unwrap(), vec![0u64; 4]);
    for sort in [SortMethod::Fast, SortMethod::Split(Algorithm::Lookback), SortMethod::Split(Algorithm::Horn)] {
        e.begin_frame(&mut words, 4, 0).unwrap();
        e.codes().unwrap();
        e.sort(sort).unwrap();
        e.build().unwrap();
        e.refit().unwrap();
        e.end_frame(&words).unwrap();
        trees.push((sort.name(), e.nodes().unwrap()));
    }
    cpu.begin_frame(&mut cpu_words, 4, 0).unwrap();
    cpu.codes().unwrap();
    cpu.sort(SortMethod::Fast).unwrap();
    cpu.build().unwrap();
    cpu.refit().unwrap();
    cpu.end_frame(&cpu_words).unwrap();
    let want = cpu.nodes().unwrap();
    for (name, tree) in &trees {
        assert_same_tree(&format!("sort {name} on wgpu"), tree, &want, exact, 1e-4);
    }
}

/// The solver's fixed-point conversions in WGSL (no i64 there) are Rust's
/// `as` casts bit for bit: f32 → i64 truncating and saturating (NaN to 0),
/// i64 → f32 rounding to nearest even, on edge cases and random values.
/// This is what makes the sums exact: whatever the float rounding around
/// them, every engine adds the same integers.
#[test]
fn wgpu_fixed_point_conversions_are_rusts_casts() {
    use reap::collide::physics::{from_fixed, to_fixed};
    use wgpu::util::DeviceExt;
    let Some(b) = wgpu() else { return };
    let mut floats: Vec<f32> = vec![0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-9, -1e-9, f32::NAN, f32::INFINITY];
    floats.extend([f32::NEG_INFINITY, 255.99, -255.99, 2f32.powi(7), 2f32.powi(8), -2f32.powi(8), 3e11, -3e11]);
    floats.extend([2f32.powi(39), -2f32.powi(39), 2f32.powi(39) * 0.999_999_9, -2f32.powi(39) * 0.999_999_9]);
    let mut ints: Vec<i64> = vec![0, 1, -1, i64::MAX, i64::MIN, i64::MIN + 1, (1 << 24) + 1, -(1 << 24) - 1];
    ints.extend([
        (1 << 25) + 1,
        (1 << 25) + 2,
        (1 << 25) + 3,
        (1 << 25) + 6,
        (1 << 40) + (1 << 16),
        -(1 << 40) - (1 << 16),
    ]);
    ints.extend([(1 << 40) + (1 << 16) + 1, u32::MAX as i64, -(u32::MAX as i64), 1 << 32, (1 << 32) - 1]);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..2000 {
        let r = next();
        floats.push(f32::from_bits(r as u32) * if r >> 40 & 1 == 0 { 1.0 } else { 1e-30 });
        ints.push((next() as i64) >> (next() % 63));
    }
    let n = floats.len().max(ints.len());
    floats.resize(n, 0.0);
    ints.resize(n, 0);
    let text = reap::collide::wgpu::COLLIDE.assemble(&reap::collide::wgpu::collide_prelude(true, false))
        + "
@compute @workgroup_size(64)
fn probe(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if (i >= arrayLength(&keys)) {
        return;
    }
    candidates[2u * i] = to_fixed(bitcast<f32>(keys[i]));
    let s = vec2<u32>(ids[2u * i], ids[2u * i + 1u]);
    candidates[2u * i + 1u] = vec2<u32>(bitcast<u32>(from_fixed(s)), 0u);
}";
    let dev = b.device();
    let module = dev.device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("fixed-point probe"),
        source: wgpu::ShaderSource::Wgsl(text.into()),
    });
    let p = dev.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("probe"),
        compilation_options: wgpu::PipelineCompilationOptions { constants: &[("WG", 64.0)], ..Default::default() },
        cache: None,
    });
    let upload = |bytes: &[u8]| {
        dev.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytes,
            usage: wgpu::BufferUsages::STORAGE,
        })
    };
    let (fb, ib) = (upload(bytemuck::cast_slice(&floats)), upload(bytemuck::cast_slice(&ints)));
    let out = b.raw_buffer("the probe's results", n as u64 * 16).expect("buffer");
    fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
        wgpu::BindGroupEntry { binding, resource: buffer.as_entire_binding() }
    }
    let bg = dev.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &p.get_bind_group_layout(0),
        entries: &[entry(2, &fb), entry(3, &ib), entry(9, &out)],
    });
    let mut enc = dev.device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(&p);
        pass.set_bind_group(0, &bg, &[]);
        pass.dispatch_workgroups((n as u32).div_ceil(64), 1, 1);
    }
    dev.queue.submit([enc.finish()]);
    let raw = dev.read(&out, 0, n as u64 * 16, "the probe's results").expect("read back");
    let got: &[u64] = bytemuck::cast_slice(&raw);
    for i in 0..n {
        assert_eq!(got[2 * i] as i64, to_fixed(floats[i]), "to_fixed({:e}) ({:#x})", floats[i], floats[i].to_bits());
        let (want, have) = (from_fixed(ints[i]), f32::from_bits(got[2 * i + 1] as u32));
        assert_eq!(have.to_bits(), want.to_bits(), "from_fixed({}): {have:e} vs {want:e}", ints[i]);
    }
}

/// Frame times of a falling pile on the adapter, by part of the frame (for
/// the H100 comparison with CUDA; not run by default): REAP_COLLIDE_BODIES
/// bodies (default 100 000), REAP_COLLIDE_FRAMES frames (default 20).
#[test]
#[ignore = "a timing run: cargo test ... -- --ignored wgpu_collide_pile_timing"]
fn wgpu_collide_pile_timing() {
    use reap::collide::Part;
    let Some(b) = wgpu() else { return };
    let var = |name: &str, default: u32| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let (n, frames) = (var("REAP_COLLIDE_BODIES", 100_000), var("REAP_COLLIDE_FRAMES", 20));
    let (world, bodies) = scenario::build(Scenario::Pile, n, 1).expect("scenario");
    let mut e = WgpuCollide::new(b, world, &bodies).expect("engine");
    let clock = e.clock_kind();
    let s = lookback();
    let mut f = Frontier::new(&e).expect("frontier");
    let mut rows = Vec::new();
    for i in 0..frames {
        let st = frame(&mut e, &s, &mut f, i).expect("frame");
        assert!(st.frame_ms > 0.0 && st.wall_ms > 0.0, "frame {i} was not timed");
        let parts: Vec<String> = Part::ALL.iter().map(|p| format!("{} {:.3}", p.name(), st.part_ms(*p))).collect();
        skip(format!(
            "frame {i}: {:.3} ms stages ({}), {:.3} ms wall, {} levels, {} candidates, {} contacts, {} attempts",
            st.frame_ms,
            parts.join(", "),
            st.wall_ms,
            st.live.len(),
            st.candidates,
            st.contacts,
            f.attempts()
        ));
        rows.push(st.frame_ms);
    }
    rows.sort_by(f64::total_cmp);
    skip(format!(
        "{n} bodies on {}: median frame {:.3} ms ({})",
        e.backend().name(),
        rows[rows.len() / 2],
        clock.name()
    ));
}
