//! The benchmark harness behind `reap bench`: every algorithm on one backend,
//! timed with the backend's own clocks (CUDA events, wgpu timestamp
//! queries), beside the physical limit, a device-to-device copy of the same
//! bytes, and (on an NVIDIA GPU) beside CUB through a small C++ peer
//! ([`cub`]). A wgpu run on an NVIDIA GPU also times the CUDA backend on the
//! same configurations, so the report sets the two side by side.
//!
//! Inputs are fresh random data per density (never zeros); when one input set
//! fits in the cache, several are rotated so repeated runs do not measure the
//! cache. In-place operations (sort, Redzone's remove) get their input back
//! from a pristine copy before every run, outside the timed span.
//!
//! Layers: [`presets`] says what to measure (and what the papers published),
//! [`run`] measures it, [`cub`] adds the peer's rows, [`report`] and [`plot`]
//! turn rows into `report.md` and figures, [`output`] writes every file;
//! [`sweep`] times the single-pass kernels' shapes per element size;
//! [`hop`] times the inter-workgroup hop alone, beside `chained` per tile;
//! `cuda` and `wgpu` hold each GPU backend's copy roofline and restores.

pub mod cub;
#[cfg(feature = "cuda")]
pub mod cuda;
mod error;
pub mod hop;
pub mod output;
pub mod peers;
#[cfg(feature = "plot")]
pub mod plot;
pub mod presets;
pub mod report;
mod row;
pub mod shard;
#[cfg(feature = "cuda")]
pub mod sweep;
#[cfg(feature = "wgpu")]
pub mod wgpu;

use std::time::Duration;

pub use error::{BenchError, BenchResult};
pub use output::csv;
pub use row::{BenchBackend, Named, Row, RowAlgorithm, RowOperation};

use crate::clocks::ms;
use crate::compaction::{
    Algorithm, ELEMENT_SIZES, Element, Keep, Operation, Rejected, Report, Result, ScanElement, element_sizes_text,
};
use crate::verify::Harness;

/// What a results file says about the machine.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Platform {
    pub backend: String,
    pub device: String,
    /// The NVIDIA kernel driver's version (e.g. 580.65.06), when readable.
    pub driver: Option<String>,
    /// The CUDA version the driver implements (`cuDriverGetVersion`).
    pub cuda_driver: Option<String>,
    pub nvrtc: Option<String>,
    /// e.g. "sm_90": what the CUB peer is built for.
    pub arch: Option<String>,
    pub sms: Option<u32>,
    pub l2_bytes: u64,
    /// What timed the rows: CUDA events, wgpu timestamp queries, or the
    /// host clock (absent in files written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<String>,
    /// wgpu: whether the shaders' workgroup scans ran on subgroup operations
    /// (and how wide) or through workgroup memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workgroup_scans: Option<String>,
    /// wgpu: the buffer-to-buffer and compute-shader copy rates (drivers may
    /// run the first on a copy engine slower than the shader cores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_rates: Option<String>,
}

/// A backend the harness can time: it must also time a plain copy, restore
/// in-place inputs and do seed 004's competitor marking.
pub trait Timed: Harness {
    /// Median time of a copy of `bytes` bytes (read once, written once).
    fn copy_time(&self, bytes: u64, reps: usize) -> Result<Duration>;
    /// Bytes of the last-level cache, for input rotation.
    fn cache_bytes(&self) -> u64;
    fn device_name(&self) -> String;
    fn platform(&self) -> Platform;
    /// `dst = src` (same length), outside any timed span.
    fn restore<T: Element>(&self, src: &Self::Buffer<T>, dst: &mut Self::Buffer<T>) -> Result<()>;
    /// Seed 004 §5's phase 1 for Redzone's competitors: writes the all-ones
    /// sentinel over every listed element, timed as one phase.
    fn mark_removed<T: Element>(&self, data: &mut Self::Buffer<T>, removal: &Self::Buffer<u64>) -> Result<Duration>;
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
    fn platform(&self) -> Platform {
        Platform {
            backend: "cpu".into(),
            device: self.device_name(),
            l2_bytes: self.cache_bytes(),
            clock: Some("host clock".into()),
            ..Platform::default()
        }
    }
    fn restore<T: Element>(&self, src: &Vec<T>, dst: &mut Vec<T>) -> Result<()> {
        dst.clone_from(src);
        Ok(())
    }
    fn mark_removed<T: Element>(&self, data: &mut Vec<T>, removal: &Vec<u64>) -> Result<Duration> {
        let t = std::time::Instant::now();
        let deleted = sentinel::<T>();
        for &r in removal {
            if let Some(x) = data.get_mut(r as usize) {
                *x = deleted;
            }
        }
        Ok(t.elapsed())
    }
}

