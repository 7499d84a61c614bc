//! `sengupta`: the work-efficient, step-efficient hybrid scan of seed 002
//! §2.4, under Horn's compaction as 002 §4 runs it.
//!
//! Mark, then reduce (002 Algorithm 3: each step halves the array by adding
//! adjacent pairs into a new, smaller array, and keeps every level) until no
//! more than the degree of parallelism partial sums remain; Horn's scan (002
//! Algorithm 2) over those; the down-sweep (002 Algorithm 4) back through the
//! kept levels to an inclusive scan of all n; then Horn's gather by
//! dichotomic search (seed 003 §II). The scan costs O(n) work, the gather
//! still O(n log n), as 003 §II points out.

use rayon::prelude::*;
use smart_default::SmartDefault;

use crate::compaction::ScanElement;
use crate::compaction::cpu::{FlagScan, Job, Phases};

/// Fewest elements a rayon task covers in one pass.
const GRAIN: usize = 4096;

/// Tuning for [`select`], [`partition`] and [`scan`].
#[derive(Clone, Debug, SmartDefault)]
pub struct SenguptaTuning {
    /// The reduce stops once at most this many partial sums remain; Horn's
    /// scan runs over them. 002 §4 found compaction fastest after about 10
    /// reduce steps at 2^20 elements (9 at 2^18), i.e. at 1024 (512) partial
    /// sums, so the default is a fixed 1024 rather than anything derived from
    /// this machine: it keeps the pass structure of the paper's best run and
    /// the same on every machine. At 1024 the Horn part is small on a CPU
    /// either way. Values below 1 count as 1 (reduce all the way, as Blelloch).
    #[default(1024)]
    pub degree_of_parallelism: usize,
}

/// Exclusive scan; returns the total. The hybrid scan is inclusive, so it runs
/// over the input shifted right by one, which is the exclusive scan of the input.
pub fn scan<S: ScanElement>(t: &SenguptaTuning, input: &[S], output: &mut [S], ph: &mut Phases) -> S {
    let n = input.len();
    if n == 0 {
        return S::ZERO;
    }
    hybrid_scan(t, |k| if k == 0 { S::ZERO } else { input[k - 1] }, &mut output[..n], ph);
    output[n - 1].add(input[n - 1])
}

/// Select or partition (see `Job`): mark, the hybrid scan, then Horn's gather.
pub struct Sengupta<'a>(pub &'a SenguptaTuning);

impl FlagScan for Sengupta<'_> {
    fn place<T: Copy + Send + Sync, S: ScanElement>(&self, job: Job<'_, T, [u32]>, ph: &mut Phases) -> usize {
        let Job { input, keep: flags, output, split } = job;
        // Inclusive scan of the flags: sum[i] = kept elements in 0..=i.
        let mut sum = vec![S::ZERO; input.len()];
        hybrid_scan(self.0, |k| S::from_u64(flags[k] as u64), &mut sum, ph);
        // The hybrid ends as Horn's compaction does (002 §2.4).
        super::horn::gather(input, &sum, output, split, ph)
    }
}

