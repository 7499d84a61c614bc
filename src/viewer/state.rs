//! What the viewer knows between frames, with no window or GPU in sight: the
//! compaction chosen at each site, the per-frame history the charts draw,
//! rolling statistics per configuration for the comparison table, and the
//! "compare all" schedule. The overlay edits it, the frame loop asks it which
//! settings the next frame uses and hands it each frame's [`FrameStats`];
//! that split lets the tests below drive it without a display.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;

use crate::trace::{FrameStats, Traversal};

/// Frames the rolling statistics of the table look back over.
pub const ROLLING_WINDOW: usize = 32;
/// Frames the charts show.
pub const CHART_FRAMES: usize = 240;
/// Frames kept for the CSV export (older ones are dropped first).
pub const EXPORT_FRAMES: usize = 20_000;

/// The choices that shape a frame's work but not its image: every compaction
/// algorithm and both traversal modes render the same pixels, so switching
/// them keeps the accumulated image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choices {
    pub compact_paths: String,
    pub compact_frontier: String,
    pub traversal: Traversal,
}

impl Choices {
    /// The row of the comparison table this configuration feeds.
    pub fn label(&self) -> String {
        let sites = if self.compact_paths == self.compact_frontier {
            self.compact_paths.clone()
        } else {
            format!("{} + {}", self.compact_paths, self.compact_frontier)
        };
        let t = match self.traversal {
            Traversal::BreadthFirst => "bf",
            Traversal::DepthFirst => "df",
        };
        format!("{sites} ({t})")
    }
}

/// What the viewer shows: the path tracer's image or the collision demo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    PathTracer,
    Collision,
}

impl Mode {
    pub const ALL: [Mode; 2] = [Mode::PathTracer, Mode::Collision];
    pub fn name(self) -> &'static str {
        match self {
            Mode::PathTracer => "Path tracer",
            Mode::Collision => "Collision",
        }
    }
}

/// Mean, min and max over the last `cap` values.
#[derive(Clone, Debug)]
pub struct Rolling {
    values: VecDeque<f64>,
    cap: usize,
}

impl Rolling {
    pub fn new(cap: usize) -> Self {
        Rolling { values: VecDeque::with_capacity(cap), cap: cap.max(1) }
    }
    pub fn push(&mut self, v: f64) {
        if self.values.len() == self.cap {
            self.values.pop_front();
        }
        self.values.push_back(v);
    }
    pub fn len(&self) -> usize {
        self.values.len()
    }
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    pub fn mean(&self) -> f64 {
        if self.values.is_empty() { 0.0 } else { self.values.iter().sum::<f64>() / self.values.len() as f64 }
    }
    pub fn min(&self) -> f64 {
        self.values.iter().copied().reduce(f64::min).unwrap_or(0.0)
    }
    pub fn max(&self) -> f64 {
        self.values.iter().copied().reduce(f64::max).unwrap_or(0.0)
    }
}

/// One row of the comparison table.
#[derive(Clone, Debug)]
pub struct ConfigStats {
    pub frames: u64,
    pub compaction_ms: Rolling,
    pub frame_ms: Rolling,
    pub mrays: Rolling,
}

impl ConfigStats {
    fn new() -> Self {
        ConfigStats {
            frames: 0,
            compaction_ms: Rolling::new(ROLLING_WINDOW),
            frame_ms: Rolling::new(ROLLING_WINDOW),
            mrays: Rolling::new(ROLLING_WINDOW),
        }
    }
}

/// One frame as the charts and the export see it.
#[derive(Clone, Debug)]
pub struct FrameRecord {
    /// Frames drawn since the viewer started.
    pub frame: u64,
    pub backend: &'static str,
    pub choices: Choices,
    /// Time per stage name, summed over bounces and levels, in the frame's order.
    pub by_stage: Vec<(&'static str, f64)>,
    pub stats: FrameStats,
}

/// One algorithm's result in a finished "compare all".
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    pub algorithm: String,
    pub frame_ms: f64,
    pub compaction_ms: f64,
    pub mrays: f64,
}

