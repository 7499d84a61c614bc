//! The tracer's breadth-first traversal: the bound on a run's levels, the
//! frontier it runs in (sized on the first frame, grown and the frame redone
//! when the device reports an overflow, guarded in tests), and each bounce's
//! run of the shared level loop of [`frontier`] through the [`Engine`]'s init
//! and expand stages. [`render`](super::render) and [`frame`] are the pipeline
//! around it.

use super::{
    BvhKind, Compaction, Engine, FrameStats, FrameWords, FrontierRun, RenderSettings, StageId, TraceError, TraceResult,
    Traversal, Work, frame, stage, work,
};
use crate::compaction::Algorithm;
use crate::frontier::{self, Frontier, GroupSplit, Grouping, LevelWords, Levels, NEEDED, Names, Plan, STATUS, Step};
use crate::memory;

/// Tests: from now on the engine allocates its breadth-first frontier with
/// `guard` poisoned slots past its capacity ([`Frontier::guarded`]).
pub fn guard_frontier<E: Engine>(e: &mut E, guard: u64) -> TraceResult<()> {
    let mut w = work(e)?;
    w.guard = guard;
    w.frontier = None;
    w.renew();
    *e.work() = Some(w);
    Ok(())
}

/// Tests: the capacity of the engine's frontier and whether its guard slots
/// still hold the poison (`None` before any breadth-first frame).
pub fn frontier_guard<E: Engine>(e: &mut E) -> TraceResult<Option<(u64, bool)>> {
    let w = work(e)?;
    let r = match &w.frontier {
        Some(f) => Some((f.capacity(), f.guard_intact(e.backend())?)),
        None => None,
    };
    *e.work() = Some(w);
    Ok(r)
}

/// Breadth-first levels per run: each expansion descends `descend` BVH
/// levels, leaves are intersected where met, so items past level 0 are
/// internal nodes at depth 1 + level × descend (the root at depth 1), and the
/// deepest internal nodes sit at depth − 1. Exact: a run's last expansion
/// emits nothing.
pub fn levels(depth: u32, descend: u32) -> u32 {
    1 + depth.saturating_sub(2) / descend.max(1)
}

/// The breadth-first levels of a run under `s` on `e`'s BVHs: a wide
/// expansion descends one wide level, and the deepest wide nodes (at the
/// wide depth) hold only leaves, as the binary BVH's at depth − 1 do.
pub fn run_levels<E: Engine>(e: &E, s: &RenderSettings) -> u32 {
    match s.bvh {
        BvhKind::Binary => levels(e.bvh_depth(), s.descend),
        BvhKind::Wide => levels(e.wide_depth() + 1, 1),
    }
}

/// One frame, redone from its start with a larger frontier while the device
/// says the frontier overflowed and `--max-frontier` and the memory allow it.
/// The failed attempt accumulated nothing, so the image is as if it fitted.
pub(super) fn frame_that_fits<E: Engine>(
    e: &mut E,
    s: &RenderSettings,
    w: &mut Work<E>,
    sample: u32,
) -> TraceResult<FrameStats> {
    let fan = s.fan();
    let mut stalled = false;
    loop {
        if s.traversal == Traversal::BreadthFirst {
            // The first guess: every level at most fan-out × pixels; kept across frames.
            let first = fan.saturating_mul(e.pixels()).min(s.max_frontier);
            let keep = w.frontier.as_ref().is_some_and(|f| f.capacity() <= s.max_frontier);
            if !keep {
                make_frontier(e, w, first)?;
            }
        }
        let (stats, words) = frame(e, s, w, sample)?;
        let status = words.get(STATUS as usize).copied().unwrap_or(0);
        if status == 0 {
            return Ok(stats);
        }
        if status & frontier::status::STALLED != 0 {
            // A stable site gave up waiting; the engine has switched it off, so
            // the frame is redone through the separate pass (once: a second
            // stall would be an engine that did not).
            if stalled {
                return Err(TraceError::Settings(format!(
                    "a fused site stalled twice in one frame (status {status:#x}): use --fusion off"
                )));
            }
            stalled = true;
            continue;
        }
        let fw = FrameWords::plan(s, run_levels(e, s));
        if status & frontier::status::OVERFLOW == 0 {
            return Err(TraceError::Settings(format!(
                "the breadth-first loop ended with live items after its {} levels (status {status:#x}): \
                 the level bound from the {} BVH's depth is wrong",
                run_levels(e, s),
                s.bvh.name()
            )));
        }
        let needed = words.get(NEEDED as usize).copied().unwrap_or(0);
        let capacity = w.frontier.as_ref().map_or(0, |f| f.capacity());
        let fused = super::frontier_site(e, s) == Some(super::SitePath::Fused);
        let (bounce, level) = overflowed_at(&fw, &words, s.compact_frontier, fused, capacity);
        if needed > s.max_frontier || needed <= capacity {
            let gib = (needed * 8) as f64 / (1u64 << 30) as f64;
            let advice = frontier::past_max_advice(
                s.compact_frontier != Compaction::None,
                "--compact-frontier",
                "lower --descend, use --traversal depth-first, or render fewer pixels",
            );
            return Err(TraceError::FrontierTooLarge {
                items: needed,
                gib,
                level,
                bounce,
                max: s.max_frontier,
                advice,
            });
        }
        make_frontier(e, w, needed.next_power_of_two().min(s.max_frontier))?;
    }
}

