//! `sequential`: seed 000 §2 Listing 1, the reference every other algorithm is
//! checked against. One thread, one pass, nothing clever.

use crate::compaction::ScanElement;
use crate::compaction::cpu::Phases;

pub fn select<T: Copy>(
    input: &[T],
    keep: &(impl Fn(usize) -> bool + Sync),
    output: &mut [T],
    ph: &mut Phases,
) -> usize {
    ph.time("compact", || {
        let mut j = 0;
        for (i, &e) in input.iter().enumerate() {
            if keep(i) {
                output[j] = e;
                j += 1;
            }
        }
        j
    })
}

/// Kept elements first, then the rejected ones, both in input order.
pub fn partition<T: Copy>(
    input: &[T],
    keep: &(impl Fn(usize) -> bool + Sync),
    output: &mut [T],
    ph: &mut Phases,
) -> usize {
    ph.time("split", || {
        let kept = (0..input.len()).filter(|&i| keep(i)).count();
        let (mut j, mut r) = (0, kept);
        for (i, &e) in input.iter().enumerate() {
            if keep(i) {
                output[j] = e;
                j += 1;
            } else {
                output[r] = e;
                r += 1;
            }
        }
        kept
    })
}

pub fn scan<S: ScanElement>(input: &[S], output: &mut [S], ph: &mut Phases) -> S {
    ph.time("scan", || {
        let mut sum = S::ZERO;
        for (o, &x) in output.iter_mut().zip(input) {
            *o = sum;
            sum = sum.add(x);
        }
        sum
    })
}
