//! Another physics engine beside reap (`reap bench collide --peers`): it
//! steps the start reap built, and its bodies come back to be measured by
//! reap's own ruler, so that both rows' figures mean the same. Its contacts
//! are found by reap's broad and narrow phase (one frame of the CPU engine
//! on its state) and read by [`Quality::of`]; its energy by
//! [`quality::energy`]'s terms at the frames reap's energy line quotes.
//!
//! Its frames line up with reap's rows ([`Plan`]): it steps as many frames as
//! a configuration does (`--settle`, the [`GRAPH_WARM_UP`] frames and
//! `--frames`), its time is the mean over the frames reap's means cover, and
//! its quality is measured on the state reap's last frame found its contacts
//! on (the one entering that frame).

use std::fmt::Write;

use crate::collide::bench::{BenchRow, GRAPH_WARM_UP, energy_sentence};
use crate::collide::cpu::CpuCollide;
use crate::collide::layout::{Body, World};
use crate::collide::quality::{self, Balance, EnergyRun, Quality};
use crate::collide::{CollideResult, CollideSettings, Engine, Frontier, frame};
use crate::report::first_seen;
use crate::table::{self, Column, Mark, num};

/// Where a peer's frames fall against reap's rows of one body count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// `--settle`: frames reap steps untimed before its configurations.
    pub settle: u32,
    /// `--frames`: the frames each configuration measures.
    pub frames: u32,
}

impl Plan {
    /// The frames the peer steps: the settling, the warm-up and the measured ones.
    pub fn steps(&self) -> u32 {
        self.settle.saturating_add(GRAPH_WARM_UP).saturating_add(self.frames)
    }

    /// The frames (0: the first) whose time reap's means cover: the measured
    /// ones, less the first when there are more.
    pub fn timed(&self) -> std::ops::Range<usize> {
        let first = self.settle.saturating_add(GRAPH_WARM_UP).saturating_add((self.frames > 1) as u32);
        first as usize..self.steps() as usize
    }

    /// After how many frames the state is that reap's last frame measured.
    pub fn quality_frame(&self) -> u32 {
        self.steps() - 1
    }

    /// The frames reap's energy line quotes, counted from the settled start,
    /// with the frame the peer reaches each after.
    pub fn energy_frames(&self) -> Vec<(u32, u32)> {
        quality::checkpoints(self.frames).into_iter().map(|k| (k, self.settle.saturating_add(k))).collect()
    }

    /// Every frame after which the peer reports its bodies, ascending.
    pub fn samples(&self) -> Vec<u32> {
        let mut at: Vec<u32> = self.energy_frames().into_iter().map(|(_, f)| f).collect();
        at.push(self.quality_frame());
        at.sort_unstable();
        at.dedup();
        at
    }
}

/// What a peer engine stepped, its bodies read back as reap's.
#[derive(Clone, Debug)]
pub struct Stepped {
    pub version: String,
    /// Its solver's iterations per substep.
    pub solver_iterations: u32,
    /// Building its world and bodies, seconds (not in any timing).
    pub setup_s: f64,
    /// Each frame's step, ms, the first frame first.
    pub step_ms: Vec<f64>,
    /// The bodies after each frame of [`Plan::samples`].
    pub samples: Vec<(u32, Vec<Body>)>,
}

/// The figures of `bodies` by reap's ruler: one frame of the CPU engine finds
/// their contacts (its broad and narrow phase, as every frame of reap finds
/// its own; the frame's solve moves the engine's copies, not these) and
/// [`Quality::of`] reads them. `s` is the frame's configuration.
pub fn measure(w: &World, bodies: &[Body], s: &CollideSettings) -> CollideResult<Quality> {
    let mut engine = CpuCollide::new(*w, bodies)?;
    let mut f = Frontier::new(&engine)?;
    frame(&mut engine, s, &mut f, 0)?;
    Ok(Quality::of(bodies, &engine.contact_list()?, w))
}

