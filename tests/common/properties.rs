//! The property tests of every backend against the sequential reference,
//! written once and stamped out per backend by [`backend_properties!`]: every
//! algorithm the backend runs × element size × keep rule over random sizes
//! (tiles ± 1 included), densities and patterns (stable: identical output;
//! unstable: same multiset; all: same count), partition, scan and sort
//! against std, Redzone's removal, and the counted entry points with the
//! length in a lens word: any length up to the capacity and beyond it
//! (clamped), stale content past it.

/// `backend_properties!(&backend, cases, |alg| runs, ready)`: the backend
/// expression gives a `&impl Harness` (evaluated per case), `runs` filters
/// the catalog, and a case passes at once unless `ready` (a backend that
/// skips, saying why, where it has no device). Needs `proptest::prelude::*` and the names the body uses in scope.
#[macro_export]
macro_rules! backend_properties {
    ($b:expr, $cases:expr, $runs:expr, $ready:expr) => {
    fn algorithm() -> impl Strategy<Value = Algorithm> {
        proptest::sample::select(Algorithm::ALL.iter().copied().filter(|a| $runs(*a)).collect::<Vec<_>>())
    }

    fn pattern() -> impl Strategy<Value = Pattern> {
        prop_oneof![
            prop_oneof![Just(0.0), Just(1.0), 0.0..=1.0f64].prop_map(Pattern::Random),
            Just(Pattern::Alternating),
            Just(Pattern::Runs),
            Just(Pattern::FirstOnly),
            Just(Pattern::LastOnly),
        ]
    }

    /// Sizes at block, warp and P boundaries, and random ones that are multiples of nothing.
    fn size() -> impl Strategy<Value = u64> {
        prop_oneof![
            // Tiles ± 1 of the GPU backends' single pass (4096, 2048, 1024, 512 elements).
            proptest::sample::select(vec![0u64, 1, 31, 32, 33, 63, 64, 65, 511, 513, 1023, 1024, 1025, 2047, 2049, 4095, 4096, 4097]),
            0u64..5000,
            5000u64..70_000,
        ]
    }

    /// A counted call's length word for a capacity: any length up to it, the
    /// edges, or one above it (clamped).
    fn length_word(cap: u64) -> impl Strategy<Value = u64> {
        prop_oneof![
            0..=cap,
            Just(0),
            Just(cap),
            Just(cap.saturating_sub(1)),
            prop_oneof![Just(cap + 1), Just(u64::MAX), cap..=cap.saturating_mul(2)],
        ]
    }

    /// A capacity and a length word for it.
    fn counted_size() -> impl Strategy<Value = (u64, u64)> {
        size().prop_flat_map(|cap| (Just(cap), length_word(cap)))
    }

    fn rule() -> impl Strategy<Value = Rule> {
        proptest::sample::select(Rule::ALL.to_vec())
    }

    /// One case of `op` on `es`-byte elements: the plain call when `len` is
    /// `None`, else the counted one with `len` in the lens word and `n` the
    /// capacity. A partition asked for its rejected half reversed by an
    /// algorithm that does not offer it must be refused with the typed error.
    #[allow(clippy::too_many_arguments)]
    fn compact(
        (op, rejected): (Operation, Rejected),
        alg: Algorithm,
        es: usize,
        n: u64,
        len: Option<u64>,
        rule: Rule,
        pat: Pattern,
        seed: u64,
    ) -> Result<(), String> {
        let b = $b;
        let c = CompactCase { algorithm: alg, operation: op, rule, pattern: pat, seed, rejected };
        let out = reap::with_element_size!(es, T => match len {
            None => verify::compact_case::<_, T>(b, c, n),
            Some(len) => verify::counted_compact_case::<_, T>(b, c, n, len),
        }, other => Err(format!("no {other}-byte elements")));
        if op == Operation::Partition && rejected == Rejected::Reversed && !alg.reverses_rejected() {
            return match out {
                Err(e) if e.contains("rejected half reversed") => Ok(()),
                other => Err(format!("{} should refuse a reversed rejected half, gave {other:?}", alg.name())),
            };
        }
        out
    }

    fn element_size() -> impl Strategy<Value = usize> {
        proptest::sample::select(ELEMENT_SIZES.to_vec())
    }

    fn rejected() -> impl Strategy<Value = Rejected> {
        proptest::sample::select(Rejected::ALL.to_vec())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: $cases, ..ProptestConfig::default() })]

        #[test]
        fn select_matches_the_sequential_reference(
            alg in algorithm(), es in element_size(),
            n in size(), rule in rule(), pat in pattern(), seed in any::<u64>(),
        ) {
            if !$ready {
                return Ok(());
            }
            compact((Operation::Select, Rejected::InOrder), alg, es, n, None, rule, pat, seed).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn partition_keeps_both_halves_in_the_asked_order(
            alg in algorithm().prop_filter("partition", |a| a.supports(Operation::Partition)),
            es in element_size(), order in rejected(),
            n in size(), rule in rule(), pat in pattern(), seed in any::<u64>(),
        ) {
            if !$ready {
                return Ok(());
            }
            compact((Operation::Partition, order), alg, es, n, None, rule, pat, seed).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn scan_matches_std(
            alg in algorithm().prop_filter("scan", |a| a.supports(Operation::Scan)),
            n in size(), seed in any::<u64>(),
        ) {
            if !$ready {
                return Ok(());
            }
            let b = $b;
            verify::scan_case::<_, u32>(b, alg, n, seed).map_err(TestCaseError::fail)?;
            verify::scan_case::<_, u64>(b, alg, n, seed).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn counted_select_matches_the_sequential_reference(
            alg in algorithm(), es in element_size(),
            (cap, len) in counted_size(), rule in rule(), pat in pattern(), seed in any::<u64>(),
        ) {
            if !$ready {
                return Ok(());
            }
            compact((Operation::Select, Rejected::InOrder), alg, es, cap, Some(len), rule, pat, seed).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn counted_partition_keeps_both_halves_in_the_asked_order(
            alg in algorithm().prop_filter("partition", |a| a.supports(Operation::Partition)),
            es in element_size(), order in rejected(),
            (cap, len) in counted_size(), rule in rule(), pat in pattern(), seed in any::<u64>(),
        ) {
            if !$ready {
                return Ok(());
            }
            compact((Operation::Partition, order), alg, es, cap, Some(len), rule, pat, seed).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn counted_scan_matches_std(
            alg in algorithm().prop_filter("scan", |a| a.supports(Operation::Scan)),
            (cap, len) in counted_size(), seed in any::<u64>(),
        ) {
            if !$ready {
                return Ok(());
            }
            let b = $b;
            verify::counted_scan_case::<_, u32>(b, alg, cap, len, seed).map_err(TestCaseError::fail)?;
            verify::counted_scan_case::<_, u64>(b, alg, cap, len, seed).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn remove_leaves_the_survivors(
            alg in proptest::sample::select(vec![Algorithm::RedzoneBlock, Algorithm::RedzoneGrid]).prop_filter("runs", |a| $runs(*a)),
            n in size(), d in prop_oneof![Just(0.0), Just(0.02), Just(1.0), 0.0..=1.0f64], seed in any::<u64>(),
        ) {
            if !$ready {
                return Ok(());
            }
            let b = $b;
            verify::remove_case::<_, u64>(b, alg, n, d, RemovalOrder::Shuffled, seed).map_err(TestCaseError::fail)?;
        }
    }

    proptest! {
        // Sorting runs one split per key bit: fewer, smaller cases.
        #![proptest_config(ProptestConfig { cases: ($cases / 8).max(8), ..ProptestConfig::default() })]

        #[test]
        fn radix_sort_by_split_matches_std_stable_sort(
            alg in algorithm().prop_filter("sort", |a| a.supports(Operation::Sort)),
            n in 0u64..3000, pairs in any::<bool>(), seed in any::<u64>(),
        ) {
            if !$ready {
                return Ok(());
            }
            let b = $b;
            verify::sort_case::<_, u32>(b, alg, n, pairs, seed).map_err(TestCaseError::fail)?;
            verify::sort_case::<_, u64>(b, alg, n, pairs, seed).map_err(TestCaseError::fail)?;
        }
    }
    };
}
