//! The correctness suite behind `reap verify` and the tests: every algorithm ×
//! operation × element size × keep rule × size × pattern, on fresh random data,
//! into poisoned outputs, against the sequential reference (seed 000 Listing 1).
//!
//! Stable algorithms must match the reference exactly; unstable ones must
//! return the same multiset; all must return the same count.

use std::fmt;

use crate::compaction::{Algorithm, Backend, Element, Keep, Operation, Report, ScanElement, SortKey, check_element};

/// What a backend adds so the suite can drive it: the suite's predicate,
/// "the element's first 32-bit word is below a threshold", in the backend's
/// own predicate form (a closure on the CPU, CUDA source on the GPU).
pub trait Harness: Backend {
    /// Keep elements whose first 32-bit word is below `threshold` (up to 2^32: keep all).
    fn word_below<T: Element>(&self, threshold: u64) -> Box<Self::Predicate<T>>;
}

impl Harness for crate::compaction::CpuBackend {
    fn word_below<T: Element>(&self, threshold: u64) -> Box<dyn Fn(&T) -> bool + Sync> {
        Box::new(move |x: &T| (first_word(x) as u64) < threshold)
    }
}

/// Elements are built so that the keep decision lives in the first word: kept
/// elements have it below 2^31, rejected ones at or above.
pub const THRESHOLD: u32 = 1 << 31;
/// Written over every output before a run, so unwritten slots show.
const POISON: u8 = 0xA5;

pub fn first_word<T: Element>(x: &T) -> u32 {
    let b = bytemuck::bytes_of(x);
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// How the suite decides which elements survive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    Flags,
    Sentinel,
    Predicate,
}

impl Rule {
    pub const ALL: [Rule; 3] = [Rule::Flags, Rule::Sentinel, Rule::Predicate];
    fn name(self) -> &'static str {
        match self {
            Rule::Flags => "flags",
            Rule::Sentinel => "sentinel",
            Rule::Predicate => "predicate",
        }
    }
}

/// The layout of survivors in a case's input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// Each element kept with this probability.
    Random(f64),
    /// Every other element, starting with a kept one.
    Alternating,
    /// Runs of random length (1..=300) alternating kept / rejected.
    Runs,
    /// Only the first element survives.
    FirstOnly,
    /// Only the last element survives.
    LastOnly,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Random(d) => write!(f, "random {:.0}%", d * 100.0),
            Pattern::Alternating => f.write_str("alternating"),
            Pattern::Runs => f.write_str("runs"),
            Pattern::FirstOnly => f.write_str("first-only"),
            Pattern::LastOnly => f.write_str("last-only"),
        }
    }
}

impl Pattern {
    pub fn flags(self, n: usize, rng: &mut fastrand::Rng) -> Vec<bool> {
        match self {
            Pattern::Random(d) => (0..n).map(|_| rng.f64() < d).collect(),
            Pattern::Alternating => (0..n).map(|i| i % 2 == 0).collect(),
            Pattern::Runs => {
                let mut v = Vec::with_capacity(n);
                let mut keep = rng.bool();
                while v.len() < n {
                    let run = rng.usize(1..=300).min(n - v.len());
                    v.extend(std::iter::repeat_n(keep, run));
                    keep = !keep;
                }
                v
            }
            Pattern::FirstOnly => (0..n).map(|i| i == 0).collect(),
            Pattern::LastOnly => (0..n).map(|i| i + 1 == n).collect(),
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    pub algorithms: Vec<Algorithm>,
    pub operations: Vec<Operation>,
    pub sizes: Vec<u64>,
    pub densities: Vec<f64>,
    pub element_sizes: Vec<usize>,
    pub seed: u64,
}

impl Config {
    /// Sizes around every power-of-two boundary a block, warp or P can have,
    /// plus primes and one large case.
    pub const DEFAULT_SIZES: &'static [u64] =
        &[0, 1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1000, 1023, 1024, 1025, 4097, 65_553, 1_000_003];
    pub const DEFAULT_DENSITIES: &'static [f64] = &[0.0, 0.02, 0.1, 0.5, 0.9, 1.0];

    pub fn new(algorithms: Vec<Algorithm>) -> Self {
        Config {
            algorithms,
            operations: Operation::ALL.to_vec(),
            sizes: Self::DEFAULT_SIZES.to_vec(),
            densities: Self::DEFAULT_DENSITIES.to_vec(),
            element_sizes: vec![4, 8, 16],
            seed: 0x5EED,
        }
    }

    /// Sizes above this get one element size, one keep rule (rotating) and one
    /// pattern each: the full matrix would spend minutes generating data.
    pub const FULL_MATRIX_UP_TO: u64 = 1 << 21;

    fn patterns(&self) -> Vec<Pattern> {
        let mut p: Vec<Pattern> = self.densities.iter().map(|&d| Pattern::Random(d)).collect();
        p.extend([Pattern::Alternating, Pattern::Runs, Pattern::FirstOnly, Pattern::LastOnly]);
        p
    }
}

/// One case of the suite, for reporting.
#[derive(Clone, Debug)]
pub struct Case {
    pub algorithm: Algorithm,
    pub operation: Operation,
    pub detail: String,
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.algorithm, self.operation.name(), self.detail)
    }
}

