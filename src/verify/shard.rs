//! `reap verify --gpus N`: every algorithm's select, partition and scan over
//! N ranks, gathered and compared with the same algorithm on rank 0 alone
//! (bit for bit where the algorithm is stable; the same multiset for
//! `atomic`), also reading the device-resident counts and offsets.

use std::fmt;

use super::{Harness, THRESHOLD, first_word};
use crate::compaction::shard::{Group, ShardKeep, Sharding};
use crate::compaction::{Algorithm, Element, Keep, Operation, Report, ScanElement};

/// Sizes that leave some ranks empty, split tiles unevenly, or cross 2^24.
pub const SIZES: &[u64] = &[0, 1, 2, 7, 1000, 4097, 65_553, 1_000_003, (1 << 24) + 7];

/// One sharded case.
#[derive(Clone, Debug)]
pub struct ShardCase {
    pub algorithm: Algorithm,
    pub operation: Operation,
    pub element_bytes: usize,
    pub n: u64,
    pub density: f64,
}

impl fmt::Display for ShardCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}B n={} density={}",
            self.algorithm.name(),
            self.operation.name(),
            self.element_bytes,
            self.n,
            self.density
        )
    }
}

/// Runs every case over `group`, telling `seen` each outcome: (passed, failed).
pub fn run<B: Sharding + Harness>(
    group: &Group<B>,
    algorithms: &[Algorithm],
    operations: &[Operation],
    sizes: &[u64],
    seed: u64,
    mut seen: impl FnMut(&ShardCase, &Result<(), String>),
) -> (u64, u64) {
    let (mut passed, mut failed) = (0, 0);
    let mut tally = |case: &ShardCase, r: Result<(), String>| {
        if r.is_ok() {
            passed += 1;
        } else {
            failed += 1;
        }
        seen(case, &r);
    };
    let b0 = &group.ranks()[0];
    for &algorithm in algorithms.iter().filter(|a| b0.runs(**a)) {
        for &n in sizes {
            for (i, &operation) in [Operation::Select, Operation::Partition, Operation::Scan].iter().enumerate() {
                if !operations.contains(&operation) || !algorithm.supports(operation) {
                    continue;
                }
                let seed = seed ^ n.wrapping_mul(0x9E37_79B9) ^ (i as u64) << 56;
                if operation == Operation::Scan {
                    let case = ShardCase { algorithm, operation, element_bytes: 8, n, density: 1.0 };
                    tally(&case, scan_case::<B, u64>(group, algorithm, n, seed));
                    continue;
                }
                for density in [0.0, 0.5, 1.0] {
                    let case = ShardCase { algorithm, operation, element_bytes: 4, n, density };
                    tally(&case, compact_case::<B, u32>(group, &case, seed));
                    if n <= 1 << 20 {
                        let case = ShardCase { element_bytes: 16, ..case };
                        tally(&case, compact_case::<B, [u32; 4]>(group, &case, seed));
                    }
                }
            }
        }
    }
    (passed, failed)
}

/// Elements whose first word is below [`THRESHOLD`] with probability `density`.
fn elements<T: Element>(n: u64, density: f64, seed: u64) -> Vec<T> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| {
            let mut x = T::zeroed();
            let bytes = bytemuck::bytes_of_mut(&mut x);
            rng.fill(bytes);
            let keep = rng.f64() < density;
            let w = if keep { rng.u32(..THRESHOLD) } else { rng.u32(THRESHOLD..) };
            bytes[..4].copy_from_slice(&w.to_le_bytes());
            x
        })
        .collect()
}

fn err(e: impl fmt::Display) -> String {
    e.to_string()
}

