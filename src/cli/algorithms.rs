//! `reap algorithms`: the catalog as a table, with the backends that run each
//! algorithm in this build.

use reap::compaction::{Algorithm, Backend, BackendKind, CpuBackend, Operation};

fn backends_of(algorithm: Algorithm) -> Vec<&'static str> {
    let mut v = Vec::new();
    if CpuBackend::new().runs(algorithm) {
        v.push(BackendKind::Cpu.name());
    }
    #[cfg(feature = "cuda")]
    if reap::compaction::cuda::CudaBackend::implements(algorithm) {
        v.push(BackendKind::Cuda.name());
    }
    v
}

pub fn print_catalog() {
    println!(
        "{:<27} {:<6} {:<8} {:<18} {:<34} {:<9} source",
        "name", "stable", "in place", "consumes", "operations", "backends"
    );
    for a in Algorithm::ALL {
        let ops: Vec<_> = Operation::ALL.iter().filter(|o| a.supports(**o)).map(|o| o.name()).collect();
        println!(
            "{:<27} {:<6} {:<8} {:<18} {:<34} {:<9} {}",
            a.name(),
            if a.stable() { "yes" } else { "no" },
            if a.in_place() { "yes" } else { "no" },
            a.consumes().name(),
            ops.join(","),
            backends_of(a).join(","),
            a.source()
        );
    }
}
