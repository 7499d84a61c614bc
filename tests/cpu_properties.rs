//! Property tests of the CPU backend against the sequential reference: every
//! algorithm × element size × keep rule over random sizes, densities and
//! patterns (stable: identical output; unstable: same multiset; all: same
//! count), plus partition, scan and sort against std, and Redzone's errors.
//! The counted entry points run the same properties with the length in a lens
//! word: any length up to the capacity and beyond it (clamped), stale content past it.

mod common;

use proptest::prelude::*;
use reap::compaction::{Algorithm, Backend, CpuBackend, ELEMENT_SIZES, Element, Error, Keep, Operation, Rejected};
use reap::verify::{self, CompactCase, Pattern, RemovalOrder, Rule};

backend_properties!(&CpuBackend::new(), 384, |_| true, true);

#[test]
fn every_cpu_algorithm_passes_the_verify_suite_on_small_sizes() {
    common::verify_small(&CpuBackend::new());
}

#[test]
fn redzone_rejects_duplicate_indices() {
    let b = CpuBackend::new();
    let mut data: Vec<u32> = (0..100).collect();
    let err = b.remove(Algorithm::RedzoneGrid, &mut data, &vec![3, 7, 3]).unwrap_err();
    assert!(matches!(err, Error::RemovalDuplicate { index: 3, first: 0, second: 2 }), "{err}");
    assert_eq!(data, (0..100).collect::<Vec<u32>>(), "a rejected list must leave the data untouched");
}

#[test]
fn redzone_rejects_out_of_range_indices() {
    let b = CpuBackend::new();
    let mut data: Vec<u32> = (0..100).collect();
    let err = b.remove(Algorithm::RedzoneBlock, &mut data, &vec![5, 100]).unwrap_err();
    assert!(matches!(err, Error::RemovalOutOfRange { index: 100, position: 1, len: 100 }), "{err}");
    assert!(err.to_string().contains("out of range"));
}

/// What a select or partition of `input` into `out_len` zeroed slots
/// returns, which must be an error: the argument checks below.
fn refused<T: Element>(
    op: Operation,
    alg: Algorithm,
    input: &Vec<T>,
    keep: Keep<'_, CpuBackend, T>,
    out_len: usize,
) -> Error {
    let b = CpuBackend::new();
    let mut out = vec![T::zeroed(); out_len];
    match op {
        Operation::Select => b.select(alg, input, keep, &mut out).unwrap_err(),
        Operation::Partition => b.partition(alg, input, keep, &mut out).unwrap_err(),
        other => panic!("{} takes no keep rule", other.name()),
    }
}

#[test]
fn mismatched_lengths_are_errors() {
    let input: Vec<u32> = (0..10).collect();
    let err = refused(Operation::Select, Algorithm::Lookback, &input, Keep::Sentinel(3), 9);
    assert!(matches!(err, Error::LengthMismatch { .. }), "{err}");
    let flags = vec![1u8; 11];
    let err = refused(Operation::Select, Algorithm::Horn, &input, Keep::Flags(&flags), 10);
    assert!(matches!(err, Error::LengthMismatch { what: "flags", .. }), "{err}");
}

#[test]
fn unsupported_element_sizes_are_errors() {
    let err = refused(Operation::Select, Algorithm::Sequential, &vec![[0u8; 3]; 4], Keep::Sentinel([0; 3]), 4);
    assert!(matches!(err, Error::ElementSize { size: 3 }), "{err}");
}

#[test]
fn unsupported_operations_say_which_algorithms_do() {
    let input: Vec<u32> = (0..10).collect();
    let err = refused(Operation::Partition, Algorithm::Atomic, &input, Keep::Sentinel(3), 10);
    assert!(err.to_string().contains("lookback"), "{err}");
}

/// Compaction sites (`reap::compaction::cpu::site`), fused where the
/// algorithm fuses and separate for every algorithm, against a sequential
/// reference of the same producer: item i emits 0..=K seeded candidates.
mod site {
    use std::fmt::Debug;

    use proptest::prelude::*;
    use reap::compaction::cpu::site::{Candidates, CpuSite, Emit, MAX_PER_ITEM};
    use reap::compaction::{Algorithm, CpuBackend, Element, Lens, Report, SitePath};

    /// Element types of the sites' candidates: `make` never gives `DEAD` or
    /// `STALE`, and `STALE` is larger than any candidate.
    trait Item: Element + Ord + Debug {
        const DEAD: Self;
        const STALE: Self;
        fn make(v: u64) -> Self;
    }
    impl Item for u32 {
        const DEAD: Self = u32::MAX;
        const STALE: Self = u32::MAX - 1;
        fn make(v: u64) -> Self {
            (v % (u32::MAX as u64 - 1)) as u32
        }
    }
    impl Item for u64 {
        const DEAD: Self = u64::MAX;
        const STALE: Self = u64::MAX - 1;
        fn make(v: u64) -> Self {
            v % (u64::MAX - 1)
        }
    }
    /// A 32-byte record; its last word tells candidates from the dead and stale ones.
    impl Item for [u32; 8] {
        const DEAD: Self = [u32::MAX; 8];
        const STALE: Self = [u32::MAX - 1; 8];
        fn make(v: u64) -> Self {
            [v as u32, (v >> 32) as u32, 0, 0, 0, 0, 0, 7]
        }
    }

