//! What `reap collide` leaves behind: the per-frame timings as JSON or CSV
//! and the summary table, and the per-frame means that `reap bench collide`
//! (bench.rs) builds its rows from. Every file is written to a temporary
//! name and renamed, and output paths are checked before the run starts, so
//! a bad path never costs a simulation.

use std::path::Path;

use crate::clocks::{gap_percent, gap_sentence};
use crate::files::write_atomically;
pub use crate::files::{TimingsFormat, check_output, timings_format};
use crate::report::{Fixed, csv_rows_then, fixed, spaced, stage_means};

use crate::collide::{CollideError, CollideResult, CollideSettings, FrameStats, Part};

fn fail(path: &Path, why: impl ToString) -> CollideError {
    crate::files::fail(path, why).into()
}

/// The checks `reap collide --out` runs before simulating: extension, then
/// the output check every writer goes through (a simulation reads no file).
pub fn check_timings_path(path: &Path) -> CollideResult<TimingsFormat> {
    let format = timings_format(path)?;
    check_output(path, &[])?;
    Ok(format)
}

/// The frames the means are taken over: frame 0 compiles kernels and fills
/// allocators, so it is left out when there is anything else.
pub fn measured(frames: &[FrameStats]) -> &[FrameStats] {
    if frames.len() > 1 { &frames[1..] } else { frames }
}

/// Milliseconds per part of the frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct PartTimes {
    pub build: f64,
    pub traverse: f64,
    pub compact: f64,
    pub narrow: f64,
    pub solve: f64,
}

impl PartTimes {
    pub fn of(f: &FrameStats) -> Self {
        let mut p = PartTimes::default();
        for part in Part::ALL {
            *p.get_mut(part) = f.part_ms(part);
        }
        p
    }

    pub fn get(&self, part: Part) -> f64 {
        match part {
            Part::Build => self.build,
            Part::Traverse => self.traverse,
            Part::Compact => self.compact,
            Part::Narrow => self.narrow,
            Part::Solve => self.solve,
        }
    }

    fn get_mut(&mut self, part: Part) -> &mut f64 {
        match part {
            Part::Build => &mut self.build,
            Part::Traverse => &mut self.traverse,
            Part::Compact => &mut self.compact,
            Part::Narrow => &mut self.narrow,
            Part::Solve => &mut self.solve,
        }
    }

    /// The mean over `frames` (zero for none).
    pub fn mean(frames: &[FrameStats]) -> Self {
        let n = frames.len().max(1) as f64;
        let mut p = PartTimes::default();
        for f in frames {
            for part in Part::ALL {
                *p.get_mut(part) += f.part_ms(part) / n;
            }
        }
        p
    }
}

/// What a run was: repeated on every frame's record, and the head of the
/// timings JSON.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Run<'a> {
    pub backend: &'a str,
    pub device: &'a str,
    pub scenario: &'a str,
    pub bodies: u32,
    pub seed: u64,
    pub settings: &'a CollideSettings,
    /// The contact graph's colours the solver ran with (`World::colours`; 0: Jacobi alone).
    pub colours: u32,
}

/// One stage of one frame.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StageTime {
    pub name: &'static str,
    pub level: Option<u32>,
    pub part: Part,
    pub ms: f64,
}

/// One frame as written to the timings file.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FrameRecord {
    pub frame: u32,
    pub bodies: u32,
    pub backend: String,
    pub scenario: String,
    pub compact_pairs: String,
    pub sort: String,
    pub stages: Vec<StageTime>,
    pub parts: PartTimes,
    /// LBVH build + pair traversal + its compaction: the 5 ms target.
    pub broad_ms: f64,
    /// The stages summed (device events on a GPU).
    pub frame_ms: f64,
    /// The wall clock: from the frame's start until its results are complete.
    pub wall_ms: f64,
    pub levels: usize,
    /// Slots entering each level (dead ones included under `none`).
    pub frontier: Vec<u64>,
    /// Live pairs entering each level.
    pub live: Vec<u64>,
    pub pairs_tested: u64,
    pub candidates: u64,
    pub contacts: u64,
}

