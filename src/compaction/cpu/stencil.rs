//! `stencil`: Bernabé & Acacio's CPU stream compaction (Algorithm 2), as seed
//! 004 §5.3 describes it: phase 1 marks the survivors in an auxiliary stencil
//! rather than in the data, phase 2 counts the stencil per thread and turns the
//! counts into a prefix sum for scheduling, phase 3 has every thread compact its
//! chunk at its offset. Out of place, stable. Seed 004 found 8- or 32-bit stencil
//! words no slower than bits; we use the shared `mark` phase's 32-bit words.

use rayon::prelude::*;

use crate::compaction::cpu::{Phases, mark};

#[derive(Clone, Debug, Default)]
pub struct StencilTuning {
    /// Threads, i.e. chunks; 0 means one per thread of the rayon pool.
    pub threads: usize,
}

/// Marks, counts per chunk, and returns (stencil, chunk length, per-chunk kept counts).
fn mark_and_count(
    t: &StencilTuning,
    n: usize,
    keep: &(impl Fn(usize) -> bool + Sync),
    ph: &mut Phases,
) -> (Vec<u32>, usize, Vec<usize>) {
    let threads = if t.threads == 0 { rayon::current_num_threads() } else { t.threads };
    let chunk = n.div_ceil(threads.max(1)).max(1);
    let stencil = ph.time("mark", || mark(n, keep));
    let counts = ph
        .time("count", || stencil.par_chunks(chunk).map(|s| s.iter().filter(|&&f| f != 0).count()).collect::<Vec<_>>());
    (stencil, chunk, counts)
}

/// Cuts `out` into consecutive pieces of the given lengths: each chunk's output
/// range. The exclusive prefix sum of the counts is implicit in the cutting.
fn cut<T>(mut out: &mut [T], lens: impl Iterator<Item = usize>) -> Vec<&mut [T]> {
    lens.map(|len| {
        let (head, tail) = std::mem::take(&mut out).split_at_mut(len);
        out = tail;
        head
    })
    .collect()
}

/// Stable select: mark, count, compact.
pub fn select<T: Copy + Send + Sync>(
    t: &StencilTuning,
    input: &[T],
    keep: &(impl Fn(usize) -> bool + Sync),
    output: &mut [T],
    ph: &mut Phases,
) -> usize {
    let (stencil, chunk, counts) = mark_and_count(t, input.len(), keep, ph);
    let kept = counts.iter().sum();
    ph.time("compact", || {
        // Disjoint output slices per chunk: safe code, no shared pointer needed.
        let outs = cut(&mut output[..kept], counts.iter().copied());
        outs.into_par_iter().zip(input.par_chunks(chunk).zip(stencil.par_chunks(chunk))).for_each(|(o, (x, s))| {
            let mut j = 0;
            for (&e, &f) in x.iter().zip(s) {
                if f != 0 {
                    o[j] = e;
                    j += 1;
                }
            }
        })
    });
    kept
}

/// Stable partition: kept elements first, rejected after, both in input order.
pub fn partition<T: Copy + Send + Sync>(
    t: &StencilTuning,
    input: &[T],
    keep: &(impl Fn(usize) -> bool + Sync),
    output: &mut [T],
    ph: &mut Phases,
) -> usize {
    let (stencil, chunk, counts) = mark_and_count(t, input.len(), keep, ph);
    let kept = counts.iter().sum();
    ph.time("compact", || {
        let (front, back) = output.split_at_mut(kept);
        let kept_outs = cut(front, counts.iter().copied());
        let lens = input.chunks(chunk).map(<[T]>::len);
        let rejected_outs = cut(back, lens.zip(&counts).map(|(len, &k)| len - k));
        let outs = kept_outs.into_par_iter().zip(rejected_outs);
        outs.zip(input.par_chunks(chunk).zip(stencil.par_chunks(chunk))).for_each(|((o, r), (x, s))| {
            let (mut j, mut q) = (0, 0);
            for (&e, &f) in x.iter().zip(s) {
                if f != 0 {
                    o[j] = e;
                    j += 1;
                } else {
                    r[q] = e;
                    q += 1;
                }
            }
        })
    });
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::cpu::sequential;
    use crate::compaction::cpu::single_pass::tests::{patterns, sizes};

    #[test]
    fn select_and_partition_match_sequential() {
        let mut rng = fastrand::Rng::with_seed(0x057e_9c11);
        for n in sizes(&mut rng) {
            let input: Vec<u64> = (0..n as u64).map(|i| i * 7 + 1).collect();
            for (name, flags) in patterns(&mut rng, n) {
                let keep = |i: usize| flags[i];
                let mut want = vec![0; n];
                let want_k = sequential::select(&input, &keep, &mut want, &mut Phases::default());
                let mut want_p = vec![0; n];
                sequential::partition(&input, &keep, &mut want_p, &mut Phases::default());
                for threads in [0, 1, 3, 64] {
                    let t = StencilTuning { threads };
                    let mut got = vec![u64::MAX; n];
                    let k = select(&t, &input, &keep, &mut got, &mut Phases::default());
                    assert_eq!(k, want_k, "select count n={n} {name} threads={threads}");
                    assert_eq!(got[..k], want[..k], "select n={n} {name} threads={threads}");
                    let mut got = vec![u64::MAX; n];
                    let k = partition(&t, &input, &keep, &mut got, &mut Phases::default());
                    assert_eq!(k, want_k, "partition count n={n} {name} threads={threads}");
                    assert_eq!(got, want_p, "partition n={n} {name} threads={threads}");
                }
            }
        }
    }

    #[test]
    fn phases_are_named() {
        let input: Vec<u32> = (0..1000).collect();
        let mut output = vec![0; 1000];
        let mut ph = Phases::default();
        select(&StencilTuning::default(), &input, &|i| i % 3 == 0, &mut output, &mut ph);
        let names: Vec<_> = ph.0.iter().map(|p| p.name).collect();
        assert_eq!(names, ["mark", "count", "compact"]);
    }
}