/// Totals of a suite run.
#[derive(Debug, Default)]
pub struct Summary {
    pub passed: u64,
    pub failed: u64,
}

/// Runs the suite, calling `seen` after every case with its outcome.
pub fn run<B: Harness>(backend: &B, cfg: &Config, mut seen: impl FnMut(&Case, &Result<(), String>)) -> Summary {
    let mut summary = Summary::default();
    let mut rng = fastrand::Rng::with_seed(cfg.seed);
    let patterns = cfg.patterns();
    let mut record = |case: Case, outcome: Result<(), String>| {
        if outcome.is_ok() {
            summary.passed += 1;
        } else {
            summary.failed += 1;
        }
        seen(&case, &outcome);
    };
    for &alg in &cfg.algorithms {
        if !backend.runs(alg) {
            continue;
        }
        for &op in &cfg.operations {
            if !alg.supports(op) {
                continue;
            }
            for &n in &cfg.sizes {
                let case = |detail: String| Case { algorithm: alg, operation: op, detail };
                match op {
                    Operation::Select | Operation::Partition => {
                        let big = n > Config::FULL_MATRIX_UP_TO;
                        let sizes = if big { &cfg.element_sizes[..1] } else { &cfg.element_sizes[..] };
                        let rules = if big { vec![Rule::ALL[(rng.u64(..) % 3) as usize]] } else { Rule::ALL.to_vec() };
                        let pats = if big { vec![Pattern::Random(0.5)] } else { patterns.clone() };
                        for &es in sizes {
                            for &rule in &rules {
                                for &pat in &pats {
                                    let detail = format!("n={n} {es}B {} {pat}", rule.name());
                                    let seed = rng.u64(..);
                                    let out = match es {
                                        4 => compact_case::<B, u32>(backend, alg, op, n, rule, pat, seed),
                                        8 => compact_case::<B, u64>(backend, alg, op, n, rule, pat, seed),
                                        16 => compact_case::<B, [u32; 4]>(backend, alg, op, n, rule, pat, seed),
                                        _ => Err(format!("element size {es} is not one of 4, 8, 16")),
                                    };
                                    record(case(detail), out);
                                }
                            }
                        }
                    }
                    Operation::Scan => {
                        let seed = rng.u64(..);
                        record(case(format!("n={n} u32")), scan_case::<B, u32>(backend, alg, n, seed));
                        record(case(format!("n={n} u64")), scan_case::<B, u64>(backend, alg, n, seed));
                    }
                    Operation::Sort => {
                        // One split per key bit makes sorts costly; the small sizes
                        // already cross every block and lane boundary.
                        if n > 70_000 {
                            continue;
                        }
                        let seed = rng.u64(..);
                        for pairs in [false, true] {
                            let kind = if pairs { "pairs" } else { "keys" };
                            record(
                                case(format!("n={n} u32 {kind}")),
                                sort_case::<B, u32>(backend, alg, n, pairs, seed),
                            );
                            record(
                                case(format!("n={n} u64 {kind}")),
                                sort_case::<B, u64>(backend, alg, n, pairs, seed),
                            );
                        }
                    }
                    Operation::Remove => {
                        let big = n > Config::FULL_MATRIX_UP_TO;
                        let sizes = if big { &cfg.element_sizes[..1] } else { &cfg.element_sizes[..] };
                        let dens = if big { vec![0.02] } else { cfg.densities.clone() };
                        let orders = if big { &RemovalOrder::ALL[..1] } else { &RemovalOrder::ALL[..] };
                        for &es in sizes {
                            for &d in &dens {
                                for &order in orders {
                                    let detail = format!("n={n} {es}B k/n={:.0}% {order:?}", d * 100.0);
                                    let seed = rng.u64(..);
                                    let out = match es {
                                        4 => remove_case::<B, u32>(backend, alg, n, d, order, seed),
                                        8 => remove_case::<B, u64>(backend, alg, n, d, order, seed),
                                        16 => remove_case::<B, [u32; 4]>(backend, alg, n, d, order, seed),
                                        _ => Err(format!("element size {es} is not one of 4, 8, 16")),
                                    };
                                    record(case(detail), out);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    summary
}

fn element<T: Element>(first: u32, rng: &mut fastrand::Rng) -> T {
    let words = std::mem::size_of::<T>() / 4;
    let mut w = [0u32; 4];
    w[0] = first;
    for x in w.iter_mut().take(words).skip(1) {
        *x = rng.u32(..);
    }
    bytemuck::pod_read_unaligned(&bytemuck::cast_slice::<u32, u8>(&w)[..std::mem::size_of::<T>()])
}

fn poisoned<B: Backend, T: Element>(backend: &B, n: usize) -> Result<B::Buffer<T>, String> {
    let bytes = vec![POISON; n * std::mem::size_of::<T>()];
    let host: Vec<T> = bytes.chunks_exact(std::mem::size_of::<T>()).map(bytemuck::pod_read_unaligned).collect();
    backend.upload(&host).map_err(|e| e.to_string())
}

fn bytes_eq<T: Element>(a: &[T], b: &[T]) -> bool {
    bytemuck::cast_slice::<T, u8>(a) == bytemuck::cast_slice::<T, u8>(b)
}

/// The elements in byte order, for multiset comparisons. Sorts the elements
/// themselves (no allocation per element): the GPU suite compares 2^28 of them.
fn sorted_bytes<T: Element>(v: &[T]) -> Vec<T> {
    use rayon::prelude::*;
    let mut s = v.to_vec();
    s.par_sort_unstable_by(|a, b| bytemuck::bytes_of(a).cmp(bytemuck::bytes_of(b)));
    s
}

/// Whether two slices hold the same multiset of elements.
fn same_multiset<T: Element>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && bytes_eq(&sorted_bytes(a), &sorted_bytes(b))
}

/// First position where two outputs differ, for a readable failure.
fn first_diff<T: Element>(got: &[T], want: &[T]) -> String {
    let at = got.iter().zip(want).position(|(a, b)| bytemuck::bytes_of(a) != bytemuck::bytes_of(b));
    match at {
        Some(i) => {
            format!("first difference at {i}: got word {:#x}, want {:#x}", first_word(&got[i]), first_word(&want[i]))
        }
        None => format!("lengths {} vs {}", got.len(), want.len()),
    }
}

pub fn compact_case<B: Harness, T: Element>(
    backend: &B,
    alg: Algorithm,
    op: Operation,
    n: u64,
    rule: Rule,
    pattern: Pattern,
    seed: u64,
) -> Result<(), String> {
    check_element::<T>().map_err(|e| e.to_string())?;
    let n = n as usize;
    let mut rng = fastrand::Rng::with_seed(seed);
    let keep = pattern.flags(n, &mut rng);
    let sentinel: T = element(u32::MAX, &mut rng);
    let input: Vec<T> = keep
        .iter()
        .map(|&k| match (k, rule) {
            (true, _) => element(rng.u32(..THRESHOLD), &mut rng),
            (false, Rule::Sentinel) => sentinel,
            (false, _) => element(rng.u32(THRESHOLD..), &mut rng),
        })
        .collect();
    let kept: Vec<T> = input.iter().zip(&keep).filter(|(_, k)| **k).map(|(x, _)| *x).collect();
    let rejected: Vec<T> = input.iter().zip(&keep).filter(|(_, k)| !**k).map(|(x, _)| *x).collect();

    let d_input = backend.upload(&input).map_err(|e| e.to_string())?;
    let mut d_out = poisoned::<B, T>(backend, n)?;
    let flags: Vec<u8> = keep.iter().map(|&k| if k { 1 + rng.u8(..254) } else { 0 }).collect();
    let d_flags = backend.upload(&flags).map_err(|e| e.to_string())?;
    let pred = backend.word_below::<T>(THRESHOLD as u64);
    let rule: Keep<'_, B, T> = match rule {
        Rule::Flags => Keep::Flags(&d_flags),
        Rule::Sentinel => Keep::Sentinel(sentinel),
        Rule::Predicate => Keep::Predicate(&*pred),
    };
    let report = match op {
        Operation::Select => backend.select(alg, &d_input, rule, &mut d_out),
        _ => backend.partition(alg, &d_input, rule, &mut d_out),
    }
    .map_err(|e| e.to_string())?;
    let count = report.count().map_err(|e| e.to_string())? as usize;
    let out = backend.download(&d_out).map_err(|e| e.to_string())?;
    if count != kept.len() {
        return Err(format!("count {count}, want {}", kept.len()));
    }
    let got = &out[..count];
    if alg.stable() {
        if !bytes_eq(got, &kept) {
            return Err(format!("kept elements differ from the reference: {}", first_diff(got, &kept)));
        }
    } else if !same_multiset(got, &kept) {
        return Err("kept elements are not the reference's multiset".into());
    }
    if op == Operation::Partition && !bytes_eq(&out[count..], &rejected) {
        return Err(format!("rejected half differs from the reference: {}", first_diff(&out[count..], &rejected)));
    }
    Ok(())
}

pub fn scan_case<B: Harness, S: ScanElement>(backend: &B, alg: Algorithm, n: u64, seed: u64) -> Result<(), String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    // Large values, so wrap-around is exercised too.
    let input: Vec<S> = (0..n).map(|_| S::from_u64(rng.u64(1..))).collect();
    let mut want = Vec::with_capacity(input.len());
    let mut sum = S::ZERO;
    for &x in &input {
        want.push(sum);
        sum = sum.add(x);
    }
    let d_in = backend.upload(&input).map_err(|e| e.to_string())?;
    let mut d_out = poisoned::<B, S>(backend, n as usize)?;
    let report = backend.exclusive_scan(alg, &d_in, &mut d_out).map_err(|e| e.to_string())?;
    let total = report.count().map_err(|e| e.to_string())?;
    let got = backend.download(&d_out).map_err(|e| e.to_string())?;
    if got != want {
        let i = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
        return Err(format!("scan differs at {i}: got {:?}, want {:?}", got.get(i), want.get(i)));
    }
    if total != sum.to_u64() {
        return Err(format!("total {total}, want {}", sum.to_u64()));
    }
    Ok(())
}

pub fn sort_case<B: Harness, K: SortKey + ScanElement>(
    backend: &B,
    alg: Algorithm,
    n: u64,
    pairs: bool,
    seed: u64,
) -> Result<(), String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    // Few distinct high keys as well as full-range ones, so stability matters.
    let keys: Vec<K> =
        (0..n).map(|_| if rng.bool() { K::from_u64(rng.u64(..)) } else { K::from_u64(rng.u64(..8) << 20) }).collect();
    let values: Vec<u32> = (0..n as u32).collect();
    let mut want: Vec<(K, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
    want.sort_by_key(|p| p.0);
    let mut d_keys = backend.upload(&keys).map_err(|e| e.to_string())?;
    let mut d_values = backend.upload(&values).map_err(|e| e.to_string())?;
    backend.radix_sort(alg, &mut d_keys, if pairs { Some(&mut d_values) } else { None }).map_err(|e| e.to_string())?;
    let got_keys = backend.download(&d_keys).map_err(|e| e.to_string())?;
    if got_keys.iter().ne(want.iter().map(|p| &p.0)) {
        return Err("keys are not sorted like the reference".into());
    }
    if pairs {
        let got_values = backend.download(&d_values).map_err(|e| e.to_string())?;
        if got_values.iter().ne(want.iter().map(|p| &p.1)) {
            return Err("values did not follow their keys stably".into());
        }
    }
    Ok(())
}

/// Orders of a removal-index list; Redzone must not depend on it.
#[derive(Clone, Copy, Debug)]
pub enum RemovalOrder {
    Shuffled,
    Ascending,
    Descending,
}

impl RemovalOrder {
    pub const ALL: [RemovalOrder; 3] = [RemovalOrder::Shuffled, RemovalOrder::Ascending, RemovalOrder::Descending];
}

pub fn remove_case<B: Harness, T: Element>(
    backend: &B,
    alg: Algorithm,
    n: u64,
    density: f64,
    order: RemovalOrder,
    seed: u64,
) -> Result<(), String> {
    let n = n as usize;
    let mut rng = fastrand::Rng::with_seed(seed);
    let data: Vec<T> = (0..n).map(|_| element(rng.u32(..), &mut rng)).collect();
    let mut removal: Vec<u64> = (0..n as u64).collect();
    rng.shuffle(&mut removal);
    removal.truncate((density * n as f64).round() as usize);
    match order {
        RemovalOrder::Shuffled => {}
        RemovalOrder::Ascending => removal.sort_unstable(),
        RemovalOrder::Descending => removal.sort_unstable_by(|a, b| b.cmp(a)),
    }
    let mut gone = vec![false; n];
    for &i in &removal {
        gone[i as usize] = true;
    }
    let want: Vec<T> = data.iter().zip(&gone).filter(|(_, g)| !**g).map(|(x, _)| *x).collect();
    let mut d_data = backend.upload(&data).map_err(|e| e.to_string())?;
    let d_removal = backend.upload(&removal).map_err(|e| e.to_string())?;
    let report = backend.remove(alg, &mut d_data, &d_removal).map_err(|e| e.to_string())?;
    let count = report.count().map_err(|e| e.to_string())? as usize;
    if count != want.len() {
        return Err(format!("count {count}, want {}", want.len()));
    }
    let got = backend.download(&d_data).map_err(|e| e.to_string())?;
    if !same_multiset(&got[..count], &want) {
        return Err("survivors are not the reference's multiset".into());
    }
    Ok(())
}