/// The element every byte of which is 0xFF: "deleted" in seed 004's marking.
pub fn sentinel<T: Element>() -> T {
    let mut s = T::zeroed();
    bytemuck::bytes_of_mut(&mut s).fill(0xFF);
    s
}

/// What one measurement series runs.
#[derive(Clone, Debug)]
pub enum Job {
    /// Select or partition with the `word_below` predicate; densities are fractions kept.
    Compaction(Operation),
    /// Partition with the rejected half reversed (`Rejected::Reversed`, the
    /// contract of CUB's `DevicePartition::If`), by the algorithms that offer it.
    PartitionReversed,
    /// Exclusive scan of u32 (element size 4) or u64 (8); densities are ignored.
    Scan,
    /// Radix sort by split of u32 keys, with u32 values when `pairs`.
    Sort { pairs: bool },
    /// Seed 004 Fig. 4: densities are fractions removed (k/n); `redzone-*`
    /// run `remove`, every other algorithm marks the k elements (timed phase
    /// "mark") and then selects the rest by sentinel.
    Remove,
}

impl serde::Serialize for Job {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            Job::Compaction(op) => op.name(),
            Job::PartitionReversed => "partition-reversed",
            Job::Scan => "scan",
            Job::Sort { pairs: false } => "sort-keys",
            Job::Sort { pairs: true } => "sort-pairs",
            Job::Remove => "remove (seed 004)",
        })
    }
}

impl Job {
    /// The `operation` column of a row.
    pub fn operation(&self, algorithm: Algorithm) -> RowOperation {
        match self {
            Job::Compaction(Operation::Partition) => RowOperation::Partition,
            Job::PartitionReversed => RowOperation::PartitionReversed,
            Job::Compaction(_) => RowOperation::Select,
            Job::Scan => RowOperation::Scan,
            Job::Sort { pairs: false } => RowOperation::SortKeys,
            Job::Sort { pairs: true } => RowOperation::SortPairs,
            Job::Remove if algorithm.in_place() => RowOperation::Remove,
            Job::Remove => RowOperation::MarkSelect,
        }
    }

    /// Whether `algorithm` takes part.
    pub fn includes(&self, algorithm: Algorithm) -> bool {
        match self {
            Job::Compaction(op) => algorithm.supports(*op),
            Job::PartitionReversed => algorithm.reverses_rejected(),
            Job::Scan => algorithm.supports(Operation::Scan),
            Job::Sort { .. } => algorithm.supports(Operation::Sort),
            Job::Remove => algorithm.supports(Operation::Remove) || algorithm.supports(Operation::Select),
        }
    }
}

/// What to measure.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Settings {
    /// The preset this belongs to (`""` for a plain `reap bench compaction`).
    pub preset: String,
    pub job: Job,
    #[serde(serialize_with = "names")]
    pub algorithms: Vec<Algorithm>,
    pub sizes: Vec<u64>,
    pub densities: Vec<f64>,
    pub element_sizes: Vec<usize>,
    pub reps: usize,
    pub warmup: usize,
    pub seed: u64,
}

