//! What the collision mode of the viewer knows between frames, with no window
//! or GPU in sight (the twin of `state.rs` for the path tracer): the pair
//! compaction and the sort chosen, the per-frame history the charts draw,
//! rolling statistics per configuration for the comparison table, and the
//! "compare all" schedule, which runs every algorithm from one snapshot of
//! the bodies so that each measures the same frames.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;

use super::state::{CHART_FRAMES, EXPORT_FRAMES, ROLLING_WINDOW, Rolling};
use crate::collide::{FrameStats, Part};

/// The choices that shape a frame's work but not its result: every
/// compaction algorithm and every sort give the same contacts, so switching
/// them keeps the simulation going.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollideChoices {
    pub compact_pairs: String,
    pub sort: String,
}

impl CollideChoices {
    /// The row of the comparison table this configuration feeds.
    pub fn label(&self) -> String {
        format!("{}, {}", self.compact_pairs, self.sort)
    }
}

/// One row of the comparison table.
#[derive(Clone, Debug)]
pub struct CollideRow {
    pub frames: u64,
    pub compaction_ms: Rolling,
    pub frame_ms: Rolling,
    pub candidates: Rolling,
    pub contacts: Rolling,
}

impl CollideRow {
    fn new() -> Self {
        CollideRow {
            frames: 0,
            compaction_ms: Rolling::new(ROLLING_WINDOW),
            frame_ms: Rolling::new(ROLLING_WINDOW),
            candidates: Rolling::new(ROLLING_WINDOW),
            contacts: Rolling::new(ROLLING_WINDOW),
        }
    }

    fn push(&mut self, stats: &FrameStats) {
        self.frames += 1;
        self.compaction_ms.push(stats.part_ms(Part::Compact));
        self.frame_ms.push(stats.frame_ms);
        self.candidates.push(stats.candidates as f64);
        self.contacts.push(stats.contacts as f64);
    }
}

/// One frame as the charts and the export see it.
#[derive(Clone, Debug)]
pub struct CollideRecord {
    /// Frames simulated since the viewer started.
    pub frame: u64,
    pub backend: &'static str,
    pub scenario: String,
    pub bodies: u32,
    pub choices: CollideChoices,
    /// Time per part of the frame, in [`Part::ALL`]'s order.
    pub parts: [f64; 5],
    pub stats: FrameStats,
}

/// One algorithm's result in a finished "compare all".
#[derive(Clone, Debug, PartialEq)]
pub struct CollideRanked {
    pub algorithm: String,
    pub frame_ms: f64,
    pub compaction_ms: f64,
    pub candidates: f64,
}

/// What the frame loop does with the bodies before the next frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Snapshot {
    /// Nothing: the simulation goes on.
    Keep,
    /// "Compare all" starts: remember the bodies.
    Take,
    /// The next algorithm starts: put the remembered bodies back.
    Restore,
}

/// The next frame's settings and what to do with the bodies first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub choices: CollideChoices,
    pub snapshot: Snapshot,
}

/// "Compare all": each algorithm for `warmup` unmeasured frames (kernel
/// compilation, caches) then `frames` measured ones, each starting from the
/// same bodies; then the user's own choices come back. The contacts do not
/// depend on the algorithm, so every run ends in the same state and the
/// simulation simply goes on from there.
#[derive(Clone, Debug)]
pub struct CollideCompare {
    pub algorithms: Vec<String>,
    pub frames: u32,
    pub warmup: u32,
    /// Index into `algorithms` of the one running now.
    pub current: usize,
    /// Frames of the current algorithm seen so far, warm-up included.
    pub seen: u32,
    measured: Vec<CollideRow>,
    restore: CollideChoices,
}

impl CollideCompare {
    pub fn progress(&self) -> (usize, usize) {
        (self.current, self.algorithms.len())
    }
}

