//! The benchmark harness behind `reap bench`: every algorithm on one backend,
//! timed with the backend's own clocks (device events on a GPU), beside the
//! physical limit, a device-to-device copy of the same bytes.
//!
//! Inputs are fresh random data per density (never zeros); when one input set
//! fits in the cache, several are rotated so repeated runs do not measure the
//! cache.

use std::time::Duration;

use crate::compaction::{Algorithm, Element, Keep, Operation, Report, Result};
use crate::verify::Harness;

/// A backend the harness can time: it must also time a plain copy.
pub trait Timed: Harness {
    /// Median time of a copy of `bytes` bytes (read once, written once).
    fn copy_time(&self, bytes: u64, reps: usize) -> Result<Duration>;
    /// Bytes of the last-level cache, for input rotation.
    fn cache_bytes(&self) -> u64;
    fn device_name(&self) -> String;
}

impl Timed for crate::compaction::CpuBackend {
    fn copy_time(&self, bytes: u64, reps: usize) -> Result<Duration> {
        use rayon::prelude::*;
        let n = (bytes / 4) as usize;
        let src: Vec<u32> = (0..n as u32).collect();
        let mut dst = vec![0u32; n];
        let mut times: Vec<Duration> = (0..=reps)
            .map(|_| {
                let t = std::time::Instant::now();
                dst.par_chunks_mut(1 << 16).zip(src.par_chunks(1 << 16)).for_each(|(d, s)| d.copy_from_slice(s));
                t.elapsed()
            })
            .skip(1)
            .collect();
        times.sort();
        Ok(times[times.len() / 2])
    }
    fn cache_bytes(&self) -> u64 {
        32 << 20
    }
    fn device_name(&self) -> String {
        format!("CPU ({} threads)", rayon::current_num_threads())
    }
}