/// "Compare all": each algorithm at both sites for `frames` measured frames
/// (after `warmup` unmeasured ones, which compile kernels and fill caches),
/// on the same view; then the user's own choices come back.
#[derive(Clone, Debug)]
pub struct CompareAll {
    pub algorithms: Vec<String>,
    pub frames: u32,
    pub warmup: u32,
    /// Index into `algorithms` of the one running now.
    pub current: usize,
    /// Frames of the current algorithm seen so far, warm-up included.
    pub seen: u32,
    measured: Vec<ConfigStats>,
    restore: Choices,
}

impl CompareAll {
    pub fn progress(&self) -> (usize, usize) {
        (self.current, self.algorithms.len())
    }
}

/// Everything the overlay shows and edits.
#[derive(Clone, Debug)]
pub struct ViewerState {
    pub choices: Choices,
    /// The algorithms each site offers on the current backend (`none` first).
    pub available: Vec<String>,
    pub spp_per_frame: u32,
    pub max_bounces: u32,
    /// Render resolution as a fraction of the requested one.
    pub scale: f32,
    pub paused: bool,
    /// Samples per pixel accumulated in the image: the next frame's `first_sample`.
    pub accumulated: u32,
    pub frames_drawn: u64,
    pub history: VecDeque<FrameRecord>,
    pub table: BTreeMap<String, ConfigStats>,
    pub compare: Option<CompareAll>,
    /// The last finished "compare all", fastest first.
    pub ranking: Vec<Ranked>,
    /// Frames measured per algorithm by "compare all".
    pub compare_frames: u32,
    /// One line the overlay shows until replaced: errors from opening scenes, saved files.
    pub message: Option<(bool, String)>,
    /// Said once in the overlay: why the backend is what it is.
    pub backend_note: Option<String>,
}

impl ViewerState {
    pub fn new(available: Vec<String>) -> Self {
        let pick = |want: &str| {
            if available.iter().any(|a| a == want) { want.to_string() } else { "none".to_string() }
        };
        ViewerState {
            choices: Choices {
                compact_paths: pick("lookback"),
                compact_frontier: pick("lookback"),
                traversal: Traversal::BreadthFirst,
            },
            available,
            spp_per_frame: 1,
            max_bounces: 8,
            scale: 1.0,
            paused: false,
            accumulated: 0,
            frames_drawn: 0,
            history: VecDeque::new(),
            table: BTreeMap::new(),
            compare: None,
            ranking: Vec::new(),
            compare_frames: 8,
            message: None,
            backend_note: None,
        }
    }

    /// A new backend offers other algorithms: keep each site's choice where it
    /// still exists, else fall back to `lookback` (or `none`).
    pub fn set_available(&mut self, available: Vec<String>) {
        let fallback =
            if available.iter().any(|a| a == "lookback") { "lookback".to_string() } else { "none".to_string() };
        for site in [&mut self.choices.compact_paths, &mut self.choices.compact_frontier] {
            if !available.contains(site) {
                *site = fallback.clone();
            }
        }
        self.available = available;
        self.compare = None;
    }

    /// The choices the next frame runs with: the user's, or the schedule's
    /// during "compare all".
    pub fn frame_choices(&self) -> Choices {
        match &self.compare {
            Some(c) => Choices {
                compact_paths: c.algorithms[c.current].clone(),
                compact_frontier: c.algorithms[c.current].clone(),
                traversal: c.restore.traversal,
            },
            None => self.choices.clone(),
        }
    }

    /// Clears the accumulated image (the camera moved, the scene changed).
    pub fn reset_accumulation(&mut self) {
        self.accumulated = 0;
    }

    /// Starts "compare all" over every algorithm the backend offers (not
    /// `none`: on the breadth-first path its frontier only grows).
    pub fn start_compare(&mut self) {
        let algorithms: Vec<String> = self.available.iter().filter(|a| *a != "none").cloned().collect();
        if algorithms.is_empty() {
            self.message = Some((true, "no algorithm to compare on this backend".into()));
            return;
        }
        let n = algorithms.len();
        self.compare = Some(CompareAll {
            algorithms,
            frames: self.compare_frames.max(1),
            warmup: 1,
            current: 0,
            seen: 0,
            measured: vec![ConfigStats::new(); n],
            restore: self.choices.clone(),
        });
        self.paused = false;
    }

    pub fn cancel_compare(&mut self) {
        self.compare = None;
    }