    /// How many candidates each item emits.
    #[derive(Clone, Copy, Debug)]
    enum Fill {
        /// 0..=K, seeded.
        Random,
        None,
        All,
    }

    /// One site case.
    #[derive(Clone, Debug)]
    struct Case {
        algorithm: Algorithm,
        fuse: bool,
        tile: usize,
        n: u64,
        k: usize,
        fill: Fill,
        /// Half the room the kept items need.
        short: bool,
        /// Through `produce_counted`, a stale larger count in its word.
        counted: bool,
        seed: u64,
    }

    fn mix(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    impl Case {
        fn count(&self, i: u64) -> u64 {
            match self.fill {
                Fill::Random => mix(self.seed ^ i) % (self.k as u64 + 1),
                Fill::None => 0,
                Fill::All => self.k as u64,
            }
        }
        fn value<T: Item>(&self, i: u64, j: u64) -> T {
            T::make(mix(mix(self.seed.wrapping_add(i)) ^ j))
        }
        /// The sequential reference: every item's candidates, in input order.
        fn reference<T: Item>(&self) -> Vec<T> {
            (0..self.n).flat_map(|i| (0..self.count(i)).map(move |j| (i, j))).map(|(i, j)| self.value(i, j)).collect()
        }
    }

    /// Room past the capacity that must stay as it was.
    const GUARD: usize = 16;

    fn run<T: Item>(c: &Case) -> Result<(), String> {
        let b = CpuBackend::new();
        let mut site = CpuSite::new(&b, c.algorithm, c.fuse).map_err(|e| e.to_string())?;
        site.tuning.tile = c.tile;
        let want_path = if c.fuse && c.algorithm.fuses() { SitePath::Fused } else { SitePath::Separate };
        if site.path() != want_path {
            return Err(format!("path {:?}, want {want_path:?}", site.path()));
        }
        let want: Vec<T> = c.reference();
        let total = want.len();
        let cap = if c.short { total / 2 } else { total + 3 };
        let mut buf = vec![T::STALE; cap + GUARD];
        let producer = |i: u64, e: &mut Emit<'_, T>| {
            for j in 0..c.count(i) {
                e.push(c.value(i, j));
            }
        };
        let candidates = Candidates { per_item: c.k, dead: T::DEAD };
        let count = if c.counted {
            let mut words = vec![c.n, u64::MAX - 1];
            let lens = Lens { words: &mut words, input: 0, output: 1 };
            site.produce_counted(&b, lens, candidates, &producer, &mut buf[..cap]).map_err(|e| e.to_string())?;
            words[1]
        } else {
            let r = site.produce(&b, c.n, candidates, &producer, &mut buf[..cap]).map_err(|e| e.to_string())?;
            r.count().map_err(|e| e.to_string())?
        };
        if count != total as u64 {
            return Err(format!("count {count}, reference {total}"));
        }
        let written = cap.min(total);
        if buf[written..].iter().any(|x| *x != T::STALE) {
            return Err(format!("wrote past the kept items or the capacity ({written} of {cap})"));
        }
        let mut got = buf[..written].to_vec();
        if c.algorithm.stable() {
            if got[..] != want[..written] {
                let at = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
                return Err(format!("differs from the reference at {at} of {written}"));
            }
            return Ok(());
        }
        // Unstable: the reference's multiset; short, a part of it.
        let mut want = want;
        want.sort_unstable();
        got.sort_unstable();
        let mut rest = want.iter();
        if !got.iter().all(|g| rest.by_ref().any(|w| w == g)) {
            return Err(format!("not a part of the reference's multiset ({written} of {total})"));
        }
        Ok(())
    }

    fn case() -> impl Strategy<Value = Case> {
        let tile = prop_oneof![4 => Just(256usize), 1 => proptest::sample::select(vec![1usize, 7, 32, 100])];
        let n = tile.prop_flat_map(|t| {
            let t64 = t as u64;
            let edges = vec![0, 1, t64 - 1, t64, t64 + 1, 2 * t64 + 1, 3 * t64 + 17];
            (Just(t), prop_oneof![proptest::sample::select(edges), 0u64..5000, 5000u64..30_000])
        });
        let k = prop_oneof![4 => 1usize..=8, 1 => Just(0usize), 1 => Just(MAX_PER_ITEM)];
        let fill = prop_oneof![4 => Just(Fill::Random), 1 => Just(Fill::None), 1 => Just(Fill::All)];
        (super::algorithm(), any::<bool>(), n, k, fill, any::<bool>(), any::<bool>(), any::<u64>()).prop_map(
            |(algorithm, fuse, (tile, n), k, fill, short, counted, seed)| Case {
                algorithm,
                fuse,
                tile,
                n,
                k,
                fill,
                short,
                counted,
                seed,
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn site_matches_the_sequential_producer(c in case(), es in proptest::sample::select(vec![4usize, 8, 32])) {
            let r = match es {
                4 => run::<u32>(&c),
                8 => run::<u64>(&c),
                _ => run::<[u32; 8]>(&c),
            };
            r.map_err(TestCaseError::fail)?;
        }

        /// Every single-pass algorithm fused, so the fused paths get cases of their own.
        #[test]
        fn fused_site_matches_the_sequential_producer(
            c in case(), alg in proptest::sample::select(vec![Algorithm::Lookback, Algorithm::Chained, Algorithm::Atomic]),
        ) {
            run::<u64>(&Case { algorithm: alg, fuse: true, ..c }).map_err(TestCaseError::fail)?;
        }
    }
}
