//! The correctness suite behind `reap verify` and the tests: every algorithm ×
//! operation × element size × keep rule × size × pattern, on fresh random data,
//! into poisoned outputs, against the sequential reference (seed 000 Listing 1).
//!
//! Stable algorithms must match the reference exactly; unstable ones must
//! return the same multiset; all must return the same count.
//!
//! The counted entry points (`select_counted`, …) run too, at lengths 0, 1,
//! capacity − 1, capacity, below a stale larger content left in the buffers,
//! and above the capacity (clamped), with a guard region past the capacity
//! that must stay untouched.

use std::fmt;

use crate::compaction::{Algorithm, Backend, ELEMENT_SIZES, Element, Error, Operation, Rejected, element_sizes_text};
use crate::memory::{self, Bytes, Limit, MemoryError};

mod cases;
mod counted;
#[cfg(feature = "cuda")]
mod cuda;
pub mod shard;
#[cfg(feature = "cuda")]
pub mod site;
#[cfg(feature = "wgpu")]
mod wgpu;

pub use cases::{CompactCase, RemovalOrder, compact_case, remove_case, scan_case, sort_case};
pub use counted::{CountedLen, counted_compact_case, counted_scan_case};
// The layouts live in the library, whose own unit tests use them too.
pub use crate::compaction::Pattern;

/// What a backend adds so the suite can drive it: the suite's predicate,
/// "the element's first 32-bit word is below a threshold", in the backend's
/// own predicate form (a closure on the CPU, CUDA source on the GPU), and
/// buffers with a guard region past their length.
pub trait Harness: Backend {
    /// Keep elements whose first 32-bit word is below `threshold` (up to 2^32: keep all).
    fn word_below<T: Element>(&self, threshold: u64) -> Box<Self::Predicate<T>>;
    /// A buffer of length `len` holding `data[..len]`, followed where the
    /// backend can keep it by `data[len..]`: a guard region the library must
    /// never write. (A CPU `Vec` is its length: every write is bounds-checked.)
    fn upload_guarded<T: Element>(&self, data: &[T], len: u64) -> Result<Self::Buffer<T>, Error>;
    /// The buffer's elements followed by its guard region, if it has one.
    fn download_guarded<T: Element>(&self, buffer: &Self::Buffer<T>) -> Result<Vec<T>, Error>;
}

impl Harness for crate::compaction::CpuBackend {
    fn word_below<T: Element>(&self, threshold: u64) -> Box<dyn Fn(&T) -> bool + Sync> {
        Box::new(move |x: &T| (first_word(x) as u64) < threshold)
    }
    fn upload_guarded<T: Element>(&self, data: &[T], len: u64) -> Result<Vec<T>, Error> {
        Ok(data[..len as usize].to_vec())
    }
    fn download_guarded<T: Element>(&self, buffer: &Vec<T>) -> Result<Vec<T>, Error> {
        Ok(buffer.clone())
    }
}

