//! The single-pass block machinery that `chained` (seed 001 module 10.4, see
//! `chained.rs`) and `lookback` (Merrill & Garland 2016, see `lookback.rs`)
//! share, as `kernels/compaction/single_pass.cuh` does on the GPU.
//!
//! One pass over the input: each rayon task takes the next block id from an
//! atomic counter, counts (or reduces) its block, obtains the block's exclusive
//! prefix through a [`Protocol`] over per-block [`Tiles`], and writes its
//! output. Only the prefix protocol differs between the two algorithms, and
//! each lives in its algorithm's own file.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use rayon::prelude::*;
use smart_default::SmartDefault;

use crate::compaction::cpu::{Job, KeepIndex, Phases, Scatter};
use crate::compaction::{Rejected, ScanElement};

/// How a block learns its exclusive prefix: `chained::Chained` (wait for the
/// predecessor's inclusive prefix) or `lookback::Decoupled` (look back over
/// the predecessors' aggregates).
pub trait Protocol: Copy + std::fmt::Debug + Sync {
    /// Block `b`'s exclusive prefix, given its aggregate; publishes in `tiles`
    /// what the block's successors need.
    fn exclusive_prefix<S: ScanElement>(tiles: &Tiles, b: usize, aggregate: S) -> S;
}

/// Tuning of the single-pass algorithms (`chained`, `lookback`).
#[derive(Clone, Debug, SmartDefault)]
pub struct SinglePassTuning {
    /// Elements per block (a GPU tile: threads × items per thread).
    #[default(8192)]
    pub block: usize,
    /// Busy-wait iterations on a predecessor's status before each `yield_now`,
    /// so a waiting task gives its core back when the machine is oversubscribed.
    #[default(64)]
    pub spins_before_yield: u32,
}

// Block status, in the order a block moves through them (never backwards).
const INVALID: u32 = 0;
/// The block's own aggregate is in `aggregate` (look-back only).
pub(crate) const AGGREGATE: u32 = 1;
/// The block's inclusive prefix is in `inclusive`.
pub(crate) const PREFIX: u32 = 2;

/// One block's published state.
///
/// Memory ordering: a value is stored (Relaxed) *before* the status that
/// announces it is stored with Release; a reader loads the status with Acquire
/// and only then the value, so it sees the value the status announces. Each value
/// word is written once and never changes afterwards, which is why aggregate and
/// inclusive prefix get separate words: a reader that saw AGGREGATE must not
/// race with the later store of the inclusive prefix. (The paper packs status
/// and value into one word where they fit; a u64 scan value does not leave room
/// for the status bits, so one layout serves counts and scans alike.)
#[derive(Default)]
struct Tile {
    status: AtomicU32,
    aggregate: AtomicU64,
    inclusive: AtomicU64,
}

/// The per-block states of one single-pass run, in block-id order.
pub struct Tiles {
    tiles: Vec<Tile>,
    spins_before_yield: u32,
    /// Set when a block's task panics (e.g. in the caller's keep closure), so
    /// that its successors stop waiting for a prefix that will never come.
    poisoned: AtomicBool,
}

impl Tiles {
    fn new(blocks: usize, spins_before_yield: u32) -> Self {
        Tiles {
            tiles: (0..blocks).map(|_| Tile::default()).collect(),
            spins_before_yield: spins_before_yield.max(1),
            poisoned: AtomicBool::new(false),
        }
    }

    /// Publishes block `b`'s own aggregate (status AGGREGATE).
    pub(crate) fn publish_aggregate<S: ScanElement>(&self, b: usize, aggregate: S) {
        let t = &self.tiles[b];
        t.aggregate.store(aggregate.to_u64(), Ordering::Relaxed);
        // Release: the aggregate above is visible to whoever acquires this status.
        t.status.store(AGGREGATE, Ordering::Release);
    }

    /// Publishes block `b`'s inclusive prefix (status PREFIX).
    pub(crate) fn publish_inclusive<S: ScanElement>(&self, b: usize, inclusive: S) {
        let t = &self.tiles[b];
        t.inclusive.store(inclusive.to_u64(), Ordering::Relaxed);
        // Release: as in `publish_aggregate`.
        t.status.store(PREFIX, Ordering::Release);
    }

