//! What `reap collide` and `reap bench collide` leave behind: the per-frame
//! timings as JSON or CSV, the summary table, and the benchmark's rows,
//! table and report. Every file is written to a temporary name and renamed,
//! and output paths are checked before the run starts, so a bad path never
//! costs a simulation.

use std::path::Path;

use crate::files::write_atomically;
pub use crate::files::{TimingsFormat, check_writable, timings_format};

use crate::collide::{CollideError, CollideResult, CollideSettings, Contact, FrameStats, Part};

fn fail(path: &Path, why: impl ToString) -> CollideError {
    CollideError::Output { path: path.display().to_string(), why: why.to_string() }
}

/// The checks `reap collide --out` runs before simulating: extension, then a
/// trial write.
pub fn check_timings_path(path: &Path) -> CollideResult<TimingsFormat> {
    let format = timings_format(path)?;
    check_writable(path)?;
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

/// What a run was: repeated on every frame's record.
#[derive(Clone, Copy, Debug)]
pub struct Run<'a> {
    pub backend: &'a str,
    pub device: &'a str,
    pub scenario: &'a str,
    pub bodies: u32,
    pub seed: u64,
    pub settings: &'a CollideSettings,
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
    pub frame_ms: f64,
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
    pub frame_ms: f64,
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
        let mut stage_ms: Vec<(String, f64)> = Vec::new();
        for f in frames {
            for (id, t) in &f.stages {
                match stage_ms.iter_mut().find(|(s, _)| s == id.name) {
                    Some((_, v)) => *v += t / n,
                    None => stage_ms.push((id.name.to_string(), t / n)),
                }
            }
        }
        Summary {
            frames: frames.len(),
            warm_up_excluded: all.len() > 1,
            parts: PartTimes::mean(frames),
            broad_ms: mean(&|f| f.broad_ms()),
            frame_ms: mean(&|f| f.frame_ms),
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
    pub backend: &'a str,
    pub device: &'a str,
    pub scenario: &'a str,
    pub bodies: u32,
    pub seed: u64,
    pub settings: &'a CollideSettings,
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

fn list(v: &[u64]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ")
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
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| fail(path, e);
    let mut header: Vec<String> =
        ["frame", "bodies", "backend", "scenario", "compact_pairs", "sort"].map(String::from).to_vec();
    header.extend(Part::ALL.iter().map(|p| format!("{}_ms", p.name())));
    header.extend(
        ["broad_ms", "frame_ms", "levels", "pairs_tested", "candidates", "contacts", "frontier", "live"]
            .map(String::from),
    );
    header.extend(stages.iter().map(|s| column(s)));
    w.write_record(&header).map_err(err)?;
    for f in frames {
        let mut row = vec![
            f.frame.to_string(),
            run.bodies.to_string(),
            run.backend.to_string(),
            run.scenario.to_string(),
            run.settings.compact_pairs.name().to_string(),
            run.settings.sort.name(),
        ];
        row.extend(Part::ALL.iter().map(|p| format!("{:.6}", f.part_ms(*p))));
        row.extend([
            format!("{:.6}", f.broad_ms()),
            format!("{:.6}", f.frame_ms),
            f.frontier.len().to_string(),
            f.pairs_tested.to_string(),
            f.candidates.to_string(),
            f.contacts.to_string(),
            list(&f.frontier),
            list(&f.live),
        ]);
        for name in &stages {
            let at = f.stages.iter().filter(|(id, _)| id.name == *name);
            let cell = if f.stages.iter().any(|(id, _)| id.name == *name && id.level.is_some()) {
                at.map(|(id, ms)| format!("{}:{ms:.6}", id.level.unwrap_or(0))).collect::<Vec<_>>().join(" ")
            } else {
                at.map(|(_, ms)| *ms).reduce(|a, b| a + b).map(|ms| format!("{ms:.6}")).unwrap_or_default()
            };
            row.push(cell);
        }
        w.write_record(&row).map_err(err)?;
    }
    w.into_inner().map_err(|e| fail(path, e))
}

/// Writes the timings as JSON (the run, its summary, every frame) or CSV (one
/// row per frame).
pub fn write_timings(path: &Path, run: &Run<'_>, frames: &[FrameStats]) -> CollideResult<()> {
    let bytes = match timings_format(path)? {
        TimingsFormat::Json => {
            let t = Timings {
                reap_commit: crate::bench::output::GIT_COMMIT,
                backend: run.backend,
                device: run.device,
                scenario: run.scenario,
                bodies: run.bodies,
                seed: run.seed,
                settings: run.settings,
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
    let _ = writeln!(out, "{:<24} {:>10.3}", "frame", s.frame_ms);
    let _ = writeln!(out, "{:<24} {:>10}", "levels (most)", s.levels);
    let _ = writeln!(out, "{:<24} {:>10}", "peak frontier", s.peak_frontier);
    let _ = writeln!(out, "{:<24} {:>10.0}", "pairs tested", s.pairs_tested);
    let _ = writeln!(out, "{:<24} {:>10.0}", "candidates", s.candidates);
    let _ = writeln!(out, "{:<24} {:>10.0}", "contacts", s.contacts);
    if let Some(f) = frames.last() {
        let _ = writeln!(out, "frontier per level (last frame): {}", list(&f.frontier));
        let _ = writeln!(out, "live per level (last frame):     {}", list(&f.live));
    }
    out
}

/// A hash of a frame's sorted candidate pairs and contacts: equal hashes mean
/// the broad and narrow phases found exactly the same sets.
pub fn set_hash(pairs: &[u64], contacts: &[Contact]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    let mut mix = |w: u64| {
        h ^= w;
        h = h.wrapping_mul(0x100000001b3);
    };
    mix(pairs.len() as u64);
    pairs.iter().for_each(|p| mix(*p));
    mix(contacts.len() as u64);
    bytemuck::cast_slice::<Contact, u32>(contacts).iter().for_each(|w| mix(*w as u64));
    format!("{h:016x}")
}

/// One configuration of `reap bench collide`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchRow {
    pub backend: String,
    pub scenario: String,
    pub bodies: u32,
    pub seed: u64,
    pub sort: String,
    /// The frontier's compaction algorithm, or `none`.
    pub compaction: String,
    pub iterations: u32,
    /// Frames run (the means leave out frame 0 when there are more).
    pub frames: u32,
    pub parts: PartTimes,
    pub broad_ms: f64,
    pub broad_ms_min: f64,
    pub frame_ms: f64,
    pub levels: usize,
    pub peak_frontier: u64,
    pub pairs_tested: f64,
    pub candidates: f64,
    pub contacts: f64,
    /// Every frame's counts, warm-up included: compared across algorithms.
    pub candidates_per_frame: Vec<u64>,
    pub contacts_per_frame: Vec<u64>,
    /// [`set_hash`] of the last frame.
    pub last_frame_sets: String,
    /// Why the configuration could not run (a `none` frontier that outgrew its limit).
    pub error: Option<String>,
}

impl BenchRow {
    fn base(run: &Run<'_>, frames: u32) -> Self {
        BenchRow {
            backend: run.backend.into(),
            scenario: run.scenario.into(),
            bodies: run.bodies,
            seed: run.seed,
            sort: run.settings.sort.name(),
            compaction: run.settings.compact_pairs.name().into(),
            iterations: run.settings.iterations,
            frames,
            parts: PartTimes::default(),
            broad_ms: 0.0,
            broad_ms_min: 0.0,
            frame_ms: 0.0,
            levels: 0,
            peak_frontier: 0,
            pairs_tested: 0.0,
            candidates: 0.0,
            contacts: 0.0,
            candidates_per_frame: Vec::new(),
            contacts_per_frame: Vec::new(),
            last_frame_sets: String::new(),
            error: None,
        }
    }

    pub fn measured(run: &Run<'_>, frames: &[FrameStats], last_frame_sets: String) -> Self {
        let s = Summary::of(frames);
        BenchRow {
            parts: s.parts,
            broad_ms: s.broad_ms,
            broad_ms_min: s.broad_ms_min,
            frame_ms: s.frame_ms,
            levels: s.levels,
            peak_frontier: s.peak_frontier,
            pairs_tested: s.pairs_tested,
            candidates: s.candidates,
            contacts: s.contacts,
            candidates_per_frame: frames.iter().map(|f| f.candidates).collect(),
            contacts_per_frame: frames.iter().map(|f| f.contacts).collect(),
            last_frame_sets,
            ..Self::base(run, frames.len() as u32)
        }
    }

    pub fn failed(run: &Run<'_>, frames: u32, why: String) -> Self {
        BenchRow { error: Some(why), ..Self::base(run, frames) }
    }

    fn group(&self) -> (&str, &str, u32, &str) {
        (&self.backend, &self.scenario, self.bodies, &self.sort)
    }
}

/// Where measured rows of one (backend, scenario, bodies, sort) disagree on
/// the per-frame candidate or contact counts or on the last frame's sets: one
/// line per row that differs from its group's first. Empty when all agree.
pub fn disagreements(rows: &[BenchRow]) -> Vec<String> {
    let ok: Vec<&BenchRow> = rows.iter().filter(|r| r.error.is_none()).collect();
    let mut out = Vec::new();
    for (i, r) in ok.iter().enumerate() {
        let Some(first) = ok[..i].iter().find(|o| o.group() == r.group()) else { continue };
        let what = if r.candidates_per_frame != first.candidates_per_frame {
            "candidates per frame"
        } else if r.contacts_per_frame != first.contacts_per_frame {
            "contacts per frame"
        } else if r.last_frame_sets != first.last_frame_sets {
            "the last frame's candidate and contact sets"
        } else {
            continue;
        };
        out.push(format!(
            "{} bodies, sort {}: `{}` and `{}` differ in {what}",
            r.bodies, r.sort, first.compaction, r.compaction
        ));
    }
    out
}

/// Whether every sort method found the same sets too (the same order by
/// construction, so the same tree): reported, not required.
fn sorts_agree(rows: &[BenchRow]) -> bool {
    let ok: Vec<&BenchRow> = rows.iter().filter(|r| r.error.is_none()).collect();
    ok.iter().all(|r| {
        ok.iter().filter(|o| o.backend == r.backend && o.scenario == r.scenario && o.bodies == r.bodies).all(|o| {
            o.candidates_per_frame == r.candidates_per_frame
                && o.contacts_per_frame == r.contacts_per_frame
                && o.last_frame_sets == r.last_frame_sets
        })
    })
}

/// The plain-text table printed after `reap bench collide`.
pub fn bench_table(rows: &[BenchRow]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>8} {:<21} {:<27} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>6} {:>11} {:>10} {:>9}",
        "bodies",
        "sort",
        "compaction",
        "build",
        "traverse",
        "compact",
        "narrow",
        "solve",
        "broad",
        "frame ms",
        "levels",
        "peak front",
        "candidates",
        "contacts"
    );
    for r in rows {
        match &r.error {
            Some(e) => {
                let _ = writeln!(out, "{:>8} {:<21} {:<27} did not run: {e}", r.bodies, r.sort, r.compaction);
            }
            None => {
                let _ = writeln!(
                    out,
                    "{:>8} {:<21} {:<27} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>9.3} {:>6} {:>11} {:>10.0} {:>9.0}",
                    r.bodies,
                    r.sort,
                    r.compaction,
                    r.parts.build,
                    r.parts.traverse,
                    r.parts.compact,
                    r.parts.narrow,
                    r.parts.solve,
                    r.broad_ms,
                    r.frame_ms,
                    r.levels,
                    r.peak_frontier,
                    r.candidates,
                    r.contacts
                );
            }
        }
    }
    out
}

/// The broad-phase target of issue 7 at a million bodies, ms.
pub const TARGET_BROAD_MS: f64 = 5.0;

fn fastest<'a>(rows: impl Iterator<Item = &'a BenchRow>) -> Option<&'a BenchRow> {
    rows.filter(|r| r.error.is_none()).min_by(|a, b| a.broad_ms.total_cmp(&b.broad_ms))
}

