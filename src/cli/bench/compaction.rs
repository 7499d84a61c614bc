//! `reap bench compaction`: every algorithm, size, density and element size
//! timed beside the copy roofline (and the CUB peer where nvcc is found),
//! written as results.csv / results.json / report.md and plots. With
//! `--backend wgpu` on an NVIDIA GPU the CUDA backend and CUB are timed in the
//! same run, so the report puts the three side by side.

use anyhow::{Context, Result};

use reap::bench::{BenchBackend, Named, Platform, Row};
use reap::compaction::Operation;

use crate::cli::backend::{AdapterArg, BackendChoice, OnBackend, Opened, with_backend};
use crate::cli::sizes::parse_count;

/// What `--operation` names, one measurement series each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum OperationChoice {
    Select,
    Partition,
    /// Partition with the rejected half reversed, CUB's contract (lookback, chained).
    PartitionReversed,
    Scan,
    Sort,
    SortPairs,
    Remove,
}

impl OperationChoice {
    fn job(self) -> reap::bench::Job {
        use reap::bench::Job;
        match self {
            OperationChoice::Select => Job::Compaction(Operation::Select),
            OperationChoice::Partition => Job::Compaction(Operation::Partition),
            OperationChoice::PartitionReversed => Job::PartitionReversed,
            OperationChoice::Scan => Job::Scan,
            OperationChoice::Sort => Job::Sort { pairs: false },
            OperationChoice::SortPairs => Job::Sort { pairs: true },
            OperationChoice::Remove => Job::Remove,
        }
    }
}

#[derive(clap::Args)]
pub struct BenchArgs {
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub(super) backend: BackendChoice,
    #[command(flatten)]
    pub(super) adapter: AdapterArg,
    /// A paper's experiment (repeatable, or comma separated): 000-fig3, 000-fig4, 000-table3, 000-table4,
    /// 000-table5, 003-table1, 002-s4, 004-fig4, or `all`. Presets fix algorithms, operation, sizes,
    /// densities and elements; --reps, --warmup and --seed still apply.
    #[arg(long, value_delimiter = ',')]
    pub(super) preset: Vec<String>,
    /// Catalog names, comma separated, or `all`.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub(super) algorithms: Vec<String>,
    /// select, partition, scan, sort, sort-pairs, or remove (seed 004: Redzone vs marking + select);
    /// comma separated to time several in one run, each beside its CUB peer (e.g. `--ops select,partition,scan`).
    #[arg(long, alias = "ops", value_enum, value_delimiter = ',', default_value = "select")]
    pub(super) operation: Vec<OperationChoice>,
    /// Element counts (`2^22` or plain), comma separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_count, default_value = "2^22")]
    pub(super) sizes: Vec<u64>,
    /// Fractions kept (removed, for `remove`), comma separated.
    #[arg(long, value_delimiter = ',', default_value = "0,0.1,0.25,0.5,0.75,0.9,1")]
    pub(super) densities: Vec<f64>,
    /// Element sizes in bytes: 4, 8, 16, 32 (scan: 4, 8).
    #[arg(long, value_delimiter = ',', default_value = "4")]
    pub(super) elements: Vec<usize>,
    #[command(flatten)]
    pub(super) repeat: super::Repeat,
    /// Do not build or run the CUB peer.
    #[arg(long)]
    pub(super) no_cub: bool,
    /// Folder for results.csv, results.json, report.md and the plots (created if missing).
    #[arg(long)]
    pub(super) out: Option<std::path::PathBuf>,
    /// Shard a 4-byte select across GPUs 0..N (NCCL between them; N CPU ranks with `--backend cpu`) and time
    /// it beside the same select on one GPU: speedup, scaling efficiency and the collectives' share.
    #[arg(long, default_value_t = 1)]
    pub(super) gpus: usize,
    /// With --backend wgpu: the wgpu kernels' tuning, `KEY=VALUE` comma separated (`WgpuTuning::set`
    /// keys, e.g. `lookback.span=4,lookback.bytes=128`); CUDA beside it keeps its defaults.
    #[arg(long, value_delimiter = ',')]
    pub(super) tuning: Vec<String>,
}

