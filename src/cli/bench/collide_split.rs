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

/// One body count's and configuration's measurement.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SplitRow {
    pub bodies: u32,
    pub ranks: usize,
    pub sort: String,
    pub compaction: String,
    /// Means over the measured frames, ms: summed stages and wall clock.
    pub one_frame_ms: f64,
    pub one_wall_ms: f64,
    pub split_frame_ms: f64,
    pub split_wall_ms: f64,
    /// Of the split's wall clock: ownership and halo.
    pub halo_ms: f64,
    /// Ghosts over all ranks per owned body, and what moved, per frame.
    pub ghost_share: f64,
    pub migrated: f64,
    pub exchanges: f64,
    pub ghost_values: f64,
    /// Frames whose bodies, candidates and contacts equal one engine's, bit for bit.
    pub identical: u32,
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
    Ok(rows.iter().all(|r| r.identical == r.frames))
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
        let mut rows = Vec::new();
        for s in &configs {
            // Every configuration steps the same start on both.
            one.engine.set_bodies(&start)?;
            split.set_bodies(&start)?;
            rows.push(measure(args, n, s, &mut one, &mut split)?);
        }
        Ok(rows)
    }
}

/// `args.frames` frames of one engine and of the split from the same start.
fn measure<E: Engine, S: Simulation>(
    args: &CollideBenchArgs,
    n: u32,
    s: &CollideSettings,
    one: &mut Live<E>,
    split: &mut S,
) -> Result<SplitRow> {
    let mut row = SplitRow {
        bodies: n,
        ranks: args.gpus,
        sort: s.sort.name(),
        compaction: s.compact_pairs.name().to_string(),
        frames: args.frames,
        ..Default::default()
    };
    for i in 0..args.frames {
        let a = one.step(s, i)?;
        let b = split.step(s, i)?;
        let same = one.engine.bodies()? == split.bodies()?
            && one.engine.contact_list()? == split.contact_list()?
            && one.engine.candidate_pairs()? == split.candidate_pairs()?;
        row.identical += same as u32;
        let st = split.split_stats().expect("a split collider has split stats");
        let owned: u64 = st.owned.iter().sum();
        row.one_frame_ms += a.frame_ms;
        row.one_wall_ms += a.wall_ms;
        row.split_frame_ms += b.frame_ms;
        row.split_wall_ms += b.wall_ms;
        let halo = b.stages.iter().filter(|(id, _)| id.name == reap::collide::stage::HALO);
        row.halo_ms += halo.map(|(_, t)| t).sum::<f64>();
        row.ghost_share += st.ghosts.iter().sum::<u64>() as f64 / owned.max(1) as f64;
        row.migrated += st.migrated as f64;
        row.exchanges += st.exchanges as f64;
        row.ghost_values += st.shared as f64;
    }
    let k = args.frames.max(1) as f64;
    for x in [
        &mut row.one_frame_ms,
        &mut row.one_wall_ms,
        &mut row.split_frame_ms,
        &mut row.split_wall_ms,
        &mut row.halo_ms,
        &mut row.ghost_share,
        &mut row.migrated,
        &mut row.exchanges,
        &mut row.ghost_values,
    ] {
        *x /= k;
    }
    eprintln!("{}", line(&row));
    Ok(row)
}

fn line(r: &SplitRow) -> String {
    format!(
        "{} bodies on {} ranks, sort {}, {}: one engine {:.2} ms wall, split {:.2} ms wall ({:.2} ms ownership and halo), \
         ghosts {:.1} % of the bodies, {:.0} exchanges and {:.0} migrations a frame; {} of {} frames identical",
        r.bodies,
        r.ranks,
        r.sort,
        r.compaction,
        r.one_wall_ms,
        r.split_wall_ms,
        r.halo_ms,
        100.0 * r.ghost_share,
        r.exchanges,
        r.migrated,
        r.identical,
        r.frames
    )
}

fn table(rows: &[SplitRow]) -> String {
    let mut t = String::from(
        "| bodies | ranks | sort | pair frontier | one engine, ms (summed / wall) | split, ms (summed / wall) | ownership + halo, ms | ghosts, % of \
         bodies | exchanges / frame | ghost values / frame | migrated / frame | identical frames |\n\
         | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in rows {
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} | {:.1} | {:.0} | {:.0} | {:.1} | {} of {} |",
            r.bodies,
            r.ranks,
            r.sort,
            r.compaction,
            r.one_frame_ms,
            r.one_wall_ms,
            r.split_frame_ms,
            r.split_wall_ms,
            r.halo_ms,
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