/// report.md of `reap bench collide`: a per-frame breakdown table per body
/// count, the fastest algorithm, the 5 ms target and the agreement check.
pub fn bench_report(rows: &[BenchRow], device: &str, command: &str) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "# reap bench collide: {device}\n");
    let _ = writeln!(s, "Command: `{command}`\n");
    let _ = writeln!(s, "reap commit `{}`.\n", crate::bench::output::GIT_COMMIT);
    let _ = writeln!(
        s,
        "Each configuration starts from the same seeded scenario and runs its frames; the times are means per \
         frame in ms over every frame but the first (a warm-up), measured per stage (device events on a GPU). \
         build = AABBs, Morton codes, sort, LBVH and bounds; traverse = the breadth-first pair expansion, level \
         by level; compact = compacting the pair frontier after each level with the named algorithm (`none` \
         leaves dead slots in place, so the frontier grows fourfold per level); broad = build + traverse + \
         compact, the part issue 7 targets at {TARGET_BROAD_MS} ms for a million bodies. \"peak front\" is the \
         largest frontier level in slots; candidates are leaf pairs whose boxes overlap, contacts those whose \
         shapes touch (means per frame).\n"
    );
    let mut groups: Vec<(&str, &str, u32)> = Vec::new();
    for r in rows {
        let g = (r.backend.as_str(), r.scenario.as_str(), r.bodies);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    for (backend, scenario, bodies) in &groups {
        let at: Vec<&BenchRow> =
            rows.iter().filter(|r| r.backend == *backend && r.scenario == *scenario && r.bodies == *bodies).collect();
        let first = at[0];
        let _ = writeln!(
            s,
            "## {scenario}, {bodies} bodies ({backend}, {} frames, {} solver iterations, seed {})\n",
            first.frames, first.iterations, first.seed
        );
        let _ = writeln!(
            s,
            "| sort | compaction | build | traverse | compact | narrow | solve | broad | frame | levels | peak front | \
             pairs tested | candidates | contacts |"
        );
        let _ = writeln!(
            s,
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        for r in &at {
            match &r.error {
                Some(e) => {
                    let _ = writeln!(
                        s,
                        "| {} | `{}` | – | – | – | – | – | – | – | – | – | – | – | did not run: {e} |",
                        r.sort, r.compaction
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "| {} | `{}` | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | **{:.3}** | {:.3} | {} | {} | {:.0} | {:.0} | {:.0} |",
                        r.sort,
                        r.compaction,
                        r.parts.build,
                        r.parts.traverse,
                        r.parts.compact,
                        r.parts.narrow,
                        r.parts.solve,
                        r.broad_ms,
                        r.frame_ms,
                        r.levels,
                        r.peak_frontier,
                        r.pairs_tested,
                        r.candidates,
                        r.contacts
                    );
                }
            }
        }
        let _ = writeln!(s);
        let mut sorts: Vec<&str> = Vec::new();
        for r in &at {
            if !sorts.contains(&r.sort.as_str()) {
                sorts.push(&r.sort);
            }
        }
        for sort in sorts {
            let of_sort = || at.iter().copied().filter(|r| r.sort == sort);
            let best = fastest(of_sort().filter(|r| r.compaction != "none"));
            let none = of_sort().find(|r| r.compaction == "none");
            if let Some(b) = best {
                let vs = match none {
                    Some(n) if n.error.is_none() => {
                        format!("; `none` takes {:.3} ms ({:.2}x)", n.broad_ms, n.broad_ms / b.broad_ms.max(1e-9))
                    }
                    Some(_) => "; `none` did not run (its frontier outgrew the limit)".into(),
                    None => String::new(),
                };
                let _ = writeln!(
                    s,
                    "- sort {sort}: fastest broad phase with `{}`, {:.3} ms (compaction {:.3} ms, frame {:.3} ms){vs}.",
                    b.compaction, b.broad_ms, b.parts.compact, b.frame_ms
                );
            }
        }
        let _ = writeln!(s);
    }

    let _ = writeln!(s, "## Summary\n");
    let compacted = || rows.iter().filter(|r| r.compaction != "none");
    match fastest(compacted()) {
        None => {
            let _ = writeln!(s, "- No compacting configuration ran.");
        }
        Some(_) => {
            // Fastest per body count: the algorithm that wins most often is the headline.
            let mut wins: Vec<(&str, u32)> = Vec::new();
            for (backend, scenario, bodies) in &groups {
                let best = fastest(
                    compacted().filter(|r| r.backend == *backend && r.scenario == *scenario && r.bodies == *bodies),
                );
                if let Some(b) = best {
                    let _ = writeln!(
                        s,
                        "- {bodies} bodies ({scenario}, {backend}): fastest is `{}` with sort {}, broad phase {:.3} ms.",
                        b.compaction, b.sort, b.broad_ms
                    );
                    match wins.iter_mut().find(|(c, _)| *c == b.compaction) {
                        Some((_, k)) => *k += 1,
                        None => wins.push((&b.compaction, 1)),
                    }
                }
            }
            if let Some((alg, k)) = wins.iter().max_by_key(|(_, k)| *k) {
                let _ = writeln!(s, "- Fastest overall: `{alg}` (fastest at {k} of {} body counts).", groups.len());
            }
        }
    }
    let million: Vec<&BenchRow> = compacted().filter(|r| r.bodies >= 1_000_000).collect();
    match fastest(million.iter().copied()) {
        Some(b) => {
            let verdict = if b.broad_ms <= TARGET_BROAD_MS { "meets" } else { "misses" };
            let _ = writeln!(
                s,
                "- 5 ms target at {} bodies: the best broad phase (`{}`, sort {}) takes {:.3} ms per frame (best \
                 frame {:.3} ms): it **{verdict}** the {TARGET_BROAD_MS} ms target.",
                b.bodies, b.compaction, b.sort, b.broad_ms, b.broad_ms_min
            );
        }
        None => {
            let _ = writeln!(s, "- 5 ms target: no configuration with a million bodies or more ran.");
        }
    }
    let diff = disagreements(rows);
    if diff.is_empty() {
        let also = if sorts_agree(rows) { ", and every sort method found the same ones" } else { "" };
        let _ = writeln!(
            s,
            "- Agreement: every compaction choice found the same candidates and contacts in every frame for each \
             body count and sort (counts per frame and the last frame's sets){also}."
        );
    } else {
        let _ = writeln!(s, "- Agreement: **compaction choices disagree**:");
        for d in diff {
            let _ = writeln!(s, "  - {d}");
        }
    }
    s
}

/// The results file of `reap bench collide` (results.json).
#[derive(serde::Serialize)]
struct BenchResults<'a> {
    reap_commit: &'static str,
    device: &'a str,
    command: &'a str,
    rows: &'a [BenchRow],
}