fn names<S: serde::Serializer>(a: &[Algorithm], s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(a.iter().map(|a| a.name()))
}

impl Settings {
    /// Checks what a user can get wrong, before anything is measured.
    /// Host bytes one configuration of `n` elements holds at once, an upper
    /// estimate over the element sizes: the input and its upload, the output,
    /// the removal list or work copy, and the algorithm's u64 offsets.
    pub fn host_bytes(&self, n: u64) -> crate::memory::Bytes {
        let es = self.element_sizes.iter().copied().max().unwrap_or(4).max(8) as u64;
        crate::memory::times(n, 4 * es + 8)
    }

    /// Refuses a size whose configuration cannot fit `host` memory, before
    /// anything is measured.
    pub fn check_memory(&self, host: crate::memory::Limit) -> Result<(), crate::memory::MemoryError> {
        for &n in &self.sizes {
            let what = format!("a benchmark of {n} elements");
            crate::memory::check(what, self.host_bytes(n), host, "lower --sizes")?;
        }
        Ok(())
    }

    pub fn check(&self) -> BenchResult<()> {
        let bad = |s: String| Err(BenchError::Settings(s));
        if let Some(d) = self.densities.iter().find(|d| !(0.0..=1.0).contains(*d)) {
            return bad(format!("density {d} is outside [0, 1]"));
        }
        if self.densities.is_empty() {
            return bad("--densities needs at least one value".into());
        }
        if self.element_sizes.is_empty() || self.element_sizes.iter().any(|e| !ELEMENT_SIZES.contains(e)) {
            return bad(format!("--elements takes one or more of {}", element_sizes_text()));
        }
        if matches!(self.job, Job::Scan) && self.element_sizes.iter().any(|e| ![4, 8].contains(e)) {
            return bad("scan takes --elements 4 (u32) and/or 8 (u64)".into());
        }
        // The sorts have 4-byte keys (and 4-byte values for pairs) on every backend.
        if let Job::Sort { pairs } = self.job
            && self.element_sizes != [4]
        {
            let (op, what) =
                if pairs { ("sort-pairs", "4-byte keys with 4-byte values") } else { ("sort", "4-byte keys") };
            let given: Vec<String> = self.element_sizes.iter().map(|e| e.to_string()).collect();
            return bad(format!(
                "--operation {op} sorts {what} only, so --elements {} does not apply: run it with --elements 4 \
                 (the default), in a run of its own if other operations need other sizes",
                given.join(",")
            ));
        }
        if self.sizes.is_empty() {
            return bad("--sizes needs at least one count".into());
        }
        if self.sizes.contains(&0) {
            return bad("--sizes 0: a benchmark of 0 elements measures nothing; give sizes of at least 1".into());
        }
        if let Some(n) = self.sizes.iter().find(|n| **n > 1 << 34) {
            return bad(format!("size {n} is above 2^34 elements"));
        }
        if self.reps == 0 {
            return bad("--reps must be at least 1".into());
        }
        if !self.algorithms.iter().any(|a| self.job.includes(*a)) {
            return bad(format!(
                "none of the algorithms ({}) implements {}",
                self.algorithms.iter().map(|a| a.name()).collect::<Vec<_>>().join(", "),
                self.job.operation(Algorithm::Lookback).name()
            ));
        }
        Ok(())
    }

    fn points(&self) -> (usize, usize) {
        match self.job {
            Job::Scan => (self.element_sizes.len(), 1),
            Job::Sort { .. } => (1, 1),
            _ => (self.element_sizes.len(), self.densities.len()),
        }
    }

    /// Rows this will measure on a backend that runs what `runs` accepts (for progress).
    pub fn planned(&self, runs: impl Fn(Algorithm) -> bool) -> u64 {
        let algs = self.algorithms.iter().filter(|a| self.job.includes(**a) && runs(**a)).count();
        let (es, ds) = self.points();
        (algs * es * ds * self.sizes.len()) as u64
    }
}

