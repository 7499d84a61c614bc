//! `reap bench compaction --gpus N`: a select, partition or exclusive scan
//! over N ranks beside the same call on rank 0 alone. Per configuration: the
//! wall clock of each (enqueue to the last rank's finish, median of the
//! repetitions), the ranks' summed device phases, the speedup and scaling
//! efficiency, and the collectives' share (the all-gather of the counts
//! alone, timed the same way). The ranks may be processes (one per GPU, as
//! on separate hosts): each repetition then starts behind a barrier and the
//! slowest process's clock counts.

use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::clocks::ms;
use crate::compaction::shard::{Group, ShardKeep, ShardOp, Sharded, Sharding};
use crate::compaction::{Algorithm, Keep, Operation, Report, Result};

/// One measured configuration.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ShardRow {
    pub algorithm: String,
    /// select, partition or scan.
    pub operation: String,
    pub n: u64,
    pub element_bytes: u32,
    /// Kept fraction (a scan keeps everything: 1).
    pub density: f64,
    pub ranks: usize,
    /// Processes the ranks ran in (1: every rank in one process).
    pub processes: usize,
    /// Wall clock of the call on rank 0 alone, median (ms).
    pub one_wall_ms: f64,
    /// Its device phases (ms, median).
    pub one_device_ms: f64,
    /// Wall clock of the sharded call: every rank's call, the all-gather,
    /// every rank finished (ms, median; over processes, the slowest process's).
    pub many_wall_ms: f64,
    /// The slowest rank's device phases of the call (ms, median). A carried
    /// scan's first pass (each rank's total, before the all-gather) is in the
    /// wall clock only.
    pub many_device_ms: f64,
    pub speedup: f64,
    /// speedup / ranks.
    pub efficiency: f64,
    /// The all-gather of the counts alone, wall clock to every rank's finish (ms, median).
    pub gather_ms: f64,
    /// gather_ms / many_wall_ms.
    pub collective_share: f64,
    /// Input bytes read per second by the sharded call (GB/s).
    pub many_gbps: f64,
}

/// What to measure.
pub struct ShardBench<'a> {
    pub algorithms: &'a [Algorithm],
    pub operations: &'a [ShardOp],
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

fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t.get(t.len() / 2).copied().unwrap_or_default()
}

fn op_name(op: ShardOp) -> &'static str {
    match op {
        ShardOp::Select => "select",
        ShardOp::Partition => "partition",
        ShardOp::Scan => "scan",
    }
}

/// Whether `algorithm` runs `op` on `b`.
fn runs<B: Sharding>(b: &B, algorithm: Algorithm, op: ShardOp) -> bool {
    let operation = match op {
        ShardOp::Select => Operation::Select,
        ShardOp::Partition => Operation::Partition,
        ShardOp::Scan => Operation::Scan,
    };
    b.runs(algorithm) && algorithm.supports(operation)
}

/// One call on rank 0 alone: its report's device time.
fn one_call<B: Sharding>(
    b: &B,
    algorithm: Algorithm,
    op: ShardOp,
    whole: &B::Buffer<u32>,
    out: &mut B::Buffer<u32>,
) -> Result<Duration> {
    let keep = Keep::Sentinel(u32::MAX);
    let r = match op {
        ShardOp::Select => b.select(algorithm, whole, keep, out)?,
        ShardOp::Partition => b.partition(algorithm, whole, keep, out)?,
        ShardOp::Scan => b.exclusive_scan(algorithm, whole, out)?,
    };
    b.finish()?;
    r.total()
}

/// The sharded call: the slowest held rank's device time.
fn sharded_call<B: Sharding>(
    group: &Group<B>,
    algorithm: Algorithm,
    op: ShardOp,
    input: &Sharded<B, u32>,
) -> Result<Duration> {
    let keep = || ShardKeep::Sentinel(u32::MAX);
    let out = match op {
        ShardOp::Select => group.select(algorithm, input, keep())?,
        ShardOp::Partition => group.partition(algorithm, input, keep())?,
        ShardOp::Scan => group.exclusive_scan(algorithm, input)?,
    };
    group.finish()?;
    Ok(out.rank_times()?.into_iter().max().unwrap_or_default())
}

