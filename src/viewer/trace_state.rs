//! The path tracer as a viewer [`Workload`]: the compaction at each site and
//! the traversal, the image's accumulation, and the per-stage export.

use std::fmt::Write as _;

use super::state::{Metric, Record, State, Workload, lookback_or};
use crate::compaction::{Compaction, Fusion};
use crate::trace::{BlockLevels, BvhKind, FrameStats, Traversal};

/// The path tracer's state in the viewer.
pub type ViewerState = State<Tracing>;

/// The choices that shape a frame's work but not its image: every compaction
/// algorithm, both traversal modes and both BVHs render the same pixels, so switching
/// them keeps the accumulated image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choices {
    pub compact_paths: Compaction,
    pub compact_frontier: Compaction,
    pub traversal: Traversal,
    pub bvh: BvhKind,
    /// Whether single-pass algorithms fuse into the kernels that produce the items.
    pub fusion: Fusion,
    /// Wide levels a breadth-first step descends per tile (`--block-levels`).
    pub block_levels: BlockLevels,
    /// Breadth-first levels sorted by node before their expansion (`--group-levels`).
    pub group_levels: u32,
}

/// What only the path tracer's overlay shows and edits.
#[derive(Clone, Debug)]
pub struct Tracing {
    pub spp_per_frame: u32,
    pub max_bounces: u32,
    /// Render resolution as a fraction of the requested one.
    pub scale: f32,
    /// Samples per pixel accumulated in the image: the next frame's `first_sample`.
    pub accumulated: u32,
}

impl Workload for Tracing {
    type Choices = Choices;
    type Stats = FrameStats;
    type Run = ();
    const METRICS: &'static [Metric<FrameStats>] =
        &[Metric { column: "Mrays/s", value: FrameStats::mrays_per_s, decimals: 1 }];
    const CSV_HEADER: &'static str = "frame,sample,backend,traversal,bvh,compact_paths,compact_frontier,fusion,stage,bounce,level,ms,frame_ms,wall_ms,rays";

    fn label(c: &Choices) -> String {
        let sites = if c.compact_paths == c.compact_frontier {
            c.compact_paths.name().to_string()
        } else {
            format!("{} + {}", c.compact_paths.name(), c.compact_frontier.name())
        };
        let t = match (c.traversal, c.bvh) {
            (Traversal::BreadthFirst, BvhKind::Binary) => "bf",
            (Traversal::DepthFirst, BvhKind::Binary) => "df",
            (Traversal::BreadthFirst, BvhKind::Wide) => "bf wide",
            (Traversal::DepthFirst, BvhKind::Wide) => "df wide",
        };
        let mut t = match (c.traversal, c.bvh, c.block_levels) {
            (Traversal::BreadthFirst, BvhKind::Wide, k) if k != BlockLevels::Auto => format!("{t}, {k} a step"),
            _ => t.to_string(),
        };
        if c.traversal == Traversal::BreadthFirst && c.group_levels > 0 {
            t += &format!(", grouped 1-{}", c.group_levels);
        }
        match c.fusion {
            Fusion::Auto => format!("{sites} ({t})"),
            Fusion::Off => format!("{sites} ({t}, separate)"),
        }
    }

    /// Both sites run the algorithm; the traversal and the BVH stay the user's.
    fn compare_choices(user: &Choices, algorithm: Compaction) -> Choices {
        Choices {
            compact_paths: algorithm,
            compact_frontier: algorithm,
            traversal: user.traversal,
            bvh: user.bvh,
            fusion: user.fusion,
            block_levels: user.block_levels,
            group_levels: user.group_levels,
        }
    }

    /// A site whose algorithm the backend lacks falls back to `lookback` (or `none`).
    fn fit(&self, c: &mut Choices, available: &[Compaction]) {
        let fallback = lookback_or(available, || Compaction::None);
        for site in [&mut c.compact_paths, &mut c.compact_frontier] {
            if !available.contains(site) {
                *site = fallback;
            }
        }
    }

