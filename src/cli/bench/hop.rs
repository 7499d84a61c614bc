//! `reap bench hop`: the inter-workgroup hop alone, in CUDA and WGSL, beside
//! reap's `chained` per tile ([`reap::bench::hop`]); a table on the terminal,
//! hop.csv and hop.md with `--out`.

use anyhow::{Result, bail};

use reap::bench::hop::{self, HopRow, HopSettings};

use crate::cli::backend::AdapterArg;
use crate::cli::sizes::parse_count;

/// Which backends `reap bench hop` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HopBackend {
    /// CUDA where it runs, else wgpu.
    Auto,
    Cuda,
    Wgpu,
    /// CUDA and wgpu side by side; a backend that cannot run here is skipped with the reason.
    All,
}

#[derive(clap::Args)]
pub struct HopArgs {
    #[arg(long, value_enum, default_value_t = HopBackend::Auto)]
    backend: HopBackend,
    #[command(flatten)]
    adapter: AdapterArg,
    /// Round trips of the two-workgroup ping-pong [default: 20000; 200 on a software adapter such as lavapipe].
    #[arg(long)]
    round_trips: Option<u32>,
    /// Workgroups of the chain [default: 16384; 64 on a software adapter].
    #[arg(long)]
    workgroups: Option<u32>,
    /// 4-byte elements of the `chained` select timed per tile (`2^26` or plain) [default: 2^26; 2^20 on a
    /// software adapter].
    #[arg(long, value_parser = parse_count)]
    chained_size: Option<u64>,
    /// Timed runs per case (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Untimed runs first (compilation, caches).
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Folder for hop.csv and hop.md (created if missing).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

pub fn run(args: HopArgs) -> Result<bool> {
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    if let (Some(a), HopBackend::Cuda | HopBackend::Auto) = (&args.adapter.adapter, args.backend) {
        bail!("--adapter {a} picks a wgpu adapter; add --backend wgpu or all (or drop --adapter)");
    }
    let s = HopSettings {
        round_trips: args.round_trips,
        workgroups: args.workgroups,
        chained_size: args.chained_size,
        reps: args.reps,
        warmup: args.warmup,
        seed: args.seed,
    };
    s.check()?;
    super::out_folder(args.out.as_deref(), &["hop.csv", "hop.md"])?;
    let print = |r: &HopRow| {
        println!(
            "{:<6} {:<40} {:>9} {:>11.1} {:>11.4} {:>11.4}  {}",
            r.backend, r.case, r.hops, r.one_way_ns, r.device_ms, r.wall_ms, r.detail
        )
    };
    let mut rows = Vec::new();
    let mut about = Vec::new();
    let mut skipped = Vec::new();
    let explicit = matches!(args.backend, HopBackend::Cuda | HopBackend::Wgpu);
    if matches!(args.backend, HopBackend::Cuda | HopBackend::All | HopBackend::Auto) {
        match cuda(&s, &mut about, &mut rows, &print)? {
            Ok(()) => {}
            Err(why) if explicit => bail!("{why}"),
            Err(why) => {
                println!("skipping CUDA: {why}");
                skipped.push(format!("CUDA: {why}"));
            }
        }
    }
    let wgpu_too = match args.backend {
        HopBackend::Wgpu | HopBackend::All => true,
        HopBackend::Auto => rows.is_empty(),
        HopBackend::Cuda => false,
    };
    if wgpu_too {
        match wgpu(&s, &args.adapter, &mut about, &mut rows, &print)? {
            Ok(()) => {}
            Err(why) if explicit => bail!("{why}"),
            Err(why) => {
                println!("skipping wgpu: {why}");
                skipped.push(format!("wgpu: {why}"));
            }
        }
    }
    if rows.is_empty() {
        bail!("no backend could run the hop benchmark here: {}", skipped.join("; "));
    }
    if let Some(dir) = &args.out {
        use crate::cli::interrupt::while_writing;
        use reap::files::write_atomically;
        let csv = hop::csv(&rows)?;
        let md = hop::markdown(&rows, &about, &command);
        while_writing(|| write_atomically(&dir.join("hop.csv"), csv.as_bytes()))?;
        while_writing(|| write_atomically(&dir.join("hop.md"), md.as_bytes()))?;
        println!("wrote hop.csv and hop.md in {}", dir.display());
    }
    Ok(true)
}

/// The table's head, under each backend's line.
fn header() {
    println!(
        "{:<6} {:<40} {:>9} {:>11} {:>11} {:>11}  run",
        "back", "case", "hops", "one-way ns", "device ms", "wall ms"
    );
}

/// Times every case on CUDA; the inner `Err` says why CUDA cannot run here.
#[cfg(feature = "cuda")]
fn cuda(
    s: &HopSettings,
    about: &mut Vec<String>,
    rows: &mut Vec<HopRow>,
    print: &dyn Fn(&HopRow),
) -> Result<Result<(), String>> {
    let b = match reap::compaction::cuda::CudaBackend::new(0) {
        Ok(b) => b,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let line = hop::about_cuda(&b);
    println!("{line}");
    header();
    about.push(line);
    rows.extend(hop::measure_cuda(&b, s, &mut |r| print(r))?);
    Ok(Ok(()))
}

#[cfg(not(feature = "cuda"))]
fn cuda(_: &HopSettings, _: &mut Vec<String>, _: &mut Vec<HopRow>, _: &dyn Fn(&HopRow)) -> Result<Result<(), String>> {
    Ok(Err("this reap was built without the `cuda` feature".into()))
}

/// Times every case on the wgpu adapter `adapter` names; the inner `Err`
/// says why wgpu cannot run here.
#[cfg(feature = "wgpu")]
fn wgpu(
    s: &HopSettings,
    adapter: &AdapterArg,
    about: &mut Vec<String>,
    rows: &mut Vec<HopRow>,
    print: &dyn Fn(&HopRow),
) -> Result<Result<(), String>> {
    let b = match adapter.open() {
        Ok(b) => b,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let line = hop::about_wgpu(&b);
    println!("{line}");
    header();
    about.push(line);
    rows.extend(hop::measure_wgpu(&b, s, &mut |r| print(r))?);
    Ok(Ok(()))
}

#[cfg(not(feature = "wgpu"))]
fn wgpu(
    _: &HopSettings,
    _: &AdapterArg,
    _: &mut Vec<String>,
    _: &mut Vec<HopRow>,
    _: &dyn Fn(&HopRow),
) -> Result<Result<(), String>> {
    Ok(Err("this reap was built without the `wgpu` feature".into()))
}
