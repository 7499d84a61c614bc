//! `reap bench collide --gpus N`: the split collider beside one engine, each
//! body count and (sort, compaction) configuration from the same (settled)
//! start: frame times, what the split costs (ghosts, exchanges,
//! migrations), and the bodies and contact sets checked equal, bit for bit,
//! after every frame.

use std::fmt::Write as _;

use anyhow::{Result, bail};

use reap::collide::{Body, CollideSettings, Compaction, Engine, Live, Scenario, Simulation, run_frames};

use super::collide::{CollideBenchArgs, configs, reference};
use crate::cli::backend::{OnBackend, Opened, with_backend};
use crate::cli::collide::{build, check_split};
use reap::collide::split::GhostExchange;

/// One body count's and configuration's measurement.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SplitRow {
    pub bodies: u32,
    pub ranks: usize,
    pub sort: String,
    pub compaction: String,
    /// How the solver's exchanges travel (`peer`, `nccl`; CPU ranks: `shared` memory).
    pub exchange: String,
    /// Means over the measured frames, ms: summed stages and wall clock.
    pub one_frame_ms: f64,
    pub one_wall_ms: f64,
    pub split_frame_ms: f64,
    pub split_wall_ms: f64,
    /// Of the split's wall clock: ownership and halo, and the exchanges' lists with the counts.
    pub halo_ms: f64,
    pub lists_ms: f64,
    /// The solver (setup and substeps): one engine's summed stages, the split's wall clock (its exchanges in it).
    pub one_solve_ms: f64,
    pub split_solve_ms: f64,
    /// The speed-up in wall clock (one engine's over the split's).
    pub speedup: f64,
    /// Ghosts over all ranks per owned body, and what moved, per frame.
    pub ghost_share: f64,
    pub migrated: f64,
    pub exchanges: f64,
    pub ghost_values: f64,
    /// Measured frames whose bodies, candidates and contacts equal one engine's, bit for bit, and
    /// whether the first (unmeasured) one did.
    pub identical: u32,
    pub first_identical: bool,
    /// The split's own steps (ownership and halo on the GPUs), ms a frame.
    #[serde(skip)]
    pub parts: Vec<(String, f64)>,
    pub frames: u32,
}

pub fn run(args: &CollideBenchArgs, sc: Scenario) -> Result<bool> {
    if !args.peer.peers.is_empty() || args.both_paths {
        bail!("--peers and --both-paths measure one engine: drop them, or drop --gpus");
    }
    let mut rows = Vec::new();
    for &n in &args.bodies {
        rows.extend(with_backend(args.backend, &args.adapter, SplitBench { args, scenario: sc, bodies: n })?);
    }
    let table = table(&rows);
    println!("{table}");
    if let Some(dir) = &args.out {
        let command = std::env::args().collect::<Vec<_>>().join(" ");
        let md = format!("# reap bench collide, split over ranks\n\n`{command}`\n\n{table}\n");
        let json = serde_json::json!({ "reap_commit": reap::build_info::GIT_COMMIT, "command": command, "rows": rows });
        reap::report::write_bench_files(dir, rows.iter().cloned(), &json, &md)?;
        println!("wrote results.csv, results.json and report.md in {}", dir.display());
    }
    Ok(rows.iter().all(|r| r.identical == r.frames && r.first_identical))
}

struct SplitBench<'a> {
    args: &'a CollideBenchArgs,
    scenario: Scenario,
    bodies: u32,
}

impl OnBackend for SplitBench<'_> {
    type Output = Vec<SplitRow>;
    fn run<B: Opened>(self, backend: B) -> Result<Vec<SplitRow>> {
        let (args, sc, n) = (self.args, self.scenario, self.bodies);
        check_split(args.gpus, backend.kind())?;
        // `none` grows the frontier fourfold a level: the split is measured with compaction.
        let configs: Vec<CollideSettings> =
            configs(args, &backend, sc)?.into_iter().filter(|s| s.compact_pairs != Compaction::None).collect();
        if configs.is_empty() {
            bail!("--gpus {}: give --algorithms a compaction algorithm (the split runs with one)", args.gpus);
        }
        let (world, bodies) = build(sc, n, &args.sim)?;
        // One engine on the first GPU (or CPU); the split's ranks open their own.
        let mut one = Live::new(B::another()?.collider(world, &bodies)?)?;
        let start: Vec<Body> = if args.settle > 0 {
            eprintln!("{n} bodies: settling for {} frames", args.settle);
            run_frames(&mut one.engine, &reference(args, sc), args.settle, |_| {})?;
            one.engine.bodies()?
        } else {
            bodies
        };
        let mut split = backend.split_collider(args.gpus, world, &start)?;
        // The split's own exchange when none is named.
        let exchanges: Vec<Option<GhostExchange>> = match args.ghost_exchanges.as_slice() {
            [] => vec![None],
            named => named.iter().copied().map(Some).collect(),
        };
        let mut rows = Vec::new();
        for s in &configs {
            for &exchange in &exchanges {
                if let Some(e) = exchange {
                    split.set_ghost_exchange(e)?;
                }
                // CPU ranks share memory: nothing travels.
                let name = split.ghost_exchange().map_or("shared", |e| e.name()).to_string();
                // Every configuration steps the same start on both.
                one.engine.set_bodies(&start)?;
                split.set_bodies(&start)?;
                rows.push(measure(args, n, s, name, &mut one, &mut split)?);
            }
        }
        Ok(rows)
    }
}

