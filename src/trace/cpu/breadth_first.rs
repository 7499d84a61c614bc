//! The CPU twins of the breadth-first kernels of `kernels/trace/wavefront.cu`
//! (`trace_bf_init`, `trace_bf_expand`), each a rayon loop over the same
//! buffers in the same order calling the per-item function of the same name
//! in `shading.rs`; and the tests of breadth-first traversal and of the
//! frontier's level bound, growth and guard on the CPU engine.

use rayon::prelude::*;

use super::{CpuEngine, check_words, too_short};
use crate::compaction::cpu::site::{Candidates, CpuSite};
use crate::compaction::{CpuBackend, Element, Report};
use crate::frontier::{Step, host};
use crate::trace::shading::{trace_bf_expand, trace_bf_init};
use crate::trace::wide::{TILE, trace_bf_wide_tile};
use crate::trace::{BvhKind, DEAD64, FrontierRun, TraceResult};

impl CpuEngine {
    /// `trace_bf_init`: [`Engine::frontier_init`](crate::trace::Engine::frontier_init).
    pub(super) fn bf_init(&mut self, step: Step<'_, CpuBackend, u32>, run: FrontierRun) -> TraceResult<()> {
        check_step(&step, run)?;
        let (Step { at, input: queue, output: frontier, words }, FrontierRun { capacity, shadow, fuse, .. }) =
            (step, run);
        let n = host::n(words, at).min(queue.len() as u64);
        if let Some(alg) = fuse {
            // The fused site (twin of site.cuh): only the live items, compacted.
            let (s, p) = (&self.scene, &self.paths);
            let init = |i: u64, emit: &mut crate::compaction::cpu::site::Emit<'_, u64>| {
                let item = trace_bf_init(s, p, queue[i as usize], shadow);
                if item != DEAD64 {
                    emit.push(item);
                }
            };
            let site = CpuSite::new(&self.backend, alg, true)?;
            let cap = (capacity as usize).min(frontier.len());
            let report =
                site.produce(&self.backend, n, Candidates { per_item: 1, dead: DEAD64 }, &init, &mut frontier[..cap])?;
            host::close(words, at, report.count()?, capacity);
            return Ok(());
        }
        if !host::fits(words, at, n, 1, capacity) {
            return Ok(());
        }
        let (s, p) = (&self.scene, &self.paths);
        let live: u64 = frontier[..n as usize]
            .par_iter_mut()
            .zip(&queue[..n as usize])
            .map(|(item, &path)| {
                *item = trace_bf_init(s, p, path, shadow);
                (*item != DEAD64) as u64
            })
            .sum();
        host::count_live(words, at, live);
        Ok(())
    }

    /// `trace_bf_expand` and `trace_bf_expand_wide`: [`Engine::expand`](crate::trace::Engine::expand).
    pub(super) fn bf_expand(&mut self, step: Step<'_, CpuBackend>, run: FrontierRun) -> TraceResult<()> {
        check_step(&step, run)?;
        let (Step { at, input, output, words }, FrontierRun { capacity, shadow, descend, bvh, fuse, block_levels }) =
            (step, run);
        let fan = run.fan() as usize;
        let n = host::n(words, at).min(capacity).min(input.len() as u64);
        let (s, p) = (&self.scene, &self.paths);
        if bvh == BvhKind::Wide {
            crate::trace::wide::check_breadth_first(s.wide.nodes.len())?;
        }
        // The wide step runs per tile: each input item's `fan` slots are its
        // thread's share of the tile's emitted items (the kernel's layout).
        let wide_tiles = |slots: &mut [u64]| -> u64 {
            slots
                .par_chunks_mut(fan * TILE)
                .zip(input[..n as usize].par_chunks(TILE))
                .map(|(out, tile)| trace_bf_wide_tile(s, p, tile, shadow, block_levels, out) as u64)
                .sum()
        };
        if let Some(alg) = fuse {
            // The fused site: each item's live slots, in slot order, straight to their compacted places.
            let site = CpuSite::new(&self.backend, alg, true)?;
            let cap = (capacity as usize).min(output.len());
            let candidates = Candidates { per_item: fan, dead: DEAD64 };
            let report = match bvh {
                BvhKind::Binary => {
                    let produce = |i: u64, emit: &mut crate::compaction::cpu::site::Emit<'_, u64>| {
                        let mut slots = [DEAD64; MAX_FAN];
                        trace_bf_expand(s, p, input[i as usize], shadow, descend, &mut slots[..fan]);
                        slots[..fan].iter().filter(|&&x| x != DEAD64).for_each(|&x| emit.push(x));
                    };
                    site.produce(&self.backend, n, candidates, &produce, &mut output[..cap])?
                }
                BvhKind::Wide => {
                    let mut slots = vec![DEAD64; n as usize * fan];
                    wide_tiles(&mut slots);
                    let produce = |i: u64, emit: &mut crate::compaction::cpu::site::Emit<'_, u64>| {
                        let mine = &slots[i as usize * fan..(i as usize + 1) * fan];
                        mine.iter().filter(|&&x| x != DEAD64).for_each(|&x| emit.push(x));
                    };
                    site.produce(&self.backend, n, candidates, &produce, &mut output[..cap])?
                }
            };
            host::close(words, at, report.count()?, capacity);
            return Ok(());
        }
        if !host::fits(words, at, n, fan as u64, capacity) {
            return Ok(());
        }
        let slots = &mut output[..n as usize * fan];
        let live: u64 = match bvh {
            BvhKind::Binary => slots
                .par_chunks_mut(fan)
                .zip(&input[..n as usize])
                .map(|(slots, &item)| trace_bf_expand(s, p, item, shadow, descend, slots) as u64)
                .sum(),
            BvhKind::Wide => wide_tiles(slots),
        };
        host::count_live(words, at, live);
        Ok(())
    }
}

