//! CPU benchmark (criterion): every catalog algorithm beside `Vec::retain`
//! and rayon filter/collect, 2^20 and 2^24 u32 elements, 10 / 50 / 90 % kept;
//! and Redzone's O(k) removal beside `Vec::retain` at k/n = 2 %.
//!
//! `cargo bench --bench cpu` (filter with e.g. `-- select/2^20`).

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;
use reap::compaction::{Algorithm, Backend, CpuBackend, Keep};

const SENTINEL: u32 = u32::MAX;

/// Elements below 2^31 are kept; rejected ones are the sentinel, so the keep
/// rule is `x != SENTINEL` for reap and for the baselines alike.
fn data(n: usize, kept: f64, seed: u64) -> Vec<u32> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n).map(|_| if rng.f64() < kept { rng.u32(..1 << 31) } else { SENTINEL }).collect()
}

fn select(c: &mut Criterion) {
    let backend = CpuBackend::new();
    for log_n in [20u32, 24] {
        let n = 1usize << log_n;
        for kept in [0.1, 0.5, 0.9] {
            let mut g = c.benchmark_group(format!("select/2^{log_n}/{:.0}%", kept * 100.0));
            g.sample_size(10)
                .warm_up_time(std::time::Duration::from_millis(500))
                .measurement_time(std::time::Duration::from_secs(2))
                .throughput(Throughput::Elements(n as u64));
            let input = data(n, kept, 7);
            let mut out = vec![0u32; n];
            for alg in Algorithm::ALL {
                g.bench_function(BenchmarkId::from_parameter(alg.name()), |b| {
                    b.iter(|| backend.select(alg, &input, Keep::Sentinel(SENTINEL), &mut out).expect("select"))
                });
            }
            g.bench_function(BenchmarkId::from_parameter("vec-retain"), |b| {
                b.iter_batched_ref(|| input.clone(), |v| v.retain(|&x| x != SENTINEL), BatchSize::LargeInput)
            });
            g.bench_function(BenchmarkId::from_parameter("rayon-filter-collect"), |b| {
                b.iter(|| input.par_iter().copied().filter(|&x| x != SENTINEL).collect::<Vec<u32>>())
            });
            g.finish();
        }
    }
}

fn remove(c: &mut Criterion) {
    let backend = CpuBackend::new();
    for log_n in [20u32, 24] {
        let n = 1usize << log_n;
        let mut g = c.benchmark_group(format!("remove/2^{log_n}/2%"));
        g.sample_size(10)
            .warm_up_time(std::time::Duration::from_millis(500))
            .measurement_time(std::time::Duration::from_secs(2))
            .throughput(Throughput::Elements(n as u64));
        let mut rng = fastrand::Rng::with_seed(11);
        let input: Vec<u32> = (0..n).map(|_| rng.u32(..)).collect();
        let k = n / 50;
        let removal: Vec<u64> = rand_subset(n, k, &mut rng);
        for alg in [Algorithm::RedzoneBlock, Algorithm::RedzoneGrid] {
            g.bench_function(BenchmarkId::from_parameter(alg.name()), |b| {
                b.iter_batched_ref(
                    || input.clone(),
                    // SAFETY: `rand_subset` draws distinct indices below n.
                    |v| unsafe { backend.remove_unchecked(alg, v, &removal) }.expect("remove"),
                    BatchSize::LargeInput,
                )
            });
        }
        // Retain gets the same input, the index list, and has to turn it into
        // a per-element answer first, as any O(n) remover must.
        g.bench_function(BenchmarkId::from_parameter("vec-retain"), |b| {
            b.iter_batched_ref(
                || input.clone(),
                |v| {
                    let mut gone = vec![false; v.len()];
                    for &i in &removal {
                        gone[i as usize] = true;
                    }
                    let mut i = 0;
                    v.retain(|_| {
                        i += 1;
                        !gone[i - 1]
                    });
                },
                BatchSize::LargeInput,
            )
        });
        g.finish();
    }
}

fn rand_subset(n: usize, k: usize, rng: &mut fastrand::Rng) -> Vec<u64> {
    let mut all: Vec<u64> = (0..n as u64).collect();
    // Partial Fisher-Yates: the first k are a uniform random subset.
    for i in 0..k {
        let j = rng.usize(i..n);
        all.swap(i, j);
    }
    all.truncate(k);
    all
}

criterion_group!(benches, select, remove);
criterion_main!(benches);
