//! `reap bench`: measurements written as tables, CSV, JSON and reports, one
//! module per subcommand.

use anyhow::{Context, Result};
use clap::Subcommand;

use reap::compaction::{Backend, Compaction};

mod collide;
mod collide_split;
mod compaction;
mod hop;
mod noise;
mod peers;
mod render;
mod report;
mod sharded;
mod sweep;

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Time compaction (select or partition) for every algorithm, size, density and element size.
    Compaction(compaction::BenchArgs),
    /// Time every shape of lookback's tuning grid per element size; write sweep.csv / sweep.md and the winners.
    Sweep(sweep::SweepArgs),
    /// The inter-workgroup hop alone (ping-pong, chain of workgroups) in CUDA and WGSL, beside `chained` per tile.
    Hop(hop::HopArgs),
    /// Write report.md and the plots again from a run's results.json, without measuring.
    Report {
        /// The --out folder of an earlier `reap bench compaction` run.
        dir: std::path::PathBuf,
    },
    /// Path-trace scenes with every traversal mode x compaction choice: Mrays/s and compaction's share.
    Render(render::RenderBenchArgs),
    /// Path tracer noise against a high-spp reference: relative RMSE, relMSE and fireflies per spp.
    Noise(noise::NoiseArgs),
    /// Collision demo per body count x sort x frontier compaction: per-frame breakdown, contacts checked equal.
    Collide(collide::CollideBenchArgs),
}

pub fn run(command: BenchCommand) -> Result<bool> {
    match command {
        BenchCommand::Compaction(args) => compaction::run(args),
        BenchCommand::Sweep(args) => sweep::run(args),
        BenchCommand::Hop(args) => hop::run(args),
        BenchCommand::Report { dir } => report::run(&dir),
        BenchCommand::Render(args) => render::run(args),
        BenchCommand::Noise(args) => noise::run(args),
        BenchCommand::Collide(args) => collide::run(args),
    }
}

/// How often `reap bench compaction` and `reap bench sweep` run each point.
#[derive(clap::Args)]
pub struct Repeat {
    /// Timed repetitions per configuration (the median is reported, with min and max).
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    /// Untimed runs first (compilation, caches).
    #[arg(long, default_value_t = 3)]
    pub warmup: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl Repeat {
    /// A plain (not a preset's) series of `job` with these repetitions.
    fn series(
        &self,
        job: reap::bench::Job,
        algorithms: Vec<reap::compaction::Algorithm>,
        sizes: &[u64],
        densities: &[f64],
        element_sizes: &[usize],
    ) -> reap::bench::Settings {
        reap::bench::Settings {
            preset: String::new(),
            job,
            algorithms,
            sizes: sizes.to_vec(),
            densities: densities.to_vec(),
            element_sizes: element_sizes.to_vec(),
            reps: self.reps,
            warmup: self.warmup,
            seed: self.seed,
        }
    }
}

/// `--algorithms` of the workload benchmarks: catalog names or `none`, each
/// checked against `backend`; `all` is `none` and every algorithm the backend
/// selects with.
fn compactions<B: Backend>(names: &[String], backend: &B) -> Result<Vec<Compaction>> {
    let mut out = Vec::new();
    for n in names {
        if n == "all" {
            for c in Compaction::choices(backend) {
                out.push(Compaction::parse(c, backend, "algorithms")?);
            }
        } else {
            out.push(Compaction::parse(n, backend, "algorithms")?);
        }
    }
    Ok(out)
}

/// `--out DIR` of a bench command: the folder is made now and each of the
/// `files` it will receive goes through the output check, so a bad path (a
/// pipe under a results name, say) fails before anything is measured.
fn out_folder(dir: Option<&std::path::Path>, files: &[&str]) -> Result<()> {
    if let Some(dir) = dir {
        let first = files.first().copied().unwrap_or("results");
        reap::files::check_output_folder(dir).with_context(|| format!("the results folder for {first}"))?;
        for file in files {
            reap::files::check_output(&dir.join(file), &[])?;
        }
    }
    Ok(())
}