    /// Takes one frame's measurements, made with `choices` on `backend`.
    pub fn record(&mut self, backend: &'static str, choices: &Choices, stats: FrameStats) {
        self.frames_drawn += 1;
        self.accumulated = self.accumulated.saturating_add(1);
        let row = self.table.entry(choices.label()).or_insert_with(ConfigStats::new);
        row.frames += 1;
        row.compaction_ms.push(stats.compaction_ms());
        row.frame_ms.push(stats.frame_ms);
        row.mrays.push(stats.mrays_per_s());
        self.advance_compare(&stats);
        let mut by_stage: Vec<(&'static str, f64)> = Vec::new();
        for (id, ms) in &stats.stages {
            match by_stage.iter_mut().find(|(n, _)| *n == id.name) {
                Some((_, t)) => *t += ms,
                None => by_stage.push((id.name, *ms)),
            }
        }
        if self.history.len() == EXPORT_FRAMES {
            self.history.pop_front();
        }
        self.history.push_back(FrameRecord {
            frame: self.frames_drawn,
            backend,
            choices: choices.clone(),
            by_stage,
            stats,
        });
    }

    fn advance_compare(&mut self, stats: &FrameStats) {
        let Some(c) = &mut self.compare else { return };
        c.seen += 1;
        if c.seen > c.warmup {
            let m = &mut c.measured[c.current];
            m.frames += 1;
            m.compaction_ms.push(stats.compaction_ms());
            m.frame_ms.push(stats.frame_ms);
            m.mrays.push(stats.mrays_per_s());
        }
        if c.seen < c.warmup + c.frames {
            return;
        }
        c.current += 1;
        c.seen = 0;
        if c.current < c.algorithms.len() {
            return;
        }
        let mut ranking: Vec<Ranked> = c
            .algorithms
            .iter()
            .zip(&c.measured)
            .map(|(a, m)| Ranked {
                algorithm: a.clone(),
                frame_ms: m.frame_ms.mean(),
                compaction_ms: m.compaction_ms.mean(),
                mrays: m.mrays.mean(),
            })
            .collect();
        ranking.sort_by(|a, b| a.frame_ms.total_cmp(&b.frame_ms));
        self.choices = c.restore.clone();
        self.ranking = ranking;
        self.compare = None;
    }

    /// The last `CHART_FRAMES` frames, oldest first.
    pub fn chart_frames(&self) -> impl Iterator<Item = &FrameRecord> {
        self.history.iter().skip(self.history.len().saturating_sub(CHART_FRAMES))
    }

    /// Every stage name of the charted frames, in first-seen order: the
    /// stacking order of the timing chart.
    pub fn stage_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = Vec::new();
        for r in self.chart_frames() {
            for (n, _) in &r.by_stage {
                if !names.contains(n) {
                    names.push(n);
                }
            }
        }
        names
    }