/// A peer engine on one scenario and body count, as `reap bench collide` reports it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PeerRow {
    /// The engine, as `--peers` names it (`bullet`).
    pub peer: String,
    pub version: String,
    pub scenario: String,
    pub bodies: u32,
    pub seed: u64,
    /// Substeps per frame, and its solver's iterations per substep (not reap's Jacobi passes).
    pub substeps: u32,
    pub solver_iterations: u32,
    /// Frames stepped ([`Plan::steps`]).
    pub frames: u32,
    pub setup_s: f64,
    /// The wall clock of a frame's step, ms, mean over [`Plan::timed`].
    pub wall_ms: f64,
    /// At [`Plan::quality_frame`].
    pub quality: Quality,
    /// At [`Plan::energy_frames`], numbered from the settled start as reap's.
    pub energy: EnergyRun,
    /// Why it did not run, or ran and cannot be measured.
    pub skipped: Option<String>,
}

/// Which run a [`PeerRow`] is of.
#[derive(Clone, Copy, Debug)]
pub struct PeerRun<'a> {
    pub peer: &'a str,
    pub scenario: &'a str,
    pub bodies: u32,
    pub seed: u64,
    pub substeps: u32,
    pub plan: Plan,
}

impl PeerRow {
    fn base(run: &PeerRun<'_>) -> Self {
        PeerRow {
            peer: run.peer.into(),
            version: String::new(),
            scenario: run.scenario.into(),
            bodies: run.bodies,
            seed: run.seed,
            substeps: run.substeps,
            solver_iterations: 0,
            frames: run.plan.steps(),
            setup_s: 0.0,
            wall_ms: 0.0,
            quality: Quality::default(),
            energy: EnergyRun::default(),
            skipped: None,
        }
    }

    pub fn skipped(run: &PeerRun<'_>, why: String) -> Self {
        PeerRow { skipped: Some(why), ..Self::base(run) }
    }

    /// The row of `stepped`, measured in world `w` (`s`: the measuring frame's configuration).
    pub fn measured(run: &PeerRun<'_>, stepped: Stepped, w: &World, s: &CollideSettings) -> CollideResult<Self> {
        let plan = run.plan;
        let at = |frame: u32| stepped.samples.iter().find(|(f, _)| *f == frame).map(|(_, b)| b);
        let Some(last) = at(plan.quality_frame()) else {
            return Ok(Self::skipped(run, format!("it reported no state after frame {}", plan.quality_frame())));
        };
        let quality = measure(w, last, s)?;
        let mut energy = EnergyRun::new(w);
        for (k, frame) in plan.energy_frames() {
            match at(frame) {
                Some(bodies) => energy.record(k, bodies, w),
                None => return Ok(Self::skipped(run, format!("it reported no state after frame {frame}"))),
            }
        }
        let timed = stepped.step_ms.get(plan.timed()).filter(|t| !t.is_empty()).unwrap_or(&stepped.step_ms);
        Ok(PeerRow {
            version: stepped.version,
            solver_iterations: stepped.solver_iterations,
            setup_s: stepped.setup_s,
            wall_ms: timed.iter().sum::<f64>() / timed.len().max(1) as f64,
            quality,
            energy,
            ..Self::base(run)
        })
    }
}

/// One line of the peers' table: reap's fastest row or a peer's.
struct Line {
    scenario: String,
    bodies: u32,
    engine: String,
    solver: String,
    wall_ms: f64,
    quality: Quality,
    energy: EnergyRun,
    skipped: Option<String>,
}

impl Line {
    fn of_peer(p: &PeerRow) -> Self {
        Line {
            scenario: p.scenario.clone(),
            bodies: p.bodies,
            engine: match p.version.as_str() {
                "" => p.peer.clone(),
                version => format!("{} ({version})", p.peer),
            },
            solver: format!("{} x {} iterations", p.substeps, p.solver_iterations),
            wall_ms: p.wall_ms,
            quality: p.quality,
            energy: p.energy.clone(),
            skipped: p.skipped.as_ref().map(|why| format!("skipped: {why}")),
        }
    }

