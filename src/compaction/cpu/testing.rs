//! Shared by the CPU algorithms' unit tests: sizes around every block, warp
//! and P boundary, and the keep patterns the verify suite uses too.

use crate::compaction::Pattern;

/// Sizes at and around the boundaries every algorithm cuts its input at.
pub const EDGE_SIZES: [usize; 16] = [0, 1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1023, 1024, 1025, 4097];

/// The edge sizes, then `random` sizes up to `max` that are multiples of nothing in particular.
pub fn sizes(rng: &mut fastrand::Rng, random: usize, max: usize) -> Vec<usize> {
    EDGE_SIZES.iter().copied().chain((0..random).map(|_| rng.usize(1..=max))).collect()
}

/// The sizes the scan-based families (horn, blelloch, sengupta, roger) test at.
pub fn scan_family_sizes() -> Vec<usize> {
    sizes(&mut fastrand::Rng::with_seed(0x4057), 4, 100_000)
}

/// The phases `run` records over 100 u32 inputs into a 100-slot output, by name.
pub fn phase_names<R>(run: impl FnOnce(&[u32], &mut [u32], &mut Phases) -> R) -> Vec<&'static str> {
    let input: Vec<u32> = (0..100).collect();
    let mut ph = Phases::default();
    let mut out = vec![0; 100];
    run(&input, &mut out, &mut ph);
    ph.0.iter().map(|p| p.name).collect()
}

/// Keep patterns over `n` elements, named for failure messages: random at
/// five densities, alternating, runs, one survivor first, one survivor last.
pub fn patterns(n: usize, rng: &mut fastrand::Rng) -> Vec<(String, Vec<bool>)> {
    [
        Pattern::Random(0.0),
        Pattern::Random(1.0),
        Pattern::Random(0.1),
        Pattern::Random(0.5),
        Pattern::Random(0.9),
        Pattern::Alternating,
        Pattern::Runs,
        Pattern::FirstOnly,
        Pattern::LastOnly,
    ]
    .into_iter()
    .map(|p| (p.to_string(), p.flags(n, rng)))
    .collect()
}

use crate::compaction::cpu::{Job, Phases, sequential};

/// A compaction under test, keep rule given as flags: `split` asks for a
/// partition rather than a select; returns the count.
type CompactFn<'a> = Box<dyn Fn(&[u64], &[bool], &mut [u64], bool, &mut Phases) -> usize + 'a>;

/// One configuration of an algorithm (a tuning, say) with its compaction.
pub struct Variant<'a> {
    name: String,
    compact: CompactFn<'a>,
}

pub fn variant<'a>(
    name: impl Into<String>,
    compact: impl Fn(&[u64], &[bool], &mut [u64], bool, &mut Phases) -> usize + 'a,
) -> Variant<'a> {
    Variant { name: name.into(), compact: Box::new(compact) }
}

/// The select / partition test body the CPU families share: every size and
/// pattern, against the sequential reference, into poisoned outputs.
pub fn check_select_partition(seed: u64, sizes: &[usize], variants: &[Variant<'_>]) {
    let mut rng = fastrand::Rng::with_seed(seed);
    for &n in sizes {
        let input: Vec<u64> = (0..n).map(|_| rng.u64(..)).collect();
        for (name, keep) in patterns(n, &mut rng) {
            let k = |i: usize| keep[i];
            let mut ph = Phases::default();
            let (mut want, mut want_split) = (vec![u64::MAX; n], vec![u64::MAX; n]);
            let kept = sequential::select(&input, &k, &mut want, &mut ph);
            let split =
                sequential::partition(&input, &k, &mut want_split, crate::compaction::Rejected::InOrder, &mut ph);
            for v in variants {
                let mut got = vec![u64::MAX; n];
                let c = (v.compact)(&input, &keep, &mut got, false, &mut ph);
                assert_eq!((kept, &want), (c, &got), "select n={n} {name} {}", v.name);
                got.fill(u64::MAX);
                let c = (v.compact)(&input, &keep, &mut got, true, &mut ph);
                assert_eq!((split, &want_split), (c, &got), "partition n={n} {name} {}", v.name);
            }
        }
    }
}

/// The keep rule [`check_tunings`] hands an algorithm's `compact`: owned and
/// boxed, so that it is one type that `compact` is instantiated with.
pub type Keep = Box<dyn Fn(usize) -> bool + Sync>;

/// [`check_select_partition`] as the tuned scan families (roger, sengupta) run
/// it: seed 7, their sizes, one variant per tuning named by its `Debug` form.
pub fn check_tunings<U: std::fmt::Debug>(
    tunings: &[U],
    compact: impl Fn(&U, Job<'_, u64, Keep>, &mut Phases) -> usize + Copy,
) {
    let variant = |t| {
        variant(format!("{t:?}"), move |input, k, output, split, ph| {
            let k = k.to_vec();
            compact(t, Job { input, keep: &(Box::new(move |i| k[i]) as Keep), output, split }, ph)
        })
    };
    let variants: Vec<_> = tunings.iter().map(variant).collect();
    check_select_partition(7, &scan_family_sizes(), &variants);
}

/// The exclusive-scan test body the CPU families share: u32 (wrapping) and
/// u64 values at every size, against the sequential scan, into poisoned outputs.
pub fn check_scan(
    sizes: &[usize],
    scan32: impl Fn(&[u32], &mut [u32], &mut Phases) -> u32,
    scan64: impl Fn(&[u64], &mut [u64], &mut Phases) -> u64,
) {
    let mut rng = fastrand::Rng::with_seed(11);
    let mut ph = Phases::default();
    for &n in sizes {
        let input: Vec<u32> = (0..n).map(|_| rng.u32(..)).collect();
        let (mut want, mut got) = (vec![7; n], vec![7; n]);
        let t0 = sequential::scan(&input, &mut want, &mut ph);
        let t1 = scan32(&input, &mut got, &mut ph);
        assert_eq!((t0, &want), (t1, &got), "u32 n={n}");
        let input: Vec<u64> = (0..n).map(|_| rng.u64(..)).collect();
        let (mut want, mut got) = (vec![7; n], vec![7; n]);
        let t0 = sequential::scan(&input, &mut want, &mut ph);
        let t1 = scan64(&input, &mut got, &mut ph);
        assert_eq!((t0, &want), (t1, &got), "u64 n={n}");
    }
}

/// The tests of an untuned flag-scan family (horn, blelloch), one per
/// property: select and partition, and the exclusive scan, against the
/// sequential reference, and the phases under the paper's names.
macro_rules! flag_scan_tests {
    ($algorithm:ident, $scan:ident, $phases:expr) => {
        use $crate::compaction::cpu::{Job, mark_and_place, testing};

        #[test]
        fn select_and_partition_match_sequential() {
            let v = testing::variant(stringify!($algorithm), |x, k, o, split, ph| {
                mark_and_place($algorithm, Job { input: x, keep: &|i| k[i], output: o, split }, ph)
            });
            testing::check_select_partition(7, &testing::scan_family_sizes(), &[v]);
        }

        #[test]
        fn scan_matches_sequential() {
            testing::check_scan(&testing::scan_family_sizes(), $scan, $scan);
        }

        #[test]
        fn phases_are_named_after_the_paper() {
            let names = testing::phase_names(|x, o, ph| {
                mark_and_place($algorithm, Job { input: x, keep: &|i| i % 3 == 0, output: o, split: false }, ph)
            });
            assert_eq!(names, $phases);
        }
    };
}
pub(crate) use flag_scan_tests;
