//! `reap bench sweep`: times every shape of the single-pass kernels' grid per
//! element size on the GPU ([`reap::bench::sweep`]), writes sweep.csv and
//! sweep.md, and prints the winners as lines of the default table.

use anyhow::{Result, bail};

#[cfg(feature = "cuda")]
use reap::compaction::cuda::single_pass::ArchClass;
#[cfg(feature = "cuda")]
use reap::compaction::{Algorithm, Operation};

use crate::cli::sizes::parse_count;

#[derive(clap::Args)]
pub struct SweepArgs {
    /// The single-pass algorithm to tune: lookback or chained (they share the table).
    #[arg(long, default_value = "lookback")]
    algorithm: String,
    /// select or partition.
    #[arg(long, default_value = "select")]
    operation: String,
    /// Element counts (`2^24` or plain), comma separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_count, default_value = "2^24,2^26,2^28")]
    sizes: Vec<u64>,
    /// Fractions kept, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "0.5")]
    densities: Vec<f64>,
    /// Element sizes in bytes: 4, 8, 16, 32.
    #[arg(long, value_delimiter = ',', default_value = "4,8,16,32")]
    elements: Vec<usize>,
    /// Threads per block to try (default 128,256,384,512).
    #[arg(long, value_delimiter = ',')]
    blocks: Option<Vec<u32>>,
    /// 16-byte vectors a thread to try (default: per element size and load style).
    #[arg(long, value_delimiter = ',')]
    vecs: Option<Vec<u32>>,
    /// Load styles to try: vectorised, warp-transposed, bulk-async (default all).
    #[arg(long, value_delimiter = ',')]
    loads: Option<Vec<String>>,
    /// Look-back back-offs in ns to try, register load styles only (default 0,200).
    #[arg(long, value_delimiter = ',')]
    delays: Option<Vec<u32>>,
    #[command(flatten)]
    repeat: super::Repeat,
    /// Folder for sweep.csv and sweep.md (created if missing).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

#[cfg(not(feature = "cuda"))]
pub fn run(_: SweepArgs) -> Result<bool> {
    bail!("the sweep tunes CUDA kernels; this reap was built without the `cuda` feature")
}

#[cfg(feature = "cuda")]
pub fn run(args: SweepArgs) -> Result<bool> {
    use reap::bench::{Job, sweep};
    use reap::compaction::cuda::CudaBackend;
    use reap::files::write_atomically;

    use crate::cli::interrupt::while_writing;

    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let operation = match args.operation.as_str() {
        "select" => Operation::Select,
        "partition" => Operation::Partition,
        other => bail!("--operation {other}: the sweep times select or partition"),
    };
    let algorithms = vec![args.algorithm.parse::<Algorithm>()?];
    let s = args.repeat.series(Job::Compaction(operation), algorithms, &args.sizes, &args.densities, &args.elements);
    let (algorithm, operation) = sweep::target(&s)?;
    let grid = grid_of(&args)?;
    s.check_memory(reap::memory::Limit::host())?;
    super::out_folder(args.out.as_deref(), &["sweep.csv", "sweep.md"])?;
    let mut b = CudaBackend::new(0).map_err(no_gpu_advice)?;
    let device = b.info.name.clone();
    // The class the winners are written for: the device's most specific one.
    let arch = ArchClass::of(&b.info);
    println!(
        "sweeping {} {} on {device}: {} points (every shape compiles first, on every core)",
        algorithm.name(),
        operation.name(),
        sweep::planned(&s, &grid)
    );
    println!(
        "{:>5} {:>11} {:>6} {:>34} {:>10} {:>10} {:>10} {:>8} {:>7}",
        "bytes", "n", "dens%", "shape", "median ms", "min ms", "max ms", "GB/s", "% copy"
    );
    crate::cli::interrupt::install();
    let mut so_far = Vec::new();
    let points = sweep::run(&mut b, &s, &grid, &crate::cli::interrupt::stopped, &mut |p| {
        // Each point on disk as it comes: a second Ctrl-C ends the process at once.
        so_far.push(p.clone());
        if let (Some(dir), Ok(text)) = (&args.out, sweep::csv(&so_far)) {
            let _ = while_writing(|| write_atomically(&dir.join("sweep.csv"), text.as_bytes()));
        }
        let shape = p.shape().map_or_else(|| p.load.clone(), |s| s.to_string());
        let mark = if p.default { " (default)" } else { "" };
        if !p.error.is_empty() {
            println!("{:>5} {:>11} {:>6.1} {shape:>34}  failed: {}", p.element_bytes, p.n, p.density * 100.0, p.error);
            return;
        }
        println!(
            "{:>5} {:>11} {:>6.1} {shape:>34} {:>10.4} {:>10.4} {:>10.4} {:>8.1} {:>7.1}{mark}{}",
            p.element_bytes,
            p.n,
            p.density * 100.0,
            p.median_ms,
            p.min_ms,
            p.max_ms,
            p.gb_per_s,
            p.pct_of_copy,
            if p.count_ok { "" } else { "  WRONG COUNT" }
        );
    })?;
    let sizes: Vec<u32> = s.element_sizes.iter().map(|&e| e as u32).collect();
    let md = sweep::markdown(&points, &sizes, &device, arch, &command);
    if let Some(dir) = &args.out {
        let text = sweep::csv(&points)?;
        while_writing(|| write_atomically(&dir.join("sweep.csv"), text.as_bytes()))?;
        while_writing(|| write_atomically(&dir.join("sweep.md"), md.as_bytes()))?;
        println!("wrote sweep.csv and sweep.md in {}", dir.display());
    }
    println!("\nthe winners, as lines of DEFAULT_SHAPES in src/compaction/cuda/single_pass.rs:\n");
    print!("{}", sweep::table(&points, &sizes, arch));
    let wrong = points.iter().filter(|p| p.error.is_empty() && !p.count_ok).count();
    if wrong > 0 {
        println!("{wrong} points counted differently from the default shape: see sweep.csv (count_ok)");
    }
    Ok(wrong == 0)
}

/// The grid the flags name; the default grid's list where a flag is absent.
#[cfg(feature = "cuda")]
fn grid_of(args: &SweepArgs) -> Result<reap::bench::sweep::Grid> {
    use reap::compaction::cuda::single_pass::LoadStyle;
    let mut g = reap::bench::sweep::Grid::default();
    if let Some(b) = &args.blocks {
        g.blocks = b.clone();
    }
    g.vecs = args.vecs.clone();
    if let Some(l) = &args.loads {
        g.loads = l.iter().map(|s| s.parse::<LoadStyle>()).collect::<Result<_, _>>()?;
    }
    if let Some(d) = &args.delays {
        g.delays = d.clone();
    }
    if reap::compaction::ELEMENT_SIZES.iter().all(|&es| g.shapes(es as u32).is_empty()) {
        bail!("--blocks, --vecs and --loads leave no shape that builds: blocks are whole warps, vecs 1-8");
    }
    Ok(g)
}

/// The GPU layer's advice ends in "or use `--backend cpu`", which the sweep,
/// a tuner of CUDA kernels, does not take: say what it needs instead.
#[cfg(feature = "cuda")]
fn no_gpu_advice(e: reap::compaction::Error) -> anyhow::Error {
    match e {
        reap::compaction::Error::Gpu(reap::cuda_runtime::Error::Unavailable { what, .. }) => anyhow::anyhow!(
            "the sweep times CUDA kernels on an NVIDIA GPU and cannot run here: {what}. It has no CPU backend: \
             run it on a machine whose `nvidia-smi` lists a GPU, with libnvrtc installed \
             (the CUDA toolkit or the PyPI wheel `nvidia-cuda-nvrtc==13.0.*`)"
        ),
        other => other.into(),
    }
}