/// The most slots an expansion writes per item: a binary descent of
/// `MAX_DESCEND` levels (at least the wide BVH's eight).
const MAX_FAN: usize = 1 << crate::trace::MAX_DESCEND;
const _: () = assert!(MAX_FAN >= crate::bvh::wide::WIDTH);

/// What init and expand check before touching a frontier: every word the
/// step names exists, and its output holds the run's capacity.
fn check_step<I: Element>(step: &Step<'_, CpuBackend, I>, run: FrontierRun) -> TraceResult<()> {
    check_words(step.words, &step.at.words())?;
    if (step.output.len() as u64) < run.capacity {
        return Err(too_short("frontier", run.capacity as usize, step.output.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering::Relaxed;

    use super::super::tests::{Q, compaction, depth_first, engine, render_bits, settings, shading};
    use super::*;
    use crate::frontier::Expand;
    use crate::trace::{
        BlockLevels, Compaction, DEAD32, Engine, MAX_DESCEND, RenderSettings, TraceError, Traversal, frontier_guard,
        guard_frontier, render,
    };

    fn hits(e: &CpuEngine) -> Vec<u64> {
        e.paths.hit.iter().map(|h| h.load(Relaxed)).collect()
    }

    fn occluded(e: &CpuEngine) -> Vec<u32> {
        e.paths.occluded.iter().map(|o| o.load(Relaxed)).collect()
    }

    /// Breadth-first traversal of the queue's rays, `descend` BVH levels per
    /// expansion, dead items dropped between levels, until none is left.
    fn breadth_first(e: &mut CpuEngine, queue: &Vec<u32>, shadow: bool, descend: u32) {
        // Words: status, needed, the queue's length, then the output's and the input's length and live count.
        let mut words = vec![0, 0, queue.len() as u64, 0, 0, 0, 0];
        let at = |input| Expand {
            level: 0,
            input_len: input,
            input_live: input + 1,
            output_len: 3,
            output_live: 4,
            last: false,
        };
        let mut frontier = vec![DEAD64; queue.len()];
        let mut level0 = at(2);
        level0.input_live = 2;
        let run = FrontierRun {
            capacity: queue.len() as u64,
            shadow,
            descend,
            bvh: BvhKind::Binary,
            fuse: None,
            block_levels: 1,
        };
        let init = Step { at: level0, input: queue, output: &mut frontier, words: &mut words };
        e.frontier_init(init, run).expect("init");
        assert_eq!(words[3], queue.len() as u64);
        frontier.retain(|&item| item != DEAD64);
        assert_eq!(words[4], frontier.len() as u64, "init counts its live items");
        while !frontier.is_empty() {
            let capacity = frontier.len() << descend;
            (words[3], words[4], words[5], words[6]) = (0, 0, frontier.len() as u64, frontier.len() as u64);
            let mut out = vec![0; capacity];
            let step = Step { at: at(5), input: &frontier, output: &mut out, words: &mut words };
            e.expand(step, FrontierRun { capacity: capacity as u64, ..run }).expect("expand");
            assert_eq!((words[0], words[3]), (0, capacity as u64), "an expansion that fits");
            out.retain(|&item| item != DEAD64);
            assert_eq!(words[4], out.len() as u64, "expand counts its live items");
            frontier = out;
        }
    }

    /// Both traversals must find the same closest hit (and the same shadow
    /// occlusion) for every ray, bounce after bounce: the images can only be
    /// identical if they do.
    #[test]
    fn breadth_first_and_depth_first_find_the_same_hits() {
        let (w, h) = (48, 48);
        let (mut bf, mut df) = (engine("cornell", w, h, 5), engine("cornell", w, h, 5));
        let (mut q_bf, mut q_df) = (vec![0; (w * h) as usize], vec![0; (w * h) as usize]);
        let mut words = vec![0; 8];
        bf.camera(&mut q_bf, &mut words, Q).expect("camera");
        df.camera(&mut q_df, &mut words, Q).expect("camera");
        for bounce in 0..5 {
            // Every descent depth, bounce by bounce: all must find the depth-first hits.
            let descend = bounce % MAX_DESCEND + 1;
            breadth_first(&mut bf, &q_bf, false, descend);
            df.depth_first(&q_df, &words, depth_first(false)).expect("depth-first");
            let found = hits(&df);
            assert_eq!(hits(&bf), found, "closest hits differ at bounce {bounce}");
            let live = q_df.iter().filter(|&&p| p != DEAD32).count();
            let hit = q_df.iter().filter(|&&p| p != DEAD32 && found[p as usize] != DEAD64).count();
            assert!(hit * 2 > live, "bounce {bounce}: only {hit} of {live} rays hit the closed box");

            let (mut next_bf, mut next_df) = (vec![0; q_bf.len()], vec![0; q_df.len()]);
            bf.shade(&q_bf, &mut next_bf, &mut words, shading(bounce)).expect("shade");
            df.shade(&q_df, &mut next_df, &mut words, shading(bounce)).expect("shade");
            assert_eq!(next_bf, next_df, "the same hits must shade alike at bounce {bounce}");
            breadth_first(&mut bf, &q_bf, true, descend);
            df.depth_first(&q_df, &words, depth_first(true)).expect("shadow depth-first");
            // A path without a shadow ray keeps whatever it had; compare the ones that cast one.
            let casts = |e: &CpuEngine| {
                let o = occluded(e);
                q_df.iter()
                    .filter(|&&p| p != DEAD32 && e.paths.shadow_dir[p as usize].w > 0.0)
                    .map(|&p| (p, o[p as usize]))
                    .collect::<Vec<_>>()
            };
            assert_eq!(casts(&bf), casts(&df), "shadow rays' occlusion differs at bounce {bounce}");
            (q_bf, q_df) = (next_bf, next_df);
        }
    }

    /// However many BVH levels one expansion descends, the image and the
    /// per-bounce counts are those of depth-first traversal, bit for bit,
    /// with and without frontier compaction.
    #[test]
    fn every_descent_depth_renders_the_depth_first_image() {
        let base = settings(24, 24, 2, 6, Traversal::DepthFirst);
        let want = render_bits(&base);
        for descend in 1..=MAX_DESCEND {
            for c in [Compaction::None, compaction("lookback")] {
                let s =
                    RenderSettings { traversal: Traversal::BreadthFirst, compact_frontier: c, descend, ..base.clone() };
                let got = render_bits(&s);
                assert!(got.0 == want.0, "descend {descend}, {}: another image than depth-first", c.name());
                assert_eq!(got.1, want.1, "descend {descend}, {}: other per-bounce counts", c.name());
            }
        }
    }

    /// The level bound is exact: a run ends at the BVH's depth, so the last
    /// expansion emits nothing (the frame's status would say otherwise).
    #[test]
    fn the_level_bound_covers_the_bvh_exactly() {
        use crate::trace::levels;
        assert_eq!([1, 2, 3, 4, 10].map(|d| levels(d, 1)), [1, 1, 2, 3, 9]);
        assert_eq!([1, 2, 3, 4, 5, 10].map(|d| levels(d, 3)), [1, 1, 1, 1, 2, 3]);
        let mut e = engine("cornell", 16, 16, 4);
        let depth = e.bvh_depth();
        for descend in 1..=MAX_DESCEND {
            let s = RenderSettings { descend, ..settings(16, 16, 1, 4, Traversal::BreadthFirst) };
            let f = &render(&mut e, &s, |_| {}).expect("renders")[0];
            let deepest = f.frontier.iter().map(Vec::len).max().unwrap_or(0) as u32;
            assert_eq!(deepest, levels(depth, descend), "descend {descend}, BVH depth {depth}: levels entered");
        }
        // The wide BVH, one wide level a step: one level per wide depth, the last one's expansion
        // emitting nothing. Two levels a step enter about half as many; all of them, as many as the
        // tiles that filled up need (the bound still covers them: every step takes every item down).
        let wide = |block_levels| RenderSettings {
            bvh: BvhKind::Wide,
            block_levels,
            ..settings(16, 16, 1, 4, Traversal::BreadthFirst)
        };
        let entered = |e: &mut CpuEngine, k| {
            let f = &render(e, &wide(k), |_| {}).expect("renders")[0];
            f.frontier.iter().map(Vec::len).max().unwrap_or(0) as u32
        };
        let wide_depth = e.wide_depth();
        assert_eq!(entered(&mut e, BlockLevels::Levels(1)), wide_depth, "wide depth {wide_depth}: levels entered");
        let two = entered(&mut e, BlockLevels::Levels(2));
        assert!(two < wide_depth && two >= wide_depth / 2, "two levels a step entered {two} of {wide_depth}");
        assert!(entered(&mut e, BlockLevels::All) <= two, "all levels a step entered more than two a step");
    }

    /// A frontier that outgrows its first capacity is grown on the host after
    /// the frame and the frame is redone: the image is as if it had fitted.
    #[test]
    fn an_overflowing_frame_is_redone_with_a_larger_frontier() {
        let mut e = engine("cornell", 24, 24, 4);
        // `none` keeps every dead slot: 8 × pixels (the first guess) cannot hold level 2.
        let s = settings(24, 24, 1, 4, Traversal::BreadthFirst);
        let frames = render(&mut e, &s, |_| {}).expect("renders after growing");
        let (capacity, intact) = frontier_guard(&mut e).expect("reads").expect("a frontier was made");
        assert!(capacity > 8 * 24 * 24, "the frontier grew: capacity {capacity}");
        assert!(intact);
        let image = e.image().expect("image");
        let mut df = engine("cornell", 24, 24, 4);
        let dfs = render(&mut df, &settings(24, 24, 1, 4, Traversal::DepthFirst), |_| {}).expect("renders");
        assert!(image == df.image().expect("image"), "the redone frame renders the depth-first image");
        assert!(image.iter().all(|p| p[3] == 1.0), "one sample, accumulated once");
        assert_eq!((&frames[0].alive, &frames[0].shadow_rays), (&dfs[0].alive, &dfs[0].shadow_rays));
    }

    /// A frame whose frontier would pass --max-frontier returns the clear
    /// error, accumulates nothing, and writes nothing past the capacity.
    #[test]
    fn a_frontier_past_max_frontier_is_an_error_and_nothing_is_written_past_it() {
        let mut e = engine("cornell", 32, 32, 4);
        guard_frontier(&mut e, 4096).expect("guard");
        let s = RenderSettings { max_frontier: 3000, ..settings(32, 32, 1, 4, Traversal::BreadthFirst) };
        match render(&mut e, &s, |_| {}) {
            Err(err @ TraceError::FrontierTooLarge { items, max: 3000, .. }) => {
                assert!(items > 3000, "{err}");
                assert!(err.to_string().contains("--max-frontier"), "{err}");
            }
            other => panic!("expected FrontierTooLarge, got {other:?}"),
        }
        let (capacity, intact) = frontier_guard(&mut e).expect("reads").expect("a frontier was made");
        assert_eq!(capacity, 3000);
        assert!(intact, "a slot past the frontier's capacity was written");
        assert!(e.image().expect("image").iter().all(|p| *p == [0.0; 4]), "a failed frame accumulated");
    }
}