/// Everything the collision overlay shows and edits.
#[derive(Clone, Debug)]
pub struct CollideState {
    pub choices: CollideChoices,
    /// The pair compactions the backend offers (`none` first).
    pub available: Vec<String>,
    /// The sorts the backend offers (`fast` first).
    pub sorts: Vec<String>,
    /// The scenario and body count the next reset builds (the running ones
    /// are the session's).
    pub scenario: String,
    pub bodies: u32,
    pub paused: bool,
    pub frames_drawn: u64,
    pub history: VecDeque<CollideRecord>,
    pub table: BTreeMap<String, CollideRow>,
    pub compare: Option<CollideCompare>,
    /// The last finished "compare all", fastest first.
    pub ranking: Vec<CollideRanked>,
    /// Frames measured per algorithm by "compare all".
    pub compare_frames: u32,
    /// One line the overlay shows until replaced: errors, saved files.
    pub message: Option<(bool, String)>,
    /// Said once in the overlay: why the backend is what it is.
    pub backend_note: Option<String>,
    /// What the frames now recorded run: scenario name and body count.
    workload: (String, u32),
}

impl CollideState {
    pub fn new(available: Vec<String>, sorts: Vec<String>, scenario: &str, bodies: u32) -> Self {
        let mut s = CollideState {
            choices: CollideChoices { compact_pairs: String::new(), sort: String::new() },
            available: Vec::new(),
            sorts: Vec::new(),
            scenario: scenario.to_string(),
            bodies,
            paused: false,
            frames_drawn: 0,
            history: VecDeque::new(),
            table: BTreeMap::new(),
            compare: None,
            ranking: Vec::new(),
            compare_frames: 16,
            message: None,
            backend_note: None,
            workload: (scenario.to_string(), bodies),
        };
        s.set_available(available, sorts);
        s
    }

    /// A new backend offers other algorithms and sorts: keep each choice where
    /// it still exists, else fall back to `lookback` (or the first non-`none`)
    /// and `fast`.
    pub fn set_available(&mut self, available: Vec<String>, sorts: Vec<String>) {
        if !available.contains(&self.choices.compact_pairs) {
            self.choices.compact_pairs = if available.iter().any(|a| a == "lookback") {
                "lookback".into()
            } else {
                available.iter().find(|a| *a != "none").or(available.first()).cloned().unwrap_or_default()
            };
        }
        if !sorts.contains(&self.choices.sort) {
            self.choices.sort = sorts.first().cloned().unwrap_or_else(|| "fast".into());
        }
        self.available = available;
        self.sorts = sorts;
        self.compare = None;
    }

    /// The frames from now on run another scenario, body count or backend:
    /// the table's rows would no longer compare, so they start again (the
    /// history keeps the old frames for the export, labelled).
    pub fn set_workload(&mut self, scenario: &str, bodies: u32) {
        self.workload = (scenario.to_string(), bodies);
        self.table.clear();
        self.ranking.clear();
        self.compare = None;
    }

    /// The next frame: the user's choices, or the schedule's during "compare all".
    pub fn plan(&self) -> Plan {
        match &self.compare {
            Some(c) => Plan {
                choices: CollideChoices {
                    compact_pairs: c.algorithms[c.current].clone(),
                    sort: c.restore.sort.clone(),
                },
                snapshot: match (c.current, c.seen) {
                    (0, 0) => Snapshot::Take,
                    (_, 0) => Snapshot::Restore,
                    _ => Snapshot::Keep,
                },
            },
            None => Plan { choices: self.choices.clone(), snapshot: Snapshot::Keep },
        }
    }

    /// Starts "compare all" over every pair compaction the backend offers but
    /// `none`: without compaction the frontier grows fourfold per level and
    /// runs out of memory at any interesting size.
    pub fn start_compare(&mut self) {
        let algorithms: Vec<String> = self.available.iter().filter(|a| *a != "none").cloned().collect();
        if algorithms.is_empty() {
            self.message = Some((true, "no algorithm to compare on this backend".into()));
            return;
        }
        let n = algorithms.len();
        self.compare = Some(CollideCompare {
            algorithms,
            frames: self.compare_frames.max(1),
            warmup: 1,
            current: 0,
            seen: 0,
            measured: vec![CollideRow::new(); n],
            restore: self.choices.clone(),
        });
        self.paused = false;
    }

    pub fn cancel_compare(&mut self) {
        self.compare = None;
    }

    /// Takes one frame's measurements, made with `choices` on `backend`.
    pub fn record(&mut self, backend: &'static str, choices: &CollideChoices, stats: FrameStats) {
        self.frames_drawn += 1;
        self.table.entry(choices.label()).or_insert_with(CollideRow::new).push(&stats);
        self.advance_compare(&stats);
        if self.history.len() == EXPORT_FRAMES {
            self.history.pop_front();
        }
        self.history.push_back(CollideRecord {
            frame: self.frames_drawn,
            backend,
            scenario: self.workload.0.clone(),
            bodies: self.workload.1,
            choices: choices.clone(),
            parts: Part::ALL.map(|p| stats.part_ms(p)),
            stats,
        });
    }