/// Runs every configuration, telling `row` each as it is measured. Where
/// the ranks are processes every process calls it; the process holding rank
/// 0 also times the call alone, and each repetition starts behind a barrier.
pub fn run<B: Sharding>(
    group: &Group<B>,
    s: &ShardBench<'_>,
    stopped: &dyn Fn() -> bool,
    row: &mut dyn FnMut(&ShardRow),
) -> Result<Vec<ShardRow>> {
    let mut rows = Vec::new();
    let b0 = &group.ranks()[0];
    let processes = group.cluster().map_or(1, |c| c.ranks());
    for &n in s.sizes {
        for &op in s.operations {
            // A scan sums every element: one density.
            let densities = if op == ShardOp::Scan { &[1.0][..] } else { s.densities };
            for &density in densities {
                let host = input(n, density, s.seed ^ n);
                let mut whole = if group.leads() { Some((b0.upload(&host)?, b0.alloc::<u32>(n)?)) } else { None };
                let sharded = group.scatter(&host)?;
                drop(host);
                for &algorithm in s.algorithms.iter().filter(|a| runs(b0, **a, op)) {
                    if stopped() {
                        return Ok(rows);
                    }
                    let (mut one, mut one_dev, mut many, mut many_dev) = (vec![], vec![], vec![], vec![]);
                    for rep in 0..s.warmup + s.reps {
                        group.barrier()?;
                        let (mut wall, mut dev) = (0.0, 0.0);
                        if let Some((w, out)) = whole.as_mut() {
                            let t = Instant::now();
                            dev = ms(one_call(b0, algorithm, op, w, out)?);
                            wall = ms(t.elapsed());
                        }
                        group.barrier()?;
                        let t = Instant::now();
                        let d = sharded_call(group, algorithm, op, &sharded)?;
                        let wall_many = ms(t.elapsed());
                        let m = group.max_over_processes(&[wall_many, ms(d)])?;
                        if rep >= s.warmup {
                            one.push(wall);
                            one_dev.push(dev);
                            many.push(m[0]);
                            many_dev.push(m[1]);
                        }
                    }
                    let gather = time_gather(group, s.warmup, s.reps)?;
                    let (one_wall, many_wall) = (median(one), median(many));
                    let speedup = one_wall / many_wall.max(1e-12);
                    let r = ShardRow {
                        algorithm: algorithm.name().to_string(),
                        operation: op_name(op).to_string(),
                        n,
                        element_bytes: 4,
                        density,
                        ranks: group.len(),
                        processes,
                        one_wall_ms: one_wall,
                        one_device_ms: median(one_dev),
                        many_wall_ms: many_wall,
                        many_device_ms: median(many_dev),
                        speedup,
                        efficiency: speedup / group.len() as f64,
                        gather_ms: gather,
                        collective_share: gather / many_wall.max(1e-12),
                        many_gbps: (n * 4) as f64 / (many_wall.max(1e-12) * 1e-3) / 1e9,
                    };
                    row(&r);
                    rows.push(r);
                }
            }
        }
    }
    Ok(rows)
}

/// The all-gather of one word per rank, alone: median wall clock to every
/// rank's finish (ms; over processes, the slowest process's).
fn time_gather<B: Sharding>(group: &Group<B>, warmup: usize, reps: usize) -> Result<f64> {
    let mut words: Vec<B::Buffer<u64>> =
        group.ranks().iter().map(|b| b.upload(&vec![1u64; 1 + group.len()])).collect::<Result<_>>()?;
    let mut times = Vec::new();
    for rep in 0..warmup + reps {
        group.barrier()?;
        let t = Instant::now();
        B::all_gather_word(group.comm(), group.ranks(), &mut words, 0, 1)?;
        group.finish()?;
        let m = group.max_over_processes(&[ms(t.elapsed())])?;
        if rep >= warmup {
            times.push(m[0]);
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
        "# Sharded compaction over {} ranks{procs}\n\n{device}; collectives: {carrier}.\n\n`{command}`\n\n\
         Wall clock from the first enqueue to the last rank's finish, median of the repetitions; device = the \
         (slowest) rank's summed phase events. Efficiency = speedup / ranks; collectives = the all-gather of the \
         counts alone over the sharded wall clock.\n\n\
         | algorithm | operation | n | kept | 1 rank wall ms | device ms | {r} ranks wall ms | device ms | speedup | efficiency | all-gather ms | collectives | GB/s |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        rows.first().map_or(0, |r| r.ranks),
        r = rows.first().map_or(0, |r| r.ranks),
        procs = match rows.first().map_or(1, |r| r.processes) {
            1 => String::new(),
            p => format!(" in {p} processes"),
        },
    );
    for r in rows {
        md += &format!(
            "| {} | {} | {} | {:.0} % | {:.3} | {:.3} | {:.3} | {:.3} | {:.2}x | {:.0} % | {:.3} | {:.1} % | {:.0} |\n",
            r.algorithm,
            r.operation,
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