/// Writes DIR/results.csv, results.json and report.md.
pub fn write_bench(dir: &Path, rows: &[BenchRow], device: &str, command: &str, report: &str) -> CollideResult<()> {
    let csv_path = dir.join("results.csv");
    let mut w = csv::Writer::from_writer(Vec::new());
    let err = |e: csv::Error| fail(&csv_path, e);
    let mut header: Vec<String> =
        ["backend", "scenario", "bodies", "seed", "sort", "compaction", "iterations", "frames"]
            .map(String::from)
            .to_vec();
    header.extend(Part::ALL.iter().map(|p| format!("{}_ms", p.name())));
    header.extend(
        [
            "broad_ms",
            "broad_ms_min",
            "frame_ms",
            "levels",
            "peak_frontier",
            "pairs_tested",
            "candidates",
            "contacts",
            "last_frame_sets",
            "error",
        ]
        .map(String::from),
    );
    w.write_record(&header).map_err(err)?;
    for r in rows {
        let mut row = vec![
            r.backend.clone(),
            r.scenario.clone(),
            r.bodies.to_string(),
            r.seed.to_string(),
            r.sort.clone(),
            r.compaction.clone(),
            r.iterations.to_string(),
            r.frames.to_string(),
        ];
        row.extend(Part::ALL.iter().map(|p| format!("{:.4}", r.parts.get(*p))));
        row.extend([
            format!("{:.4}", r.broad_ms),
            format!("{:.4}", r.broad_ms_min),
            format!("{:.4}", r.frame_ms),
            r.levels.to_string(),
            r.peak_frontier.to_string(),
            format!("{:.0}", r.pairs_tested),
            format!("{:.1}", r.candidates),
            format!("{:.1}", r.contacts),
            r.last_frame_sets.clone(),
            r.error.clone().unwrap_or_default(),
        ]);
        w.write_record(&row).map_err(err)?;
    }
    let bytes = w.into_inner().map_err(|e| fail(&csv_path, e))?;
    write_atomically(&csv_path, &bytes)?;
    let json_path = dir.join("results.json");
    let results = BenchResults { reap_commit: crate::bench::output::GIT_COMMIT, device, command, rows };
    let json = serde_json::to_vec_pretty(&results).map_err(|e| fail(&json_path, e))?;
    write_atomically(&json_path, &json)?;
    Ok(write_atomically(&dir.join("report.md"), report.as_bytes())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collide::{SortMethod, StageId, stage};
    use crate::compaction::{Algorithm, Compaction};

    fn settings(c: Compaction) -> CollideSettings {
        CollideSettings { compact_pairs: c, sort: SortMethod::Fast, iterations: 4, max_frontier: 1 << 20 }
    }

    fn frame(i: u32, ms: f64, candidates: u64) -> FrameStats {
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
        assert!(summary_table(&s, &frames).contains("broad phase"));
    }

    #[test]
    fn csv_has_one_row_per_frame_and_levels_as_pairs() {
        let dir = std::env::temp_dir().join(format!("reap-collide-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = settings(Compaction::With(Algorithm::ALL[0]));
        let run = Run { backend: "cpu", device: "test", scenario: "pile", bodies: 10, seed: 1, settings: &s };
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

    #[test]
    fn disagreeing_counts_are_reported() {
        let a = settings(Compaction::With(Algorithm::ALL[0]));
        let b = settings(Compaction::None);
        let run = |s| Run { backend: "cpu", device: "test", scenario: "pile", bodies: 10, seed: 1, settings: s };
        let rows = vec![
            BenchRow::measured(&run(&a), &[frame(0, 1.0, 4)], "x".into()),
            BenchRow::measured(&run(&b), &[frame(0, 1.0, 4)], "x".into()),
            BenchRow::failed(&run(&b), 1, "too large".into()),
        ];
        assert!(disagreements(&rows).is_empty());
        let md = bench_report(&rows, "test", "reap bench collide");
        assert!(md.contains("Agreement: every compaction choice"), "{md}");
        assert!(md.contains("did not run: too large"), "{md}");
        let rows = vec![
            BenchRow::measured(&run(&a), &[frame(0, 1.0, 4)], "x".into()),
            BenchRow::measured(&run(&b), &[frame(0, 1.0, 6)], "x".into()),
        ];
        assert_eq!(disagreements(&rows).len(), 1);
    }
}