    fn of_reap(r: &BenchRow) -> Self {
        Line {
            scenario: r.scenario.clone(),
            bodies: r.bodies,
            engine: format!("reap {} {}, sort {}", r.backend, r.compaction, r.sort),
            solver: format!("{} x {} passes", r.substeps, r.iterations),
            wall_ms: r.wall_ms,
            quality: r.quality,
            energy: r.energy.clone(),
            skipped: None,
        }
    }
}

fn percent(v: f64) -> String {
    num(100.0 * v, 2)
}

/// The total energy's change from the first sample to the last, as [`EnergyRun::drift`] judges it.
fn energy_change(e: &EnergyRun) -> String {
    match (e.balance, e.drift()) {
        (Balance::Driven, _) => "driven".into(),
        (_, Some(d)) => format!("{:+.3} %", 100.0 * d),
        (_, None) => "–".into(),
    }
}

fn columns() -> Vec<Column<Line>> {
    type C = Column<Line>;
    vec![
        C::key("scenario", 8, |l| l.scenario.clone()),
        C::key("bodies", 8, |l| l.bodies.to_string()).right(),
        C::key("engine", 36, |l| l.engine.clone()).marked(Mark::Code),
        C::value("solver", 22, |l| l.solver.clone()).left(),
        C::value("wall ms", 9, |l| num(l.wall_ms, 3)).reported_as("wall ms a frame").marked(Mark::Bold),
        C::value("contacts/body", 13, |l| num(l.quality.contacts_per_body, 2)),
        C::value("depth mean", 10, |l| percent(l.quality.mean_depth)).marked(Mark::Percent),
        C::value("depth max", 10, |l| percent(l.quality.max_depth)).marked(Mark::Percent),
        C::value("energy", 9, |l| energy_change(&l.energy)).reported_as("energy change"),
    ]
}

/// reap's row of the least wall clock on `scenario` with `bodies` bodies: the one a peer is set beside.
fn fastest_reap<'a>(rows: &'a [BenchRow], scenario: &str, bodies: u32) -> Option<&'a BenchRow> {
    rows.iter()
        .filter(|r| r.error.is_none() && r.scenario == scenario && r.bodies == bodies)
        .min_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms))
}

/// Per (scenario, bodies) of the peers: reap's row of the least wall clock, then each peer's.
fn lines(peers: &[PeerRow], rows: &[BenchRow]) -> Vec<Line> {
    let mut out = Vec::new();
    for (scenario, bodies) in first_seen(peers.iter().map(|p| (p.scenario.as_str(), p.bodies))) {
        out.extend(fastest_reap(rows, scenario, bodies).map(Line::of_reap));
        out.extend(peers.iter().filter(|p| p.scenario == scenario && p.bodies == bodies).map(Line::of_peer));
    }
    out
}

fn skipped(l: &Line) -> Option<String> {
    l.skipped.clone()
}

/// The peers' table printed after `reap bench collide`'s own.
pub fn table(peers: &[PeerRow], rows: &[BenchRow]) -> String {
    table::console(&columns(), &lines(peers, rows), skipped)
}

/// Whether reap's penetration is no worse than `peer`'s, mean and max.
fn verdict(reap: &Quality, peer: &Quality, name: &str) -> String {
    match (reap.mean_depth <= peer.mean_depth, reap.max_depth <= peer.max_depth) {
        (true, true) => format!("**no worse** than {name}'s, mean and max"),
        (true, false) => format!("**worse** than {name}'s at the deepest contact, no worse on the mean"),
        (false, true) => format!("**worse** than {name}'s on the mean, no worse at the deepest contact"),
        (false, false) => format!("**worse** than {name}'s, mean and max"),
    }
}