/// Elements are built so that the keep decision lives in the first word: kept
/// elements have it below 2^31, rejected ones at or above.
pub const THRESHOLD: u32 = 1 << 31;
/// Written over every output before a run, so unwritten slots show.
pub(crate) const POISON: u8 = 0xA5;

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
            element_sizes: ELEMENT_SIZES.to_vec(),
            seed: 0x5EED,
        }
    }

    /// Sizes above this get one element size, one keep rule (rotating) and one
    /// pattern each: the full matrix would spend minutes generating data.
    pub const FULL_MATRIX_UP_TO: u64 = 1 << 21;

    /// Sizes above this run only the counted select, partition and scan, one
    /// case each: they are there to cross 2^31 on the device side.
    pub const COUNTED_ONLY_ABOVE: u64 = 1 << 31;

    /// The GPU suite's case above 2^31 elements (8 GiB of u32 per buffer);
    /// its lengths stay above 2^31 too.
    pub const ABOVE_2_31: u64 = (1 << 31) + (1 << 24) + 4099;

    /// Host bytes the largest case of `n` elements holds at once, an upper
    /// estimate: the input, the reference (kept and rejected), the poisoned
    /// output, its host copy and the download, plus flags; on the CPU
    /// (`on_host`) the backend's buffers and the algorithm's u64 offsets too.
    pub fn case_bytes(&self, n: u64, on_host: bool) -> Bytes {
        let elements = if n > Self::FULL_MATRIX_UP_TO {
            &self.element_sizes[..1.min(self.element_sizes.len())]
        } else {
            &self.element_sizes[..]
        };
        let mut es = elements.iter().copied().max().unwrap_or(4) as u64;
        if self.operations.contains(&Operation::Scan) && n <= Self::COUNTED_ONLY_ABOVE {
            es = es.max(8);
        }
        let per = if on_host { 7 * es + 2 + 8 } else { 5 * es + 2 };
        memory::times(n, per)
    }

    /// Refuses a size whose cases cannot fit `host` memory, before any runs
    /// (sizes run one after another, so each must fit alone).
    pub fn check_memory(&self, on_host: bool, host: Limit) -> Result<(), MemoryError> {
        for &n in &self.sizes {
            let what = format!("a verify case of {n} elements");
            memory::check(what, self.case_bytes(n, on_host), host, "lower --sizes")?;
        }
        Ok(())
    }

    /// Why no case would run on a backend that runs `runs`, if none would:
    /// no algorithm picked runs there, or none implements an operation picked.
    pub fn nothing_to_run(&self, runs: impl Fn(Algorithm) -> bool) -> Option<String> {
        let names = |a: &[Algorithm]| a.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ");
        let ops = self.operations.iter().map(|o| o.name()).collect::<Vec<_>>().join(", ");
        let here: Vec<Algorithm> = self.algorithms.iter().copied().filter(|&a| runs(a)).collect();
        if here.is_empty() {
            return Some(format!(
                "this backend runs none of the algorithms picked ({}): `reap algorithms` lists what each backend runs",
                names(&self.algorithms)
            ));
        }
        if here.iter().any(|&a| self.operations.iter().any(|&op| a.supports(op))) {
            return None;
        }
        let able: Vec<Algorithm> = Algorithm::ALL
            .into_iter()
            .filter(|&a| runs(a) && self.operations.iter().any(|&op| a.supports(op)))
            .collect();
        Some(format!(
            "no case to run: {} implements none of the operations picked ({ops}); on this backend {} do: pick one of \
             them with --algorithms, or other --operations",
            names(&here),
            if able.is_empty() { "no algorithm".to_string() } else { names(&able) },
        ))
    }

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
                let big = n > Config::FULL_MATRIX_UP_TO;
                let counted_only = n > Config::COUNTED_ONLY_ABOVE;
                // The counted cases: every length kind on small capacities, one near the capacity on large ones.
                let kinds = if big { &[CountedLen::Below][..] } else { &CountedLen::ALL[..] };
                match op {
                    Operation::Select | Operation::Partition => {
                        let sizes = if big { &cfg.element_sizes[..1] } else { &cfg.element_sizes[..] };
                        let rules = if big { vec![Rule::ALL[(rng.u64(..) % 3) as usize]] } else { Rule::ALL.to_vec() };
                        let pats = if big { vec![Pattern::Random(0.5)] } else { patterns.clone() };
                        // A partition that can leave its rejected half reversed is checked both ways.
                        let orders = if op == Operation::Partition && alg.reverses_rejected() {
                            &Rejected::ALL[..]
                        } else {
                            &[Rejected::InOrder][..]
                        };
                        let order_text = |o: Rejected| if o == Rejected::Reversed { " rejected-reversed" } else { "" };
                        for &es in sizes.iter().filter(|_| !counted_only) {
                            for &rule in &rules {
                                for &pat in &pats {
                                    for &rejected in orders {
                                        let detail =
                                            format!("n={n} {es}B {} {pat}{}", rule.name(), order_text(rejected));
                                        let c = CompactCase {
                                            algorithm: alg,
                                            operation: op,
                                            rule,
                                            pattern: pat,
                                            seed: rng.u64(..),
                                            rejected,
                                        };
                                        let out = crate::with_element_size!(es, T => compact_case::<B, T>(backend, c, n),
                                            _ => Err(format!("element size {es} is not one of {}", element_sizes_text()))
                                        );
                                        record(case(detail), out);
                                    }
                                }
                            }
                        }
                        // Element size, rule and pattern rotate over the length kinds.
                        for (i, &kind) in kinds.iter().enumerate() {
                            let es = sizes[i % sizes.len()];
                            let rule = Rule::ALL[(rng.u64(..) % 3) as usize];
                            let pat = pats[rng.usize(..pats.len())];
                            let word = kind.word(n, &mut rng);
                            let rejected = orders[i % orders.len()];
                            let detail = format!(
                                "counted cap={n} n={} ({}) {es}B {} {pat}{}",
                                word.min(n),
                                kind.name(),
                                rule.name(),
                                order_text(rejected)
                            );
                            let seed = rng.u64(..);
                            let c = CompactCase { algorithm: alg, operation: op, rule, pattern: pat, seed, rejected };
                            let out = crate::with_element_size!(es, T => counted_compact_case::<B, T>(backend, c, n, word),
                                _ => Err(format!("element size {es} is not one of {}", element_sizes_text()))
                            );
                            record(case(detail), out);
                        }
                    }
                    Operation::Scan => {
                        if !counted_only {
                            let seed = rng.u64(..);
                            record(case(format!("n={n} u32")), scan_case::<B, u32>(backend, alg, n, seed));
                            record(case(format!("n={n} u64")), scan_case::<B, u64>(backend, alg, n, seed));
                        }
                        for (i, &kind) in kinds.iter().enumerate() {
                            let word = kind.word(n, &mut rng);
                            let seed = rng.u64(..);
                            let detail = |ty: &str| format!("counted cap={n} n={} ({}) {ty}", word.min(n), kind.name());
                            // u32 and u64 take turns; a large capacity runs both, the one past 2^31
                            // only u32 (u64 would hold 70 GB on the host).
                            if big || i % 2 == 0 {
                                record(case(detail("u32")), counted_scan_case::<B, u32>(backend, alg, n, word, seed));
                            }
                            if (big && !counted_only) || i % 2 == 1 {
                                record(case(detail("u64")), counted_scan_case::<B, u64>(backend, alg, n, word, seed));
                            }
                        }
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
                        if counted_only {
                            continue;
                        }
                        let sizes = if big { &cfg.element_sizes[..1] } else { &cfg.element_sizes[..] };
                        let dens = if big { vec![0.02] } else { cfg.densities.clone() };
                        let orders = if big { &RemovalOrder::ALL[..1] } else { &RemovalOrder::ALL[..] };
                        for &es in sizes {
                            for &d in &dens {
                                for &order in orders {
                                    let detail = format!("n={n} {es}B k/n={:.0}% {order:?}", d * 100.0);
                                    let seed = rng.u64(..);
                                    let out = crate::with_element_size!(es, T => remove_case::<B, T>(backend, alg, n, d, order, seed),
                                        _ => Err(format!("element size {es} is not one of {}", element_sizes_text()))
                                    );
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

#[cfg(test)]
mod tests {
    use super::*;

    fn host(bytes: u64) -> Limit {
        Limit { bytes, place: memory::Place::Host, source: "available" }
    }

    #[test]
    fn item2_a_size_the_host_cannot_hold_is_refused_before_any_case_runs() {
        let mut cfg = Config::new(vec![Algorithm::Lookback]);
        cfg.sizes = vec![1000, 1 << 34];
        // 2^34 elements of 16 bytes, 7 copies and offsets: about 2 TiB.
        let e = cfg.check_memory(true, host(64 << 30)).unwrap_err().to_string();
        assert!(e.contains("a verify case of 17179869184 elements needs"), "{e}");
        assert!(e.contains("64.0 GiB") && e.ends_with("lower --sizes"), "{e}");
        cfg.sizes = vec![1 << 40];
        assert!(cfg.check_memory(false, host(1 << 40)).is_err(), "2^40 × 82 bytes pass a 1 TiB host");
        cfg.sizes = Config::DEFAULT_SIZES.to_vec();
        assert!(cfg.check_memory(true, host(1 << 30)).is_ok());
    }

    #[test]
    fn item10_an_algorithm_without_the_operation_runs_nothing_and_says_who_does() {
        let mut cfg = Config::new(vec![Algorithm::RedzoneBlock]);
        cfg.operations = vec![Operation::Sort];
        let why = cfg.nothing_to_run(|_| true).expect("nothing runs");
        assert!(why.contains("redzone-block implements none of the operations picked (sort)"), "{why}");
        let sorters: Vec<&str> =
            Algorithm::ALL.into_iter().filter(|a| a.supports(Operation::Sort)).map(|a| a.name()).collect();
        assert!(!sorters.is_empty() && sorters.iter().all(|s| why.contains(s)), "{why}");
        cfg.operations = vec![Operation::Sort, Operation::Remove];
        assert_eq!(cfg.nothing_to_run(|_| true), None);
        assert!(cfg.nothing_to_run(|_| false).expect("no backend").contains("runs none of the algorithms"));
    }
}
