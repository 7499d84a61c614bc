//! `reap algorithms`: the catalog as a table, with a column per backend of
//! this build saying whether it runs each algorithm.

use reap::compaction::{Algorithm, Backend, BackendKind, CpuBackend, Operation};

/// Whether a backend runs an algorithm, asked without opening a device.
type Runs = fn(Algorithm) -> bool;

/// The backends this build has.
fn backends() -> Vec<(BackendKind, Runs)> {
    let mut v: Vec<(BackendKind, Runs)> = vec![(BackendKind::Cpu, |a| CpuBackend::new().runs(a))];
    #[cfg(feature = "cuda")]
    v.push((BackendKind::Cuda, reap::compaction::cuda::CudaBackend::implements));
    #[cfg(feature = "wgpu")]
    v.push((BackendKind::Wgpu, reap::compaction::wgpu::WgpuBackend::implements));
    v
}

pub fn print_catalog() {
    let backends = backends();
    let columns: String = backends.iter().map(|(k, _)| format!("{:<5} ", k.name())).collect();
    println!(
        "{:<27} {:<6} {:<8} {:<18} {:<34} {columns}source",
        "name", "stable", "in place", "consumes", "operations"
    );
    for a in Algorithm::ALL {
        let ops: Vec<_> = Operation::ALL.iter().filter(|o| a.supports(**o)).map(|o| o.name()).collect();
        let runs: String =
            backends.iter().map(|(_, runs)| format!("{:<5} ", if runs(a) { "yes" } else { "-" })).collect();
        println!(
            "{:<27} {:<6} {:<8} {:<18} {:<34} {runs}{}",
            a.name(),
            if a.stable() { "yes" } else { "no" },
            if a.in_place() { "yes" } else { "no" },
            a.consumes().name(),
            ops.join(","),
            a.source()
        );
    }
}

/// `--algorithms` (verify, bench compaction): catalog names, or `all` for the
/// whole catalog; each algorithm once, in the order given.
pub fn parse_list(names: &[String]) -> Result<Vec<Algorithm>, reap::compaction::Error> {
    if names.iter().any(|a| a == "all") {
        return Ok(Algorithm::ALL.to_vec());
    }
    let mut out = Vec::new();
    for name in names {
        let a = name.parse::<Algorithm>()?;
        if !out.contains(&a) {
            out.push(a);
        }
    }
    Ok(out)
}