    fn compaction_ms(s: &FrameStats) -> f64 {
        s.compaction_ms()
    }

    fn frame_ms(s: &FrameStats) -> f64 {
        s.frame_ms
    }

    /// Summed over bounces and levels, in the frame's order.
    fn by_stage(s: &FrameStats) -> Vec<(&'static str, f64)> {
        let mut by_stage: Vec<(&'static str, f64)> = Vec::new();
        for (id, ms) in &s.stages {
            match by_stage.iter_mut().find(|(n, _)| *n == id.name) {
                Some((_, t)) => *t += ms,
                None => by_stage.push((id.name, *ms)),
            }
        }
        by_stage
    }

    fn run(&self) {}

    fn recorded(&mut self) {
        self.accumulated = self.accumulated.saturating_add(1);
    }

    /// One row per stage (bounce and level where they apply).
    fn csv_rows(r: &Record<Self>, s: &mut String) {
        let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
        for (id, ms) in &r.stats.stages {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{:.6},{:.6},{:.6},{}",
                r.frame,
                r.stats.sample,
                r.backend,
                r.choices.traversal.name(),
                r.choices.bvh.name(),
                r.choices.compact_paths.name(),
                r.choices.compact_frontier.name(),
                r.choices.fusion.name(),
                id.name,
                opt(id.bounce),
                opt(id.level),
                ms,
                r.stats.frame_ms,
                r.stats.wall_ms,
                r.stats.rays
            );
        }
    }
}

impl ViewerState {
    /// Starts on `lookback` at both sites (or `none`), breadth-first, on
    /// `bvh`, with `block_levels` levels a wide step.
    pub fn for_tracer(available: Vec<Compaction>, bvh: BvhKind, block_levels: BlockLevels) -> Self {
        let start = lookback_or(&available, || Compaction::None);
        let choices = Choices {
            compact_paths: start,
            compact_frontier: start,
            traversal: Traversal::BreadthFirst,
            bvh,
            fusion: Fusion::Auto,
            block_levels,
            group_levels: 0,
        };
        let tracing = Tracing { spp_per_frame: 1, max_bounces: 8, scale: 1.0, accumulated: 0 };
        State::new(tracing, choices, available, 8)
    }

    /// Starts with breadth-first levels 1..=`levels` grouped by node (`--group-levels`).
    pub fn grouping(mut self, levels: u32) -> Self {
        self.choices.group_levels = levels;
        self
    }

