//! What `reap bench collide` leaves behind: one row per configuration, the
//! agreement check across compaction choices, the table printed, report.md,
//! results.csv and results.json. (Split from output.rs, which keeps what
//! `reap collide` writes, to keep each file to one job.)

use std::path::Path;

use crate::clocks::{gap_cell, gap_percent, mean_gap_sentence};
use crate::collide::output::{PartTimes, Run, Summary};
use crate::collide::peer::PeerRow;
use crate::collide::quality::{self, EnergyRun, Quality};
use crate::collide::{CollideResult, Contact, FrameStats};
use crate::report::{Fixed, first_seen, fixed, report_head, write_bench_files};
use crate::table::{self, Column, Mark, Shown, num};

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
    /// How its site ran: `fused` into the expansion or a `separate` pass
    /// (empty for `none` or a row that did not run).
    pub site: String,
    /// How the measured frames reached the device (`replayed` CUDA graphs,
    /// `streamed` launches, or `k/n replayed`); empty on the CPU.
    pub graph: String,
    /// Solver substeps per frame, passes per substep, and the colours a
    /// pass goes by (0: Jacobi alone).
    pub substeps: u32,
    pub iterations: u32,
    pub colours: u32,
    /// Frames run (the means leave out frame 0 when there are more).
    pub frames: u32,
    pub parts: PartTimes,
    pub broad_ms: f64,
    pub broad_ms_min: f64,
    /// The stages summed, ms per frame (device events on a GPU).
    pub frame_ms: f64,
    /// The wall clock, ms per frame.
    pub wall_ms: f64,
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
    /// The last frame's contacts per body and penetration.
    pub quality: Quality,
    /// The energy before the first frame and after each, from an untimed
    /// run of the same start (every configuration steps the same bodies, so
    /// one run serves a body count's rows).
    pub energy: EnergyRun,
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
            site: String::new(),
            graph: String::new(),
            substeps: run.settings.substeps,
            iterations: run.settings.iterations,
            colours: run.colours,
            frames,
            parts: PartTimes::default(),
            broad_ms: 0.0,
            broad_ms_min: 0.0,
            frame_ms: 0.0,
            wall_ms: 0.0,
            levels: 0,
            peak_frontier: 0,
            pairs_tested: 0.0,
            candidates: 0.0,
            contacts: 0.0,
            candidates_per_frame: Vec::new(),
            contacts_per_frame: Vec::new(),
            last_frame_sets: String::new(),
            quality: Quality::default(),
            energy: EnergyRun::default(),
            error: None,
        }
    }

    pub fn measured(run: &Run<'_>, frames: &[FrameStats], last_frame_sets: String, quality: Quality) -> Self {
        let s = Summary::of(frames);
        BenchRow {
            site: frames.first().and_then(|f| f.pairs_site).map_or(String::new(), |p| p.name().into()),
            // The frames the means cover (all but the first).
            graph: crate::replay::FramePath::summary(frames.iter().skip(1).map(|f| f.graph)),
            parts: s.parts,
            broad_ms: s.broad_ms,
            broad_ms_min: s.broad_ms_min,
            frame_ms: s.frame_ms,
            wall_ms: s.wall_ms,
            levels: s.levels,
            peak_frontier: s.peak_frontier,
            pairs_tested: s.pairs_tested,
            candidates: s.candidates,
            contacts: s.contacts,
            candidates_per_frame: frames.iter().map(|f| f.candidates).collect(),
            contacts_per_frame: frames.iter().map(|f| f.contacts).collect(),
            last_frame_sets,
            quality,
            ..Self::base(run, frames.len() as u32)
        }
    }

    pub fn failed(run: &Run<'_>, frames: u32, why: String) -> Self {
        BenchRow { error: Some(why), ..Self::base(run, frames) }
    }

    fn group(&self) -> (&str, &str, u32, &str) {
        (&self.backend, &self.scenario, self.bodies, &self.sort)
    }

    /// This row's line of results.csv: its numbers at fixed digits.
    fn csv_line(&self) -> BenchCsv<'_> {
        BenchCsv {
            backend: &self.backend,
            scenario: &self.scenario,
            bodies: self.bodies,
            seed: self.seed,
            sort: &self.sort,
            compaction: &self.compaction,
            site: &self.site,
            graph: &self.graph,
            substeps: self.substeps,
            iterations: self.iterations,
            frames: self.frames,
            build_ms: Some(fixed(self.parts.build, 4)),
            traverse_ms: Some(fixed(self.parts.traverse, 4)),
            compact_ms: Some(fixed(self.parts.compact, 4)),
            narrow_ms: Some(fixed(self.parts.narrow, 4)),
            solve_ms: Some(fixed(self.parts.solve, 4)),
            broad_ms: Some(fixed(self.broad_ms, 4)),
            broad_ms_min: Some(fixed(self.broad_ms_min, 4)),
            frame_ms: Some(fixed(self.frame_ms, 4)),
            wall_ms: Some(fixed(self.wall_ms, 4)),
            wall_gap_percent: gap_percent(self.wall_ms, self.frame_ms).map(|g| fixed(g, 2)),
            levels: Some(self.levels),
            peak_frontier: Some(self.peak_frontier),
            pairs_tested: Some(fixed(self.pairs_tested, 0)),
            candidates: Some(fixed(self.candidates, 1)),
            contacts: Some(fixed(self.contacts, 1)),
            last_frame_sets: &self.last_frame_sets,
            error: self.error.as_deref(),
            ..quality_cells(&self.quality, &self.energy)
        }
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

