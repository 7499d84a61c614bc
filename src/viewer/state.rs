//! What the viewer knows between frames, with no window or GPU in sight, for
//! either workload: the choices, the per-frame history the charts draw,
//! rolling statistics per configuration for the comparison table, and the
//! one "compare all" schedule. A [`Workload`] (the path tracer in
//! `trace_state.rs`, the collision demo in `collide_state.rs`) says what its
//! choices, measurements and export rows are; the overlay edits a
//! [`State`], the frame loop asks it for the next frame's [`Plan`] and hands
//! it each frame's stats; that split lets the tests drive it without a display.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;

use crate::compaction::{Algorithm, Compaction};

/// Frames the rolling statistics of the table look back over.
pub const ROLLING_WINDOW: usize = 32;
/// Frames the charts show.
pub const CHART_FRAMES: usize = 240;
/// Frames kept for the CSV export (older ones are dropped first).
pub const EXPORT_FRAMES: usize = 20_000;

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

/// A measure the comparison table keeps after compaction and frame time.
pub struct Metric<S> {
    /// The table's column heading.
    pub column: &'static str,
    pub value: fn(&S) -> f64,
    /// Digits after the point in the table.
    pub decimals: usize,
}

/// A workload the viewer runs: what a frame is chosen with, measured by and
/// exported as. The viewer's schedule, table and charts are written once
/// over it.
pub trait Workload: Clone + Debug {
    /// The choices that shape a frame's work but not its result.
    type Choices: Clone + Debug + PartialEq;
    /// One frame's measurements.
    type Stats: Clone + Debug + 'static;
    /// What the export labels each frame with besides its choices.
    type Run: Clone + Debug;
    /// The table's columns after compaction and frame time.
    const METRICS: &'static [Metric<Self::Stats>];
    /// The timings export's first line.
    const CSV_HEADER: &'static str;

    /// The row of the comparison table a configuration feeds.
    fn label(choices: &Self::Choices) -> String;
    /// The choices "compare all" runs `algorithm` with, the user's others kept.
    fn compare_choices(user: &Self::Choices, algorithm: Compaction) -> Self::Choices;
    /// Changes each choice the backend no longer offers to one it does.
    fn fit(&self, choices: &mut Self::Choices, available: &[Compaction]);
    fn compaction_ms(stats: &Self::Stats) -> f64;
    fn frame_ms(stats: &Self::Stats) -> f64;
    /// Time per stage (or part) name, in the order the timing chart stacks them.
    fn by_stage(stats: &Self::Stats) -> Vec<(&'static str, f64)>;
    /// What the frames now recorded run.
    fn run(&self) -> Self::Run;
    /// A frame was recorded.
    fn recorded(&mut self) {}
    /// The export's rows for one frame.
    fn csv_rows(record: &Record<Self>, out: &mut String);
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

/// One row of the comparison table, and one algorithm's measurements in "compare all".
#[derive(Clone, Debug)]
pub struct Row {
    pub frames: u64,
    pub compaction_ms: Rolling,
    pub frame_ms: Rolling,
    /// One per [`Workload::METRICS`].
    pub metrics: Vec<Rolling>,
}

impl Row {
    fn new<W: Workload>() -> Self {
        Row {
            frames: 0,
            compaction_ms: Rolling::new(ROLLING_WINDOW),
            frame_ms: Rolling::new(ROLLING_WINDOW),
            metrics: vec![Rolling::new(ROLLING_WINDOW); W::METRICS.len()],
        }
    }

    fn push<W: Workload>(&mut self, stats: &W::Stats) {
        self.frames += 1;
        self.compaction_ms.push(W::compaction_ms(stats));
        self.frame_ms.push(W::frame_ms(stats));
        for (r, m) in self.metrics.iter_mut().zip(W::METRICS) {
            r.push((m.value)(stats));
        }
    }
}

/// One frame as the charts and the export see it.
#[derive(Clone, Debug)]
pub struct Record<W: Workload> {
    /// Frames drawn since the viewer started.
    pub frame: u64,
    pub backend: &'static str,
    pub run: W::Run,
    pub choices: W::Choices,
    /// Time per stage name, summed over bounces and levels, in the frame's order.
    pub by_stage: Vec<(&'static str, f64)>,
    pub stats: W::Stats,
}

/// One algorithm's result in a finished "compare all".
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    pub algorithm: Compaction,
    pub frame_ms: f64,
    pub compaction_ms: f64,
    /// The mean of each of [`Workload::METRICS`].
    pub metrics: Vec<f64>,
}

/// What the frame loop does with the workload before the next frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Snapshot {
    /// Nothing: the work goes on.
    Keep,
    /// "Compare all" starts: remember the state (the collision demo's bodies).
    Take,
    /// The next algorithm starts: put the remembered state back.
    Restore,
}

/// The next frame's choices and what to do first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan<C> {
    pub choices: C,
    pub snapshot: Snapshot,
}

