//! `billeter-{prefix,popc}-{scattered,staged,buffered,selective}`: Billeter, Olsson
//! and Assarsson's three-phase compaction for wide SIMD machines (seed 000 §3-4),
//! with the stream split (§5.3) and the global prefix sum (§5.2) built on it.
//!
//! The paper's machine is P virtual processors of S SIMD lanes (§3.1). Here a
//! processor is a rayon task over a contiguous range of whole S-element groups;
//! when ⌈n/S⌉ groups do not divide by P the ranges differ by one group (§4.1),
//! and n need not be a multiple of S: the last group's missing lanes are
//! invalid. A lane group is a loop over S lanes standing in for one SIMD step.
//!
//! Compaction and stream split, phases named as in the paper:
//! - `count` (phase 1, Listing 3): per-lane counts, reduced once per processor.
//!   The popc variants also store one S-bit ballot word per group (§4.2).
//! - `scan` (phase 2): exclusive scan of the P counts into processor offsets.
//! - `move` (phase 3, Listing 4): compactSIMD per group, by a Hillis-Steele
//!   prefix sum over the lane flags (Listing 5, re-evaluating the keep rule) or
//!   by a popcount of the stored word below the lane (Listing 6, never calling
//!   the keep rule again); then the output mode: scattered, staged, buffered
//!   (Listing 7) or selective (§4.2). Stream split writes the rejected lanes
//!   the same way, after all the kept ones (§5.3).
//!
//! Global prefix sum (§5.2), the prefix-sum flavour: `sum` (phase 1 sums values
//! per lane and processor), `scan` (phase 2, unchanged) and `prefix` (phase 3:
//! an S-lane Hillis-Steele scan per group plus the running processor offset).

use std::ops::Range;

use rayon::prelude::*;
use smart_default::SmartDefault;

mod phase3;

use crate::compaction::cpu::{Job, KeepIndex, Phases, Scatter, cut};
use crate::compaction::{Billeter, CompactSimd, ScanElement};
use phase3::{Move, PopcGroup, PrefixGroup};

/// The widest lane group: popc keeps a group's flags in one `u64` word.
const MAX_LANES: usize = 64;

/// Billeter's tuning: the machine model of §3.1 mapped onto the CPU.
#[derive(Clone, Debug, SmartDefault)]
pub struct BilleterTuning {
    /// Virtual processors P. The paper keeps P as small as latency hiding
    /// allows (480 on a GTX 280, §4.1); on the CPU a few tasks per rayon
    /// thread leave room for work stealing. At least 1; never more than the
    /// number of lane groups.
    #[default(4 * rayon::current_num_threads())]
    pub processors: usize,
    /// SIMD width S, 1 to 64 (the popc ballot word is a `u64`); values outside
    /// are clamped. 32 as on NVIDIA hardware (§4.1).
    #[default(32)]
    pub lanes: usize,
    /// Selective output: a processor stages a stream when that stream's share
    /// of its range is at least this ratio, and scatters it otherwise. Dense
    /// ranges fill whole groups, so staging turns many lane writes into one
    /// contiguous copy; sparse ranges write few lanes, and staging them only
    /// adds a copy (the per-warp choice of §4.2, Figure 3).
    #[default(0.5)]
    pub staged_ratio: f64,
}