/// The columns of `reap bench collide`'s tables, console and report.md.
fn columns() -> Vec<Column<BenchRow>> {
    type C = Column<BenchRow>;
    vec![
        // report.md names the body count in each section's heading.
        C::key("bodies", 8, |r| r.bodies.to_string()).right().only(Shown::Console),
        C::key("sort", 21, |r| r.sort.clone()),
        table::compaction_column(|r| r.compaction.clone()),
        C::key("site", 9, |r| r.site.clone()),
        C::key("graph", 9, |r| r.graph.clone()),
        C::value("build", 8, |r| num(r.parts.build, 3)),
        C::value("traverse", 8, |r| num(r.parts.traverse, 3)),
        C::value("compact", 8, |r| num(r.parts.compact, 3)),
        C::value("narrow", 8, |r| num(r.parts.narrow, 3)),
        C::value("solve", 8, |r| num(r.parts.solve, 3)),
        C::value("broad", 8, |r| num(r.broad_ms, 3)).marked(Mark::Bold),
        C::value("frame ms", 9, |r| num(r.frame_ms, 3)).reported_as("frame"),
        C::value("wall ms", 9, |r| num(r.wall_ms, 3)).reported_as("wall"),
        C::value("gap", 8, |r| gap_cell(r.wall_ms, r.frame_ms)),
        C::value("levels", 6, |r| r.levels.to_string()),
        C::value("peak front", 11, |r| r.peak_frontier.to_string()),
        C::value("pairs tested", 12, |r| num(r.pairs_tested, 0)).only(Shown::Report),
        C::value("candidates", 10, |r| num(r.candidates, 0)),
        C::value("contacts", 9, |r| num(r.contacts, 0)),
    ]
}

fn failed(r: &BenchRow) -> Option<String> {
    table::did_not_run(&r.error)
}

/// The plain-text table printed after `reap bench collide`.
pub fn bench_table(rows: &[BenchRow]) -> String {
    table::console(&columns(), rows, failed)
}

/// The broad-phase target of issue 7 at a million bodies, ms.
pub const TARGET_BROAD_MS: f64 = 5.0;

/// Frames `reap bench collide` runs before those it shows: the first sizes the
/// lists and the level bound, the next record the frame's two CUDA graphs
/// (the contact lists alternate between frames).
pub const GRAPH_WARM_UP: u32 = 4;

fn fastest<'a>(rows: impl Iterator<Item = &'a BenchRow>) -> Option<&'a BenchRow> {
    rows.filter(|r| r.error.is_none()).min_by(|a, b| a.broad_ms.total_cmp(&b.broad_ms))
}