#[cfg(feature = "cuda")]
impl Timed for crate::compaction::cuda::CudaBackend {
    fn copy_time(&self, bytes: u64, reps: usize) -> Result<Duration> {
        self.time_copy(bytes, reps)
    }
    fn cache_bytes(&self) -> u64 {
        self.info.l2_bytes
    }
    fn device_name(&self) -> String {
        self.info.name.clone()
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct Settings {
    pub algorithms: Vec<Algorithm>,
    pub operation: Operation,
    pub sizes: Vec<u64>,
    pub densities: Vec<f64>,
    pub element_sizes: Vec<usize>,
    pub reps: usize,
    pub warmup: usize,
    pub seed: u64,
}

/// One measured configuration.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub backend: &'static str,
    pub device: String,
    pub algorithm: String,
    pub operation: &'static str,
    pub element_bytes: usize,
    pub n: u64,
    pub density: f64,
    pub kept: u64,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Median of each phase, in the run's order.
    pub phases: Vec<(String, f64)>,
    /// Bytes a compaction must move: every input once, every survivor once.
    pub bytes: u64,
    /// The copy of the same bytes, median.
    pub copy_ms: f64,
    /// Achieved rate as a share of the copy rate.
    pub pct_of_copy: f64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Uniform random words; element i is kept when its first word is below
/// `density * 2^32`: the same rule as CUB's `x < threshold` in DESIGN.md.
fn input<T: Element>(n: usize, rng: &mut fastrand::Rng) -> Vec<T> {
    let words = std::mem::size_of::<T>() / 4;
    (0..n)
        .map(|_| {
            let mut w = [0u32; 4];
            for x in w.iter_mut().take(words) {
                *x = rng.u32(..);
            }
            bytemuck::pod_read_unaligned(&bytemuck::cast_slice::<u32, u8>(&w)[..std::mem::size_of::<T>()])
        })
        .collect()
}

fn threshold(density: f64) -> u64 {
    ((density.clamp(0.0, 1.0) * 4294967296.0).round() as u64).min(1 << 32)
}

/// Runs every (algorithm, element size, n, density) and reports each row to
/// `seen` as soon as it is measured (so an interrupted run keeps its rows).
/// `stop` is polled between rows.
pub fn compaction<B: Timed>(
    backend: &B,
    s: &Settings,
    stop: &dyn Fn() -> bool,
    seen: &mut dyn FnMut(&Row),
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let mut rng = fastrand::Rng::with_seed(s.seed);
    for &es in &s.element_sizes {
        for &n in &s.sizes {
            let copy = {
                // Rates are compared at the same byte count for every density.
                backend.copy_time(n * es as u64, s.reps.max(5))?
            };
            for &d in &s.densities {
                if stop() {
                    return Ok(rows);
                }
                let r = match es {
                    4 => measure::<B, u32>(backend, s, n, d, copy, &mut rng, stop, seen)?,
                    8 => measure::<B, u64>(backend, s, n, d, copy, &mut rng, stop, seen)?,
                    _ => measure::<B, [u32; 4]>(backend, s, n, d, copy, &mut rng, stop, seen)?,
                };
                rows.extend(r);
            }
        }
    }
    Ok(rows)
}

#[allow(clippy::too_many_arguments)]
fn measure<B: Timed, T: Element>(
    backend: &B,
    s: &Settings,
    n: u64,
    density: f64,
    copy: Duration,
    rng: &mut fastrand::Rng,
    stop: &dyn Fn() -> bool,
    seen: &mut dyn FnMut(&Row),
) -> Result<Vec<Row>> {
    let es = std::mem::size_of::<T>() as u64;
    // Enough distinct inputs that each run reads from memory, not the cache.
    let sets = (backend.cache_bytes() * 2).div_ceil((n * es).max(1)).clamp(1, 8) as usize;
    let hosts: Vec<Vec<T>> = (0..sets).map(|_| input::<T>(n as usize, rng)).collect();
    let inputs = hosts.iter().map(|h| backend.upload(h)).collect::<Result<Vec<_>>>()?;
    let mut output = backend.alloc::<T>(n)?;
    let pred = backend.word_below::<T>(threshold(density));
    let mut rows = Vec::new();
    for &alg in &s.algorithms {
        if !backend.runs(alg) || !alg.supports(s.operation) || stop() {
            continue;
        }
        let mut times = Vec::with_capacity(s.reps);
        let mut phase_times: Vec<(String, Vec<f64>)> = Vec::new();
        let mut kept = 0;
        for rep in 0..s.warmup + s.reps {
            let input = &inputs[rep % sets];
            let keep = Keep::Predicate(&*pred);
            let report = match s.operation {
                Operation::Partition => backend.partition(alg, input, keep, &mut output)?,
                _ => backend.select(alg, input, keep, &mut output)?,
            };
            let span = report.span()?;
            kept = report.count()?;
            if rep >= s.warmup {
                times.push(span);
                for (i, p) in report.phases()?.into_iter().enumerate() {
                    if phase_times.len() <= i {
                        phase_times.push((p.name.to_string(), Vec::new()));
                    }
                    phase_times[i].1.push(ms(p.time));
                }
            }
        }
        times.sort();
        let median = times[times.len() / 2];
        let bytes = n * es + kept * es;
        let copy_rate = (2 * n * es) as f64 / copy.as_secs_f64();
        let rate = bytes as f64 / median.as_secs_f64();
        let row = Row {
            backend: backend.kind().name(),
            device: backend.device_name(),
            algorithm: alg.name().to_string(),
            operation: s.operation.name(),
            element_bytes: es as usize,
            n,
            density,
            kept,
            median_ms: ms(median),
            min_ms: ms(times[0]),
            max_ms: ms(*times.last().expect("reps > 0")),
            phases: phase_times
                .into_iter()
                .map(|(name, mut v)| {
                    v.sort_by(f64::total_cmp);
                    (name, v[v.len() / 2])
                })
                .collect(),
            bytes,
            copy_ms: ms(copy),
            pct_of_copy: 100.0 * rate / copy_rate,
        };
        seen(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// The rows as CSV (phases as `name=ms` pairs in one column).
pub fn csv(rows: &[Row]) -> std::result::Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "backend",
        "device",
        "algorithm",
        "operation",
        "element_bytes",
        "n",
        "density",
        "kept",
        "median_ms",
        "min_ms",
        "max_ms",
        "bytes",
        "copy_ms",
        "pct_of_copy",
        "phases",
    ])?;
    for r in rows {
        let phases: Vec<String> = r.phases.iter().map(|(n, t)| format!("{n}={t:.6}")).collect();
        w.write_record([
            r.backend.to_string(),
            r.device.clone(),
            r.algorithm.clone(),
            r.operation.to_string(),
            r.element_bytes.to_string(),
            r.n.to_string(),
            r.density.to_string(),
            r.kept.to_string(),
            format!("{:.6}", r.median_ms),
            format!("{:.6}", r.min_ms),
            format!("{:.6}", r.max_ms),
            r.bytes.to_string(),
            format!("{:.6}", r.copy_ms),
            format!("{:.2}", r.pct_of_copy),
            phases.join(";"),
        ])?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