/// Exclusive prefix sum into `output`; returns the total (§5.2).
pub fn scan<S: ScanElement>(t: &BilleterTuning, input: &[S], output: &mut [S], ph: &mut Phases) -> S {
    assert_eq!(input.len(), output.len(), "scan output length");
    let l = Layout::new(t, input.len());

    // Phase 1: each lane sums its column of the processor's range; one reduce.
    let sums: Vec<S> = ph.time("sum", || {
        (0..l.procs)
            .into_par_iter()
            .map(|p| {
                let mut lane = [S::ZERO; MAX_LANES];
                for g in l.groups(p) {
                    let i = g * l.lanes;
                    for (s, &x) in input[i..i + l.width(g)].iter().enumerate() {
                        lane[s] = lane[s].add(x);
                    }
                }
                lane[..l.lanes].iter().fold(S::ZERO, |acc, &x| acc.add(x))
            })
            .collect()
    });

    // Phase 2: P values only, not time critical (§3.2), so one thread.
    let (offsets, total) = ph.time("scan", || exclusive_scan(&sums, S::ZERO, S::add));

    // Phase 3: every group reads and writes all S lanes (§5.2: aligned, coherent).
    ph.time("prefix", || {
        let chunks = cut(output, (0..l.procs).map(|p| l.elements(l.groups(p)).len()));
        chunks.into_par_iter().enumerate().for_each(|(p, out)| {
            let mut carry = offsets[p];
            let first = l.groups(p).start;
            for (k, out) in out.chunks_mut(l.lanes).enumerate() {
                let i = (first + k) * l.lanes;
                let mut x = [S::ZERO; MAX_LANES];
                x[..out.len()].copy_from_slice(&input[i..i + out.len()]);
                hillis_steele(&mut x[..l.lanes], S::add);
                // Inclusive to exclusive: lane s takes lane s-1's sum.
                let mut before = S::ZERO;
                for (s, o) in out.iter_mut().enumerate() {
                    *o = carry.add(before);
                    before = x[s];
                }
                carry = carry.add(x[l.lanes - 1]);
            }
        })
    });
    total
}

/// Compaction: the kept elements into `output[..count]`, in input order; or
/// with `split`, stream split (§5.3): kept elements first, rejected after,
/// both in input order. The three phases are the same for both.
pub fn compact<T: Copy + Send + Sync>(
    v: Billeter,
    t: &BilleterTuning,
    Job { input, keep, output, split }: Job<'_, T, impl KeepIndex>,
    ph: &mut Phases,
) -> usize {
    assert_eq!(input.len(), output.len(), "compaction output length");
    let l = Layout::new(t, input.len());

    // Phase 1. Popc also stores a ballot word per group for phase 3 (§4.2).
    let mut masks = Vec::new();
    let counts: Vec<usize> = ph.time("count", || match v.simd {
        CompactSimd::Prefix => (0..l.procs).into_par_iter().map(|p| count_lanes(&l, l.groups(p), keep)).collect(),
        CompactSimd::Popc => {
            masks = vec![0u64; l.groups];
            let chunks = cut(&mut masks, (0..l.procs).map(|p| l.groups(p).len()));
            chunks.into_par_iter().enumerate().map(|(p, words)| count_ballot(&l, l.groups(p), keep, words)).collect()
        }
    });

    let (offsets, kept) = ph.time("scan", || exclusive_scan(&counts, 0, |a, b| a + b));

    let out = Scatter::new(output);
    let m = Move { l: &l, t, mode: v.output, input, out, offsets: &offsets, counts: &counts, kept, split };
    ph.time("move", || match v.simd {
        CompactSimd::Prefix => m.run(|g| PrefixGroup::new(&l, g, keep)),
        CompactSimd::Popc => m.run(|g| PopcGroup(masks[g])),
    });
    kept
}

/// How the input is cut into processors and S-lane groups.
struct Layout {
    n: usize,
    lanes: usize,
    groups: usize,
    procs: usize,
}

impl Layout {
    fn new(t: &BilleterTuning, n: usize) -> Self {
        let lanes = t.lanes.clamp(1, MAX_LANES);
        let groups = n.div_ceil(lanes);
        Layout { n, lanes, groups, procs: t.processors.max(1).min(groups) }
    }

    /// Processor p's groups: balanced, contiguous, in order.
    fn groups(&self, p: usize) -> Range<usize> {
        let at = |p: usize| (p as u128 * self.groups as u128 / self.procs as u128) as usize;
        at(p)..at(p + 1)
    }

    fn elements(&self, groups: Range<usize>) -> Range<usize> {
        groups.start * self.lanes..(groups.end * self.lanes).min(self.n)
    }

    /// Lanes holding an element in group g: S except in a partial last group.
    fn width(&self, g: usize) -> usize {
        self.lanes.min(self.n - g * self.lanes)
    }
}