/// Uniform random words; element i is kept when its first word is below
/// `density * 2^32`: the same rule as CUB's `x < threshold` in DESIGN.md.
/// The first word is never all ones, so no element equals the sentinel.
pub(crate) fn input<T: Element>(n: usize, rng: &mut fastrand::Rng) -> Vec<T> {
    let words = std::mem::size_of::<T>() / 4;
    (0..n)
        .map(|_| {
            let mut w = [0u32; 8];
            for (i, x) in w.iter_mut().take(words).enumerate() {
                *x = if i == 0 { rng.u32(..u32::MAX) } else { rng.u32(..) };
            }
            bytemuck::pod_read_unaligned(&bytemuck::cast_slice::<u32, u8>(&w)[..std::mem::size_of::<T>()])
        })
        .collect()
}

/// The predicate's bound for a fraction kept, as the CUB peer computes it.
pub fn threshold(density: f64) -> u64 {
    ((density.clamp(0.0, 1.0) * 4294967296.0).round() as u64).min(1 << 32)
}

/// `k` distinct indices below `n` in random order (partial Fisher-Yates).
fn removal_list(n: u64, k: u64, rng: &mut fastrand::Rng) -> Vec<u64> {
    let mut idx: Vec<u32> = (0..n as u32).collect();
    for i in 0..k as usize {
        let j = rng.usize(i..idx.len());
        idx.swap(i, j);
    }
    idx.truncate(k as usize);
    idx.into_iter().map(u64::from).collect()
}

/// Runs every configuration of `s` and reports each row to `seen` as soon as
/// it is measured, so an interrupted run keeps its rows. `stop` is polled
/// between rows; when it says stop, the rows so far are returned.
pub fn run<B: Timed>(
    backend: &B,
    s: &Settings,
    stop: &dyn Fn() -> bool,
    seen: &mut dyn FnMut(&Row),
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let mut rng = fastrand::Rng::with_seed(s.seed);
    let mut ctx = Ctx { backend, s, stop, seen, rows: &mut rows };
    match s.job {
        Job::Scan => {
            for &es in &s.element_sizes {
                for &n in &s.sizes {
                    if stop() {
                        return Ok(rows);
                    }
                    let copy = backend.copy_time(n * es as u64, s.reps.max(5))?;
                    match es {
                        4 => ctx.scan::<u32>(n, copy, &mut rng)?,
                        _ => ctx.scan::<u64>(n, copy, &mut rng)?,
                    }
                }
            }
        }
        Job::Sort { pairs } => {
            for &n in &s.sizes {
                if stop() {
                    break;
                }
                let copy = backend.copy_time(n * if pairs { 8 } else { 4 }, s.reps.max(5))?;
                ctx.sort(n, pairs, copy, &mut rng)?;
            }
        }
        Job::Compaction(_) | Job::PartitionReversed | Job::Remove => {
            for &es in &s.element_sizes {
                for &n in &s.sizes {
                    // Rates are compared at the same byte count for every density.
                    let copy = backend.copy_time(n * es as u64, s.reps.max(5))?;
                    for &d in &s.densities {
                        if stop() {
                            return Ok(rows);
                        }
                        crate::with_element_size!(es, T => ctx.points::<T>(n, d, copy, &mut rng)?,
                            other => return Err(crate::compaction::Error::ElementSize { size: other }))
                    }
                }
            }
        }
    }
    Ok(rows)
}

/// Timed repetitions of one configuration.
#[derive(Default)]
pub(crate) struct Samples {
    pub(crate) times: Vec<f64>,
    phases: Vec<(String, Vec<f64>)>,
    pub(crate) count: u64,
}

/// One run's span, its phases and its count.
type Timing = (Duration, Vec<(String, f64)>, u64);

