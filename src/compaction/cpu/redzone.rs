//! `redzone-block` and `redzone-grid`: Bontes & Gain's Redzone stream compaction
//! (seed 004), the only catalog algorithm whose work is O(k), not O(n). It
//! removes the k elements named by a removal-index list in place and unstably:
//! the last k slots, the *red zone* Z = data[z..n] with z = n - k (§2), supply
//! the survivors that fill the *holes* (removal indices below z). The n - k
//! elements of data[..z] are never scanned.
//!
//! Phases, timed under these names (seed 004 §4, Alg. 1 and Alg. 2):
//! - `mark red zone`, phase 1 (Alg. 1 lines 3-4): every removal index r >= z
//!   marks Z[r - z] as an invalid source. The paper marks the element itself in
//!   spare state bits; a generic `T` has none, so the marks go to a k-bit bitmap.
//! - `fill holes`, phase 2 (Alg. 1 lines 5-15, Alg. 2 lines 5-15): Z[i] is paired
//!   with R[i] and Table 1's four cases apply: A moves Z[i] into the hole R[i],
//!   B discards both, C keeps the destination orphan R[i] in R', D keeps the
//!   source orphan Z[i] in Z'.
//! - `process orphans`, phase 3 (Alg. 1 lines 16-17, Alg. 2 lines 16-22 with the
//!   load balancer of Alg. 3): |Z'| = |R'| (Lemma 4.2), so the orphans pair up.
//!
//! Orphan lists (§4, §4.3): Z' lives in place at the front of the red zone, as in
//! the paper, because each slot is read before any orphan is stored over it
//! (j <= i). R' cannot live in place: `removal` is borrowed immutably, so it goes
//! to an O(k) scratch list (the "2(1/2)k fast memory" option of §6).
//!
//! How the paper's processors map onto rayon:
//! - `redzone-block` (Alg. 1) is one block that walks R and Z in steps of
//!   `block_lanes * lane_items` items. Its lanes (the block's threads) are rayon
//!   tasks; in each step they classify their items, a block-wide exclusive scan of
//!   their orphan counts (PrefixSumToIndex, lines 9 and 12) extends the running
//!   j and k, and after that barrier they store their orphans. Phase 3 pairs the
//!   two contiguous orphan lists index by index.
//! - `redzone-grid` (Alg. 2) has |P| blocks, one rayon task each, that own disjoint
//!   batches of s = ceil(k / |P|) items and run phase 2 with no communication,
//!   keeping orphans at the front of their own batch. Phase 3 scans the per-block
//!   counts into J and K, and Alg. 3 maps each global orphan number t to its slot
//!   in the batched lists. As in the paper's CPU version (end of §4.1), each task
//!   runs the load balancer once for the first orphan of its range and then walks.
//!
//! A removal list with a duplicate is the caller's error (`Backend::remove`
//! checks; `remove_unchecked` does not). An index >= n panics in phase 1; a
//! duplicate in the red zone only unbalances the orphan lists, and phase 3 pairs
//! as many as both hold. A duplicate *hole* is written by two tasks at once, a
//! data race: ruling it out needs a set over the holes (an O(k) hash or an O(n)
//! bitmap), which would cost more than the algorithm itself, so callers of
//! `remove_unchecked` must not pass one.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use smart_default::SmartDefault;

use crate::compaction::Algorithm;
use crate::compaction::cpu::{Phases, Scatter};

/// Redzone's tuning. The defaults suit a multi-core CPU.
#[derive(Clone, Debug, SmartDefault)]
pub struct RedzoneTuning {
    /// Lanes of Alg. 1's single block, its "threads"; 0 means one per rayon thread.
    #[default(0)]
    pub block_lanes: usize,
    /// Items a lane of Alg. 1 takes per step: the block advances
    /// `block_lanes * lane_items` items between two barriers.
    #[default(4096)]
    pub lane_items: usize,
    /// Alg. 2's number of blocks |P|; 0 means `4` per rayon thread, so that
    /// uneven batches (scattered writes into cold lines) still balance.
    #[default(0)]
    pub grid_blocks: usize,
}

