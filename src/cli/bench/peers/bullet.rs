//! `reap bench collide --peers bullet`: per body count, the start reap built
//! handed to PyBullet ([`reap::bench::peers::bullet`]), its bodies measured
//! by reap's ruler ([`reap::collide::peer`]). The peer runs time-limited and
//! bounded ([`super::process`]); a signal meanwhile stops it, removes its
//! temporary folder and ends the bench. A peer that cannot run gives a row
//! saying why; the exit code stays reap's.

use anyhow::Result;

use reap::bench::peers::CollidePeer;
use reap::bench::peers::bullet;
use reap::bench::peers::driver::{self, Skipped};
use reap::collide::peer::{PeerRow, PeerRun, Plan, Stepped};
use reap::collide::{Body, CollideSettings, Scenario, World};

use super::{PeerTimeout, process};

#[derive(clap::Args)]
pub struct CollidePeerArgs {
    /// Engines that step the same start beside reap, comma separated: `bullet` (PyBullet on the CPU, run
    /// with $REAP_PYTHON or python3; `python3 -m pip install pybullet numpy`). Its row gets reap's
    /// quality and energy figures of its bodies and its wall clock a frame.
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<CollidePeer>())]
    pub peers: Vec<CollidePeer>,
    /// PyBullet's solver iterations a substep (its numSolverIterations) [default: PyBullet's own, 50]. They
    /// are sequential impulses over every contact, not reap's Jacobi passes: the report states both.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub bullet_iterations: Option<u32>,
    #[command(flatten)]
    pub timeout: PeerTimeout,
}

/// One body count's start, as reap's rows stepped it.
pub struct Start<'a> {
    pub scenario: Scenario,
    pub world: &'a World,
    pub bodies: &'a [Body],
    pub seed: u64,
    /// reap's substeps a frame, which the peer takes too.
    pub substeps: u32,
    pub plan: Plan,
    /// The configuration of the frame that measures the peer's state.
    pub measure: &'a CollideSettings,
}

/// Every `--peers` engine on one body count's start.
pub fn compare(args: &CollidePeerArgs, start: &Start<'_>) -> Result<Vec<PeerRow>> {
    let mut out = Vec::new();
    let n = start.bodies.len() as u32;
    let sc = start.scenario;
    for &peer in &args.peers {
        let run = PeerRun {
            peer: peer.name(),
            scenario: sc.name(),
            bodies: n,
            seed: start.seed,
            substeps: start.substeps,
            plan: start.plan,
        };
        // Signals are caught only while the peer runs: they stop it and remove its folder, then the bench.
        let stepped = crate::cli::interrupt::catching(|| match peer {
            CollidePeer::Bullet => step_bullet(args, start),
        });
        if crate::cli::interrupt::stopped() {
            anyhow::bail!(
                "stopped by a signal while {} stepped {sc} with {n} bodies; its process was killed",
                peer.name()
            );
        }
        out.push(match stepped {
            Ok(stepped) => PeerRow::measured(&run, stepped, start.world, start.measure)?,
            Err(Skipped(why)) => {
                println!("{sc}, {n} bodies: {} skipped: {why}", peer.name());
                PeerRow::skipped(&run, why)
            }
        });
    }
    Ok(out)
}

/// The start stepped by PyBullet in a temporary folder.
fn step_bullet(args: &CollidePeerArgs, start: &Start<'_>) -> Result<Stepped, Skipped> {
    let dir = tempfile::tempdir().map_err(|e| Skipped(format!("no temporary folder for the driver: {e}")))?;
    let timeout = args.timeout.duration();
    println!(
        "{}, {} bodies: PyBullet steps {} frames of {} substeps (at most {} s, --peer-timeout)",
        start.scenario,
        start.bodies.len(),
        start.plan.steps(),
        start.substeps,
        timeout.as_secs()
    );
    let run = |command: &mut std::process::Command| process::run(command, timeout);
    let solver = bullet::Solver { substeps: start.substeps, iterations: args.bullet_iterations };
    bullet::step(&driver::python(), start.world, start.bodies, solver, &start.plan, dir.path(), run)
}