impl FrameRecord {
    pub fn new(run: &Run<'_>, f: &FrameStats) -> Self {
        FrameRecord {
            frame: f.frame,
            bodies: run.bodies,
            backend: run.backend.into(),
            scenario: run.scenario.into(),
            compact_pairs: run.settings.compact_pairs.name().into(),
            sort: run.settings.sort.name(),
            stages: f
                .stages
                .iter()
                .map(|(id, ms)| StageTime { name: id.name, level: id.level, part: id.part(), ms: *ms })
                .collect(),
            parts: PartTimes::of(f),
            broad_ms: f.broad_ms(),
            frame_ms: f.frame_ms,
            wall_ms: f.wall_ms,
            levels: f.frontier.len(),
            frontier: f.frontier.clone(),
            live: f.live.clone(),
            pairs_tested: f.pairs_tested,
            candidates: f.candidates,
            contacts: f.contacts,
        }
    }
}

/// Means over a run's frames (frame 0 left out when there are more).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Summary {
    /// Frames the means are over.
    pub frames: usize,
    /// Whether frame 0 was left out as a warm-up.
    pub warm_up_excluded: bool,
    pub parts: PartTimes,
    pub broad_ms: f64,
    /// The stages summed (device events on a GPU).
    pub frame_ms: f64,
    /// The wall clock per frame.
    pub wall_ms: f64,
    /// How far the wall clock exceeds the summed stages, % of the latter.
    pub wall_gap_percent: Option<f64>,
    /// The fastest frame's broad phase.
    pub broad_ms_min: f64,
    /// Mean ms per stage name (all levels summed), in first-seen order.
    pub stage_ms: Vec<(String, f64)>,
    /// The most traversal levels of any frame.
    pub levels: usize,
    /// The largest frontier level of any frame, in slots.
    pub peak_frontier: u64,
    pub pairs_tested: f64,
    pub candidates: f64,
    pub contacts: f64,
}

impl Summary {
    pub fn of(all: &[FrameStats]) -> Self {
        let frames = measured(all);
        let n = frames.len().max(1) as f64;
        let mean = |f: &dyn Fn(&FrameStats) -> f64| frames.iter().map(f).sum::<f64>() / n;
        let stage_ms = stage_means(frames.iter().map(|f| f.stages.iter().map(|(id, t)| (id.name, *t))), n);
        Summary {
            frames: frames.len(),
            warm_up_excluded: all.len() > 1,
            parts: PartTimes::mean(frames),
            broad_ms: mean(&|f| f.broad_ms()),
            frame_ms: mean(&|f| f.frame_ms),
            wall_ms: mean(&|f| f.wall_ms),
            wall_gap_percent: gap_percent(mean(&|f| f.wall_ms), mean(&|f| f.frame_ms)),
            broad_ms_min: frames.iter().map(|f| f.broad_ms()).reduce(f64::min).unwrap_or(0.0),
            stage_ms,
            levels: frames.iter().map(|f| f.frontier.len()).max().unwrap_or(0),
            peak_frontier: frames.iter().flat_map(|f| f.frontier.iter().copied()).max().unwrap_or(0),
            pairs_tested: mean(&|f| f.pairs_tested as f64),
            candidates: mean(&|f| f.candidates as f64),
            contacts: mean(&|f| f.contacts as f64),
        }
    }
}

/// Everything a timings JSON holds.
#[derive(serde::Serialize)]
pub struct Timings<'a> {
    pub reap_commit: &'static str,
    #[serde(flatten)]
    pub run: Run<'a>,
    pub summary: Summary,
    pub frames: Vec<FrameRecord>,
}