/// The timing method of every row: `warmup` untimed runs, then `reps` timed
/// ones; `run(rep)` runs once (rep picks the rotated input).
pub(crate) fn sample(warmup: usize, reps: usize, mut run: impl FnMut(usize) -> Result<Timing>) -> Result<Samples> {
    let mut smp = Samples::default();
    for rep in 0..warmup + reps {
        let (span, phases, count) = run(rep)?;
        smp.count = count;
        if rep >= warmup {
            smp.push(span, &phases);
        }
    }
    Ok(smp)
}

impl Samples {
    fn push(&mut self, span: Duration, phases: &[(String, f64)]) {
        self.times.push(ms(span));
        for (i, (name, t)) in phases.iter().enumerate() {
            if self.phases.len() <= i {
                self.phases.push((name.clone(), Vec::new()));
            }
            self.phases[i].1.push(*t);
        }
    }
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

pub(crate) fn phases_of<R: Report>(r: &R) -> Result<Vec<(String, f64)>> {
    Ok(r.phases()?.into_iter().map(|p| (p.name.to_string(), ms(p.time))).collect())
}

struct Ctx<'a, B: Timed> {
    backend: &'a B,
    s: &'a Settings,
    stop: &'a dyn Fn() -> bool,
    seen: &'a mut dyn FnMut(&Row),
    rows: &'a mut Vec<Row>,
}