pub fn run(args: BenchArgs) -> Result<bool> {
    use reap::bench::{Settings, presets};
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    args.adapter.check(args.backend)?;
    if !args.tuning.is_empty() && args.backend != BackendChoice::Wgpu {
        anyhow::bail!("--tuning is for --backend wgpu here; `reap verify --tuning` and `reap bench sweep` tune CUDA");
    }
    let tuning = args
        .tuning
        .iter()
        .map(|kv| kv.split_once('=').with_context(|| format!("--tuning `{kv}` is not KEY=VALUE")))
        .collect::<Result<Vec<_>>>()?;
    if args.gpus != 1 || crate::cli::ranks::place()?.is_some() {
        if args.backend == BackendChoice::Wgpu {
            anyhow::bail!("--gpus shards over CUDA GPUs or CPU ranks; --backend wgpu times one adapter");
        }
        return super::sharded::run(args, command);
    }
    let chosen = presets::resolve(&args.preset)?;
    let series: Vec<Settings> = if chosen.is_empty() {
        let algorithms = crate::cli::algorithms::parse_list(&args.algorithms)?;
        // Each operation once, in the order given.
        let ops = args.operation.iter().enumerate().filter(|(i, op)| !args.operation[..*i].contains(op));
        ops.map(|(_, op)| {
            args.repeat.series(op.job(), algorithms.clone(), &args.sizes, &args.densities, &args.elements)
        })
        .collect()
    } else {
        presets::series(&chosen, args.repeat.reps, args.repeat.warmup, args.repeat.seed)
    };
    let host = reap::memory::Limit::host();
    for s in &series {
        s.check()?;
        s.check_memory(host)?;
    }
    // Fail on an unwritable folder before measuring anything.
    super::out_folder(args.out.as_deref(), &reap::report::BENCH_FILES)?;
    crate::cli::interrupt::install();
    let run = BenchRun {
        series: &series,
        presets: chosen.iter().map(|p| p.name.to_string()).collect(),
        out: args.out.as_deref(),
        cub: !args.no_cub,
        command: &command,
    };
    #[cfg(feature = "wgpu")]
    if args.backend == BackendChoice::Wgpu {
        return on_wgpu(&args.adapter, &tuning, &run);
    }
    #[cfg(not(feature = "wgpu"))]
    let _ = tuning;
    with_backend(args.backend, &args.adapter, run)
}

struct BenchRun<'a> {
    series: &'a [reap::bench::Settings],
    presets: Vec<String>,
    out: Option<&'a std::path::Path>,
    cub: bool,
    command: &'a str,
}

impl OnBackend for BenchRun<'_> {
    type Output = bool;
    fn run<B: Opened>(self, backend: B) -> Result<bool> {
        let mut m = Measured::new(backend.platform());
        measure(&backend, &self, &mut m)?;
        finish(&self, m)
    }
}

/// What a run measured: its backend's platform, those of any backend timed
/// beside it (CUDA beside wgpu), and the rows of all of them.
struct Measured {
    platform: Platform,
    beside: Vec<Platform>,
    rows: Vec<Row>,
    complete: bool,
    /// Why the CUB peer cannot run, where that is known before trying.
    no_cub: Option<String>,
}

impl Measured {
    fn new(platform: Platform) -> Self {
        Measured { platform, beside: Vec::new(), rows: Vec::new(), complete: true, no_cub: None }
    }
}

