//! `lookback`: Merrill & Garland, "Single-pass Parallel Prefix Scan with
//! Decoupled Look-back" (NVIDIA NVR-2016-002). Its block machinery is shared
//! with `chained` in `single_pass.rs`; only this prefix protocol is its own:
//! a block publishes its own aggregate at once and sums its predecessors'
//! aggregates until it meets an inclusive prefix, so a slow block no longer
//! serialises all its successors.

use crate::compaction::ScanElement;
use crate::compaction::cpu::single_pass::{PREFIX, Protocol, Tiles};

/// Merrill & Garland's decoupled look-back over predecessors' aggregates.
#[derive(Clone, Copy, Debug)]
pub struct Decoupled;

impl Protocol for Decoupled {
    /// Merrill & Garland §4: publish the aggregate at once, then look back over the
    /// predecessors, adding aggregates until one shows its inclusive prefix.
    fn exclusive_prefix<S: ScanElement>(tiles: &Tiles, b: usize, aggregate: S) -> S {
        if b == 0 {
            tiles.publish_inclusive(0, aggregate);
            return S::ZERO;
        }
        tiles.publish_aggregate(b, aggregate);
        let mut exclusive = S::ZERO;
        let mut p = b;
        loop {
            p -= 1;
            let (status, value) = tiles.wait::<S>(p);
            exclusive = value.add(exclusive);
            // Block 0 always publishes PREFIX, so the look-back ends there at the latest.
            if status == PREFIX {
                break;
            }
        }
        tiles.publish_inclusive(b, exclusive.add(aggregate));
        exclusive
    }
}

#[cfg(test)]
mod tests {
    use super::Decoupled;
    use crate::compaction::cpu::single_pass::{SinglePassTuning, compact};
    use crate::compaction::cpu::{Job, testing};

    #[test]
    fn phases_are_named() {
        let names = testing::phase_names(|x, o, ph| {
            compact(
                Decoupled,
                &SinglePassTuning::default(),
                Job { input: x, keep: &|i| i % 3 == 0, output: o, split: true },
                crate::compaction::Rejected::InOrder,
                ph,
            )
        });
        assert_eq!(names, ["single-pass", "reverse"]);
    }
}