/// Listing 3: lane s counts the valid elements of its column; then one reduce.
fn count_lanes(l: &Layout, groups: Range<usize>, keep: &impl KeepIndex) -> usize {
    let mut count = [0usize; MAX_LANES];
    for g in groups {
        let i = g * l.lanes;
        for (s, c) in count[..l.width(g)].iter_mut().enumerate() {
            *c += keep(i + s) as usize;
        }
    }
    count[..l.lanes].iter().sum()
}

/// Listing 3 plus the ballot of §4.2: one word per group, bit s for lane s.
fn count_ballot(l: &Layout, groups: Range<usize>, keep: &impl KeepIndex, words: &mut [u64]) -> usize {
    let mut count = [0usize; MAX_LANES];
    for (g, word) in groups.zip(words) {
        let i = g * l.lanes;
        let mut m = 0u64;
        for (s, c) in count[..l.width(g)].iter_mut().enumerate() {
            let valid = keep(i + s);
            *c += valid as usize;
            m |= (valid as u64) << s;
        }
        *word = m;
    }
    count[..l.lanes].iter().sum()
}

/// Phase 2 on the P processor values.
fn exclusive_scan<X: Copy>(xs: &[X], zero: X, add: impl Fn(X, X) -> X) -> (Vec<X>, X) {
    let mut sum = zero;
    let offsets = xs
        .iter()
        .map(|&x| {
            let before = sum;
            sum = add(sum, x);
            before
        })
        .collect();
    (offsets, sum)
}