/// Times every series on `backend`, adding its rows to `m` (and results.csv
/// after each row, so a stop, a second signal or an error keeps what was measured).
fn measure<B: reap::bench::Timed>(backend: &B, run: &BenchRun<'_>, m: &mut Measured) -> Result<()> {
    use reap::bench;
    let total: u64 = run.series.iter().map(|s| s.planned(|a| backend.runs(a))).sum();
    println!(
        "benchmarking on {} ({} rows; Ctrl-C or SIGTERM stops and keeps what was measured)",
        backend.device_name(),
        total
    );
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} rows, {elapsed} elapsed, ~{eta} left  {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.println(format!(
        "{:<27} {:<18} {:>5} {:>11} {:>6} {:>10} {:>10} {:>10} {:>7}  phases (ms)",
        "algorithm", "operation", "bytes", "n", "dens%", "median ms", "min ms", "max ms", "% copy"
    ));
    let stopped = crate::cli::interrupt::stopped;
    let write_csv = |rows: &[Row]| -> Result<()> {
        if let Some(dir) = run.out {
            write(&dir.join("results.csv"), bench::csv(rows)?.as_bytes())?;
        }
        Ok(())
    };
    for s in run.series {
        if stopped() {
            break;
        }
        bar.set_message(if s.preset.is_empty() { String::new() } else { s.preset.clone() });
        // Each row on disk as it comes: a second Ctrl-C, which ends the
        // process at once, loses only the row being measured.
        let mut so_far = m.rows.clone();
        let mut write_error = None;
        let measured = bench::run(backend, s, &stopped, &mut |r| {
            bar.println(progress_line(r));
            bar.inc(1);
            so_far.push(r.clone());
            if write_error.is_none() {
                write_error = write_csv(&so_far).err();
            }
        });
        if let Some(e) = write_error {
            bar.abandon();
            return Err(e);
        }
        match measured {
            Ok(r) => m.rows.extend(r),
            Err(e) => {
                bar.abandon();
                // Keep what was measured before the error, then report it.
                write_csv(&m.rows)?;
                return Err(e.into());
            }
        }
        write_csv(&m.rows)?;
    }
    bar.finish_and_clear();
    m.complete &= !stopped();
    Ok(())
}

/// Writes one results file whole; a second signal waits for the write's end.
pub(super) fn write(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    crate::cli::interrupt::while_writing(|| reap::bench::output::write_atomically(path, bytes))?;
    Ok(())
}

/// One measured row as the progress bar prints it.
fn progress_line(r: &Row) -> String {
    let phases: Vec<String> = r.phases.iter().map(|(n, t)| format!("{n} {t:.4}")).collect();
    format!(
        "{:<27} {:<18} {:>5} {:>11} {:>6.1} {:>10.4} {:>10.4} {:>10.4} {:>7.1}  {}",
        r.algorithm.name(),
        r.operation.name(),
        r.element_bytes,
        r.n,
        r.density * 100.0,
        r.median_ms,
        r.min_ms,
        r.max_ms,
        r.pct_of_copy,
        phases.join(", ")
    )
}

/// Adds the CUB peer's rows, prints the table and writes results.csv,
/// results.json, report.md and the plots.
fn finish(run: &BenchRun<'_>, mut m: Measured) -> Result<bool> {
    use reap::bench::{self, cub, output};
    if !m.complete {
        println!("stopped: {} rows measured", m.rows.len());
    }
    // The CUB peer: same configurations, same method, its own process, on
    // the CUDA backend's GPU (the run's own, or the one timed beside wgpu).
    let peer = if !run.cub {
        cub::PeerStatus::Skipped { why: "--no-cub".into() }
    } else if !m.complete {
        cub::PeerStatus::Skipped { why: "the run was stopped".into() }
    } else if let Some(why) = m.no_cub.take() {
        cub::PeerStatus::Skipped { why }
    } else {
        let on = m.beside.iter().find(|p| p.arch.is_some()).unwrap_or(&m.platform).clone();
        cub_peer(&on, &mut m.rows, run)
    };
    if let cub::PeerStatus::Skipped { why } = &peer {
        println!("CUB peer skipped: {why}");
    }
    print_rows(&m.rows);
    let Some(dir) = run.out else {
        return Ok(true);
    };
    write(&dir.join("results.csv"), bench::csv(&m.rows)?.as_bytes())?;
    let json = output::results_json(&output::Results {
        reap_version: env!("CARGO_PKG_VERSION"),
        reap_commit: output::GIT_COMMIT,
        finished_unix_s: output::now_unix_s(),
        complete: m.complete,
        command: run.command,
        platform: &m.platform,
        beside: &m.beside,
        cub_peer: &peer,
        presets: &run.presets,
        settings: run.series,
        rows: &m.rows,
    })?;
    write(&dir.join("results.json"), json.as_bytes())?;
    let md = bench::report::markdown(&bench::report::Input {
        platform: &m.platform,
        beside: &m.beside,
        peer: &peer,
        presets: &run.presets,
        rows: &m.rows,
        complete: m.complete,
        command: run.command,
    });
    write(&dir.join("report.md"), md.as_bytes())?;
    let plotted = bench::report::plotted(&m.platform, &m.rows);
    let plots = crate::cli::interrupt::while_writing(|| bench::plot::all(dir, &plotted))?;
    println!("wrote results.csv, results.json, report.md and {} plot files in {}", plots.len(), dir.display());
    Ok(true)
}