/// Replaces the work's frontier with one of `capacity` items, if the
/// engine's memory holds it (the old one is freed first).
fn make_frontier<E: Engine>(e: &E, w: &mut Work<E>, capacity: u64) -> TraceResult<()> {
    let bytes = |f: u64| memory::times(f.saturating_add(w.guard), 2 * 8);
    let mut limit = e.memory_limit()?;
    // The old frontier is freed first.
    limit.bytes = limit.bytes.saturating_add(w.frontier.as_ref().and_then(|f| bytes(f.capacity())).unwrap_or(0));
    let what = format!("the breadth-first frontier of {capacity} items");
    memory::check(what, bytes(capacity), limit, "lower --max-frontier, compact the frontier, or render fewer pixels")?;
    w.frontier = None;
    w.frontier = Some(Frontier::guarded(e.backend(), capacity, w.guard)?);
    w.renew();
    Ok(())
}

/// The first (bounce, level) whose frontier did not fit: a level entered
/// with live items whose expansion wrote nothing (or, at level 0, a queue
/// that init could not hold); through a fused site, a level whose kept total
/// passed the capacity.
fn overflowed_at(fw: &FrameWords, words: &[u64], compaction: Compaction, fused: bool, capacity: u64) -> (u32, u32) {
    let word = |i: u64| words.get(i as usize).copied().unwrap_or(0);
    for (b, bw) in fw.bounces.iter().enumerate() {
        let Some((rays, shadows)) = bw.rays else { continue };
        for at in [rays, shadows] {
            if fused {
                if let Some(l) = (0..=at.levels()).find(|&l| word(at.len(l)) > capacity) {
                    return (b as u32, l);
                }
                continue;
            }
            if word(bw.queue) > 0 && word(at.len(0)) == 0 {
                return (b as u32, 0);
            }
            for l in 0..at.levels() {
                let entered = match compaction {
                    Compaction::None => word(at.len(l)),
                    Compaction::With(_) => word(at.kept(l)),
                };
                if word(at.live(l)) > 0 && entered > 0 && word(at.len(l + 1)) == 0 {
                    return (b as u32, l + 1);
                }
            }
        }
    }
    (0, 0)
}