/// A stage name as a CSV column: `aabb + morton` → `stage_aabb_morton_ms`.
fn column(name: &str) -> String {
    let mut s = String::from("stage_");
    for w in name.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        s.push_str(&w.to_ascii_lowercase());
        s.push('_');
    }
    s.push_str("ms");
    s
}

/// One row per frame: the run, every part, every stage (a per-level stage as
/// `level:ms` pairs separated by spaces), the frontier and live sizes per
/// level, and the counts.
fn timings_csv(path: &Path, run: &Run<'_>, frames: &[FrameStats]) -> CollideResult<Vec<u8>> {
    // Columns for every stage name seen, in first-seen order, so a stage added
    // to the pipeline shows up without touching this writer.
    let mut stages: Vec<&'static str> = Vec::new();
    for f in frames {
        for (id, _) in &f.stages {
            if !stages.contains(&id.name) {
                stages.push(id.name);
            }
        }
    }
    let rows = frames.iter().map(|f| {
        let row = FrameCsv {
            frame: f.frame,
            bodies: run.bodies,
            backend: run.backend,
            scenario: run.scenario,
            compact_pairs: run.settings.compact_pairs.name(),
            sort: run.settings.sort.name(),
            build_ms: fixed(f.part_ms(Part::Build), 6),
            traverse_ms: fixed(f.part_ms(Part::Traverse), 6),
            compact_ms: fixed(f.part_ms(Part::Compact), 6),
            narrow_ms: fixed(f.part_ms(Part::Narrow), 6),
            solve_ms: fixed(f.part_ms(Part::Solve), 6),
            broad_ms: fixed(f.broad_ms(), 6),
            frame_ms: fixed(f.frame_ms, 6),
            wall_ms: fixed(f.wall_ms, 6),
            levels: f.frontier.len(),
            pairs_tested: f.pairs_tested,
            candidates: f.candidates,
            contacts: f.contacts,
            frontier: spaced(&f.frontier),
            live: spaced(&f.live),
        };
        (row, stages.iter().map(|name| stage_cell(f, name)).collect())
    });
    let columns: Vec<String> = stages.iter().map(|s| column(s)).collect();
    csv_rows_then(rows, &columns).map_err(|e| fail(path, e))
}

/// The fixed columns of a timings CSV row: the run, every part, the counts.
#[derive(Default, serde::Serialize)]
struct FrameCsv<'a> {
    frame: u32,
    bodies: u32,
    backend: &'a str,
    scenario: &'a str,
    compact_pairs: &'a str,
    sort: String,
    build_ms: Fixed,
    traverse_ms: Fixed,
    compact_ms: Fixed,
    narrow_ms: Fixed,
    solve_ms: Fixed,
    broad_ms: Fixed,
    frame_ms: Fixed,
    wall_ms: Fixed,
    levels: usize,
    pairs_tested: u64,
    candidates: u64,
    contacts: u64,
    frontier: String,
    live: String,
}

/// One stage's cell in a frame: `level:ms` pairs for a per-level stage, the
/// summed ms otherwise, empty where the frame did not run it.
fn stage_cell(f: &FrameStats, name: &str) -> String {
    let at = f.stages.iter().filter(|(id, _)| id.name == name);
    if f.stages.iter().any(|(id, _)| id.name == name && id.level.is_some()) {
        at.map(|(id, ms)| format!("{}:{ms:.6}", id.level.unwrap_or(0))).collect::<Vec<_>>().join(" ")
    } else {
        at.map(|(_, ms)| *ms).reduce(|a, b| a + b).map(|ms| format!("{ms:.6}")).unwrap_or_default()
    }
}

/// Writes the timings as JSON (the run, its summary, every frame) or CSV (one
/// row per frame).
pub fn write_timings(path: &Path, run: &Run<'_>, frames: &[FrameStats]) -> CollideResult<()> {
    let bytes = match timings_format(path)? {
        TimingsFormat::Json => {
            let t = Timings {
                reap_commit: crate::build_info::GIT_COMMIT,
                run: *run,
                summary: Summary::of(frames),
                frames: frames.iter().map(|f| FrameRecord::new(run, f)).collect(),
            };
            serde_json::to_vec_pretty(&t).map_err(|e| fail(path, e))?
        }
        TimingsFormat::Csv => timings_csv(path, run, frames)?,
    };
    Ok(write_atomically(path, &bytes)?)
}