    /// Waits until block `b` has published anything, then returns its status and
    /// the value that status announces. Block `b` was claimed before the caller's
    /// block by a task that is running now (dynamic block ids), so it finishes.
    pub(crate) fn wait<S: ScanElement>(&self, b: usize) -> (u32, S) {
        let t = &self.tiles[b];
        let mut spins = 0;
        loop {
            // Acquire: pairs with the Release in `publish_*`.
            let status = t.status.load(Ordering::Acquire);
            match status {
                AGGREGATE => return (status, S::from_u64(t.aggregate.load(Ordering::Relaxed))),
                PREFIX => return (status, S::from_u64(t.inclusive.load(Ordering::Relaxed))),
                INVALID => {}
                _ => unreachable!("unknown block status {status}"),
            }
            spins += 1;
            if spins % self.spins_before_yield == 0 {
                assert!(!self.poisoned.load(Ordering::Relaxed), "a preceding block's task panicked");
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// Poisons the run if a block's task unwinds.
struct PoisonOnPanic<'a>(&'a AtomicBool);

impl Drop for PoisonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Runs `body(block, scratch, prefix)` once per block, on as many tasks as the
/// pool has threads; `prefix(aggregate)` returns the block's exclusive prefix.
/// Block ids come from an atomic counter in the order tasks claim them, so a
/// block only ever waits for blocks claimed earlier by running tasks: no
/// deadlock, whatever order rayon starts the tasks in (seed 001 mod. 10.4).
/// `body` must not call into rayon before it has its prefix (nor may the keep
/// closure it calls): a thread waiting in a join could steal another task of
/// this run whose block then waits for the very block still on its stack.
fn single_pass<P: Protocol, S: ScanElement, W: Default>(
    _protocol: P,
    t: &SinglePassTuning,
    blocks: usize,
    body: impl Fn(usize, &mut W, &dyn Fn(S) -> S) + Sync,
) {
    let tiles = Tiles::new(blocks, t.spins_before_yield);
    let next = AtomicUsize::new(0);
    let tasks = rayon::current_num_threads().min(blocks);
    (0..tasks).into_par_iter().for_each(|_| {
        let _poison = PoisonOnPanic(&tiles.poisoned);
        let mut scratch = W::default();
        loop {
            // Relaxed: the counter only hands out distinct ids; the data between
            // blocks travels through the tiles' Release/Acquire pairs.
            let b = next.fetch_add(1, Ordering::Relaxed);
            if b >= blocks {
                break;
            }
            body(b, &mut scratch, &|aggregate| P::exclusive_prefix(&tiles, b, aggregate));
        }
    });
}

fn block_size(t: &SinglePassTuning) -> usize {
    t.block.max(1)
}

/// Flags of one block, kept by a task from block to block.
type BlockFlags = Vec<bool>;

/// Counts block `b`'s kept elements into `flags`; returns the block's range and count.
fn count_block(
    b: usize,
    bs: usize,
    n: usize,
    keep: &impl KeepIndex,
    flags: &mut BlockFlags,
) -> (std::ops::Range<usize>, u64) {
    let range = b * bs..((b + 1) * bs).min(n);
    flags.clear();
    flags.extend(range.clone().map(keep));
    let kept = flags.iter().filter(|&&k| k).count();
    (range, kept as u64)
}

/// Stable select in one pass; or with `split`, partition: kept elements
/// first, rejected after, in input order or (`Rejected::Reversed`) reversed.
///
/// Rejected element i belongs at kept_total + rejected_before(i), but
/// kept_total is known only when the last block has its prefix. The pass
/// therefore writes it to the mirrored slot n - 1 - rejected_before(i), which
/// lies in the same tail [kept_total, n) but counts from the known end: the
/// reversed contract as it stands; for the in-order one, a parallel in-place
/// reversal of that tail ("reverse") restores input order.
pub fn compact<P: Protocol, T: Copy + Send + Sync>(
    protocol: P,
    t: &SinglePassTuning,
    job: Job<'_, T, impl KeepIndex>,
    rejected: Rejected,
    ph: &mut Phases,
) -> usize {
    let Job { input, keep, output, split } = job;
    let n = input.len();
    let bs = block_size(t);
    let kept_total = AtomicUsize::new(0);
    let out = Scatter::new(output);
    ph.time("single-pass", || {
        single_pass::<P, u64, BlockFlags>(protocol, t, n.div_ceil(bs), |b, flags, prefix| {
            let (range, kept) = count_block(b, bs, n, keep, flags);
            let mut j = prefix(kept) as usize;
            for (i, &k) in range.zip(flags.iter()) {
                // SAFETY: kept slots kept_before(i) (the block's exclusive prefix
                // plus its local rank) fill [0, kept_total); rejected slots
                // n - 1 - (i - kept_before(i)) fill [kept_total, n); each element
                // has its own slot.
                if k {
                    unsafe { out.write(j, input[i]) };
                    j += 1;
                } else if split {
                    unsafe { out.write(n - 1 - (i - j), input[i]) };
                }
            }
            // The last block ends at the total.
            if b == n.div_ceil(bs) - 1 {
                kept_total.store(j, Ordering::Relaxed);
            }
        })
    });
    let kept = kept_total.into_inner();
    if split && rejected == Rejected::InOrder {
        ph.time("reverse", || {
            let tail = &mut output[kept..];
            let half = tail.len() / 2;
            let (front, back) = tail.split_at_mut(half);
            // With an odd length the middle element is back[0] and stays put.
            front.par_iter_mut().zip(back.par_iter_mut().rev()).for_each(|(a, b)| std::mem::swap(a, b));
        });
    }
    kept
}

/// Exclusive scan in one pass; returns the total (wrapping, as `S::add`).
pub fn scan<P: Protocol, S: ScanElement>(
    protocol: P,
    t: &SinglePassTuning,
    input: &[S],
    output: &mut [S],
    ph: &mut Phases,
) -> S {
    let n = input.len();
    let bs = block_size(t);
    let total = AtomicU64::new(0);
    let out = Scatter::new(output);
    ph.time("single-pass", || {
        // Reduce the block, learn its prefix, then scan it from there: reading
        // the (cached) block twice beats writing the output twice.
        single_pass::<P, S, ()>(protocol, t, n.div_ceil(bs), |b, _, prefix| {
            let range = b * bs..((b + 1) * bs).min(n);
            let aggregate = input[range.clone()].iter().fold(S::ZERO, |s, &x| s.add(x));
            let mut sum = prefix(aggregate);
            for i in range {
                // SAFETY: block b alone writes its own range of the output.
                unsafe { out.write(i, sum) };
                sum = sum.add(input[i]);
            }
            if b == n.div_ceil(bs) - 1 {
                total.store(sum.to_u64(), Ordering::Relaxed);
            }
        })
    });
    S::from_u64(total.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::cpu::chained::Chained;
    use crate::compaction::cpu::lookback::Decoupled;
    use crate::compaction::cpu::{sequential, testing};

    #[test]
    fn select_and_partition_match_sequential() {
        check_select_partition(Chained, 0x0c4a_10ed);
        check_select_partition(Decoupled, 0x100c_bac0);
    }

    #[test]
    fn scan_matches_sequential() {
        check_scan(Chained, 0x05ca_0002);
        check_scan(Decoupled, 0x05ca_0001);
    }

    fn sizes(rng: &mut fastrand::Rng) -> Vec<usize> {
        testing::sizes(rng, 3, 200_000)
    }

    fn tunings() -> Vec<SinglePassTuning> {
        [1, 3, 32, 1000, SinglePassTuning::default().block]
            .into_iter()
            .map(|block| SinglePassTuning { block, spins_before_yield: 4 })
            .collect()
    }

    /// Protocol `c` under each tuning with blocks of at least `min_block`.
    fn variants<'a>(
        c: impl Protocol + 'a,
        tunings: &'a [SinglePassTuning],
        min_block: usize,
    ) -> Vec<testing::Variant<'a>> {
        let tunings = tunings.iter().filter(|t| t.block >= min_block);
        tunings
            .map(|t| {
                let name = format!("{c:?} block={}", t.block);
                testing::variant(name, move |x, k, o, split, ph| {
                    compact(c, t, Job { input: x, keep: &|i| k[i], output: o, split }, Rejected::InOrder, ph)
                })
            })
            .collect()
    }

    /// The single-pass test body, run for both protocols.
    fn check_select_partition(c: impl Protocol, seed: u64) {
        let tunings = tunings();
        // Big inputs with one-element blocks are slow and add nothing.
        let (small, big): (Vec<usize>, Vec<usize>) =
            sizes(&mut fastrand::Rng::with_seed(seed)).into_iter().partition(|&n| n <= 5000);
        testing::check_select_partition(seed, &small, &variants(c, &tunings, 0));
        testing::check_select_partition(seed, &big, &variants(c, &tunings, 32));
    }

    fn check_scan(c: impl Protocol, seed: u64) {
        let mut rng = fastrand::Rng::with_seed(seed);
        for n in sizes(&mut rng) {
            // u32 values near the top so the sums wrap.
            let a: Vec<u32> = (0..n).map(|_| rng.u32(..)).collect();
            let b: Vec<u64> = (0..n).map(|_| rng.u64(..)).collect();
            let small: Vec<u32> = (0..n).map(|_| rng.u32(0..4)).collect();
            for t in tunings() {
                if t.block < 32 && n > 5000 {
                    continue;
                }
                for input in [&a, &small] {
                    let mut want = vec![0; n];
                    let want_t = sequential::scan(input, &mut want, &mut Phases::default());
                    let mut got = vec![u32::MAX; n];
                    let tot = scan(c, &t, input, &mut got, &mut Phases::default());
                    assert_eq!((tot, &got), (want_t, &want), "{c:?} scan u32 n={n} block={}", t.block);
                }
                let mut want = vec![0; n];
                let want_t = sequential::scan(&b, &mut want, &mut Phases::default());
                let mut got = vec![u64::MAX; n];
                let tot = scan(c, &t, &b, &mut got, &mut Phases::default());
                assert_eq!((tot, &got), (want_t, &want), "{c:?} scan u64 n={n} block={}", t.block);
            }
        }
    }

    #[test]
    #[should_panic]
    fn chained_panicking_keep_does_not_hang() {
        check_panic_propagates(Chained);
    }

    #[test]
    #[should_panic]
    fn lookback_panicking_keep_does_not_hang() {
        check_panic_propagates(Decoupled);
    }

    /// A keep closure that panics must surface as a panic, not hang the
    /// successors that wait for the panicking block's prefix.
    fn check_panic_propagates(c: impl Protocol) {
        let input = vec![0u32; 100_000];
        let mut output = vec![0; input.len()];
        let t = SinglePassTuning { block: 16, spins_before_yield: 4 };
        let keep = |i| if i == 50_000 { panic!("keep failed") } else { true };
        compact(
            c,
            &t,
            Job { input: &input, keep: &keep, output: &mut output, split: false },
            Rejected::InOrder,
            &mut Phases::default(),
        );
    }
}