/// Inclusive Hillis-Steele scan in log S steps (§3.3). Walking the lanes
/// downwards lets each step read lane s-d before that step overwrites it,
/// as the lock-step SIMD lanes would.
fn hillis_steele<X: Copy>(x: &mut [X], add: impl Fn(X, X) -> X) {
    let mut d = 1;
    while d < x.len() {
        for s in (d..x.len()).rev() {
            x[s] = add(x[s - d], x[s]);
        }
        d *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::OutputMode;
    use crate::compaction::cpu::sequential;

    const VARIANTS: [Billeter; 8] = [
        Billeter { simd: CompactSimd::Prefix, output: OutputMode::Scattered },
        Billeter { simd: CompactSimd::Prefix, output: OutputMode::Staged },
        Billeter { simd: CompactSimd::Prefix, output: OutputMode::Buffered },
        Billeter { simd: CompactSimd::Prefix, output: OutputMode::Selective },
        Billeter { simd: CompactSimd::Popc, output: OutputMode::Scattered },
        Billeter { simd: CompactSimd::Popc, output: OutputMode::Staged },
        Billeter { simd: CompactSimd::Popc, output: OutputMode::Buffered },
        Billeter { simd: CompactSimd::Popc, output: OutputMode::Selective },
    ];

    use crate::compaction::cpu::testing::patterns;

    fn sizes(rng: &mut fastrand::Rng) -> Vec<usize> {
        crate::compaction::cpu::testing::sizes(rng, 3, 200_000)
    }
    const POISON: u32 = 0xdead_beef;

    fn tunings() -> Vec<BilleterTuning> {
        let t = |processors, lanes, staged_ratio| BilleterTuning { processors, lanes, staged_ratio };
        vec![
            BilleterTuning::default(),
            t(3, 4, 0.5),
            t(7, 32, 0.5),
            t(5, 64, 0.3),
            t(1, 1, 0.5),
            t(480, 32, 0.7),
            // Selective forced all-staged and all-scattered.
            t(4, 16, 0.0),
            t(4, 16, 2.0),
        ]
    }

    fn check(v: Billeter, t: &BilleterTuning, input: &[u32], flags: &[bool], what: &str) {
        let keep = |i: usize| flags[i];
        let n = input.len();
        let mut ph = Phases::default();
        let mut want = vec![POISON; n];
        let want_count = sequential::select(input, &keep, &mut want, &mut ph);
        let mut got = vec![POISON; n];
        let count = compact(v, t, Job { input, keep: &keep, output: &mut got, split: false }, &mut ph);
        assert_eq!((count, &got), (want_count, &want), "select {v:?} {t:?} n={n} {what}");

        let mut want = vec![POISON; n];
        let want_count = sequential::partition(input, &keep, &mut want, crate::compaction::Rejected::InOrder, &mut ph);
        let mut got = vec![POISON; n];
        let count = compact(v, t, Job { input, keep: &keep, output: &mut got, split: true }, &mut ph);
        assert_eq!((count, &got), (want_count, &want), "partition {v:?} {t:?} n={n} {what}");
    }

    #[test]
    fn every_variant_matches_sequential() {
        let mut rng = fastrand::Rng::with_seed(0xb111_e7e4);
        for n in sizes(&mut rng) {
            let input: Vec<u32> = (0..n).map(|_| rng.u32(..POISON)).collect();
            for (what, flags) in patterns(n, &mut rng) {
                for t in &tunings() {
                    // The big random sizes only under a few tunings, to keep the test quick.
                    if n > 5000 && t.processors > 100 {
                        continue;
                    }
                    for v in VARIANTS {
                        check(v, t, &input, &flags, &what);
                    }
                }
            }
        }
    }

    #[test]
    fn wide_elements() {
        let mut rng = fastrand::Rng::with_seed(7);
        let n = 10_007;
        let input: Vec<[u64; 3]> = (0..n).map(|_| [rng.u64(..), rng.u64(..), rng.u64(..)]).collect();
        let keep = |i: usize| input[i][0] % 3 != 0;
        let t = BilleterTuning { processors: 5, lanes: 32, staged_ratio: 0.5 };
        let mut ph = Phases::default();
        let mut want = vec![[0; 3]; n];
        let want_count = sequential::partition(&input, &keep, &mut want, crate::compaction::Rejected::InOrder, &mut ph);
        for v in VARIANTS {
            let mut got = vec![[0; 3]; n];
            assert_eq!(
                compact(v, &t, Job { input: &input, keep: &keep, output: &mut got, split: true }, &mut ph),
                want_count,
                "{v:?}"
            );
            assert_eq!(got, want, "{v:?}");
        }
    }

    #[test]
    fn phases_are_named_as_in_the_paper() {
        let input: Vec<u32> = (0..1000).collect();
        let mut out = vec![0; 1000];
        for v in VARIANTS {
            let mut ph = Phases::default();
            let job = Job { input: &input, keep: &|i| i % 3 == 0, output: &mut out, split: false };
            compact(v, &BilleterTuning::default(), job, &mut ph);
            let names: Vec<_> = ph.0.iter().map(|p| p.name).collect();
            assert_eq!(names, ["count", "scan", "move"]);
        }
        let mut ph = Phases::default();
        scan(&BilleterTuning::default(), &input, &mut out, &mut ph);
        let names: Vec<_> = ph.0.iter().map(|p| p.name).collect();
        assert_eq!(names, ["sum", "scan", "prefix"]);
    }

    fn check_scan<S: ScanElement>(input: &[S], t: &BilleterTuning) {
        let mut ph = Phases::default();
        let mut want = vec![S::from_u64(0xabad_cafe); input.len()];
        let want_total = sequential::scan(input, &mut want, &mut ph);
        let mut got = vec![S::from_u64(0xabad_cafe); input.len()];
        let total = scan(t, input, &mut got, &mut ph);
        assert_eq!(total, want_total, "total n={} {t:?}", input.len());
        assert_eq!(got, want, "n={} {t:?}", input.len());
    }

    #[test]
    fn scan_matches_sequential() {
        let mut rng = fastrand::Rng::with_seed(0x5ca9);
        for n in sizes(&mut rng) {
            // Full-range values, so the u32 sums wrap.
            let small: Vec<u32> = (0..n).map(|_| rng.u32(..)).collect();
            let wide: Vec<u64> = (0..n).map(|_| rng.u64(..)).collect();
            let ones = vec![1u64; n];
            for t in &tunings() {
                check_scan(&small, t);
                check_scan(&wide, t);
                check_scan(&ones, t);
            }
        }
    }
}