/// `--backend wgpu`: the wgpu backend on `--adapter`'s adapter and then,
/// where that adapter is an NVIDIA GPU that CUDA opens too, the CUDA backend
/// on the same series, so the report sets wgpu beside CUDA and CUB.
#[cfg(feature = "wgpu")]
fn on_wgpu(adapter: &AdapterArg, tuning: &[(&str, &str)], run: &BenchRun<'_>) -> Result<bool> {
    use reap::bench::Timed;
    // wgpu's buffers are freed before CUDA allocates its own.
    let (mut m, nvidia) = {
        let mut wgpu = adapter.open()?;
        for (k, v) in tuning {
            wgpu.tuning.set(k, v)?;
        }
        let element_sizes: Vec<usize> = run.series.iter().flat_map(|s| s.element_sizes.iter().copied()).collect();
        wgpu.check_tuning(&element_sizes)?;
        for s in run.series {
            crate::cli::sizes::check_wgpu(&wgpu, &s.sizes, &s.element_sizes)?;
        }
        let mut m = Measured::new(wgpu.platform());
        measure(&wgpu, run, &mut m)?;
        if wgpu.tuning.single_pass.stats {
            // The counters hold the last single-pass call's: the last row's last repetition.
            let s = reap::compaction::wgpu::single_pass::last_stats(&wgpu)?;
            let (waits, walked, fallbacks) = s.per_tile();
            println!(
                "look-back of the last single-pass call: {} tiles looked back; per tile {waits:.2} polls that \
                 waited, {walked:.2} tiles walked, {fallbacks:.3} fallbacks",
                s.tiles
            );
        }
        (m, wgpu.device().info.vendor == NVIDIA_VENDOR)
    };
    if !nvidia {
        m.no_cub = Some("the wgpu adapter is not an NVIDIA GPU, so neither CUDA nor CUB ran beside it".into());
    } else if m.complete {
        beside_cuda(run, &mut m)?;
    }
    finish(run, m)
}

/// NVIDIA's PCI vendor id, as wgpu reports an adapter's vendor.
#[cfg(feature = "wgpu")]
const NVIDIA_VENDOR: u32 = 0x10de;

/// The CUDA backend on the wgpu run's series, where CUDA opens.
#[cfg(all(feature = "wgpu", feature = "cuda"))]
fn beside_cuda(run: &BenchRun<'_>, m: &mut Measured) -> Result<()> {
    match reap::compaction::cuda::CudaBackend::new(0) {
        Ok(cuda) => {
            use reap::bench::Timed;
            println!("CUDA opens too: the same configurations on the CUDA backend, then CUB");
            m.beside.push(cuda.platform());
            measure(&cuda, run, m)
        }
        Err(e) => {
            m.no_cub = Some(format!("CUDA does not open here ({e}), so neither it nor CUB ran beside wgpu"));
            Ok(())
        }
    }
}

#[cfg(all(feature = "wgpu", not(feature = "cuda")))]
fn beside_cuda(_run: &BenchRun<'_>, m: &mut Measured) -> Result<()> {
    m.no_cub = Some("this reap was built without the `cuda` feature: no CUDA backend or CUB beside wgpu".into());
    Ok(())
}

