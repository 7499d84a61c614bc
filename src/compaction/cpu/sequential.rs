//! `sequential`: seed 000 §2 Listing 1, the reference every other algorithm is
//! checked against. One thread, one pass, nothing clever.

use crate::compaction::cpu::{KeepIndex, Phases};
use crate::compaction::{Rejected, ScanElement};

pub fn select<T: Copy>(input: &[T], keep: &impl KeepIndex, output: &mut [T], ph: &mut Phases) -> usize {
    ph.time("compact", || split_in_order(input, keep, output, None))
}

/// Kept elements first, then the rejected ones, in input order or reversed.
pub fn partition<T: Copy>(
    input: &[T],
    keep: &impl KeepIndex,
    output: &mut [T],
    rejected: Rejected,
    ph: &mut Phases,
) -> usize {
    ph.time("split", || match rejected {
        Rejected::InOrder => {
            let kept = (0..input.len()).filter(|&i| keep(i)).count();
            let (front, back) = output.split_at_mut(kept);
            split_in_order(input, keep, front, Some(back))
        }
        // One loop: kept from the front, rejected from the back.
        Rejected::Reversed => {
            let (mut j, mut end) = (0, input.len());
            for (i, &e) in input.iter().enumerate() {
                if keep(i) {
                    output[j] = e;
                    j += 1;
                } else {
                    end -= 1;
                    output[end] = e;
                }
            }
            j
        }
    })
}

/// The one-pass loop itself, also `stencil`'s per-chunk phase 3: the
/// elements `keep` picks fill `kept` in input order; with `rejected`, the
/// others fill it likewise. Returns the kept count.
pub fn split_in_order<T: Copy>(
    input: &[T],
    keep: impl Fn(usize) -> bool,
    kept: &mut [T],
    mut rejected: Option<&mut [T]>,
) -> usize {
    let (mut j, mut r) = (0, 0);
    for (i, &e) in input.iter().enumerate() {
        if keep(i) {
            kept[j] = e;
            j += 1;
        } else if let Some(rejected) = rejected.as_deref_mut() {
            rejected[r] = e;
            r += 1;
        }
    }
    j
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
