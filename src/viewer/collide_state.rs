//! The collision demo as a viewer [`Workload`]: the pair compaction and the
//! sort, the scenario and body count the frames run, and the per-stage
//! export. "Compare all" runs every algorithm from one snapshot of the
//! bodies, so that each measures the same frames.

use std::fmt::Write as _;

use super::state::{Metric, Record, State, Workload, lookback_or};
use crate::collide::{FrameStats, Part, Scenario, SortMethod};
use crate::compaction::Compaction;

/// The collision demo's state in the viewer.
pub type CollideState = State<Colliding>;

/// The choices that shape a frame's work but not its result: every
/// compaction algorithm and every sort give the same contacts, so switching
/// them keeps the simulation going.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollideChoices {
    pub compact_pairs: Compaction,
    pub sort: SortMethod,
}

/// What only the collision overlay shows and edits.
#[derive(Clone, Debug)]
pub struct Colliding {
    /// The sorts the backend offers (`fast` first).
    pub sorts: Vec<SortMethod>,
    /// The scenario and body count the next reset builds (the running ones
    /// are the session's).
    pub scenario: Scenario,
    pub bodies: u32,
    /// What the frames now recorded run.
    running: (Scenario, u32),
}

impl Workload for Colliding {
    type Choices = CollideChoices;
    type Stats = FrameStats;
    type Run = (Scenario, u32);
    const METRICS: &'static [Metric<FrameStats>] = &[
        Metric { column: "cand.", value: |s| s.candidates as f64, decimals: 0 },
        Metric { column: "cont.", value: |s| s.contacts as f64, decimals: 0 },
    ];
    const CSV_HEADER: &'static str = "frame,backend,scenario,bodies,compact_pairs,sort,stage,level,part,ms,frame_ms,wall_ms,pairs_tested,candidates,contacts";

    fn label(c: &CollideChoices) -> String {
        format!("{}, {}", c.compact_pairs.name(), c.sort.name())
    }

    /// The pair frontier runs the algorithm; the sort stays the user's.
    fn compare_choices(user: &CollideChoices, algorithm: Compaction) -> CollideChoices {
        CollideChoices { compact_pairs: algorithm, sort: user.sort }
    }

    /// Falls back to `lookback` (or the first but `none`) and the first sort.
    fn fit(&self, c: &mut CollideChoices, available: &[Compaction]) {
        if !available.contains(&c.compact_pairs) {
            c.compact_pairs = pair_fallback(available);
        }
        if !self.sorts.contains(&c.sort) {
            c.sort = self.sorts.first().copied().unwrap_or(SortMethod::Fast);
        }
    }

    fn compaction_ms(s: &FrameStats) -> f64 {
        s.part_ms(Part::Compact)
    }

    fn frame_ms(s: &FrameStats) -> f64 {
        s.frame_ms
    }

    /// Per part of the frame, in [`Part::ALL`]'s order.
    fn by_stage(s: &FrameStats) -> Vec<(&'static str, f64)> {
        Part::ALL.iter().map(|p| (p.name(), s.part_ms(*p))).collect()
    }

    fn run(&self) -> (Scenario, u32) {
        self.running
    }

    /// One row per stage (level where it applies).
    fn csv_rows(r: &Record<Self>, s: &mut String) {
        for (id, ms) in &r.stats.stages {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{:.6},{:.6},{:.6},{},{},{}",
                r.frame,
                r.backend,
                r.run.0.name(),
                r.run.1,
                r.choices.compact_pairs.name(),
                r.choices.sort.name(),
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
}

/// `lookback`, else the first algorithm but `none`, else the first choice:
/// without compaction the pair frontier grows fourfold per level.
fn pair_fallback(available: &[Compaction]) -> Compaction {
    lookback_or(available, || {
        let mut some = available.iter().copied();
        some.clone().find(|a| *a != Compaction::None).or(some.next()).unwrap_or(Compaction::None)
    })
}

impl CollideState {
    /// Starts on `lookback` and the first sort, running `scenario` with `bodies`.
    pub fn for_collide(available: Vec<Compaction>, sorts: Vec<SortMethod>, scenario: Scenario, bodies: u32) -> Self {
        let choices = CollideChoices {
            compact_pairs: pair_fallback(&available),
            sort: sorts.first().copied().unwrap_or(SortMethod::Fast),
        };
        let colliding = Colliding { sorts, scenario, bodies, running: (scenario, bodies) };
        State::new(colliding, choices, available, 16)
    }

    /// A new backend offers other algorithms and sorts.
    pub fn set_offer(&mut self, available: Vec<Compaction>, sorts: Vec<SortMethod>) {
        self.workload.sorts = sorts;
        self.set_available(available);
    }

    /// The frames from now on run another scenario, body count or backend:
    /// the table's rows would no longer compare, so they start again (the
    /// history keeps the old frames for the export, labelled).
    pub fn set_workload(&mut self, scenario: Scenario, bodies: u32) {
        self.workload.running = (scenario, bodies);
        self.table.clear();
        self.ranking.clear();
        self.compare = None;
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::harness::{ATOMIC, BLELLOCH, LOOKBACK, algs, ranked, run_compare_all};
    use super::super::state::{Plan, Snapshot};
    use super::*;
    use crate::collide::{StageId, stage};
    use crate::compaction::Algorithm;

    const SPLIT: SortMethod = SortMethod::Split(Algorithm::Lookback);
    const FAST: SortMethod = SortMethod::Fast;

    fn sorts() -> Vec<SortMethod> {
        vec![FAST, SPLIT]
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
        let mut s = CollideState::for_collide(algs(), sorts(), Scenario::Pile, 100);
        assert_eq!(s.choices, CollideChoices { compact_pairs: LOOKBACK, sort: FAST });
        s.choices.compact_pairs = BLELLOCH;
        s.choices.sort = SPLIT;
        s.start_compare();
        s.set_offer(vec![Compaction::None, ATOMIC], vec![FAST]);
        assert_eq!(s.choices, CollideChoices { compact_pairs: ATOMIC, sort: FAST });
        assert!(s.compare.is_none(), "a backend switch cancels compare all");
    }

    #[test]
    fn table_rows_follow_the_configuration_with_rolling_stats() {
        let mut s = CollideState::for_collide(algs(), sorts(), Scenario::Pile, 100);
        let first = s.plan().choices;
        for (f, k, c) in [(10.0, 1.0, 10), (20.0, 3.0, 20), (30.0, 5.0, 30)] {
            s.record("cpu", &first, frame(f, k, c));
        }
        s.choices.compact_pairs = ATOMIC;
        let second = s.plan().choices;
        s.record("cpu", &second, frame(8.0, 2.0, 40));
        assert_eq!(s.table.len(), 2);
        let row = &s.table["lookback, fast"];
        assert_eq!(row.frames, 3);
        assert_eq!((row.frame_ms.mean(), row.frame_ms.min(), row.frame_ms.max()), (20.0, 10.0, 30.0));
        assert_eq!(row.compaction_ms.mean(), 3.0);
        assert_eq!(row.metrics[0].mean(), 20.0);
        assert_eq!(row.metrics[1].max(), 15.0);
        assert_eq!(s.table["atomic, fast"].compaction_ms.mean(), 2.0);
        let last = s.history.back().expect("a record");
        let parts: Vec<f64> = last.by_stage.iter().map(|(_, ms)| *ms).collect();
        assert_eq!(parts, [6.0, 0.0, 2.0, 0.0, 0.0], "sort is build, compact pairs is compact");
    }

    #[test]
    fn compare_all_runs_each_algorithm_from_one_snapshot_then_ranks_and_restores() {
        let mut s = CollideState::for_collide(algs(), sorts(), Scenario::Drum, 100);
        s.choices = CollideChoices { compact_pairs: ATOMIC, sort: SPLIT };
        let mine = s.choices;
        let costs = [(LOOKBACK, 4.0), (ATOMIC, 3.0), (BLELLOCH, 5.0)];
        let plans = run_compare_all(&mut s, 2, |c| c.compact_pairs, &costs, |ms| frame(ms, ms / 2.0, 7));
        assert!(plans.iter().all(|p| p.choices.sort == SPLIT), "compare all keeps the user's sort");
        let order: Vec<&str> = plans.iter().map(|p| p.choices.compact_pairs.name()).collect();
        assert_eq!(
            order,
            ["lookback", "lookback", "lookback", "atomic", "atomic", "atomic", "blelloch", "blelloch", "blelloch"]
        );
        use Snapshot::*;
        let snapshots: Vec<Snapshot> = plans.iter().map(|p| p.snapshot).collect();
        assert_eq!(snapshots, [Take, Keep, Keep, Restore, Keep, Keep, Restore, Keep, Keep]);
        assert_eq!(ranked(&s), ["atomic", "lookback", "blelloch"]);
        assert_eq!((s.ranking[0].frame_ms, s.ranking[0].compaction_ms, s.ranking[0].metrics[0]), (3.0, 1.5, 7.0));
        assert_eq!(s.choices, mine);
        assert_eq!(s.plan(), Plan { choices: mine, snapshot: Keep });
    }

    #[test]
    fn compare_all_without_an_algorithm_says_so() {
        let mut s = CollideState::for_collide(vec![Compaction::None], sorts(), Scenario::Gas, 10);
        s.start_compare();
        assert!(s.compare.is_none());
        assert!(s.message.as_ref().is_some_and(|(err, _)| *err));
    }

    #[test]
    fn a_new_workload_clears_the_table_and_labels_the_export() {
        let mut s = CollideState::for_collide(algs(), sorts(), Scenario::Pile, 100);
        let c = s.plan().choices;
        s.record("cpu", &c, frame(4.0, 1.0, 3));
        s.set_workload(Scenario::Gas, 500);
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