    /// Clears the accumulated image (the camera moved, the scene changed).
    pub fn reset_accumulation(&mut self) {
        self.workload.accumulated = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::harness::{ATOMIC, BLELLOCH, LOOKBACK, algs, ranked, run_compare_all};
    use super::*;
    use crate::trace::{StageId, stage};

    fn frame(frame_ms: f64, compact_ms: f64) -> FrameStats {
        FrameStats {
            stages: vec![
                (StageId::frame(stage::CAMERA), frame_ms - compact_ms),
                (StageId::bounce(stage::COMPACT_PATHS, 0), compact_ms),
            ],
            rays: 1000,
            frame_ms,
            wall_ms: frame_ms + 0.5,
            ..Default::default()
        }
    }

    #[test]
    fn switching_an_algorithm_feeds_a_new_table_row_and_keeps_the_image() {
        let mut s = ViewerState::for_tracer(algs(), BvhKind::Binary, BlockLevels::Auto);
        let first = s.plan().choices;
        s.record("cpu", &first, frame(10.0, 2.0));
        s.choices.compact_paths = ATOMIC;
        let second = s.plan().choices;
        assert_eq!(second.compact_paths, ATOMIC);
        s.record("cpu", &second, frame(8.0, 1.0));
        assert_eq!(s.table.len(), 2);
        assert_eq!(s.table["lookback (bf)"].frames, 1);
        assert_eq!(s.table["atomic + lookback (bf)"].compaction_ms.mean(), 1.0);
        // The compaction choice does not change the image: accumulation goes on.
        assert_eq!(s.workload.accumulated, 2);
    }

    #[test]
    fn table_rows_track_mean_min_max_of_frames_and_compaction() {
        let mut s = ViewerState::for_tracer(algs(), BvhKind::Binary, BlockLevels::Auto);
        let c = s.plan().choices;
        for (f, k) in [(10.0, 1.0), (20.0, 3.0), (30.0, 5.0)] {
            s.record("cpu", &c, frame(f, k));
        }
        let row = &s.table[&Tracing::label(&c)];
        assert_eq!((row.frame_ms.mean(), row.frame_ms.min(), row.frame_ms.max()), (20.0, 10.0, 30.0));
        assert_eq!(row.compaction_ms.mean(), 3.0);
        assert!((row.metrics[0].max() - 1000.0 / 10e3).abs() < 1e-12);
    }

    #[test]
    fn compare_all_runs_each_algorithm_for_warmup_plus_k_frames_then_ranks_and_restores() {
        let mut s = ViewerState::for_tracer(algs(), BvhKind::Binary, BlockLevels::Auto);
        s.choices.compact_paths = ATOMIC;
        s.choices.traversal = Traversal::DepthFirst;
        let mine = s.choices;
        // Each algorithm but `none`, one warm-up then two measured frames.
        let costs = [(LOOKBACK, 5.0), (ATOMIC, 3.0), (BLELLOCH, 9.0)];
        let plans = run_compare_all(&mut s, 2, |c| c.compact_paths, &costs, |ms| frame(ms, ms / 2.0));
        for c in plans.iter().map(|p| p.choices) {
            assert_eq!(c.compact_paths, c.compact_frontier);
            assert_eq!(c.traversal, Traversal::DepthFirst);
        }
        let order: Vec<&str> = plans.iter().map(|p| p.choices.compact_paths.name()).collect();
        assert_eq!(
            order,
            ["lookback", "lookback", "lookback", "atomic", "atomic", "atomic", "blelloch", "blelloch", "blelloch"]
        );
        assert_eq!(ranked(&s), ["atomic", "lookback", "blelloch"]);
        assert_eq!(s.ranking[0].frame_ms, 3.0);
        assert_eq!(s.ranking[0].compaction_ms, 1.5);
        assert_eq!(s.choices, mine);
        assert_eq!(s.plan().choices, mine);
    }

    #[test]
    fn a_backend_without_the_chosen_algorithm_falls_back_to_lookback() {
        let mut s = ViewerState::for_tracer(algs(), BvhKind::Binary, BlockLevels::Auto);
        s.choices.compact_paths = BLELLOCH;
        s.choices.compact_frontier = ATOMIC;
        s.start_compare();
        s.set_available(vec![Compaction::None, LOOKBACK, ATOMIC]);
        assert_eq!(s.choices.compact_paths, LOOKBACK);
        assert_eq!(s.choices.compact_frontier, ATOMIC);
        assert!(s.compare.is_none(), "a backend switch cancels compare all");
    }

    #[test]
    fn stage_names_and_csv_follow_the_frames() {
        let mut s = ViewerState::for_tracer(algs(), BvhKind::Binary, BlockLevels::Auto);
        let c = s.plan().choices;
        s.record("cpu", &c, frame(4.0, 1.0));
        assert_eq!(s.stage_names(), [stage::CAMERA, stage::COMPACT_PATHS]);
        let csv = s.timings_csv();
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.lines().nth(2).is_some_and(|l| {
            l.starts_with("1,0,cpu,breadth-first,binary,lookback,lookback,auto,compact paths,0,,1.0")
        }));
        assert!(
            csv.starts_with("frame,sample,")
                && csv.lines().next().is_some_and(|h| h.ends_with(",frame_ms,wall_ms,rays"))
        );
        assert!(csv.lines().nth(2).is_some_and(|l| l.ends_with(",4.000000,4.500000,1000")), "{csv}");
    }
}