    /// Every kept frame, one row per stage (bounce and level where they apply).
    pub fn timings_csv(&self) -> String {
        let mut s = String::from(
            "frame,sample,backend,traversal,compact_paths,compact_frontier,stage,bounce,level,ms,frame_ms,wall_ms,rays\n",
        );
        let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
        for r in &self.history {
            for (id, ms) in &r.stats.stages {
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{},{:.6},{:.6},{:.6},{}",
                    r.frame,
                    r.stats.sample,
                    r.backend,
                    r.choices.traversal.name(),
                    r.choices.compact_paths,
                    r.choices.compact_frontier,
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
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{StageId, stage};

    fn algs() -> Vec<String> {
        ["none", "lookback", "atomic", "blelloch"].iter().map(|s| s.to_string()).collect()
    }

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
    fn rolling_stats_forget_values_beyond_the_window() {
        let mut r = Rolling::new(3);
        assert_eq!((r.mean(), r.min(), r.max()), (0.0, 0.0, 0.0));
        for v in [10.0, 1.0, 2.0, 3.0] {
            r.push(v);
        }
        assert_eq!(r.len(), 3);
        assert_eq!((r.mean(), r.min(), r.max()), (2.0, 1.0, 3.0));
    }

    #[test]
    fn switching_an_algorithm_feeds_a_new_table_row_and_keeps_the_image() {
        let mut s = ViewerState::new(algs());
        let first = s.frame_choices();
        s.record("cpu", &first, frame(10.0, 2.0));
        s.choices.compact_paths = "atomic".into();
        let second = s.frame_choices();
        assert_eq!(second.compact_paths, "atomic");
        s.record("cpu", &second, frame(8.0, 1.0));
        assert_eq!(s.table.len(), 2);
        assert_eq!(s.table["lookback (bf)"].frames, 1);
        assert_eq!(s.table["atomic + lookback (bf)"].compaction_ms.mean(), 1.0);
        // The compaction choice does not change the image: accumulation goes on.
        assert_eq!(s.accumulated, 2);
    }

    #[test]
    fn table_rows_track_mean_min_max_of_frames_and_compaction() {
        let mut s = ViewerState::new(algs());
        let c = s.frame_choices();
        for (f, k) in [(10.0, 1.0), (20.0, 3.0), (30.0, 5.0)] {
            s.record("cpu", &c, frame(f, k));
        }
        let row = &s.table[&c.label()];
        assert_eq!((row.frame_ms.mean(), row.frame_ms.min(), row.frame_ms.max()), (20.0, 10.0, 30.0));
        assert_eq!(row.compaction_ms.mean(), 3.0);
        assert!((row.mrays.max() - 1000.0 / 10e3).abs() < 1e-12);
    }

    #[test]
    fn compare_all_runs_each_algorithm_for_warmup_plus_k_frames_then_ranks_and_restores() {
        let mut s = ViewerState::new(algs());
        s.choices.compact_paths = "atomic".into();
        s.choices.traversal = Traversal::DepthFirst;
        let mine = s.choices.clone();
        s.compare_frames = 2;
        s.start_compare();
        // Each algorithm but `none`, one warm-up then two measured frames.
        let cost = |a: &str| match a {
            "lookback" => 5.0,
            "atomic" => 3.0,
            _ => 9.0,
        };
        let mut order = Vec::new();
        for _ in 0..9 {
            let c = s.frame_choices();
            assert_eq!(c.compact_paths, c.compact_frontier);
            assert_eq!(c.traversal, Traversal::DepthFirst);
            order.push(c.compact_paths.clone());
            // A slow warm-up frame must not count.
            let warm = s.compare.as_ref().is_some_and(|c| c.seen == 0);
            let ms = if warm { 1000.0 } else { cost(&c.compact_paths) };
            s.record("cpu", &c, frame(ms, ms / 2.0));
        }
        assert_eq!(
            order,
            ["lookback", "lookback", "lookback", "atomic", "atomic", "atomic", "blelloch", "blelloch", "blelloch"]
        );
        assert!(s.compare.is_none());
        let names: Vec<&str> = s.ranking.iter().map(|r| r.algorithm.as_str()).collect();
        assert_eq!(names, ["atomic", "lookback", "blelloch"]);
        assert_eq!(s.ranking[0].frame_ms, 3.0);
        assert_eq!(s.ranking[0].compaction_ms, 1.5);
        assert_eq!(s.choices, mine);
        assert_eq!(s.frame_choices(), mine);
    }

    #[test]
    fn a_backend_without_the_chosen_algorithm_falls_back_to_lookback() {
        let mut s = ViewerState::new(algs());
        s.choices.compact_paths = "blelloch".into();
        s.choices.compact_frontier = "atomic".into();
        s.start_compare();
        s.set_available(["none", "lookback", "atomic"].iter().map(|x| x.to_string()).collect());
        assert_eq!(s.choices.compact_paths, "lookback");
        assert_eq!(s.choices.compact_frontier, "atomic");
        assert!(s.compare.is_none(), "a backend switch cancels compare all");
    }

    #[test]
    fn stage_names_and_csv_follow_the_frames() {
        let mut s = ViewerState::new(algs());
        let c = s.frame_choices();
        s.record("cpu", &c, frame(4.0, 1.0));
        assert_eq!(s.stage_names(), [stage::CAMERA, stage::COMPACT_PATHS]);
        let csv = s.timings_csv();
        assert_eq!(csv.lines().count(), 3);
        assert!(
            csv.lines()
                .nth(2)
                .is_some_and(|l| l.starts_with("1,0,cpu,breadth-first,lookback,lookback,compact paths,0,,1.0"))
        );
        assert!(
            csv.starts_with("frame,sample,")
                && csv.lines().next().is_some_and(|h| h.ends_with(",frame_ms,wall_ms,rays"))
        );
        assert!(csv.lines().nth(2).is_some_and(|l| l.ends_with(",4.000000,4.500000,1000")), "{csv}");
    }
}
