//! The collision demo (issue 7): the GPU engine against brute force, the
//! CPU engine, and itself under every compaction choice and both sorts. The
//! kernels are compiled without FMA contraction, so results are compared bit
//! for bit, several frames included.

#[path = "../common/collide_brute.rs"]
mod collide_brute;
#[path = "../common/collide_frame.rs"]
mod collide_frame;
#[path = "../common/collide_redo.rs"]
mod collide_redo;

use super::gpu;
use collide_brute::brute_force;
use collide_frame::{Outcome, bits, first_difference, one_frame};
use reap::collide::cpu::CpuCollide;
use reap::collide::cuda::CudaCollide;
use reap::collide::layout::{Body, World};
use reap::collide::scenario::{self, Scenario};
use reap::collide::{CollideSettings, Compaction, Engine, Frontier, SortMethod, frame};
use reap::compaction::Algorithm;
use reap::compaction::cuda::CudaBackend;

/// `none` quadruples the frontier every level: room for a small tree's depth.
const MAX_FRONTIER: u64 = 1 << 28;

fn settings(compact_pairs: Compaction, sort: SortMethod) -> CollideSettings {
    collide_frame::settings(compact_pairs, sort, MAX_FRONTIER)
}

fn lookback() -> CollideSettings {
    settings(Compaction::With(Algorithm::Lookback), SortMethod::Fast)
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
        "{name}: contacts differ from {want_name}: {}",
        first_difference(&got.contacts, &want.contacts)
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
                assert_eq!(found, brute_force(e.world(), &before), "{} n={n} frame {i}", sc.name());
            }
            b = e.into_backend();
        }
    }
    let (mut e, _, state) = settled(b, 1000, 60);
    let got = one_frame(&mut e, &lookback(), &state);
    let want = brute_force(e.world(), &state);
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
        // Fused into the expansion where the algorithm fuses, and as a separate pass.
        for fusion in reap::compaction::Fusion::ALL {
            let s = CollideSettings {
                fusion,
                order: Default::default(),
                ..settings(Compaction::parse(c, e.backend(), "compact-pairs").unwrap(), SortMethod::Fast)
            };
            let got = one_frame(&mut e, &s, &state);
            let what = format!("compaction {c} ({fusion:?})");
            assert_same(&what, &got, &reference, "lookback");
            assert_eq!(got.stats.live, reference.stats.live, "{what}: live pairs per level");
            if *c != "none" {
                assert_eq!(got.stats.frontier, reference.stats.frontier, "{what}: frontier sizes");
                assert!(got.stats.pairs_site.is_some(), "{what}: the site's path is reported");
            }
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
/// Every frame after the first warm starts from the last one's contacts
/// (the GPU finds them through its hash table, the CPU by binary search), so
/// the contacts' impulses after the passes are compared too; halfway, both
/// candidate lists shrink to one slot, and the redone frame must warm start
/// from the frame before it as the CPU does.
#[test]
fn cuda_collide_simulates_bit_identical_to_the_cpu() {
    let Some(mut b) = gpu() else { return };
    // Every scenario with its split impulse, and two with soft contacts (solve and relax passes).
    let soft = [Scenario::Pile, Scenario::Drum].map(|sc| (sc, reap::collide::physics::SOFT_HERTZ));
    for (sc, hertz) in Scenario::ALL.map(|sc| (sc, 0.0)).into_iter().chain(soft) {
        let (mut world, bodies) = scenario::build(sc, 1500, 5).expect("scenario");
        world.contact_hertz = hertz;
        let mut g = CudaCollide::new(b, world, &bodies).expect("engine");
        let mut c = CpuCollide::new(world, &bodies).expect("cpu engine");
        let s = lookback();
        let (mut fg, mut fc) = (Frontier::new(&g).unwrap(), Frontier::new(&c).unwrap());
        let mut contacts = 0;
        for i in 0..60 {
            if i == 30 {
                g.set_candidate_capacity(1).expect("a small list");
                c.set_candidate_capacity(1).expect("a small list");
            }
            let sg = frame(&mut g, &s, &mut fg, i).expect("gpu frame");
            let sc_ = frame(&mut c, &s, &mut fc, i).expect("cpu frame");
            let name = format!("{} ({} Hz) frame {i}", sc.name(), hertz);
            assert_eq!((sg.candidates, sg.contacts), (sc_.candidates, sc_.contacts), "{name}");
            // One candidate slot holds two contacts: more of either redoes the frame.
            if i == 30 && (sg.candidates > 1 || sg.contacts > 2) {
                assert!(fg.attempts() > 1, "{name}: a list of one slot did not redo the frame");
            }
            let (bg, bc) = (g.bodies().unwrap(), c.bodies().unwrap());
            assert!(bits(&bg) == bits(&bc), "{name}: {}", first_difference(&bg, &bc));
            let (cg, cc) = (g.contact_list().unwrap(), c.contact_list().unwrap());
            assert!(bits(&cg) == bits(&cc), "{name}: the contacts' impulses differ");
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
    use reap::cuda_runtime::SyncMark;
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
    let sorts = [SortMethod::Fast, SortMethod::Split(Algorithm::Lookback), SortMethod::Split(Algorithm::Horn)];
    for (key, sort) in sorts.into_iter().enumerate() {
        // A key of its own per sort: each frame is seen once, so it is streamed (no graph replays another sort).
        e.begin_frame(&mut words, 4, key as u64).unwrap();
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
        assert!(*tree == want, "sort {name} on the GPU builds another hierarchy than the CPU");
    }
    let n = bodies.len();
    let mut leaves: Vec<u32> = want[n - 1..].iter().map(|l| l.left).collect();
    leaves.sort_unstable();
    assert_eq!(leaves, (0..n as u32).collect::<Vec<_>>(), "the leaves are not a permutation of the bodies");
}

/// Collide frames recorded as CUDA graphs replay to the bits streamed frames
/// give, frame after frame (the warm start's count and its two contact lists
/// reach the replays through device words and alternating graphs); a
/// replayed frame runs no stage on the host.
#[test]
fn cuda_collide_replayed_frames_match_streamed_ones() {
    use reap::replay::{FramePath, Graphs};
    let Some(b) = gpu() else { return };
    let (mut graphs, world, state) = settled(b, 3000, 40);
    let mut streamed = CudaCollide::new(CudaBackend::new(0).expect("backend"), world, &state).expect("engine");
    streamed.set_graphs(Graphs::Off);
    let configs = [
        lookback(),
        CollideSettings { fusion: reap::compaction::Fusion::Off, ..lookback() },
        settings(Compaction::With(Algorithm::Atomic), SortMethod::Split(Algorithm::Lookback)),
        settings(Compaction::With(Algorithm::Horn), SortMethod::Fast),
    ];
    for s in configs {
        let what = format!("{} {} {:?}", s.compact_pairs.name(), s.sort.name(), s.fusion);
        graphs.set_bodies(&state).expect("set_bodies");
        streamed.set_bodies(&state).expect("set_bodies");
        let (mut fg, mut fs) = (Frontier::new(&graphs).expect("frontier"), Frontier::new(&streamed).expect("frontier"));
        let (mut replayed, mut paths) = (0, Vec::new());
        // A settling pile's walk deepens now and then, and a new level bound records new graphs.
        for i in 0..40 {
            let events = graphs.host_events();
            let a = frame(&mut graphs, &s, &mut fg, i).unwrap_or_else(|e| panic!("{what}: {e}"));
            let b = frame(&mut streamed, &s, &mut fs, i).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(b.graph, Some(FramePath::Streamed), "{what}");
            assert_eq!((a.candidates, a.contacts), (b.candidates, b.contacts), "{what}: frame {i}");
            paths.push((a.graph.map(|p| p.name()), fg.attempts(), fg.bound(), fg.capacity()));
            if a.graph == Some(FramePath::Replayed) && fg.attempts() == 1 {
                replayed += 1;
                assert_eq!(graphs.host_events(), events, "{what}: a replayed frame enqueued stages from the host");
                assert!(a.frame_ms > 0.0 && !a.stages.is_empty(), "{what}: the replay keeps its stage times");
            }
        }
        assert!(replayed >= 24, "{what}: {replayed} of 40 frames replayed: {paths:?}");
        let (ga, sa) = (graphs.bodies().unwrap(), streamed.bodies().unwrap());
        assert!(bits(&ga) == bits(&sa), "{what}: {}", first_difference(&ga, &sa));
    }
}

/// The split collider over every GPU here (issue 49): each scenario, and
/// soft contacts, stepped 100 frames by one GPU and by the split from the
/// same start, compared bit for bit after every frame (bodies, contacts
/// with their impulses, candidates, the frame's counts). The split's
/// ownership, halo, ghosts and exchanges must leave no trace: the first 50
/// frames exchange the solver's values peer to peer (where the GPUs reach
/// each other's memory), the last 50 through NCCL.
/// REAP_REQUIRE_GPUS=N fails when fewer than N GPUs are here.
#[test]
fn cuda_split_collider_equals_one_gpu() {
    use reap::collide::Simulation;
    use reap::collide::split::GhostExchange;
    use reap::collide::split::cuda::CudaSplit;
    let Some(mut b) = gpu() else { return };
    let count = reap::cuda_runtime::device_count().expect("a GPU opened");
    if let Some(need) = std::env::var("REAP_REQUIRE_GPUS").ok().and_then(|v| v.parse::<usize>().ok()) {
        assert!(count >= need, "REAP_REQUIRE_GPUS={need} but {count} GPUs are here");
    }
    if count < 2 {
        super::skip(format!("SKIPPED the split collider over GPUs: {count} GPU here (it takes 2 or more)"));
        return;
    }
    let soft = [Scenario::Pile, Scenario::Drum].map(|sc| (sc, reap::collide::physics::SOFT_HERTZ));
    for (sc, hertz) in Scenario::ALL.map(|sc| (sc, 0.0)).into_iter().chain(soft) {
        let (mut world, bodies) = scenario::build(sc, 3000, 7).expect("scenario");
        world.contact_hertz = hertz;
        let mut one = CudaCollide::new(b, world, &bodies).expect("engine");
        let ranks = (0..count).map(|i| CudaBackend::new(i).expect("a GPU")).collect();
        let mut split = CudaSplit::new(world, &bodies, ranks).expect("split");
        let s = lookback();
        let mut f = Frontier::new(&one).unwrap();
        let (mut ghosts, mut migrated, mut exchanges) = (0, 0, 0);
        // Peer where the GPUs reach each other's memory, else NCCL.
        let first_path = split.ghost_exchange().name();
        for i in 0..100 {
            if i == 50 {
                split.set_ghost_exchange(GhostExchange::Nccl).expect("NCCL exchanges");
            }
            let path = split.ghost_exchange().name();
            let a = frame(&mut one, &s, &mut f, i).expect("one GPU's frame");
            let z = split.step(&s, i).expect("the split's frame");
            let name = format!("{} ({} Hz) over {count} GPUs, {path} exchanges, frame {i}", sc.name(), hertz);
            assert_eq!((z.candidates, z.contacts), (a.candidates, a.contacts), "{name}: counts");
            let (bo, bs) = (one.bodies().unwrap(), split.bodies().unwrap());
            assert!(bits(&bo) == bits(&bs), "{name}: {}", first_difference(&bo, &bs));
            let (co, cs) = (one.contact_list().unwrap(), split.contact_list().unwrap());
            assert!(bits(&co) == bits(&cs), "{name}: contacts: {}", first_difference(&co, &cs));
            assert_eq!(one.candidate_pairs().unwrap(), split.candidate_pairs().unwrap(), "{name}: candidates");
            let st = split.split_stats();
            ghosts += st.ghosts.iter().sum::<u64>();
            migrated += st.migrated;
            exchanges += st.exchanges;
        }
        assert!(ghosts > 0 && exchanges > 0, "{}: the split held no ghost or made no exchange", sc.name());
        println!(
            "{} ({hertz} Hz): {ghosts} ghosts, {migrated} migrated, {exchanges} exchanges over 100 frames (the \
             first 50 {})",
            sc.name(),
            first_path
        );
        b = one.into_backend();
    }
}