/// report.md's `## Peers` section.
pub fn markdown(peers: &[PeerRow], rows: &[BenchRow]) -> String {
    let mut s = String::from("\n## Peers\n\n");
    let _ = writeln!(
        s,
        "The same start (reap's scenario: bodies, shapes, sizes, masses, velocities, world, time step and \
         substeps) stepped by another engine, whose bodies are read back and measured by reap's own ruler: their \
         contacts are found by reap's broad and narrow phase (one frame of the CPU engine on the peer's state) \
         and their energy by reap's formulas. The peer steps as many frames as each configuration above \
         (`--settle`, {GRAPH_WARM_UP} warm-up frames, `--frames`); its quality is measured on the state whose \
         contacts reap's last frame found, its energy at the frames reap's energy line quotes, and its wall clock \
         a frame is the mean over the frames reap's means cover (reading its bodies back untimed). reap's line is \
         its configuration of the least wall clock. Energy change: the total's, first to last sample.\n"
    );
    s += &table::markdown(&columns(), &lines(peers, rows), skipped);
    for p in peers {
        let _ = writeln!(s, "\n### {}, {} bodies, against {}\n", p.scenario, p.bodies, p.peer);
        if let Some(why) = &p.skipped {
            let _ = writeln!(s, "{} was skipped: {why}", p.peer);
            continue;
        }
        let _ = writeln!(
            s,
            "- {} ({}): {} frames, {} substeps a frame, {} solver iterations a substep; setup {:.2} s (not timed); \
             {:.3} ms a frame.",
            p.peer, p.version, p.frames, p.substeps, p.solver_iterations, p.setup_s, p.wall_ms
        );
        let _ = writeln!(s, "- {}.", p.quality.line());
        if let Some(line) = energy_sentence(&p.energy) {
            let _ = writeln!(s, "- {line}.");
        }
        if let Some(r) = fastest_reap(rows, &p.scenario, p.bodies) {
            let _ = writeln!(
                s,
                "- reap's penetration is {}: mean {:.2} % against {:.2} %, max {:.2} % against {:.2} %; reap's wall \
                 clock {:.3} ms a frame against {:.3} ms (reap / peer {:.2}x).",
                verdict(&r.quality, &p.quality, &p.peer),
                100.0 * r.quality.mean_depth,
                100.0 * p.quality.mean_depth,
                100.0 * r.quality.max_depth,
                100.0 * p.quality.max_depth,
                r.wall_ms,
                p.wall_ms,
                r.wall_ms / p.wall_ms.max(1e-12)
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collide::scenario::{Scenario, build};
    use crate::collide::{Compaction, SortMethod};
    use crate::compaction::{Algorithm, Fusion};

    fn settings() -> CollideSettings {
        CollideSettings {
            compact_pairs: Compaction::With(Algorithm::Lookback),
            sort: SortMethod::Fast,
            substeps: 1,
            iterations: 1,
            max_frontier: 1 << 24,
            max_candidates: crate::collide::DEFAULT_MAX_CANDIDATES,
            fusion: Fusion::Auto,
            order: Default::default(),
        }
    }

    #[test]
    fn the_plan_lines_up_with_reaps_rows() {
        let p = Plan { settle: 10, frames: 8 };
        assert_eq!(p.steps(), 10 + GRAPH_WARM_UP + 8);
        // reap's means leave out its first measured frame.
        assert_eq!(p.timed(), (10 + GRAPH_WARM_UP as usize + 1)..p.steps() as usize);
        assert_eq!(p.quality_frame(), p.steps() - 1);
        assert_eq!(p.energy_frames(), [(0, 10), (2, 12), (4, 14), (8, 18)]);
        assert_eq!(p.samples(), [10, 12, 14, 18, p.quality_frame()]);
        let one = Plan { settle: 0, frames: 1 };
        assert_eq!(one.timed(), GRAPH_WARM_UP as usize..one.steps() as usize, "one frame: it is the mean");
    }

    /// Two spheres sunk 0.1 m into each other, a hair apart from a third:
    /// reap's ruler sees the overlap and the touching pair as `Quality::of` does.
    #[test]
    fn measure_finds_the_peers_contacts_by_reaps_narrow_phase() {
        let (w, mut bodies) = build(Scenario::Gas, 3, 1).expect("gas");
        let r = 0.4;
        for (i, x) in [2.0, 2.0 + 2.0 * r - 0.1, 2.0 + 4.0 * r - 0.1 + 0.001].into_iter().enumerate() {
            bodies[i] = Body { pos: [x, 2.0, 2.0], vel: [0.0; 3], omega: [0.0; 3], half: [r; 3], ..bodies[i] };
            bodies[i].shape = crate::collide::layout::SPHERE;
        }
        let q = measure(&w, &bodies, &settings()).expect("measured");
        assert!((q.mean_depth - 0.25).abs() < 1e-5 && (q.max_depth - 0.25).abs() < 1e-5, "{q:?}");
        assert!((q.contacts_per_body - 4.0 / 3.0).abs() < 1e-9, "two pairs touch: {q:?}");
    }

    #[test]
    fn a_row_takes_its_time_over_reaps_frames_and_its_figures_from_its_states() {
        let (w, bodies) = build(Scenario::Pile, 20, 1).expect("pile");
        let plan = Plan { settle: 0, frames: 4 };
        let run = PeerRun { peer: "bullet", scenario: "pile", bodies: 20, seed: 1, substeps: 6, plan };
        // Frames 0..4 are reap's warm-up and its first measured frame: 100 ms each, left out.
        let step_ms: Vec<f64> = (0..plan.steps()).map(|i| if i <= GRAPH_WARM_UP { 100.0 } else { 2.0 }).collect();
        let samples = plan.samples().into_iter().map(|f| (f, bodies.clone())).collect();
        let stepped =
            Stepped { version: "PyBullet 3.2.7".into(), solver_iterations: 50, setup_s: 0.1, step_ms, samples };
        let row = PeerRow::measured(&run, stepped, &w, &settings()).expect("measured");
        assert_eq!(row.wall_ms, 2.0);
        assert_eq!(row.energy.samples.iter().map(|e| e.frame).collect::<Vec<_>>(), [0, 1, 2, 4]);
        assert_eq!(row.quality.max_depth, 0.0, "the spawn has no overlap");
        assert!(row.skipped.is_none());
        let md = markdown(std::slice::from_ref(&row), &[]);
        assert!(
            md.contains("## Peers") && md.contains("bullet (PyBullet 3.2.7)") && md.contains("50 solver iterations"),
            "{md}"
        );
        let short = Stepped {
            version: String::new(),
            solver_iterations: 0,
            setup_s: 0.0,
            step_ms: Vec::new(),
            samples: Vec::new(),
        };
        let missing = PeerRow::measured(&run, short, &w, &settings()).expect("a row");
        assert!(missing.skipped.as_deref().is_some_and(|w| w.contains("no state")), "{missing:?}");
    }

    #[test]
    fn a_skipped_peer_says_why_in_the_table_and_the_report() {
        let run = PeerRun {
            peer: "bullet",
            scenario: "pile",
            bodies: 20,
            seed: 1,
            substeps: 6,
            plan: Plan { settle: 0, frames: 2 },
        };
        let row = PeerRow::skipped(&run, "No module named 'pybullet'".into());
        let rows = [row];
        let console = table(&rows, &[]);
        assert!(console.contains("bullet") && console.contains("skipped: No module named 'pybullet'"), "{console}");
        let md = markdown(&rows, &[]);
        assert!(md.contains("bullet was skipped: No module named 'pybullet'"), "{md}");
    }
}