/// Builds (or reuses) and runs the CUB peer for `platform`'s GPU, joining
/// its times to `rows`.
fn cub_peer(platform: &Platform, rows: &mut Vec<Row>, run: &BenchRun<'_>) -> reap::bench::cub::PeerStatus {
    use reap::bench::cub::{self, PeerStatus};
    let skipped = |why: String| PeerStatus::Skipped { why };
    let Some(arch) = platform.arch.clone() else {
        return skipped(format!("the {} backend has no CUB counterpart", platform.backend));
    };
    let Some(nvcc) = cub::find_nvcc() else {
        return skipped("nvcc not found on PATH, under CUDA_PATH / CUDA_HOME, or at /usr/local/cuda/bin".into());
    };
    let dir = run.out.map(|d| d.join(".cub-peer")).unwrap_or_else(|| std::env::temp_dir().join("reap-cub-peer"));
    println!("building the CUB peer with {} for {arch} in {} (cached)", nvcc.display(), dir.display());
    let binary = match cub::build(&nvcc, &dir, &arch) {
        Ok(b) => b,
        Err(e) => return skipped(e),
    };
    let jobs = cub::jobs(rows);
    let (reps, warmup, seed) = run.series.first().map(|s| (s.reps, s.warmup, s.seed)).unwrap_or((20, 3, 1));
    let bar = indicatif::ProgressBar::new(jobs.len() as u64);
    let result = cub::run(&binary, &jobs, reps, warmup, seed, &mut |p| {
        bar.println(format!(
            "{:<27} {:<18} {:>5} {:>11} {:>6.1} {:>10.4} {:>10.4} {:>10.4}",
            format!("cub-{}", p.op.name()),
            "",
            p.elem,
            p.n,
            p.density * 100.0,
            p.median_ms,
            p.min_ms,
            p.max_ms
        ));
        bar.inc(1);
    });
    bar.finish_and_clear();
    match result {
        Ok((device, cub_version, cuda_runtime, peer_rows)) => {
            cub::join(rows, &peer_rows);
            let extra = cub::as_rows(&peer_rows, rows, &device);
            rows.extend(extra);
            PeerStatus::Ran {
                binary: binary.display().to_string(),
                nvcc: nvcc.display().to_string(),
                device,
                cub_version,
                cuda_runtime,
            }
        }
        Err(e) => skipped(e),
    }
}

/// The measured rows as a plain table on stdout, a table per backend where
/// several were timed (the files under --out hold everything).
fn print_rows(rows: &[Row]) {
    let mut backends: Vec<BenchBackend> = Vec::new();
    for r in rows.iter().filter(|r| r.backend != BenchBackend::Cub) {
        if !backends.contains(&r.backend) {
            backends.push(r.backend);
        }
    }
    if backends.is_empty() {
        print_table(std::iter::empty());
    }
    for b in &backends {
        if backends.len() > 1 {
            println!("{}:", b.name());
        }
        print_table(rows.iter().filter(|r| r.backend == *b));
    }
}

fn print_table<'a>(rows: impl Iterator<Item = &'a Row>) {
    println!(
        "{:<27} {:<18} {:>5} {:>11} {:>7} {:>11} {:>7} {:>7}  phases (ms)",
        "algorithm", "operation", "bytes", "n", "density", "median ms", "% copy", "vs CUB"
    );
    for r in rows {
        let phases: Vec<String> = r.phases.iter().map(|(n, t)| format!("{n} {t:.4}")).collect();
        println!(
            "{:<27} {:<18} {:>5} {:>11} {:>7.3} {:>11.4} {:>7.1} {:>7}  {}",
            r.algorithm.name(),
            r.operation.name(),
            r.element_bytes,
            r.n,
            r.density,
            r.median_ms,
            r.pct_of_copy,
            r.vs_cub.map_or("-".to_string(), |v| format!("{v:.2}")),
            phases.join(", ")
        );
    }
}