/// "Compare all": each algorithm for `warmup` unmeasured frames (kernel
/// compilation, caches) then `frames` measured ones, each from the same
/// snapshot; then the user's own choices come back.
#[derive(Clone, Debug)]
pub struct CompareAll<C> {
    pub algorithms: Vec<Compaction>,
    pub frames: u32,
    pub warmup: u32,
    /// Index into `algorithms` of the one running now.
    pub current: usize,
    /// Frames of the current algorithm seen so far, warm-up included.
    pub seen: u32,
    measured: Vec<Row>,
    restore: C,
}

impl<C> CompareAll<C> {
    pub fn progress(&self) -> (usize, usize) {
        (self.current, self.algorithms.len())
    }
}

/// Everything an overlay shows and edits; `workload` holds what only one
/// workload has.
#[derive(Clone, Debug)]
pub struct State<W: Workload> {
    pub choices: W::Choices,
    /// The compactions the backend offers (`none` first).
    pub available: Vec<Compaction>,
    pub paused: bool,
    pub frames_drawn: u64,
    pub history: VecDeque<Record<W>>,
    pub table: BTreeMap<String, Row>,
    pub compare: Option<CompareAll<W::Choices>>,
    /// The last finished "compare all", fastest first.
    pub ranking: Vec<Ranked>,
    /// Frames measured per algorithm by "compare all".
    pub compare_frames: u32,
    /// One line the overlay shows until replaced: errors, saved files.
    pub message: Option<(bool, String)>,
    /// Said once in the overlay: why the backend is what it is.
    pub backend_note: Option<String>,
    pub workload: W,
}

/// `lookback` where the backend offers it, else what `otherwise` picks.
pub fn lookback_or(available: &[Compaction], otherwise: impl FnOnce() -> Compaction) -> Compaction {
    let lookback = Compaction::With(Algorithm::Lookback);
    if available.contains(&lookback) { lookback } else { otherwise() }
}

impl<W: Workload> State<W> {
    /// A state for `workload` starting on `choices`, fitted to `available`.
    pub fn new(workload: W, choices: W::Choices, available: Vec<Compaction>, compare_frames: u32) -> Self {
        let mut s = State {
            choices,
            available: Vec::new(),
            paused: false,
            frames_drawn: 0,
            history: VecDeque::new(),
            table: BTreeMap::new(),
            compare: None,
            ranking: Vec::new(),
            compare_frames,
            message: None,
            backend_note: None,
            workload,
        };
        s.set_available(available);
        s
    }

    /// A new backend offers other algorithms: keep each choice where it still
    /// exists (the workload says what replaces the others), and stop "compare all".
    pub fn set_available(&mut self, available: Vec<Compaction>) {
        self.workload.fit(&mut self.choices, &available);
        self.available = available;
        self.compare = None;
    }

    /// The next frame: the user's choices, or the schedule's during "compare all".
    pub fn plan(&self) -> Plan<W::Choices> {
        match &self.compare {
            Some(c) => Plan {
                choices: W::compare_choices(&c.restore, c.algorithms[c.current]),
                snapshot: match (c.current, c.seen) {
                    (0, 0) => Snapshot::Take,
                    (_, 0) => Snapshot::Restore,
                    _ => Snapshot::Keep,
                },
            },
            None => Plan { choices: self.choices.clone(), snapshot: Snapshot::Keep },
        }
    }