/// report.md of `reap bench collide`: a per-frame breakdown table per body
/// count, the fastest algorithm, the 5 ms target and the agreement check.
pub fn bench_report(rows: &[BenchRow], device: &str, command: &str) -> String {
    use std::fmt::Write;
    let mut s = report_head("collide", device, command);
    let _ = writeln!(
        s,
        "Each configuration starts from the same seeded scenario and runs {GRAPH_WARM_UP} more frames than \
         measured: they size the lists and the level bound and record the frame's CUDA graphs (two: the contact \
         lists alternate), and are not shown. The times are means per frame in ms over every frame shown but \
         the first (a warm-up), measured per stage (device events on a GPU) and \
         summed; \"wall\" is the frame's wall clock (host time from its start until its results are complete) \
         and \"gap\" how far it exceeds the summed stages (launch overhead, host work between stages, and the \
         host waiting for counts). \"graph\" says how the frames reached a GPU: `replayed`, one CUDA graph a \
         frame recorded from the frame's launches (per-stage times from its event nodes), `streamed`, every \
         launch enqueued by the host, or how many of them replayed (a new level bound records a new graph). \
         build = AABBs, Morton codes, sort, LBVH and bounds; traverse = the breadth-first pair expansion, level \
         by level; compact = compacting the pair frontier after each level with the named algorithm (`none` \
         leaves dead slots in place, so the frontier grows fourfold per level); broad = build + traverse + \
         compact, the part issue 7 targets at {TARGET_BROAD_MS} ms for a million bodies. \"peak front\" is the \
         largest frontier level in slots; candidates are leaf pairs whose boxes overlap, contacts those whose \
         shapes touch (means per frame). Quality is the last frame's: contacts between bodies per body and \
         their penetration as a fraction of the smaller radius; the energy comes from one more, untimed run of \
         the same start that reads the bodies back after every frame (results.json has every frame's).\n"
    );
    let groups = first_seen(rows.iter().map(|r| (r.backend.as_str(), r.scenario.as_str(), r.bodies)));
    for (backend, scenario, bodies) in &groups {
        let at: Vec<&BenchRow> =
            rows.iter().filter(|r| r.backend == *backend && r.scenario == *scenario && r.bodies == *bodies).collect();
        let first = at[0];
        let _ = writeln!(
            s,
            "## {scenario}, {bodies} bodies ({backend}, {} frames, solver {} substeps x {} passes of {} colours, \
             seed {})\n",
            first.frames, first.substeps, first.iterations, first.colours, first.seed
        );
        s += &table::markdown(&columns(), at.iter().copied(), failed);
        let _ = writeln!(s);
        for sort in first_seen(at.iter().map(|r| r.sort.as_str())) {
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
                    "- sort {sort}: fastest broad phase with `{}`, {:.3} ms (compaction {:.3} ms, frame {:.3} ms summed, \
                     {:.3} ms by wall clock){vs}.",
                    b.compaction, b.broad_ms, b.parts.compact, b.frame_ms, b.wall_ms
                );
            }
        }
        if let Some(r) = at.iter().find(|r| r.error.is_none()) {
            let _ = writeln!(s, "- Last frame (`{}`): {}.", r.compaction, r.quality.line());
            let _ = writeln!(
                s,
                "- Solver (`{}`): {:.3} ms a frame, {:.1} % of the frame's stages; per substep {:.3} ms, per pass {:.3} ms (its setup shared out).",
                r.compaction,
                r.parts.solve,
                100.0 * r.parts.solve / r.frame_ms.max(1e-12),
                r.parts.solve / r.substeps.max(1) as f64,
                r.parts.solve / (r.substeps * r.iterations).max(1) as f64
            );
        }
        if let Some(line) = energy_sentence(&first.energy) {
            let _ = writeln!(s, "- {line}.");
        }
        if let Some(clocks) =
            mean_gap_sentence(at.iter().filter(|r| r.error.is_none()).map(|r| (r.wall_ms, r.frame_ms)))
        {
            let _ = writeln!(s, "- Clocks: {clocks}.");
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

/// The energy at the start, a quarter, half way and the end of a run.
pub(crate) fn energy_sentence(run: &EnergyRun) -> Option<String> {
    let last = run.samples.last()?.frame;
    Some(run.at(&quality::checkpoints(last)).line())
}

/// The results file of `reap bench collide` (results.json).
#[derive(serde::Serialize)]
struct BenchResults<'a> {
    reap_commit: &'static str,
    device: &'a str,
    command: &'a str,
    rows: &'a [BenchRow],
    /// Other engines on the same starts (`--peers`).
    peers: &'a [PeerRow],
}