impl<B: Timed> Ctx<'_, B> {
    fn algorithms(&self) -> Vec<Algorithm> {
        self.s.algorithms.iter().copied().filter(|a| self.s.job.includes(*a) && self.backend.runs(*a)).collect()
    }

    /// Enough distinct inputs that each run reads from memory, not the cache.
    fn sets(&self, bytes: u64) -> usize {
        (self.backend.cache_bytes() * 2).div_ceil(bytes.max(1)).clamp(1, 8) as usize
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(&mut self, alg: Algorithm, es: u64, n: u64, density: f64, bytes: u64, copy: Duration, mut smp: Samples) {
        let med = median(&mut smp.times);
        let copy_rate = (2 * n * es) as f64 / copy.as_secs_f64();
        let rate = bytes as f64 / (med / 1e3);
        let row = Row {
            preset: self.s.preset.clone(),
            backend: self.backend.kind().into(),
            device: self.backend.device_name(),
            algorithm: RowAlgorithm::Catalog(alg),
            operation: self.s.job.operation(alg),
            element_bytes: es as usize,
            n,
            density,
            kept: smp.count,
            median_ms: med,
            min_ms: smp.times.first().copied().unwrap_or(0.0),
            max_ms: smp.times.last().copied().unwrap_or(0.0),
            phases: smp.phases.into_iter().map(|(name, mut v)| (name, median(&mut v))).collect(),
            bytes,
            copy_ms: ms(copy),
            pct_of_copy: if med > 0.0 { 100.0 * rate / copy_rate } else { 0.0 },
            cub_ms: None,
            vs_cub: None,
        };
        (self.seen)(&row);
        self.rows.push(row);
    }

    /// Every algorithm at one (element size, n, density).
    fn points<T: Element>(&mut self, n: u64, density: f64, copy: Duration, rng: &mut fastrand::Rng) -> Result<()> {
        let b = self.backend;
        let es = std::mem::size_of::<T>() as u64;
        let remove = matches!(self.s.job, Job::Remove);
        // Removal lists make their own (single) input: data is restored per run anyway.
        let sets = if remove { 1 } else { self.sets(n * es) };
        let hosts: Vec<Vec<T>> = (0..sets).map(|_| input::<T>(n as usize, rng)).collect();
        let inputs = hosts.iter().map(|h| b.upload(h)).collect::<Result<Vec<_>>>()?;
        drop(hosts);
        let mut output = b.alloc::<T>(n)?;
        let pred = b.word_below::<T>(threshold(density));
        let (removal, mut work) = if remove {
            let k = ((density * n as f64).round() as u64).min(n);
            (Some(b.upload(&removal_list(n, k, rng))?), Some(b.alloc::<T>(n)?))
        } else {
            (None, None)
        };
        for alg in self.algorithms() {
            if (self.stop)() {
                return Ok(());
            }
            let smp = sample(self.s.warmup, self.s.reps, |rep| {
                let input = &inputs[rep % sets];
                Ok(match (self.s.job.clone(), &removal, &mut work) {
                    (Job::Remove, Some(list), Some(work)) => {
                        b.restore(input, work)?;
                        if alg.in_place() {
                            // SAFETY: `removal_list` draws distinct indices below n.
                            let r = unsafe { b.remove_unchecked(alg, work, list)? };
                            (r.span()?, phases_of(&r)?, r.count()?)
                        } else {
                            let mark = b.mark_removed(work, list)?;
                            let r = b.select(alg, work, Keep::Sentinel(sentinel::<T>()), &mut output)?;
                            let mut ph = vec![("mark".to_string(), ms(mark))];
                            ph.extend(phases_of(&r)?);
                            (mark + r.span()?, ph, r.count()?)
                        }
                    }
                    (job @ (Job::Compaction(_) | Job::PartitionReversed), _, _) => {
                        let keep = Keep::Predicate(&*pred);
                        let r = match job {
                            Job::Compaction(Operation::Partition) => b.partition(alg, input, keep, &mut output)?,
                            Job::PartitionReversed => {
                                b.partition_with(alg, input, keep, &mut output, Rejected::Reversed)?
                            }
                            _ => b.select(alg, input, keep, &mut output)?,
                        };
                        (r.span()?, phases_of(&r)?, r.count()?)
                    }
                    _ => unreachable!("points() runs compaction and remove jobs"),
                })
            })?;
            let bytes = n * es + smp.count * es;
            self.finish(alg, es, n, density, bytes, copy, smp);
        }
        Ok(())
    }

    fn scan<S: ScanElement>(&mut self, n: u64, copy: Duration, rng: &mut fastrand::Rng) -> Result<()> {
        let b = self.backend;
        let es = std::mem::size_of::<S>() as u64;
        let sets = self.sets(n * es);
        let inputs = (0..sets).map(|_| b.upload(&input::<S>(n as usize, rng))).collect::<Result<Vec<_>>>()?;
        let mut output = b.alloc::<S>(n)?;
        for alg in self.algorithms() {
            if (self.stop)() {
                return Ok(());
            }
            let smp = sample(self.s.warmup, self.s.reps, |rep| {
                let r = b.exclusive_scan(alg, &inputs[rep % sets], &mut output)?;
                Ok((r.span()?, phases_of(&r)?, n))
            })?;
            self.finish(alg, es, n, 1.0, 2 * n * es, copy, smp);
        }
        Ok(())
    }

    fn sort(&mut self, n: u64, pairs: bool, copy: Duration, rng: &mut fastrand::Rng) -> Result<()> {
        let b = self.backend;
        let keys0 = b.upload(&input::<u32>(n as usize, rng))?;
        let values0 = b.upload(&input::<u32>(n as usize, rng))?;
        let (mut keys, mut values) = (b.alloc::<u32>(n)?, b.alloc::<u32>(n)?);
        let es = if pairs { 8 } else { 4 };
        for alg in self.algorithms() {
            if (self.stop)() {
                return Ok(());
            }
            let smp = sample(self.s.warmup, self.s.reps, |_| {
                // Sorting sorted keys would flatter nothing, but keep every run equal.
                b.restore(&keys0, &mut keys)?;
                if pairs {
                    b.restore(&values0, &mut values)?;
                }
                let r = b.radix_sort(alg, &mut keys, if pairs { Some(&mut values) } else { None })?;
                // 32 splits: the per-split phases would be 32 columns; keep the span.
                Ok((r.span()?, Vec::new(), n))
            })?;
            self.finish(alg, es, n, 1.0, 2 * n * es, copy, smp);
        }
        Ok(())
    }
}
