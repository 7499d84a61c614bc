//! `reap bench compaction --gpus N` (or as ranks of processes, `reap
//! launch`): the sharded select, partition or scan beside one rank, the rows
//! printed and written by rank 0's process. Split from `compaction.rs`,
//! which times one device.

use anyhow::Result;

use reap::compaction::Algorithm;
use reap::compaction::shard::ShardOp;

use super::compaction::{BenchArgs, OperationChoice, write};
use crate::cli::backend::{OnBackend, Opened, with_backend};

/// `--gpus N`: the sharded select, partition or scan beside one rank.
pub(super) fn run(args: BenchArgs, command: String) -> Result<bool> {
    if !args.preset.is_empty() || args.elements != [4] {
        anyhow::bail!("--gpus times 4-byte elements without presets: drop --preset and --elements");
    }
    let mut operations = Vec::new();
    for op in &args.operation {
        let shard_op = match op {
            OperationChoice::Select => ShardOp::Select,
            OperationChoice::Partition => ShardOp::Partition,
            OperationChoice::Scan => ShardOp::Scan,
            other => anyhow::bail!(
                "--gpus shards select, partition and scan; {} runs on one GPU (drop --gpus)",
                clap::ValueEnum::to_possible_value(other)
                    .map_or_else(|| format!("{other:?}"), |v| v.get_name().to_string())
            ),
        };
        if !operations.contains(&shard_op) {
            operations.push(shard_op);
        }
    }
    let algorithms = crate::cli::algorithms::parse_list(&args.algorithms)?;
    if let Some(d) = args.densities.iter().find(|d| !(0.0..=1.0).contains(*d)) {
        anyhow::bail!("density {d} is outside [0, 1]");
    }
    if args.repeat.reps == 0 {
        anyhow::bail!("--reps must be at least 1");
    }
    // The input on the host, its copy and rank 0's whole copy with its output.
    let largest = args.sizes.iter().copied().max().unwrap_or(0);
    reap::memory::check(
        format!("{largest} 4-byte elements (host copy of the sharded input)"),
        reap::memory::times(largest, 8),
        reap::memory::Limit::host(),
        "lower --sizes",
    )?;
    // Rank 0's process writes the report; the other processes leave the folder alone.
    if crate::cli::ranks::leads() {
        super::out_folder(args.out.as_deref(), &reap::report::BENCH_FILES)?;
    }
    crate::cli::interrupt::install();
    let adapter = args.adapter.clone();
    with_backend(args.backend, &adapter, ShardedBench { args, algorithms, operations, command })
}

struct ShardedBench {
    args: BenchArgs,
    algorithms: Vec<Algorithm>,
    operations: Vec<ShardOp>,
    command: String,
}

impl OnBackend for ShardedBench {
    type Output = bool;
    fn run<B: Opened>(self, backend: B) -> Result<bool> {
        use reap::bench::shard;
        let device = backend.device();
        let group = backend.group(self.args.gpus)?;
        let carrier = group.carrier();
        let leads = group.leads();
        let processes = group.cluster().map_or(String::new(), |c| format!(" in {} processes", c.ranks()));
        println!("sharded compaction over {} ranks{processes} on {device}; collectives: {carrier}", group.len());
        if !leads {
            println!("rank {}: measuring with rank 0, which prints the rows and writes the report", group.first());
        }
        let head = format!(
            "{:<27} {:<9} {:>11} {:>6} {:>10} {:>10} {:>10} {:>10} {:>8} {:>6} {:>9} {:>7}",
            "algorithm",
            "operation",
            "n",
            "dens%",
            "1 wall ms",
            "1 dev ms",
            "N wall ms",
            "N dev ms",
            "speedup",
            "eff%",
            "gather ms",
            "coll%"
        );
        if leads {
            println!("{head}");
        }
        let s = shard::ShardBench {
            algorithms: &self.algorithms,
            operations: &self.operations,
            sizes: &self.args.sizes,
            densities: &self.args.densities,
            reps: self.args.repeat.reps,
            warmup: self.args.repeat.warmup,
            seed: self.args.repeat.seed,
        };
        // Only rank 0's process writes: the others measure the same rows.
        let out = self.args.out.as_deref().filter(|_| leads);
        let mut measured = Vec::new();
        let rows = shard::run(&group, &s, &crate::cli::interrupt::stopped, &mut |r| {
            if !leads {
                return;
            }
            println!(
                "{:<27} {:<9} {:>11} {:>6.1} {:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>7.2}x {:>6.1} {:>9.4} {:>7.2}",
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
                r.collective_share * 100.0
            );
            measured.push(r.clone());
            // Each row on disk as it comes: a stop keeps what was measured.
            if let Some(dir) = out {
                if let Ok(text) = shard::csv(&measured) {
                    let _ = write(&dir.join("results.csv"), text.as_bytes());
                }
            }
        });
        let rows = rows?;
        if let Some(dir) = out {
            write(&dir.join("results.csv"), shard::csv(&rows)?.as_bytes())?;
            let md = shard::markdown(&rows, &device, &carrier, &self.command);
            write(&dir.join("report.md"), md.as_bytes())?;
            println!("wrote {}", dir.display());
        }
        Ok(true)
    }
}
