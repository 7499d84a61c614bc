//! `reap bench compaction --gpus N`: a select over N ranks beside the same
//! select on rank 0 alone. Per configuration: the wall clock of each (enqueue
//! to the last rank's finish, median of the repetitions), the ranks' summed
//! device phases, the speedup and scaling efficiency, and the collectives'
//! share (the all-gather of the counts alone, timed the same way).

use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::clocks::ms;
use crate::compaction::shard::{Group, ShardKeep, Sharding};
use crate::compaction::{Algorithm, Keep, Report, Result};

/// One measured configuration.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ShardRow {
    pub algorithm: String,
    pub n: u64,
    pub element_bytes: u32,
    pub density: f64,
    pub ranks: usize,
    /// Wall clock of the select on rank 0 alone, median (ms).
    pub one_wall_ms: f64,
    /// Its device phases (ms, at the median repetition's index).
    pub one_device_ms: f64,
    /// Wall clock of the sharded select: every rank's select, the all-gather,
    /// every rank finished (ms, median).
    pub many_wall_ms: f64,
    /// The slowest rank's device phases (ms).
    pub many_device_ms: f64,
    pub speedup: f64,
    /// speedup / ranks.
    pub efficiency: f64,
    /// The all-gather of the counts alone, wall clock to every rank's finish (ms, median).
    pub gather_ms: f64,
    /// gather_ms / many_wall_ms.
    pub collective_share: f64,
    /// Input bytes read per second by the sharded select (GB/s).
    pub many_gbps: f64,
}

/// What to measure.
pub struct ShardBench<'a> {
    pub algorithms: &'a [Algorithm],
    pub sizes: &'a [u64],
    pub densities: &'a [f64],
    pub reps: usize,
    pub warmup: usize,
    pub seed: u64,
}

/// n u32 elements, a fraction `density` of them below 2^31 (kept by the
/// sentinel rule below: the rest are the sentinel). Filled in parallel.
fn input(n: u64, density: f64, seed: u64) -> Vec<u32> {
    const CHUNK: usize = 1 << 20;
    let mut v = vec![0u32; n as usize];
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(c, chunk)| {
        let mut rng = fastrand::Rng::with_seed(seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for x in chunk {
            *x = if rng.f64() < density { rng.u32(..1 << 31) } else { u32::MAX };
        }
    });
    v
}

fn median(mut t: Vec<Duration>) -> Duration {
    t.sort();
    t.get(t.len() / 2).copied().unwrap_or_default()
}

/// Runs every configuration, telling `row` each as it is measured.
pub fn run<B: Sharding>(
    group: &Group<B>,
    s: &ShardBench<'_>,
    stopped: &dyn Fn() -> bool,
    row: &mut dyn FnMut(&ShardRow),
) -> Result<Vec<ShardRow>> {
    let mut rows = Vec::new();
    let b0 = &group.ranks()[0];
    for &n in s.sizes {
        for &density in s.densities {
            let host = input(n, density, s.seed ^ n);
            let whole = b0.upload(&host)?;
            let mut out = b0.alloc::<u32>(n)?;
            let sharded = group.scatter(&host)?;
            drop(host);
            for &algorithm in s.algorithms.iter().filter(|a| b0.runs(**a)) {
                if stopped() {
                    return Ok(rows);
                }
                let (mut one, mut one_dev) = (Vec::new(), Vec::new());
                let (mut many, mut many_dev) = (Vec::new(), Vec::new());
                for rep in 0..s.warmup + s.reps {
                    let t = Instant::now();
                    let r = b0.select(algorithm, &whole, Keep::Sentinel(u32::MAX), &mut out)?;
                    b0.finish()?;
                    let wall = t.elapsed();
                    let t = Instant::now();
                    let sh = group.select(algorithm, &sharded, ShardKeep::Sentinel(u32::MAX))?;
                    group.finish()?;
                    let wall_many = t.elapsed();
                    if rep >= s.warmup {
                        one.push(wall);
                        one_dev.push(r.total()?);
                        many.push(wall_many);
                        many_dev.push(sh.rank_times()?.into_iter().max().unwrap_or_default());
                    }
                }
                let gather = time_gather(group, s.warmup, s.reps)?;
                let (one_wall, many_wall) = (median(one), median(many));
                let speedup = one_wall.as_secs_f64() / many_wall.as_secs_f64().max(1e-12);
                let r = ShardRow {
                    algorithm: algorithm.name().to_string(),
                    n,
                    element_bytes: 4,
                    density,
                    ranks: group.len(),
                    one_wall_ms: ms(one_wall),
                    one_device_ms: ms(median(one_dev)),
                    many_wall_ms: ms(many_wall),
                    many_device_ms: ms(median(many_dev)),
                    speedup,
                    efficiency: speedup / group.len() as f64,
                    gather_ms: ms(gather),
                    collective_share: gather.as_secs_f64() / many_wall.as_secs_f64().max(1e-12),
                    many_gbps: (n * 4) as f64 / many_wall.as_secs_f64().max(1e-12) / 1e9,
                };
                row(&r);
                rows.push(r);
            }
        }
    }
    Ok(rows)
}

/// The all-gather of one word per rank, alone: median wall clock to every rank's finish.
fn time_gather<B: Sharding>(group: &Group<B>, warmup: usize, reps: usize) -> Result<Duration> {
    let mut words: Vec<B::Buffer<u64>> =
        group.ranks().iter().map(|b| b.upload(&vec![1u64; 1 + group.len()])).collect::<Result<_>>()?;
    let mut times = Vec::new();
    for rep in 0..warmup + reps {
        let t = Instant::now();
        B::all_gather_word(group.comm(), group.ranks(), &mut words, 0, 1)?;
        group.finish()?;
        if rep >= warmup {
            times.push(t.elapsed());
        }
    }
    Ok(median(times))
}

/// The rows as CSV.
pub fn csv(rows: &[ShardRow]) -> std::result::Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r)?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The rows as a markdown report.
pub fn markdown(rows: &[ShardRow], device: &str, carrier: &str, command: &str) -> String {
    let mut md = format!(
        "# Sharded select over {} ranks\n\n{device}; collectives: {carrier}.\n\n`{command}`\n\n\
         Wall clock from the first enqueue to the last rank's finish, median of the repetitions; device = the \
         (slowest) rank's summed phase events. Efficiency = speedup / ranks; collectives = the all-gather of the \
         counts alone over the sharded wall clock.\n\n\
         | algorithm | n | kept | 1 rank wall ms | device ms | {r} ranks wall ms | device ms | speedup | efficiency | all-gather ms | collectives | GB/s |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        rows.first().map_or(0, |r| r.ranks),
        r = rows.first().map_or(0, |r| r.ranks),
    );
    for r in rows {
        md += &format!(
            "| {} | {} | {:.0} % | {:.3} | {:.3} | {:.3} | {:.3} | {:.2}x | {:.0} % | {:.3} | {:.1} % | {:.0} |\n",
            r.algorithm,
            r.n,
            r.density * 100.0,
            r.one_wall_ms,
            r.one_device_ms,
            r.many_wall_ms,
            r.many_device_ms,
            r.speedup,
            r.efficiency * 100.0,
            r.gather_ms,
            r.collective_share * 100.0,
            r.many_gbps
        );
    }
    md
}
