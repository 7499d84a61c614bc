//! `reap verify`: the correctness suite against the sequential reference, on
//! the chosen backend, with a line per algorithm and `N passed, M failed`.

use std::io::Write;

use anyhow::{Context, Result, bail};

use reap::compaction::{Algorithm, BackendKind, ELEMENT_SIZES, Operation, element_sizes_text};
use reap::memory::Limit;
use reap::verify::{self, Harness};

use super::backend::{AdapterArg, BackendChoice, OnBackend, Opened, with_backend};

#[derive(clap::Args)]
pub struct VerifyArgs {
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    #[command(flatten)]
    adapter: AdapterArg,
    /// Catalog names, comma separated, or `all`.
    // `--algorithm` (one name) was this flag's first spelling; the other commands take lists.
    #[arg(long, alias = "algorithm", value_delimiter = ',', default_value = "all")]
    algorithms: Vec<String>,
    /// Operations to check (select, partition, scan, sort, remove); default all.
    #[arg(long, value_delimiter = ',')]
    operations: Vec<String>,
    /// Element counts (`2^20` or plain), comma separated (default: sizes around every block boundary up to 1,000,003;
    /// on CUDA also 2^24+7, 2^28 and 2^31+2^24+4099). Sizes above 2^21 run a reduced matrix; sizes
    /// above 2^31 run only the counted select, partition and scan. Each size is also the capacity of
    /// the counted cases, whose lengths are 0, 1, cap-1, cap, below cap and above it.
    #[arg(long, value_delimiter = ',', value_parser = super::sizes::parse_count)]
    sizes: Vec<u64>,
    /// Fractions kept (or removed, for Redzone), comma separated, each in [0, 1].
    #[arg(long, value_delimiter = ',')]
    densities: Vec<f64>,
    /// Element sizes in bytes: 4, 8, 16, 32.
    #[arg(long, value_delimiter = ',', default_value = "4,8,16,32")]
    elements: Vec<usize>,
    #[arg(long, default_value_t = 0x5EED)]
    seed: u64,
    /// Kernel tuning to verify with, repeatable: each is `KEY=VALUE,...` (`CudaTuning::set` keys, e.g.
    /// `lookback.load=warp-transposed,lookback.delay=200` or `lookback.8.vecs=6`; with --backend wgpu
    /// `WgpuTuning::set` keys, e.g. `atomic.items=8`) and runs the whole suite once, from the default tuning;
    /// `sweep-grid` runs it once per shape of `reap bench sweep`'s grid (CUDA).
    #[arg(long)]
    tuning: Vec<String>,
    /// Print every case, not only failures.
    #[arg(long, short)]
    verbose: bool,
    /// Ranks to shard over: select, partition and scan split across GPUs 0..N (NCCL between them), or N
    /// CPU ranks with `--backend cpu`, gathered and compared with one rank alone.
    #[arg(long, default_value_t = 1)]
    gpus: usize,
}

pub fn run(args: VerifyArgs) -> Result<bool> {
    args.adapter.check(args.backend)?;
    if args.backend == BackendChoice::Wgpu {
        if args.gpus != 1 {
            bail!("--gpus shards over CUDA GPUs or CPU ranks; --backend wgpu verifies on one adapter");
        }
        if args.tuning.iter().any(|t| t == "sweep-grid") {
            bail!("--tuning sweep-grid is lookback's CUDA grid; on wgpu give WgpuTuning keys (e.g. atomic.items=8)");
        }
    }
    let algorithms = super::algorithms::parse_list(&args.algorithms)?;
    let mut cfg = verify::Config::new(algorithms);
    if !args.operations.is_empty() {
        cfg.operations =
            args.operations
                .iter()
                .map(|s| {
                    Operation::ALL.into_iter().find(|o| o.name() == s).with_context(|| {
                        format!("unknown operation `{s}`; use select, partition, scan, sort or remove")
                    })
                })
                .collect::<Result<_>>()?;
    }
    let sizes_given = !args.sizes.is_empty();
    if sizes_given {
        cfg.sizes = args.sizes;
    }
    if !args.densities.is_empty() {
        if let Some(d) = args.densities.iter().find(|d| !(0.0..=1.0).contains(*d)) {
            bail!("density {d} is outside [0, 1]");
        }
        cfg.densities = args.densities;
    }
    if let Some(e) = args.elements.iter().find(|e| !ELEMENT_SIZES.contains(*e)) {
        bail!("element size {e} is not supported; use {}", element_sizes_text());
    }
    if args.elements.is_empty() {
        bail!("--elements needs at least one of {}", element_sizes_text());
    }
    cfg.element_sizes = args.elements;
    cfg.seed = args.seed;
    let tunings = tunings(&args.tuning)?;
    if args.gpus != 1 || super::ranks::place()?.is_some() {
        if !tunings.is_empty() {
            bail!("--tuning and --gpus verify separately: run one, then the other");
        }
        return with_backend(
            args.backend,
            &args.adapter,
            ShardJob { cfg, sizes_given, verbose: args.verbose, gpus: args.gpus },
        );
    }
    #[cfg(feature = "wgpu")]
    if args.backend == BackendChoice::Wgpu {
        return on_wgpu(&args.adapter, cfg, args.verbose, &tunings);
    }
    with_backend(args.backend, &args.adapter, VerifyJob { cfg, sizes_given, verbose: args.verbose, tunings })
}