/// Writes DIR/results.csv (reap's rows, then the peers'), results.json and report.md.
pub fn write_bench(
    dir: &Path,
    rows: &[BenchRow],
    peers: &[PeerRow],
    device: &str,
    command: &str,
    report: &str,
) -> CollideResult<()> {
    let results = BenchResults { reap_commit: crate::build_info::GIT_COMMIT, device, command, rows, peers };
    let lines = rows.iter().map(BenchRow::csv_line).chain(peers.iter().map(PeerRow::csv_line));
    Ok(write_bench_files(dir, lines, &results, report)?)
}

/// The quality and energy cells of a results.csv line, the rest default.
fn quality_cells<'a>(q: &Quality, energy: &EnergyRun) -> BenchCsv<'a> {
    BenchCsv {
        contacts_per_body: Some(fixed(q.contacts_per_body, 3)),
        mean_depth_r: Some(fixed(q.mean_depth, 4)),
        max_depth_r: Some(fixed(q.max_depth, 4)),
        kinetic_start: energy.samples.first().map(|e| fixed(e.kinetic, 4)),
        kinetic_end: energy.samples.last().map(|e| fixed(e.kinetic, 4)),
        // None for the driven drum (see [`EnergyRun::drift`]).
        energy_drift_percent: energy.drift().map(|d| fixed(100.0 * d, 3)),
        ..BenchCsv::default()
    }
}

impl PeerRow {
    /// Its line of results.csv: the engine as the backend, its solver in
    /// substeps and iterations, its wall clock and reap's quality and energy
    /// figures of it; what only reap measures stays empty.
    fn csv_line(&self) -> BenchCsv<'_> {
        let ran = self.skipped.is_none();
        let cells = if ran { quality_cells(&self.quality, &self.energy) } else { BenchCsv::default() };
        BenchCsv {
            backend: &self.peer,
            scenario: &self.scenario,
            bodies: self.bodies,
            seed: self.seed,
            substeps: self.substeps,
            iterations: self.solver_iterations,
            frames: self.frames,
            wall_ms: ran.then(|| fixed(self.wall_ms, 4)),
            error: self.skipped.as_deref(),
            ..cells
        }
    }
}

/// One line of `reap bench collide`'s results.csv: a [`BenchRow`] with its
/// numbers at fixed digits.
#[derive(Default, serde::Serialize)]
struct BenchCsv<'a> {
    backend: &'a str,
    scenario: &'a str,
    bodies: u32,
    seed: u64,
    sort: &'a str,
    compaction: &'a str,
    site: &'a str,
    graph: &'a str,
    substeps: u32,
    iterations: u32,
    frames: u32,
    // A peer's row (`PeerRow`) leaves empty what only reap measures: every stage and count.
    build_ms: Option<Fixed>,
    traverse_ms: Option<Fixed>,
    compact_ms: Option<Fixed>,
    narrow_ms: Option<Fixed>,
    solve_ms: Option<Fixed>,
    broad_ms: Option<Fixed>,
    broad_ms_min: Option<Fixed>,
    frame_ms: Option<Fixed>,
    wall_ms: Option<Fixed>,
    wall_gap_percent: Option<Fixed>,
    levels: Option<usize>,
    peak_frontier: Option<u64>,
    pairs_tested: Option<Fixed>,
    candidates: Option<Fixed>,
    contacts: Option<Fixed>,
    contacts_per_body: Option<Fixed>,
    /// Penetration over the radius, mean and most, at the last frame.
    mean_depth_r: Option<Fixed>,
    max_depth_r: Option<Fixed>,
    kinetic_start: Option<Fixed>,
    kinetic_end: Option<Fixed>,
    energy_drift_percent: Option<Fixed>,
    last_frame_sets: &'a str,
    error: Option<&'a str>,
}

#[cfg(test)]
mod tests;