/// The summary table printed after `reap collide`.
pub fn summary_table(s: &Summary, frames: &[FrameStats]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let over = if s.warm_up_excluded { " (frame 0 left out as warm-up)" } else { "" };
    let _ = writeln!(out, "means over {} frames{over}:", s.frames);
    let _ = writeln!(out, "{:<24} {:>10} {:>7}", "part", "ms/frame", "share");
    let share = |ms: f64| if s.frame_ms > 0.0 { 100.0 * ms / s.frame_ms } else { 0.0 };
    for p in Part::ALL {
        let ms = s.parts.get(p);
        let _ = writeln!(out, "{:<24} {ms:>10.3} {:>6.1}%", p.name(), share(ms));
    }
    let _ = writeln!(
        out,
        "{:<24} {:>10.3} {:>6.1}%  (build + traverse + compact; best frame {:.3})",
        "broad phase",
        s.broad_ms,
        share(s.broad_ms),
        s.broad_ms_min
    );
    let _ = writeln!(out, "{:<24} {:>10.3}  (device events on a GPU)", "frame, summed stages", s.frame_ms);
    let _ = writeln!(out, "{:<24} {:>10.3}", "frame, wall clock", s.wall_ms);
    let _ = writeln!(out, "{}", gap_sentence(s.wall_ms, s.frame_ms));
    let _ = writeln!(out, "{:<24} {:>10}", "levels (most)", s.levels);
    let _ = writeln!(out, "{:<24} {:>10}", "peak frontier", s.peak_frontier);
    let _ = writeln!(out, "{:<24} {:>10.0}", "pairs tested", s.pairs_tested);
    let _ = writeln!(out, "{:<24} {:>10.0}", "candidates", s.candidates);
    let _ = writeln!(out, "{:<24} {:>10.0}", "contacts", s.contacts);
    if let Some(f) = frames.last() {
        let _ = writeln!(out, "frontier per level (last frame): {}", spaced(&f.frontier));
        let _ = writeln!(out, "live per level (last frame):     {}", spaced(&f.live));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::collide::{SortMethod, StageId, stage};
    use crate::compaction::{Algorithm, Compaction};

    pub(crate) fn settings(c: Compaction) -> CollideSettings {
        CollideSettings {
            compact_pairs: c,
            sort: SortMethod::Fast,
            substeps: 2,
            iterations: 4,
            max_frontier: 1 << 20,
            max_candidates: crate::collide::DEFAULT_MAX_CANDIDATES,
            fusion: Default::default(),
            order: Default::default(),
        }
    }

    pub(crate) fn frame(i: u32, ms: f64, candidates: u64) -> FrameStats {
        let stages = vec![
            (StageId::frame(stage::CODES), ms),
            (StageId::frame(stage::SORT), ms),
            (StageId::level(stage::EXPAND, 0), ms),
            (StageId::level(stage::COMPACT_PAIRS, 1), ms),
            (StageId::level(stage::EXPAND, 1), ms),
            (StageId::frame(stage::NARROW), ms),
            (StageId::frame(stage::SOLVE), ms),
        ];
        FrameStats {
            frame: i,
            frame_ms: 7.0 * ms,
            wall_ms: 8.0 * ms,
            stages,
            frontier: vec![1, 3],
            live: vec![1, 3],
            pairs_tested: 4,
            candidates,
            contacts: candidates / 2,
            pairs_site: None,
            graph: None,
        }
    }

    #[test]
    fn summary_leaves_out_the_warm_up_frame() {
        let frames = vec![frame(0, 100.0, 10), frame(1, 1.0, 10), frame(2, 3.0, 10)];
        let s = Summary::of(&frames);
        assert_eq!(s.frames, 2);
        assert!(s.warm_up_excluded);
        assert!((s.parts.build - 4.0).abs() < 1e-9, "{:?}", s.parts);
        assert!((s.parts.traverse - 4.0).abs() < 1e-9);
        assert!((s.broad_ms - 10.0).abs() < 1e-9);
        assert!((s.broad_ms_min - 5.0).abs() < 1e-9);
        assert_eq!((s.levels, s.peak_frontier), (2, 3));
        let one = Summary::of(&frames[..1]);
        assert_eq!((one.frames, one.warm_up_excluded), (1, false));
        // Frame 0's clocks are left out with it: 14 ms summed, 16 ms by wall clock.
        assert!((s.frame_ms - 14.0).abs() < 1e-9 && (s.wall_ms - 16.0).abs() < 1e-9, "{s:?}");
        assert!(s.wall_gap_percent.is_some_and(|g| (g - 100.0 * 2.0 / 14.0).abs() < 1e-9));
        let table = summary_table(&s, &frames);
        assert!(table.contains("broad phase"), "{table}");
        assert!(table.contains("the wall clock exceeds the summed stage times by 14.3 %"), "{table}");
    }

    #[test]
    fn csv_has_one_row_per_frame_and_levels_as_pairs() {
        let dir = std::env::temp_dir().join(format!("reap-collide-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = settings(Compaction::With(Algorithm::ALL[0]));
        let run =
            Run { backend: "cpu", device: "test", scenario: "pile", bodies: 10, seed: 1, settings: &s, colours: 16 };
        let path = dir.join("t.csv");
        write_timings(&path, &run, &[frame(0, 1.0, 2), frame(1, 1.0, 2)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("frame,bodies,backend,scenario,compact_pairs,sort,build_ms"), "{text}");
        assert!(lines[0].contains("stage_aabb_morton_ms") && lines[0].contains("stage_expand_level_ms"), "{text}");
        assert!(lines[1].contains("0:1.000000 1:1.000000"), "{text}");
        assert!(timings_format(&dir.join("t.txt")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The header, column order and number formats of a timings CSV, pinned.
    #[test]
    fn csv_keeps_its_columns_and_formats() {
        let s = settings(Compaction::With(Algorithm::ALL[0]));
        let run = Run {
            backend: "cpu",
            device: "test",
            scenario: "pile, big",
            bodies: 10,
            seed: 1,
            settings: &s,
            colours: 16,
        };
        let mut f = frame(1, 1.0 / 3.0, 7);
        f.stages.push((StageId::frame(stage::SOLVE), 0.5));
        let csv = timings_csv(Path::new("t.csv"), &run, &[frame(0, 1.0, 2), f]).unwrap();
        let want = concat!(
            "frame,bodies,backend,scenario,compact_pairs,sort,build_ms,traverse_ms,compact_ms,narrow_ms,solve_ms,broad_ms,frame_ms,wall_ms,levels,pairs_tested,candidates,contacts,frontier,live,stage_aabb_morton_ms,stage_sort_ms,stage_expand_level_ms,stage_compact_pairs_ms,stage_narrow_phase_ms,stage_solve_ms\n",
            "0,10,cpu,\"pile, big\",sequential,fast,2.000000,2.000000,1.000000,1.000000,1.000000,5.000000,7.000000,8.000000,2,4,2,1,1 3,1 3,1.000000,1.000000,0:1.000000 1:1.000000,1:1.000000,1.000000,1.000000\n",
            "1,10,cpu,\"pile, big\",sequential,fast,0.666667,0.666667,0.333333,0.333333,0.833333,1.666667,2.333333,2.666667,2,4,7,3,1 3,1 3,0.333333,0.333333,0:0.333333 1:0.333333,1:0.333333,0.333333,0.833333\n",
        );
        assert_eq!(String::from_utf8(csv).unwrap(), want);
    }
}