/// Removes data[removal[..]] in place; returns the survivors' count (n - k).
/// Survivors end in data[..n-k], in any order (unstable).
pub fn remove<T: Copy + Send + Sync>(
    algorithm: Algorithm,
    t: &RedzoneTuning,
    data: &mut [T],
    removal: &[u64],
    ph: &mut Phases,
) -> usize {
    let (n, k) = (data.len(), removal.len());
    assert!(k <= n, "removal list of {k} indices for {n} elements");
    // Alg. 1 line 1: nothing to move.
    if k == 0 || k == n {
        return n - k;
    }
    let z = n - k; // line 2: the red zone boundary
    match algorithm {
        Algorithm::RedzoneBlock => block(t, data, removal, z, ph),
        Algorithm::RedzoneGrid => grid(t, data, removal, z, ph),
        // cpu/mod.rs sends only the two Redzone variants here.
        other => unreachable!("redzone::remove called for {other}"),
    }
    z
}

/// Phase 1: one bit per red-zone slot, set where the slot is itself removed.
/// `chunk` removal indices per task.
fn mark_red_zone(removal: &[u64], z: usize, n: usize, chunk: usize) -> Vec<u64> {
    let k = n - z;
    let marks: Vec<AtomicU64> = (0..k.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
    removal.par_chunks(chunk.max(1)).for_each(|rs| {
        for &r in rs {
            // Checking here makes every later `r as usize` exact and in range.
            assert!(r < n as u64, "removal index {r} out of range for {n} elements");
            if r >= z as u64 {
                let i = (r - z as u64) as usize;
                // Relaxed: the end of the phase (rayon's join) publishes the bits.
                marks[i / 64].fetch_or(1 << (i % 64), Ordering::Relaxed);
            }
        }
    });
    marks.into_iter().map(AtomicU64::into_inner).collect()
}

#[inline]
fn is_deleted(marks: &[u64], i: usize) -> bool {
    (marks[i / 64] >> (i % 64)) & 1 != 0
}

/// The orphans one lane of Alg. 1's block found in the current step (the GPU
/// keeps them in registers until the block's scan gives their slots).
struct Lane<T> {
    sources: Vec<T>,
    dests: Vec<u64>,
    /// Where this lane's orphans go in Z' and R' (exclusive scan over lanes).
    j: usize,
    k: usize,
}

/// Alg. 1: one block walks the whole list, step by step.
fn block<T: Copy + Send + Sync>(t: &RedzoneTuning, data: &mut [T], removal: &[u64], z: usize, ph: &mut Phases) {
    let (n, k) = (data.len(), removal.len());
    let lanes = if t.block_lanes == 0 { rayon::current_num_threads() } else { t.block_lanes };
    let lane_items = t.lane_items.max(1);
    let step = lanes * lane_items;

    let marks = ph.time("mark red zone", || mark_red_zone(removal, z, n, lane_items));
    let (front, zone) = data.split_at_mut(z);

    let (pairs, r_orphans) = ph.time("fill holes", || {
        let mut r_orphans = vec![0u64; k];
        let mut lane_state: Vec<Lane<T>> =
            (0..lanes).map(|_| Lane { sources: Vec::new(), dests: Vec::new(), j: 0, k: 0 }).collect();
        let (mut j, mut kk) = (0usize, 0usize); // the block's running orphan counts
        let holes = Scatter::new(front);
        for b0 in (0..k).step_by(step) {
            let b1 = (b0 + step).min(k);
            let src = &zone[b0..b1];
            lane_state.par_iter_mut().enumerate().for_each(|(l, lane)| {
                lane.sources.clear();
                lane.dests.clear();
                let lo = (l * lane_items).min(src.len());
                let hi = (lo + lane_items).min(src.len());
                for (i, &a) in (b0 + lo..).zip(&src[lo..hi]) {
                    let r = removal[i] as usize;
                    match (r >= z, is_deleted(&marks, i)) {
                        (true, true) => {}                          // case B: discard both
                        (true, false) => lane.sources.push(a),      // case D: source orphan
                        (false, true) => lane.dests.push(r as u64), // case C: destination orphan
                        // SAFETY: case A writes hole r < z, a slot of `front` only this
                        // item names: the removal indices are distinct.
                        (false, false) => unsafe { holes.write(r, a) },
                    }
                }
            });
            // Barrier, then PrefixSumToIndex over the block (Alg. 1 lines 9, 12).
            for lane in &mut lane_state {
                (lane.j, lane.k) = (j, kk);
                j += lane.sources.len();
                kk += lane.dests.len();
            }
            // Z' grows in place over red-zone slots < b1: all read in this or an
            // earlier step (j <= i) and never read again in phase 2.
            let z_out = Scatter::new(&mut zone[..b1]);
            let r_out = Scatter::new(&mut r_orphans[..]);
            lane_state.par_iter().for_each(|lane| {
                for (o, &a) in lane.sources.iter().enumerate() {
                    // SAFETY: the scan gives each lane its own range of Z' slots.
                    unsafe { z_out.write(lane.j + o, a) }
                }
                for (o, &r) in lane.dests.iter().enumerate() {
                    // SAFETY: likewise for R'.
                    unsafe { r_out.write(lane.k + o, r) }
                }
            });
        }
        // Lemma 4.2: j == kk for a valid list; a duplicate in the red zone breaks it.
        (j.min(kk), r_orphans)
    });

    ph.time("process orphans", || {
        let holes = Scatter::new(front);
        zone[..pairs].par_iter().zip(&r_orphans[..pairs]).with_min_len(lane_items).for_each(|(&a, &r)| {
            // SAFETY: R' holds distinct holes, none filled in phase 2 (Table 1, case C).
            unsafe { holes.write(r as usize, a) }
        });
    });
}

/// Alg. 2: |P| independent blocks, then load-balanced orphan pairing.
fn grid<T: Copy + Send + Sync>(t: &RedzoneTuning, data: &mut [T], removal: &[u64], z: usize, ph: &mut Phases) {
    let (n, k) = (data.len(), removal.len());
    let blocks = if t.grid_blocks == 0 { 4 * rayon::current_num_threads() } else { t.grid_blocks };
    let s = k.div_ceil(blocks.max(1)); // Alg. 2 line 0: the batch size

    // Phase 1 is unchanged; each block marks from its own batch of R.
    let marks = ph.time("mark red zone", || mark_red_zone(removal, z, n, s));
    let (front, zone) = data.split_at_mut(z);

    let (counts, r_orphans) = ph.time("fill holes", || {
        let mut r_orphans = vec![0u64; k];
        let holes = Scatter::new(&mut *front);
        let counts: Vec<(usize, usize)> = zone
            .par_chunks_mut(s)
            .zip(removal.par_chunks(s))
            .zip(r_orphans.par_chunks_mut(s))
            .enumerate()
            .map(|(p, ((zs, rs), r_out))| {
                let start = p * s;
                let (mut j, mut kk) = (0, 0); // j_p, k_p
                for i in 0..zs.len() {
                    let (a, r) = (zs[i], rs[i] as usize);
                    match (r >= z, is_deleted(&marks, start + i)) {
                        (true, true) => {}
                        (true, false) => {
                            // In place: slot j <= i of this block's batch was already read.
                            zs[j] = a;
                            j += 1;
                        }
                        (false, true) => {
                            r_out[kk] = r as u64;
                            kk += 1;
                        }
                        // SAFETY: case A writes hole r < z, named by this item only
                        // (distinct removal indices), so no other block writes it.
                        (false, false) => unsafe { holes.write(r, a) },
                    }
                }
                (j, kk)
            })
            .collect();
        (counts, r_orphans)
    });

    ph.time("process orphans", || {
        // Line 17: J and K, exclusive, with the totals at the end. The paper has
        // every block build them redundantly; here one task does it once.
        let nb = counts.len();
        let (mut jx, mut kx) = (vec![0; nb + 1], vec![0; nb + 1]);
        for (p, &(j, kk)) in counts.iter().enumerate() {
            jx[p + 1] = jx[p] + j;
            kx[p + 1] = kx[p] + kk;
        }
        // Lemma 4.2: equal totals for a valid list; a red-zone duplicate breaks it.
        let pairs = jx[nb].min(kx[nb]);
        let runs = pairs.div_ceil(nb); // C, orphans per task
        let zone: &[T] = zone;
        let holes = Scatter::new(front);
        (0..nb).into_par_iter().for_each(|task| {
            let (t0, t1) = ((task * runs).min(pairs), ((task + 1) * runs).min(pairs));
            if t0 == t1 {
                return;
            }
            // Alg. 3 once per task, then walk (the paper's CPU version, §4.1).
            let mut y = OrphanCursor::new(&jx, t0, s); // source address
            let mut x = OrphanCursor::new(&kx, t0, s); // destination address
            for _ in t0..t1 {
                // SAFETY: orphan numbers t are split among tasks, and Alg. 3 maps
                // each to its own R' entry: distinct holes, none filled in phase 2.
                unsafe { holes.write(r_orphans[x.slot()] as usize, zone[y.slot()]) };
                y.advance();
                x.advance();
            }
        });
    });
}

/// Alg. 3: the block p holding global orphan number t, and t's index inside it.
/// `prefix` is the exclusive scan of per-block orphan counts with the total last;
/// `s` is the batch size, which bounds every block's count.
fn load_balance(prefix: &[usize], t: usize, s: usize) -> (usize, usize) {
    // Line 1: no block holds more than s orphans, so prefix[q] <= q * s and
    // t's block is at least t / s.
    let start = t / s;
    assert!(start + 1 < prefix.len(), "orphan {t} out of bounds");
    // Lines 3-6: the last block from `start` whose prefix is <= t (ReduceMin and
    // the for-ever loop, done by bisection).
    let block = start + prefix[start + 1..].partition_point(|&q| q <= t);
    (block, t - prefix[block])
}

/// A position in a batched orphan list (Z' or R'): found once by Alg. 3, then
/// advanced one orphan at a time across empty blocks.
struct OrphanCursor<'a> {
    prefix: &'a [usize],
    s: usize,
    block: usize,
    sub: usize,
}