/// `--backend wgpu`: the same suite on the adapter `--adapter` names. The
/// fused sites and the sharded cases are CUDA's and the CPU's.
#[cfg(feature = "wgpu")]
fn on_wgpu(adapter: &AdapterArg, cfg: verify::Config, verbose: bool, tunings: &[Tuning]) -> Result<bool> {
    use reap::compaction::Backend;
    let mut backend = adapter.open()?;
    if let Some(why) = cfg.nothing_to_run(|a| backend.runs(a)) {
        bail!(why);
    }
    cfg.check_memory(false, Limit::host())?;
    super::sizes::check_wgpu(&backend, &cfg.sizes, &cfg.element_sizes)?;
    suites(&mut backend, &cfg, verbose, tunings, |b, pairs| b.retune(pairs, &cfg.element_sizes))
}

/// A tuning to verify with: its `--tuning` text and its key-value pairs.
type Tuning = (String, Vec<(String, String)>);

fn tunings(given: &[String]) -> Result<Vec<Tuning>> {
    let mut out = Vec::new();
    for t in given {
        if t == "sweep-grid" {
            out.extend(sweep_grid()?);
            continue;
        }
        let pairs = t
            .split(',')
            .filter(|kv| !kv.trim().is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').with_context(|| format!("--tuning `{kv}` is not KEY=VALUE"))?;
                Ok((k.trim().to_string(), v.trim().to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        out.push((t.clone(), pairs));
    }
    Ok(out)
}

#[cfg(feature = "cuda")]
fn sweep_grid() -> Result<Vec<Tuning>> {
    let sets = reap::bench::sweep::grid_tunings();
    Ok(sets
        .into_iter()
        .map(|pairs| {
            let label = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",");
            (label, pairs)
        })
        .collect())
}

#[cfg(not(feature = "cuda"))]
fn sweep_grid() -> Result<Vec<Tuning>> {
    bail!("--tuning sweep-grid sets CUDA kernel shapes; this reap was built without the `cuda` feature")
}

struct VerifyJob {
    cfg: verify::Config,
    sizes_given: bool,
    verbose: bool,
    tunings: Vec<Tuning>,
}

impl OnBackend for VerifyJob {
    type Output = bool;
    fn run<B: Opened>(mut self, mut backend: B) -> Result<bool> {
        // Only a GPU has SMs.
        if let Some(sms) = backend.sms() {
            println!("device: {} ({sms} SMs)", backend.device());
            if !self.sizes_given {
                // The GPU suite also covers the sizes only a GPU checks quickly, and
                // counted lengths past 2^31.
                self.cfg.sizes.extend([(1 << 24) + 7, 1 << 28, verify::Config::ABOVE_2_31]);
            }
        }
        if let Some(why) = self.cfg.nothing_to_run(|a| backend.runs(a)) {
            bail!(why);
        }
        self.cfg.check_memory(backend.kind() == BackendKind::Cpu, Limit::host())?;
        let sizes = self.cfg.element_sizes.clone();
        let passed = suites(&mut backend, &self.cfg, self.verbose, &self.tunings, |b, pairs| b.retune(pairs, &sizes))?;
        if !self.tunings.is_empty() {
            return Ok(passed);
        }
        Ok(verify_sites(&backend, &self.cfg, self.sizes_given, self.verbose) && passed)
    }
}

/// The suite once, or once per `--tuning`, each set by `retune` from the defaults.
fn suites<B: Harness>(
    backend: &mut B,
    cfg: &verify::Config,
    verbose: bool,
    tunings: &[Tuning],
    retune: impl Fn(&mut B, &[(String, String)]) -> Result<()>,
) -> Result<bool> {
    if tunings.is_empty() {
        return verify_on(backend, cfg, verbose);
    }
    // Every tuning set and checked before any suite runs: a value the device cannot run is one
    // error now, not a FAIL in every case that uses it after the tunings before it have run.
    for (label, pairs) in tunings {
        retune(backend, pairs).with_context(|| format!("--tuning {label}"))?;
    }
    let mut all_passed = true;
    for (label, pairs) in tunings {
        retune(backend, pairs)?;
        println!("tuning: {label}");
        all_passed &= verify_on(backend, cfg, verbose)?;
    }
    Ok(all_passed)
}

/// `--gpus N`: the sharded cases over N ranks.
struct ShardJob {
    cfg: verify::Config,
    sizes_given: bool,
    verbose: bool,
    gpus: usize,
}

impl OnBackend for ShardJob {
    type Output = bool;
    fn run<B: Opened>(self, backend: B) -> Result<bool> {
        let sizes = if self.sizes_given { self.cfg.sizes.clone() } else { verify::shard::SIZES.to_vec() };
        // The host holds each case's input, the one-rank reference and the gathered result.
        let cfg = verify::Config { sizes: sizes.clone(), ..self.cfg.clone() };
        cfg.check_memory(true, Limit::host())?;
        let device = backend.device();
        let group = backend.group(self.gpus)?;
        println!(
            "verifying {} ranks on the {} backend ({device}; collectives: {}; seed {:#x})",
            group.len(),
            group.ranks()[0].kind().name(),
            group.carrier(),
            self.cfg.seed
        );
        if !group.leads() {
            println!(
                "rank {}: checks each case's counts and offsets; rank 0 compares the gathered results",
                group.first()
            );
        }
        let mut tally = PerAlgorithm::new(self.verbose);
        let (passed, failed) =
            verify::shard::run(&group, &self.cfg.algorithms, &self.cfg.operations, &sizes, self.cfg.seed, |case, r| {
                tally.seen(case.algorithm, case, r)
            });
        tally.finish();
        println!("{passed} passed, {failed} failed");
        if passed + failed == 0 {
            bail!("no sharded case ran: --gpus checks select, partition and scan; pick one of them");
        }
        Ok(failed == 0)
    }
}

/// The fused-site cases, where the backend has sites and select is among the
/// operations: every algorithm through a site of the synthetic producer.
fn verify_sites<B: Opened>(backend: &B, cfg: &verify::Config, sizes_given: bool, verbose: bool) -> bool {
    if !cfg.operations.contains(&Operation::Select) {
        return true;
    }
    // The suite's default sizes reach 2^31; the site cases have their own.
    let sizes: Vec<u64> =
        if sizes_given { cfg.sizes.iter().copied().filter(|&n| n <= 1 << 26).collect() } else { site_sizes() };
    if sizes.is_empty() {
        return true;
    }
    let Some((passed, failed)) = backend.verify_sites(&cfg.algorithms, &sizes, cfg.seed as u32, verbose) else {
        return true;
    };
    println!("  {:<27} {passed} passed, {failed} failed", "sites (fused and separate)");
    println!("{passed} passed, {failed} failed");
    failed == 0
}

#[cfg(feature = "cuda")]
fn site_sizes() -> Vec<u64> {
    verify::site::SIZES.to_vec()
}

#[cfg(not(feature = "cuda"))]
fn site_sizes() -> Vec<u64> {
    Vec::new()
}

fn verify_on<B: Harness>(backend: &B, cfg: &verify::Config, verbose: bool) -> Result<bool> {
    println!("verifying on the {} backend (seed {:#x})", backend.kind().name(), cfg.seed);
    let mut tally = PerAlgorithm::new(verbose);
    let summary = verify::run(backend, cfg, |case, outcome| tally.seen(case.algorithm, case, outcome));
    tally.finish();
    println!("{} passed, {} failed", summary.passed, summary.failed);
    if summary.passed + summary.failed == 0 {
        // E.g. only sort, at sizes above the sort cases' limit.
        bail!("no case ran: the sizes and operations picked select no case; see `reap verify --help`");
    }
    Ok(summary.failed == 0)
}

/// The console's running tally: a line per algorithm as its cases end, each
/// failure (every case when verbose) as it comes.
struct PerAlgorithm {
    rows: Vec<(Algorithm, u64, u64)>,
    verbose: bool,
}

impl PerAlgorithm {
    fn new(verbose: bool) -> Self {
        PerAlgorithm { rows: Vec::new(), verbose }
    }

    fn seen(&mut self, algorithm: Algorithm, case: &dyn std::fmt::Display, outcome: &Result<(), String>) {
        if self.rows.last().is_none_or(|(a, _, _)| *a != algorithm) {
            self.finish();
            self.rows.push((algorithm, 0, 0));
        }
        let entry = self.rows.last_mut().expect("pushed above");
        match outcome {
            Ok(()) => {
                entry.1 += 1;
                if self.verbose {
                    println!("    ok   {case}");
                }
            }
            Err(e) => {
                entry.2 += 1;
                println!("    FAIL {case}: {e}");
            }
        }
        let _ = std::io::stdout().flush();
    }

    /// The line of the algorithm whose cases just ended.
    fn finish(&self) {
        if let Some((a, p, f)) = self.rows.last() {
            println!("  {:<27} {p} passed, {f} failed", a.name());
        }
    }
}