    /// Starts "compare all" over every compaction the backend offers but
    /// `none`: without compaction a frontier only grows.
    pub fn start_compare(&mut self) {
        let algorithms: Vec<Compaction> = self.available.iter().copied().filter(|a| *a != Compaction::None).collect();
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
            measured: vec![Row::new::<W>(); n],
            restore: self.choices.clone(),
        });
        self.paused = false;
    }

    pub fn cancel_compare(&mut self) {
        self.compare = None;
    }

    /// Takes one frame's measurements, made with `choices` on `backend`.
    pub fn record(&mut self, backend: &'static str, choices: &W::Choices, stats: W::Stats) {
        self.frames_drawn += 1;
        self.workload.recorded();
        self.table.entry(W::label(choices)).or_insert_with(Row::new::<W>).push::<W>(&stats);
        self.advance_compare(&stats);
        if self.history.len() == EXPORT_FRAMES {
            self.history.pop_front();
        }
        self.history.push_back(Record {
            frame: self.frames_drawn,
            backend,
            run: self.workload.run(),
            choices: choices.clone(),
            by_stage: W::by_stage(&stats),
            stats,
        });
    }

    fn advance_compare(&mut self, stats: &W::Stats) {
        let Some(c) = &mut self.compare else { return };
        c.seen += 1;
        if c.seen > c.warmup {
            c.measured[c.current].push::<W>(stats);
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
                algorithm: *a,
                frame_ms: m.frame_ms.mean(),
                compaction_ms: m.compaction_ms.mean(),
                metrics: m.metrics.iter().map(Rolling::mean).collect(),
            })
            .collect();
        ranking.sort_by(|a, b| a.frame_ms.total_cmp(&b.frame_ms));
        self.choices = c.restore.clone();
        self.ranking = ranking;
        self.compare = None;
    }

    /// The last `CHART_FRAMES` frames, oldest first.
    pub fn chart_frames(&self) -> impl Iterator<Item = &Record<W>> {
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

    /// Every kept frame, as the workload's export rows.
    pub fn timings_csv(&self) -> String {
        let mut s = String::from(W::CSV_HEADER);
        s.push('\n');
        for r in &self.history {
            W::csv_rows(r, &mut s);
        }
        s
    }
}

/// What both workloads' state tests share: the algorithm offer and a driver
/// that runs "compare all" to its end, so each test states only its workload's
/// choices and expectations.
#[cfg(test)]
pub(super) mod harness {
    use super::*;
    use crate::compaction::Algorithm;

    pub const LOOKBACK: Compaction = Compaction::With(Algorithm::Lookback);
    pub const ATOMIC: Compaction = Compaction::With(Algorithm::Atomic);
    pub const BLELLOCH: Compaction = Compaction::With(Algorithm::Blelloch);

    /// `none` and three algorithms: compare all runs the three.
    pub fn algs() -> Vec<Compaction> {
        vec![Compaction::None, LOOKBACK, ATOMIC, BLELLOCH]
    }

    /// Starts compare all over `frames` measured frames per algorithm and
    /// records planned frames until it ends. Each frame costs what `costs`
    /// gives for the algorithm at its choices' `site`, but the warm-up
    /// frames, made slow so that counting them would show in the ranking.
    /// Returns the plans in order.
    pub fn run_compare_all<W: Workload>(
        s: &mut State<W>,
        frames: u32,
        site: impl Fn(&W::Choices) -> Compaction,
        costs: &[(Compaction, f64)],
        frame: impl Fn(f64) -> W::Stats,
    ) -> Vec<Plan<W::Choices>> {
        s.compare_frames = frames;
        s.start_compare();
        let mut plans = Vec::new();
        while s.compare.is_some() {
            assert!(plans.len() < 1000, "compare all never ends");
            let p = s.plan();
            let warm = s.compare.as_ref().is_some_and(|c| c.seen == 0);
            let cost = costs.iter().find(|(a, _)| *a == site(&p.choices)).map(|(_, ms)| *ms);
            let ms = if warm { 1000.0 } else { cost.expect("a cost for each algorithm") };
            s.record("cpu", &p.choices, frame(ms));
            plans.push(p);
        }
        plans
    }

    /// The ranked algorithms' names, fastest first.
    pub fn ranked(s: &State<impl Workload>) -> Vec<&'static str> {
        s.ranking.iter().map(|r| r.algorithm.name()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