impl<'a> OrphanCursor<'a> {
    fn new(prefix: &'a [usize], t: usize, s: usize) -> Self {
        let (block, sub) = load_balance(prefix, t, s);
        OrphanCursor { prefix, s, block, sub }
    }

    /// Line 8 of Alg. 3: the orphan's slot, `Index * b + SubIndex`.
    #[inline]
    fn slot(&self) -> usize {
        self.block * self.s + self.sub
    }

    #[inline]
    fn advance(&mut self) {
        self.sub += 1;
        let blocks = self.prefix.len() - 1;
        while self.block < blocks && self.sub >= self.prefix[self.block + 1] - self.prefix[self.block] {
            self.block += 1;
            self.sub = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: [Algorithm; 2] = [Algorithm::RedzoneBlock, Algorithm::RedzoneGrid];

    #[derive(Clone, Copy, Debug)]
    enum Place {
        Random,
        AllInRedZone,
        NoneInRedZone,
    }

    #[derive(Clone, Copy, Debug)]
    enum Order {
        Ascending,
        Descending,
        Shuffled,
    }

    /// k distinct indices below n, placed and ordered as asked.
    fn removal_list(rng: &mut fastrand::Rng, n: usize, k: usize, place: Place, order: Order) -> Vec<u64> {
        let z = n - k;
        let mut pick = |range: std::ops::Range<usize>, m: usize| -> Vec<u64> {
            let mut all: Vec<u64> = range.map(|i| i as u64).collect();
            // Partial Fisher-Yates: the first m are a uniform sample.
            for i in 0..m {
                let j = rng.usize(i..all.len());
                all.swap(i, j);
            }
            all.truncate(m);
            all
        };
        let mut r = match place {
            Place::Random => pick(0..n, k),
            Place::AllInRedZone => pick(z..n, k),
            // With k > n / 2 there are fewer than k slots outside: take them all.
            Place::NoneInRedZone if k <= z => pick(0..z, k),
            Place::NoneInRedZone => {
                let mut r = pick(0..z, z);
                r.extend(pick(z..n, k - z));
                r
            }
        };
        match order {
            Order::Ascending => r.sort_unstable(),
            Order::Descending => r.sort_unstable_by(|a, b| b.cmp(a)),
            Order::Shuffled => rng.shuffle(&mut r),
        }
        r
    }

    fn check<T: Copy + Send + Sync + Ord + std::fmt::Debug>(
        algorithm: Algorithm,
        t: &RedzoneTuning,
        data: &[T],
        removal: &[u64],
    ) {
        let mut removed = vec![false; data.len()];
        for &r in removal {
            removed[r as usize] = true;
        }
        let mut expected: Vec<T> = data.iter().zip(&removed).filter(|(_, d)| !**d).map(|(&e, _)| e).collect();
        expected.sort_unstable();

        let mut out = data.to_vec();
        let mut ph = Phases::default();
        let count = remove(algorithm, t, &mut out, removal, &mut ph);
        assert_eq!(count, data.len() - removal.len(), "{algorithm} count, n = {}", data.len());
        let mut got = out[..count].to_vec();
        got.sort_unstable();
        assert!(got == expected, "{algorithm}: wrong survivors, n = {}, k = {}", data.len(), removal.len());
    }

    /// Distinct values (an odd multiplier is a bijection), unrelated to the index order.
    fn distinct(n: usize) -> Vec<u64> {
        (0..n as u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5555).collect()
    }

    fn sweep(t: &RedzoneTuning, sizes: &[usize], seed: u64) {
        let mut rng = fastrand::Rng::with_seed(seed);
        for &n in sizes {
            let data = distinct(n);
            for ratio in [0.0, 0.02, 0.1, 0.5, 0.9, 1.0] {
                let k = ((n as f64) * ratio).round() as usize;
                for place in [Place::Random, Place::AllInRedZone, Place::NoneInRedZone] {
                    for order in [Order::Ascending, Order::Descending, Order::Shuffled] {
                        let removal = removal_list(&mut rng, n, k, place, order);
                        for algorithm in BOTH {
                            check(algorithm, t, &data, &removal);
                        }
                    }
                }
            }
        }
    }

    const EDGE_SIZES: [usize; 12] = [0, 1, 2, 31, 32, 33, 63, 64, 65, 1023, 1024, 1025];

    #[test]
    fn edge_sizes_match_reference() {
        sweep(&RedzoneTuning::default(), &EDGE_SIZES, 1);
    }

    #[test]
    fn random_sizes_match_reference() {
        let mut rng = fastrand::Rng::with_seed(2);
        let sizes: Vec<usize> = (0..3).map(|_| rng.usize(1..=300_000)).collect();
        sweep(&RedzoneTuning::default(), &sizes, 3);
    }

    #[test]
    fn tiny_blocks_match_reference() {
        // Many steps of Alg. 1, many (and partly empty) blocks of Alg. 2.
        for t in [
            RedzoneTuning { block_lanes: 3, lane_items: 1, grid_blocks: 7 },
            RedzoneTuning { block_lanes: 1, lane_items: 2, grid_blocks: 1 },
            RedzoneTuning { block_lanes: 5, lane_items: 3, grid_blocks: 1000 },
        ] {
            sweep(&t, &EDGE_SIZES, 4);
            sweep(&t, &[4099], 5);
        }
    }

    #[test]
    fn u32_elements_match_reference() {
        let mut rng = fastrand::Rng::with_seed(6);
        let n = 50_000;
        let data: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
        let removal = removal_list(&mut rng, n, n / 10, Place::Random, Order::Shuffled);
        for algorithm in BOTH {
            check(algorithm, &RedzoneTuning::default(), &data, &removal);
        }
    }

    #[test]
    fn phases_are_named_after_the_paper() {
        for algorithm in BOTH {
            let mut data = distinct(100);
            let mut ph = Phases::default();
            remove(algorithm, &RedzoneTuning::default(), &mut data, &[3, 97, 50], &mut ph);
            let names: Vec<_> = ph.0.iter().map(|p| p.name).collect();
            assert_eq!(names, ["mark red zone", "fill holes", "process orphans"], "{algorithm}");
        }
    }

    #[test]
    fn load_balancer_finds_every_orphan() {
        // Batches of s = 4; per-block counts 0, 3, 0, 4, 1.
        let prefix = [0, 0, 3, 3, 7, 8];
        let slots: Vec<usize> = (0..8)
            .map(|t| {
                let (b, sub) = load_balance(&prefix, t, 4);
                b * 4 + sub
            })
            .collect();
        assert_eq!(slots, [4, 5, 6, 12, 13, 14, 15, 16]);
        let mut c = OrphanCursor::new(&prefix, 0, 4);
        let walked: Vec<usize> = (0..8)
            .map(|_| {
                let s = c.slot();
                c.advance();
                s
            })
            .collect();
        assert_eq!(walked, slots);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn out_of_range_index_panics() {
        let mut data = distinct(10);
        remove(Algorithm::RedzoneGrid, &RedzoneTuning::default(), &mut data, &[2, 10], &mut Phases::default());
    }

    #[test]
    fn duplicate_in_red_zone_is_harmless() {
        // Not a valid list; the output is unspecified but the run must be sound.
        for algorithm in BOTH {
            let mut data = distinct(10);
            let count = remove(algorithm, &RedzoneTuning::default(), &mut data, &[9, 9, 1, 8], &mut Phases::default());
            assert_eq!(count, 6);
        }
    }
}