    fn advance_compare(&mut self, stats: &FrameStats) {
        let Some(c) = &mut self.compare else { return };
        c.seen += 1;
        if c.seen > c.warmup {
            c.measured[c.current].push(stats);
        }
        if c.seen < c.warmup + c.frames {
            return;
        }
        c.current += 1;
        c.seen = 0;
        if c.current < c.algorithms.len() {
            return;
        }
        let mut ranking: Vec<CollideRanked> = c
            .algorithms
            .iter()
            .zip(&c.measured)
            .map(|(a, m)| CollideRanked {
                algorithm: a.clone(),
                frame_ms: m.frame_ms.mean(),
                compaction_ms: m.compaction_ms.mean(),
                candidates: m.candidates.mean(),
            })
            .collect();
        ranking.sort_by(|a, b| a.frame_ms.total_cmp(&b.frame_ms));
        self.choices = c.restore.clone();
        self.ranking = ranking;
        self.compare = None;
    }

    /// The last `CHART_FRAMES` frames, oldest first.
    pub fn chart_frames(&self) -> impl Iterator<Item = &CollideRecord> {
        self.history.iter().skip(self.history.len().saturating_sub(CHART_FRAMES))
    }

    /// Every kept frame, one row per stage (level where it applies).
    pub fn timings_csv(&self) -> String {
        let mut s = String::from(
            "frame,backend,scenario,bodies,compact_pairs,sort,stage,level,part,ms,frame_ms,wall_ms,pairs_tested,candidates,contacts\n",
        );
        for r in &self.history {
            for (id, ms) in &r.stats.stages {
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{},{:.6},{:.6},{:.6},{},{},{}",
                    r.frame,
                    r.backend,
                    r.scenario,
                    r.bodies,
                    r.choices.compact_pairs,
                    r.choices.sort,
                    id.name,
                    id.level.map(|v| v.to_string()).unwrap_or_default(),
                    id.part().name(),
                    ms,
                    r.stats.frame_ms,
                    r.stats.wall_ms,
                    r.stats.pairs_tested,
                    r.stats.candidates,
                    r.stats.contacts
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collide::{StageId, stage};

    fn algs() -> Vec<String> {
        ["none", "lookback", "atomic", "blelloch"].iter().map(|s| s.to_string()).collect()
    }

    fn sorts() -> Vec<String> {
        ["fast", "split:lookback"].iter().map(|s| s.to_string()).collect()
    }

    fn frame(frame_ms: f64, compact_ms: f64, candidates: u64) -> FrameStats {
        FrameStats {
            stages: vec![
                (StageId::frame(stage::SORT), frame_ms - compact_ms),
                (StageId::level(stage::COMPACT_PAIRS, 1), compact_ms),
            ],
            frontier: vec![1, 3],
            live: vec![1, 3],
            candidates,
            contacts: candidates / 2,
            frame_ms,
            wall_ms: frame_ms + 0.5,
            ..Default::default()
        }
    }

    #[test]
    fn starts_on_lookback_and_fast_and_falls_back_when_the_backend_lacks_them() {
        let mut s = CollideState::new(algs(), sorts(), "pile", 100);
        assert_eq!(s.choices, CollideChoices { compact_pairs: "lookback".into(), sort: "fast".into() });
        s.choices.compact_pairs = "blelloch".into();
        s.choices.sort = "split:lookback".into();
        s.start_compare();
        s.set_available(vec!["none".into(), "atomic".into()], vec!["fast".into()]);
        assert_eq!(s.choices, CollideChoices { compact_pairs: "atomic".into(), sort: "fast".into() });
        assert!(s.compare.is_none(), "a backend switch cancels compare all");
    }

    #[test]
    fn table_rows_follow_the_configuration_with_rolling_stats() {
        let mut s = CollideState::new(algs(), sorts(), "pile", 100);
        let first = s.plan().choices;
        for (f, k, c) in [(10.0, 1.0, 10), (20.0, 3.0, 20), (30.0, 5.0, 30)] {
            s.record("cpu", &first, frame(f, k, c));
        }
        s.choices.compact_pairs = "atomic".into();
        let second = s.plan().choices;
        s.record("cpu", &second, frame(8.0, 2.0, 40));
        assert_eq!(s.table.len(), 2);
        let row = &s.table["lookback, fast"];
        assert_eq!(row.frames, 3);
        assert_eq!((row.frame_ms.mean(), row.frame_ms.min(), row.frame_ms.max()), (20.0, 10.0, 30.0));
        assert_eq!(row.compaction_ms.mean(), 3.0);
        assert_eq!(row.candidates.mean(), 20.0);
        assert_eq!(row.contacts.max(), 15.0);
        assert_eq!(s.table["atomic, fast"].compaction_ms.mean(), 2.0);
        let last = s.history.back().expect("a record");
        assert_eq!(last.parts, [6.0, 0.0, 2.0, 0.0, 0.0], "sort is build, compact pairs is compact");
    }

    #[test]
    fn compare_all_runs_each_algorithm_from_one_snapshot_then_ranks_and_restores() {
        let mut s = CollideState::new(algs(), sorts(), "drum", 100);
        s.choices = CollideChoices { compact_pairs: "atomic".into(), sort: "split:lookback".into() };
        let mine = s.choices.clone();
        s.compare_frames = 2;
        s.start_compare();
        let cost = |a: &str| match a {
            "lookback" => 4.0,
            "atomic" => 3.0,
            _ => 5.0,
        };
        let mut order = Vec::new();
        let mut snapshots = Vec::new();
        while s.compare.is_some() {
            let p = s.plan();
            assert_eq!(p.choices.sort, "split:lookback", "compare all keeps the user's sort");
            order.push(p.choices.compact_pairs.clone());
            snapshots.push(p.snapshot);
            // A slow warm-up frame must not count.
            let warm = s.compare.as_ref().is_some_and(|c| c.seen == 0);
            let ms = if warm { 1000.0 } else { cost(&p.choices.compact_pairs) };
            s.record("cpu", &p.choices, frame(ms, ms / 2.0, 7));
        }
        assert_eq!(
            order,
            ["lookback", "lookback", "lookback", "atomic", "atomic", "atomic", "blelloch", "blelloch", "blelloch"]
        );
        use Snapshot::*;
        assert_eq!(snapshots, [Take, Keep, Keep, Restore, Keep, Keep, Restore, Keep, Keep]);
        let names: Vec<&str> = s.ranking.iter().map(|r| r.algorithm.as_str()).collect();
        assert_eq!(names, ["atomic", "lookback", "blelloch"]);
        assert_eq!((s.ranking[0].frame_ms, s.ranking[0].compaction_ms, s.ranking[0].candidates), (3.0, 1.5, 7.0));
        assert_eq!(s.choices, mine);
        assert_eq!(s.plan(), Plan { choices: mine, snapshot: Keep });
    }

    #[test]
    fn compare_all_without_an_algorithm_says_so() {
        let mut s = CollideState::new(vec!["none".into()], sorts(), "gas", 10);
        s.start_compare();
        assert!(s.compare.is_none());
        assert!(s.message.as_ref().is_some_and(|(err, _)| *err));
    }

    #[test]
    fn a_new_workload_clears_the_table_and_labels_the_export() {
        let mut s = CollideState::new(algs(), sorts(), "pile", 100);
        let c = s.plan().choices;
        s.record("cpu", &c, frame(4.0, 1.0, 3));
        s.set_workload("gas", 500);
        assert!(s.table.is_empty());
        s.record("cuda", &c, frame(2.0, 0.5, 3));
        let csv = s.timings_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 5, "a header and two stages per frame:\n{csv}");
        assert!(lines[0].starts_with("frame,backend,scenario,bodies,compact_pairs,sort,stage,level,part,ms"));
        assert!(lines[1].starts_with("1,cpu,pile,100,lookback,fast,sort,,build,3.0"), "{}", lines[1]);
        assert!(lines[4].starts_with("2,cuda,gas,500,lookback,fast,compact pairs,1,compact,0.5"), "{}", lines[4]);
        assert!(lines[0].contains(",ms,frame_ms,wall_ms,pairs_tested,"), "{}", lines[0]);
        assert!(lines[4].contains(",2.000000,2.500000,"), "{}", lines[4]);
        assert_eq!(s.chart_frames().count(), 2);
    }
}