/// The hybrid (002 §2.4): the inclusive scan of `x(0..n)` into `out`, timed as
/// the paper's three stages.
fn hybrid_scan<S: ScanElement>(t: &SenguptaTuning, x: impl Fn(usize) -> S + Sync, out: &mut [S], ph: &mut Phases) {
    let n = out.len();
    let p = t.degree_of_parallelism.max(1);
    // levels[d - 1] is the paper's a_d: a_d[i] = a_{d-1}[2i] + a_{d-1}[2i + 1].
    // An odd-length level's last element has no partner and passes up alone;
    // the down-sweep never needs more than that (see `down_sweep_level`).
    let mut levels: Vec<Vec<S>> = ph.time("reduce", || {
        let mut levels: Vec<Vec<S>> = Vec::new();
        let mut len = n;
        while len > p {
            let next = match levels.last() {
                None => reduce_level(len, &x),
                Some(a) => reduce_level(len, |k| a[k]),
            };
            len = next.len();
            levels.push(next);
        }
        levels
    });
    ph.time("horn scan", || match levels.last_mut() {
        None => hillis_steele(&x, out),
        Some(top) => {
            let mut scanned = vec![S::ZERO; top.len()];
            hillis_steele(|k| top[k], &mut scanned);
            *top = scanned;
        }
    });
    ph.time("down-sweep", || {
        // From the top down, each level's partial sums become inclusive
        // prefix sums, reading the finished level above.
        for d in (1..levels.len()).rev() {
            let (below, above) = levels.split_at_mut(d);
            let (a, up) = (&mut below[d - 1], &above[0]);
            a.par_iter_mut().with_min_len(GRAIN).enumerate().for_each(|(i, v)| *v = down_sweep_level(i, *v, up));
        }
        if let Some(up) = levels.first() {
            out.par_iter_mut().with_min_len(GRAIN).enumerate().for_each(|(i, v)| *v = down_sweep_level(i, x(i), up));
        }
    });
}

/// One reduce step (002 Algorithm 3) over `a(0..len)`: ceil(len / 2) pair sums.
fn reduce_level<S: ScanElement>(len: usize, a: impl Fn(usize) -> S + Sync) -> Vec<S> {
    let mut next = vec![S::ZERO; len.div_ceil(2)];
    next.par_iter_mut().with_min_len(GRAIN / 2).enumerate().for_each(|(i, v)| {
        *v = if 2 * i + 1 < len { a(2 * i).add(a(2 * i + 1)) } else { a(2 * i) };
    });
    next
}

/// One down-sweep step (002 Algorithm 4) for element `i` of level d, whose
/// partial sum is `own`, given level d + 1 already scanned (`up[k]` is the
/// prefix through the end of pair k). An odd `i` ends pair i / 2; an even
/// `i > 0` adds its own value to the prefix through the previous pair.
fn down_sweep_level<S: ScanElement>(i: usize, own: S, up: &[S]) -> S {
    if i % 2 == 1 {
        up[i / 2]
    } else if i > 0 {
        own.add(up[i / 2 - 1])
    } else {
        own
    }
}

/// Horn's scan (002 Algorithm 2) over the few partial sums left by the reduce.
fn hillis_steele<S: ScanElement>(x: impl Fn(usize) -> S + Sync, out: &mut [S]) {
    let mut tmp = vec![S::ZERO; out.len()];
    super::horn::hillis_steele(x, out, &mut tmp);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::cpu::{mark_and_place, testing};

    /// The default, the extremes (reduce all the way; Horn only) and odd sizes
    /// that leave unpaired elements on the way up.
    fn tunings() -> Vec<SenguptaTuning> {
        [1024, 0, 1, 3, 100, usize::MAX].map(|p| SenguptaTuning { degree_of_parallelism: p }).to_vec()
    }

    #[test]
    fn select_and_partition_match_sequential() {
        testing::check_tunings(&tunings(), |t, job, ph| mark_and_place(Sengupta(t), job, ph));
    }

    #[test]
    fn scan_matches_sequential() {
        for t in tunings() {
            testing::check_scan(
                &testing::scan_family_sizes(),
                |x, o, ph| scan(&t, x, o, ph),
                |x, o, ph| scan(&t, x, o, ph),
            );
        }
    }

    #[test]
    fn phases_are_named_after_the_paper() {
        let names = testing::phase_names(|x, o, ph| {
            mark_and_place(
                Sengupta(&SenguptaTuning { degree_of_parallelism: 8 }),
                Job { input: x, keep: &|i| i % 3 == 0, output: o, split: false },
                ph,
            )
        });
        assert_eq!(names, ["mark", "reduce", "horn scan", "down-sweep", "dichotomic search"]);
    }
}