/// A frame to begin with, then `args.frames` measured frames of one engine
/// and of the split from the same start, every frame compared. The first
/// frame is not timed: the split deals the bodies out from the host there
/// (a rebalance does the same), and every later frame keeps them on the GPUs.
fn measure<E: Engine, S: Simulation>(
    args: &CollideBenchArgs,
    n: u32,
    s: &CollideSettings,
    exchange: String,
    one: &mut Live<E>,
    split: &mut S,
) -> Result<SplitRow> {
    let mut row = SplitRow {
        bodies: n,
        ranks: args.gpus,
        sort: s.sort.name(),
        compaction: s.compact_pairs.name().to_string(),
        exchange,
        frames: args.frames,
        ..Default::default()
    };
    for i in 0..=args.frames {
        let a = one.step(s, i)?;
        let b = split.step(s, i)?;
        let same = one.engine.bodies()? == split.bodies()?
            && one.engine.contact_list()? == split.contact_list()?
            && one.engine.candidate_pairs()? == split.candidate_pairs()?;
        if i == 0 {
            row.first_identical = same;
            continue;
        }
        row.identical += same as u32;
        let st = split.split_stats().expect("a split collider has split stats");
        let owned: u64 = st.owned.iter().sum();
        row.one_frame_ms += a.frame_ms;
        row.one_wall_ms += a.wall_ms;
        row.split_frame_ms += b.frame_ms;
        row.split_wall_ms += b.wall_ms;
        let sum = |f: &reap::collide::FrameStats, names: &[&str]| -> f64 {
            f.stages.iter().filter(|(id, _)| names.contains(&id.name)).map(|(_, t)| t).sum()
        };
        row.halo_ms += sum(&b, &[reap::collide::stage::HALO]);
        row.lists_ms += sum(&b, &[reap::collide::stage::GHOSTS]);
        let solver = [reap::collide::stage::SOLVE, reap::collide::stage::SUBSTEP];
        row.one_solve_ms += sum(&a, &solver);
        row.split_solve_ms += sum(&b, &solver);
        row.ghost_share += st.ghosts.iter().sum::<u64>() as f64 / owned.max(1) as f64;
        row.migrated += st.migrated as f64;
        row.exchanges += st.exchanges as f64;
        row.ghost_values += st.shared as f64;
        for (name, ms) in &st.parts {
            match row.parts.iter_mut().find(|p| &p.0 == name) {
                Some(p) => p.1 += ms / args.frames.max(1) as f64,
                None => row.parts.push((name.clone(), ms / args.frames.max(1) as f64)),
            }
        }
    }
    let k = args.frames.max(1) as f64;
    for x in [
        &mut row.one_frame_ms,
        &mut row.one_wall_ms,
        &mut row.split_frame_ms,
        &mut row.split_wall_ms,
        &mut row.halo_ms,
        &mut row.lists_ms,
        &mut row.one_solve_ms,
        &mut row.split_solve_ms,
        &mut row.ghost_share,
        &mut row.migrated,
        &mut row.exchanges,
        &mut row.ghost_values,
    ] {
        *x /= k;
    }
    row.speedup = row.one_wall_ms / row.split_wall_ms.max(1e-9);
    eprintln!("{}", line(&row));
    if !row.parts.is_empty() {
        let parts: Vec<String> = row.parts.iter().map(|(name, ms)| format!("{name} {ms:.2} ms")).collect();
        eprintln!("  ownership and halo, a frame: {}", parts.join(", "));
    }
    Ok(row)
}

fn line(r: &SplitRow) -> String {
    format!(
        "{} bodies on {} ranks, sort {}, {}, {} exchanges: one engine {:.2} ms wall, split {:.2} ms wall ({:.2}x; {:.2} ms ownership \
         and halo, {:.2} ms lists, solver {:.2} ms against one engine's {:.2}), ghosts {:.1} % of the bodies, {:.0} \
         exchanges and {:.0} migrations a frame; {} of {} measured frames identical (and the first: {})",
        r.bodies,
        r.ranks,
        r.sort,
        r.compaction,
        r.exchange,
        r.one_wall_ms,
        r.split_wall_ms,
        r.speedup,
        r.halo_ms,
        r.lists_ms,
        r.split_solve_ms,
        r.one_solve_ms,
        100.0 * r.ghost_share,
        r.exchanges,
        r.migrated,
        r.identical,
        r.frames,
        r.first_identical
    )
}

fn table(rows: &[SplitRow]) -> String {
    let mut t = String::from(
        "| bodies | ranks | sort | pair frontier | ghost exchange | one engine, ms (summed / wall) | split, ms (summed / wall) | speed-up (wall) \
         | ownership + halo, ms | lists, ms | solver, ms (one / split) | ghosts, % of bodies | exchanges / frame | ghost values / frame \
         | migrated / frame | identical frames |\n\
         | ---: | ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in rows {
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2}x | {:.2} | {:.2} | {:.2} / {:.2} | {:.1} | {:.0} \
             | {:.0} | {:.1} | {} of {} |",
            r.bodies,
            r.ranks,
            r.sort,
            r.compaction,
            r.exchange,
            r.one_frame_ms,
            r.one_wall_ms,
            r.split_frame_ms,
            r.split_wall_ms,
            r.speedup,
            r.halo_ms,
            r.lists_ms,
            r.one_solve_ms,
            r.split_solve_ms,
            100.0 * r.ghost_share,
            r.exchanges,
            r.ghost_values,
            r.migrated,
            r.identical,
            r.frames
        );
    }
    t
}