fn compact_case<B: Sharding + Harness, T: Element>(
    group: &Group<B>,
    case: &ShardCase,
    seed: u64,
) -> Result<(), String> {
    let input: Vec<T> = elements(case.n, case.density, seed);
    let split = case.operation == Operation::Partition;
    // The same algorithm on one rank, the whole input.
    let b0 = &group.ranks()[0];
    let predicate = b0.word_below::<T>(THRESHOLD as u64);
    let whole = b0.upload(&input).map_err(err)?;
    let mut out = b0.alloc::<T>(case.n).map_err(err)?;
    let keep = Keep::Predicate(&*predicate);
    let report = if split {
        b0.partition(case.algorithm, &whole, keep, &mut out)
    } else {
        b0.select(case.algorithm, &whole, keep, &mut out)
    }
    .map_err(err)?;
    let kept = report.count().map_err(err)?;
    let mut want = b0.download(&out).map_err(err)?;
    if !split {
        want.truncate(kept as usize);
    }
    let sharded = group.scatter(&input).map_err(err)?;
    let result = if split {
        group.partition(case.algorithm, &sharded, ShardKeep::Predicate(&*predicate))
    } else {
        group.select(case.algorithm, &sharded, ShardKeep::Predicate(&*predicate))
    }
    .map_err(err)?;
    let counts = group.counts(&result).map_err(err)?;
    if counts.iter().sum::<u64>() != kept {
        return Err(format!("the ranks kept {counts:?} (sum {}), one rank {kept}", counts.iter().sum::<u64>()));
    }
    let offsets = group.offsets(&result).map_err(err)?;
    let mut at = 0;
    for (r, (&o, &k)) in offsets.iter().zip(&counts).enumerate() {
        if o != at {
            return Err(format!("rank {r}'s offset is {o}, the counts before it sum to {at}"));
        }
        at += k;
    }
    // Only the process holding rank 0 has the gathered result to compare.
    let Some(got) = group.collect(&result).map_err(err)? else { return Ok(()) };
    compare(case.algorithm, split, kept as usize, got, want)
}

fn compare<T: Element>(
    algorithm: Algorithm,
    split: bool,
    kept: usize,
    got: Vec<T>,
    want: Vec<T>,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("gathered {} elements, one rank gave {}", got.len(), want.len()));
    }
    // Elements as byte slices: unstable results sort without an allocation per element.
    let size = std::mem::size_of::<T>();
    let mut g: Vec<&[u8]> = bytemuck::cast_slice::<T, u8>(&got).chunks(size).collect();
    let mut w: Vec<&[u8]> = bytemuck::cast_slice::<T, u8>(&want).chunks(size).collect();
    if !algorithm.stable() {
        // Unstable: the same multiset of kept elements (and of rejected ones).
        g[..kept].sort_unstable();
        w[..kept].sort_unstable();
        if split {
            g[kept..].sort_unstable();
            w[kept..].sort_unstable();
        }
    }
    match g.iter().zip(&w).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "element {i} differs: gathered first word {:#x}, one rank {:#x}",
            first_word(&got[i]),
            first_word(&want[i])
        )),
    }
}

fn scan_case<B: Sharding + Harness, S: ScanElement>(
    group: &Group<B>,
    algorithm: Algorithm,
    n: u64,
    seed: u64,
) -> Result<(), String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let input: Vec<S> = (0..n).map(|_| S::from_u64(rng.u64(..))).collect();
    let b0 = &group.ranks()[0];
    let whole = b0.upload(&input).map_err(err)?;
    let mut out = b0.alloc::<S>(n).map_err(err)?;
    let total = b0.exclusive_scan(algorithm, &whole, &mut out).map_err(err)?.count().map_err(err)?;
    let want = b0.download(&out).map_err(err)?;
    let result = group.exclusive_scan(algorithm, &group.scatter(&input).map_err(err)?).map_err(err)?;
    let totals = group.counts(&result).map_err(err)?;
    let sum = totals.iter().fold(S::ZERO, |a, &t| a.add(S::from_u64(t))).to_u64();
    if sum != total {
        return Err(format!("the ranks' totals {totals:?} sum to {sum}, one rank's total is {total}"));
    }
    let Some(got) = group.collect(&result).map_err(err)? else { return Ok(()) };
    match got.iter().zip(&want).position(|(a, b)| a != b) {
        None if got.len() == want.len() => Ok(()),
        None => Err(format!("gathered {} values, one rank gave {}", got.len(), want.len())),
        Some(i) => Err(format!("value {i}: gathered {:?}, one rank {:?}", got[i], want[i])),
    }
}
