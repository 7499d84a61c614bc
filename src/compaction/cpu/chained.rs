//! `chained`: the single-pass "streaming" scan of seed 001 module 10.4, with
//! dynamic block ids. Each block waits for its predecessor's inclusive prefix,
//! adds its own aggregate and passes the sum on, so prefixes travel down the
//! chain one block at a time. The block machinery (dynamic ids, per-block
//! tiles, select / partition / scan) is shared with `lookback` in
//! `single_pass.rs`; only this prefix protocol is `chained`'s own.

use crate::compaction::ScanElement;
use crate::compaction::cpu::single_pass::{Protocol, Tiles};

/// Seed 001 mod. 10.4: wait for the predecessor's inclusive prefix.
#[derive(Clone, Copy, Debug)]
pub struct Chained;

impl Protocol for Chained {
    /// Block `b`'s exclusive prefix: the slide's `while (flags[bid] == 0) {}`, read
    /// `scan_value[bid]`, publish `previous_sum + local_sum`. The slide's
    /// `__threadfence()` before setting the flag is the Release store inside
    /// `publish_inclusive`; its spin on the flag is the Acquire load in `wait`.
    fn exclusive_prefix<S: ScanElement>(tiles: &Tiles, b: usize, aggregate: S) -> S {
        let exclusive = if b == 0 {
            S::ZERO
        } else {
            // Nobody publishes a bare aggregate under this protocol, so the first
            // status the predecessor shows is its inclusive prefix.
            tiles.wait::<S>(b - 1).1
        };
        tiles.publish_inclusive(b, exclusive.add(aggregate));
        exclusive
    }
}