/// Breadth-first traversal of the queued paths' rays (or shadow rays) through
/// the shared level loop ([`frontier::run`]): init writes level 0, then per
/// level the frontier is compacted and expanded by `descend` BVH levels.
pub(super) fn breadth_first<E: Engine>(
    e: &mut E,
    s: &RenderSettings,
    w: &mut Work<E>,
    bounce: u32,
    queue_len: u64,
    at: LevelWords,
    shadow: bool,
) -> TraceResult<()> {
    let (init, expand, compact, group) = if shadow {
        (stage::SHADOW_INIT, stage::SHADOW_EXPAND, stage::COMPACT_SHADOW_FRONTIER, stage::SHADOW_GROUP)
    } else {
        (stage::FRONTIER_INIT, stage::EXPAND, stage::COMPACT_FRONTIER, stage::GROUP)
    };
    let f = w.frontier.as_mut().ok_or_else(|| TraceError::Settings("no breadth-first frontier was made".into()))?;
    let capacity = f.capacity();
    // Level 0's length word is read as the "input" of init: the queue's.
    let level0 = frontier::Expand {
        level: 0,
        input_len: queue_len,
        input_live: queue_len,
        output_len: at.len(0),
        output_live: at.live(0),
        last: false,
    };
    let fused = super::frontier_site(e, s) == Some(super::SitePath::Fused);
    let fuse = match s.compact_frontier {
        Compaction::With(alg) if fused => Some(alg),
        _ => None,
    };
    let block_levels = s.block_levels.resolve(e.has_block_step())?;
    let run = FrontierRun { capacity, shadow, descend: s.descend, bvh: s.bvh, fuse, block_levels };
    e.stage(StageId::bounce(init, bounce), |e| {
        e.frontier_init(Step { at: level0, input: &w.queue, output: f.front_mut(), words: &mut w.words }, run)
    })?;
    let compaction = match s.compact_frontier {
        Compaction::None => None,
        Compaction::With(alg) => Some(alg),
    };
    let grouped = grouping(e, s, compaction);
    let names = Names { expand, compact, group };
    let plan = Plan { levels: at.levels(), compaction, fused, names, group: grouped };
    frontier::run(&mut Run { e, bounce, run }, f, &mut w.words, at, &plan)
}

/// The levels `s` groups by node on `e`'s wide BVH: level l (one wide level a
/// step, so its items sit at depth l) sorts `node - lowest` over the bits of
/// its depth's node range, with the frontier's algorithm
/// ([`RenderSettings::check`] refuses an unstable one, the binary BVH and
/// several block levels).
fn grouping<E: Engine>(e: &E, s: &RenderSettings, compaction: Option<Algorithm>) -> Option<Grouping> {
    let (Some(algorithm), n @ 1.., BvhKind::Wide) = (compaction, s.group_levels, s.bvh) else { return None };
    let mut levels = [(0, 0); frontier::MAX_GROUPED];
    for (l, slot) in levels.iter_mut().enumerate().take(n as usize) {
        if let Some(&(lo, hi)) = e.wide_ranges().get(l + 1) {
            *slot = (32 - (hi - lo).leading_zeros(), lo);
        }
    }
    Some(Grouping { algorithm, levels, count: n })
}

/// The tracer's side of the level loop, for one run (a bounce's rays or shadow rays).
struct Run<'a, E: Engine> {
    e: &'a mut E,
    bounce: u32,
    run: FrontierRun,
}

impl<E: Engine> Levels for Run<'_, E> {
    type B = E::B;
    type Error = TraceError;
    fn backend(&self) -> &E::B {
        self.e.backend()
    }
    fn level_stage(
        &mut self,
        name: &'static str,
        level: u32,
        f: &mut dyn FnMut(&mut Self) -> TraceResult<()>,
    ) -> TraceResult<()> {
        let id = StageId::level(name, self.bounce, level);
        crate::clocks::timed(self, |r| r.e.clock(), id, f)
    }
    fn expand(&mut self, step: Step<'_, E::B>) -> TraceResult<()> {
        self.e.expand(step, self.run)
    }
    fn group_split(
        &mut self,
        algorithm: Algorithm,
        input: &frontier::Buf<E::B>,
        split: GroupSplit,
        output: &mut frontier::Buf<E::B>,
        lens: crate::compaction::Lens<'_, E::B>,
    ) -> TraceResult<()> {
        self.e.group_split(algorithm, input, split, output, lens)
    }
    fn compact(
        &mut self,
        algorithm: crate::compaction::Algorithm,
        input: &frontier::Buf<E::B>,
        output: &mut frontier::Buf<E::B>,
        lens: crate::compaction::Lens<'_, E::B>,
    ) -> TraceResult<()> {
        self.e.select_counted(algorithm, input, frontier::DEAD, output, lens)
    }
}
