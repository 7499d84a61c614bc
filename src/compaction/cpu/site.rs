//! The CPU twin of fused compaction sites (kernels/compaction/site.cuh,
//! `CudaSite`): a workload's producer makes 0..K candidates per input item
//! and the site compacts them as it goes, so a workload keeps one code path
//! on both backends.
//!
//! The input is cut into tiles in input order, as site.cuh's blocks are:
//! - `lookback`, `chained` (stable): each tile stages its kept items and
//!   counts them; the tile counts' exclusive scan, run by the site's own
//!   algorithm, gives each tile its prefix; each tile writes at its prefix. The
//!   output is exactly the sequential order.
//! - `atomic` (unstable): each tile reserves its range with one `fetch_add` in
//!   whatever order rayon runs it, and writes there at once.
//! - the separate path (every other algorithm, or `fuse` false): the producer
//!   writes every one of its K slots per item, dead ones as the sentinel, and
//!   the backend's select compacts them after it.
//!
//! Nothing at or past the output's length (its capacity) is written; the
//! count is every kept item's, so a caller sees how much room it needed.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use smart_default::SmartDefault;

use crate::compaction::cpu::{CpuBackend, CpuReport, Phases, Scatter, cut};
use crate::compaction::{
    Algorithm, Backend, Element, Error, Keep, Lens, Operation, Report, Result, SitePath, check_element,
};
use crate::memory::{self, Limit};

/// Candidates per input item at most: site.cuh keeps one bit per candidate in
/// a u32, and a producer that fits here must fit there too.
pub const MAX_PER_ITEM: usize = 32;

/// Tuning of a CPU site.
#[derive(Clone, Debug, SmartDefault)]
pub struct SiteTuning {
    /// Input items per tile (site.cuh's BLOCK; produce.cu's 256).
    #[default(256)]
    pub tile: usize,
}

/// What a producer makes per input item: at most `per_item` candidates
/// (site.cuh's K). On the separate path each item owns `per_item` slots and
/// the ones it leaves hold `dead`, so a candidate equal to `dead` is dropped
/// there: never emit it.
#[derive(Clone, Copy, Debug)]
pub struct Candidates<T> {
    pub per_item: usize,
    pub dead: T,
}

/// Where a producer puts one input item's candidates (site.cuh's `items[K]`
/// and keep bits): [`Emit::push`] keeps one, in order.
pub struct Emit<'a, T> {
    slots: &'a mut [T],
    len: usize,
    overflow: bool,
}

impl<T> Emit<'_, T> {
    /// Keeps `item`. Past the site's `per_item`, the run fails with an error
    /// naming the input item.
    #[inline]
    pub fn push(&mut self, item: T) {
        match self.slots.get_mut(self.len) {
            Some(slot) => {
                *slot = item;
                self.len += 1;
            }
            None => self.overflow = true,
        }
    }
}

/// One compaction site of a workload on the CPU backend.
#[derive(Clone, Debug)]
pub struct CpuSite {
    algorithm: Algorithm,
    fused: bool,
    pub tuning: SiteTuning,
}

impl CpuSite {
    /// A site that runs `algorithm`; `fuse` false runs even a single-pass
    /// algorithm as a separate pass (to measure what fusion is worth).
    pub fn new(b: &CpuBackend, algorithm: Algorithm, fuse: bool) -> Result<Self> {
        if !algorithm.supports(Operation::Select) || !b.runs(algorithm) {
            return Err(Error::Unsupported {
                algorithm: algorithm.name(),
                operation: "a compaction site on the CPU backend",
                hint: String::new(),
            });
        }
        Ok(CpuSite { algorithm, fused: fuse && algorithm.fuses(), tuning: SiteTuning::default() })
    }

    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// Which path the site takes.
    pub fn path(&self) -> SitePath {
        if self.fused { SitePath::Fused } else { SitePath::Separate }
    }

    /// Runs `producer` on input items `0..n` and compacts what it emits into
    /// `output`, whose length is the capacity: the kept items go to
    /// `output[..min(count, capacity)]` (stable algorithms: in input order;
    /// `atomic`: in any order), nothing after that is written, and the
    /// report's count is the full kept total. The producer may be called on
    /// several threads at once, once per item.
    pub fn produce<T: Element, P: Fn(u64, &mut Emit<'_, T>) + Sync>(
        &self,
        b: &CpuBackend,
        n: u64,
        candidates: Candidates<T>,
        producer: &P,
        output: &mut [T],
    ) -> Result<CpuReport> {
        check_element::<T>()?;
        let k = candidates.per_item;
        if k > MAX_PER_ITEM {
            return Err(Error::Backend(format!(
                "a site's producer emits at most {MAX_PER_ITEM} candidates per item (site.cuh keeps one bit each), \
                 not {k}; split the item"
            )));
        }
        let tile = self.tuning.tile;
        if tile == 0 {
            return Err(Error::Tuning {
                algorithm: self.algorithm.name(),
                why: "a site's tile must hold at least one item".into(),
            });
        }
        let tiles = n.div_ceil(tile as u64);
        // As on the GPU (`CudaSite::grid`), a site's tile ids count in 32 bits.
        if tiles > u32::MAX as u64 {
            return Err(Error::Backend(format!(
                "{tiles} tiles of {tile} items overflow a site's 32-bit tile ids; produce fewer items per run"
            )));
        }
        let run = Run { n, tile: tile as u64, tiles: tiles as usize, k, producer, over: Overflow::new() };
        let mut ph = Phases::default();
        let count = match (self.fused, self.algorithm) {
            (true, Algorithm::Atomic) => run.atomic(output, &mut ph),
            (true, _) => run.stable(b, self.algorithm, output, &mut ph)?,
            (false, _) => run.separate(b, self.algorithm, candidates.dead, output, &mut ph)?,
        };
        run.over.check(k)?;
        Ok(CpuReport { count, phases: ph.0, count_word: None })
    }

    /// [`CpuSite::produce`] with the length on the backend's side, as the
    /// GPU producers take it: n is `words[lens.input]`, the kept total goes to
    /// `words[lens.output]` and the report's `count()` points at that word.
    pub fn produce_counted<T: Element, P: Fn(u64, &mut Emit<'_, T>) + Sync>(
        &self,
        b: &CpuBackend,
        lens: Lens<'_, CpuBackend>,
        candidates: Candidates<T>,
        producer: &P,
        output: &mut [T],
    ) -> Result<CpuReport> {
        lens.check(lens.words.len() as u64)?;
        let n = lens.words[lens.input as usize];
        let mut report = self.produce(b, n, candidates, producer, output)?;
        lens.words[lens.output as usize] = report.count;
        report.count_word = Some(lens.output);
        Ok(report)
    }
}

/// The first input item whose producer emitted more than K candidates.
struct Overflow(AtomicU64);

impl Overflow {
    fn new() -> Self {
        Overflow(AtomicU64::new(u64::MAX))
    }
    fn record(&self, item: u64) {
        // Relaxed: read only after the phase's join.
        self.0.fetch_min(item, Ordering::Relaxed);
    }
    fn check(&self, k: usize) -> Result<()> {
        match self.0.load(Ordering::Relaxed) {
            u64::MAX => Ok(()),
            item => Err(Error::Backend(format!(
                "a site's producer emitted more than {k} candidates for input item {item}, and the output is \
                 unspecified; give the site's `Candidates::per_item` room for every candidate"
            ))),
        }
    }
}

/// One use of a site: the producer over n items in tiles.
struct Run<'a, P> {
    n: u64,
    tile: u64,
    tiles: usize,
    k: usize,
    producer: &'a P,
    over: Overflow,
}

impl<P> Run<'_, P> {
    /// Tile t's input items.
    fn items(&self, t: usize) -> std::ops::Range<u64> {
        let first = t as u64 * self.tile;
        first..(first + self.tile).min(self.n)
    }

    fn tile_len(&self, t: usize) -> usize {
        let items = self.items(t);
        (items.end - items.start) as usize
    }

    /// Calls the producer on item i with `slots` (K of them) as its room;
    /// returns how many it filled.
    #[inline]
    fn emit<T>(&self, i: u64, slots: &mut [T]) -> usize
    where
        P: Fn(u64, &mut Emit<'_, T>),
    {
        let mut e = Emit { slots, len: 0, overflow: false };
        (self.producer)(i, &mut e);
        if e.overflow {
            self.over.record(i);
        }
        e.len
    }

    /// Tile t's kept items, in input order, appended to `stage` (site.cuh
    /// stages them in shared memory).
    fn stage<T: Element>(&self, t: usize, stage: &mut Vec<T>)
    where
        P: Fn(u64, &mut Emit<'_, T>),
    {
        let mut room = [T::zeroed(); MAX_PER_ITEM];
        let room = &mut room[..self.k];
        for i in self.items(t) {
            let c = self.emit(i, room);
            stage.extend_from_slice(&room[..c]);
        }
    }

    /// `lookback`, `chained`: stage and count every tile, scan the counts with
    /// the site's algorithm, write each tile at its prefix. The prefixes come
    /// from a phase of their own, not from inside the producing task as in
    /// single_pass.rs: a task there waits for its predecessors and must not
    /// call into rayon meanwhile, and a workload's producer may.
    fn stable<T: Element>(&self, b: &CpuBackend, algorithm: Algorithm, output: &mut [T], ph: &mut Phases) -> Result<u64>
    where
        P: Fn(u64, &mut Emit<'_, T>) + Sync,
    {
        let per_tile = memory::times(self.tiles as u64, std::mem::size_of::<Vec<T>>() as u64 + 16);
        memory::check("a site's tile staging", per_tile, Limit::host(), "produce fewer items per run")?;
        let staged: Vec<Vec<T>> = ph.time("produce", || {
            (0..self.tiles)
                .into_par_iter()
                .map(|t| {
                    let mut s = Vec::new();
                    self.stage(t, &mut s);
                    s
                })
                .collect()
        });
        let counts: Vec<u64> = staged.iter().map(|s| s.len() as u64).collect();
        let mut prefixes = vec![0; counts.len()];
        let total = ph.time("prefix", || b.exclusive_scan(algorithm, &counts, &mut prefixes))?.count()?;
        let out = Scatter::new(output);
        ph.time("write", || {
            staged.par_iter().zip(&prefixes).for_each(|(items, &at)| {
                // SAFETY: the prefixes are an exclusive scan of the tiles' counts,
                // so tile ranges [at, at + count) are disjoint.
                unsafe { write_below(&out, at, items) }
            })
        });
        Ok(total)
    }

    /// `atomic`: each tile reserves its range as soon as it has produced.
    fn atomic<T: Element>(&self, output: &mut [T], ph: &mut Phases) -> u64
    where
        P: Fn(u64, &mut Emit<'_, T>) + Sync,
    {
        let tally = AtomicU64::new(0);
        let out = Scatter::new(output);
        ph.time("produce", || {
            (0..self.tiles).into_par_iter().for_each_init(Vec::new, |stage, t| {
                stage.clear();
                self.stage(t, stage);
                if stage.is_empty() {
                    return;
                }
                // Relaxed: the add only hands out disjoint ranges; the writes
                // reach the caller through rayon's join at the phase end.
                let at = tally.fetch_add(stage.len() as u64, Ordering::Relaxed);
                // SAFETY: [at, at + len) was reserved for this tile alone.
                unsafe { write_below(&out, at, stage) }
            })
        });
        tally.into_inner()
    }

    /// The separate path: K slots per item, dead ones as `dead`, then the
    /// backend's select of `algorithm`.
    fn separate<T: Element>(
        &self,
        b: &CpuBackend,
        algorithm: Algorithm,
        dead: T,
        output: &mut [T],
        ph: &mut Phases,
    ) -> Result<u64>
    where
        P: Fn(u64, &mut Emit<'_, T>) + Sync,
    {
        let k = self.k;
        let len = self.n.saturating_mul(k as u64);
        let change = "produce fewer items per run";
        // Filled with `dead` first: the producer writes only what it emits.
        let mut slots = memory::filled_vec(len, dead, "a separate site's slots", change)?;
        ph.time("produce", || {
            let windows = cut(&mut slots, (0..self.tiles).map(|t| self.tile_len(t) * k));
            windows.into_par_iter().enumerate().for_each(|(t, w)| {
                for (j, i) in self.items(t).enumerate() {
                    self.emit(i, &mut w[j * k..(j + 1) * k]);
                }
            })
        });
        // A select needs an output as long as its input; the caller's may be
        // shorter (a short capacity), so it gets the select's first items.
        let mut kept = memory::filled_vec(len, dead, "a separate site's select output", change)?;
        let report = b.select(algorithm, &slots, Keep::Sentinel(dead), &mut kept)?;
        for p in report.phases {
            ph.push(p.name, p.time);
        }
        let total = report.count;
        let written = total.min(output.len() as u64) as usize;
        ph.time("copy", || output[..written].copy_from_slice(&kept[..written]));
        Ok(total)
    }
}

/// Writes `items` from slot `at` on, but nothing at or past the output's end.
///
/// # Safety
/// No other task writes slots `at..at + items.len()` during the phase.
unsafe fn write_below<T: Copy>(out: &Scatter<T>, at: u64, items: &[T]) {
    let room = (out.len as u64).saturating_sub(at).min(items.len() as u64) as usize;
    for (j, &item) in items[..room].iter().enumerate() {
        // SAFETY: below the output's length (room), exclusive by the caller's contract.
        unsafe { out.write(at as usize + j, item) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: usize = 4;
    const DEAD: u64 = u64::MAX;
    const STALE: u64 = u64::MAX - 1;

    /// splitmix64, as produce.cu's `produce_mix`.
    fn mix(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// produce.cu's wide producer: candidate j of item i, worth (i << 5 | j) + 1, kept where bit j of its hash is.
    fn producer(i: u64, e: &mut Emit<'_, u64>) {
        let keep = mix(i) & ((1 << K) - 1);
        for j in (0..K as u64).filter(|j| keep >> j & 1 == 1) {
            e.push(((i << 5) | j) + 1);
        }
    }

    fn reference(n: u64) -> Vec<u64> {
        let mut out = Vec::new();
        for i in 0..n {
            let mut room = [0; K];
            let mut e = Emit { slots: &mut room, len: 0, overflow: false };
            producer(i, &mut e);
            let len = e.len;
            out.extend_from_slice(&room[..len]);
        }
        out
    }

    const CANDIDATES: Candidates<u64> = Candidates { per_item: K, dead: DEAD };

    fn sites(b: &CpuBackend) -> Vec<CpuSite> {
        let fused = Algorithm::ALL.iter().filter(|a| a.fuses()).map(|&a| CpuSite::new(b, a, true).unwrap());
        fused.chain(Algorithm::ALL.iter().map(|&a| CpuSite::new(b, a, false).unwrap())).collect()
    }

    #[test]
    fn only_single_pass_algorithms_fuse_and_only_when_asked() {
        let b = CpuBackend::new();
        for a in Algorithm::ALL {
            let fused = CpuSite::new(&b, a, true).unwrap().path();
            assert_eq!(fused, if a.fuses() { SitePath::Fused } else { SitePath::Separate }, "{a}");
            assert_eq!(CpuSite::new(&b, a, false).unwrap().path(), SitePath::Separate, "{a}");
        }
    }

    #[test]
    fn every_site_matches_the_reference_with_room_and_without() {
        let b = CpuBackend::new();
        for site in sites(&b) {
            for n in [0, 1, 255, 256, 257, 3 * 256 + 17, 20_011] {
                let want = reference(n);
                let total = want.len();
                let name = format!("{} {} n={n}", site.algorithm(), site.path().name());
                for cap in [total + 64, total / 2] {
                    let mut out = vec![STALE; cap];
                    let r = site.produce(&b, n, CANDIDATES, &producer, &mut out).unwrap();
                    assert_eq!(r.count().unwrap(), total as u64, "{name} cap={cap}");
                    let written = cap.min(total);
                    assert!(out[written..].iter().all(|&x| x == STALE), "{name} cap={cap}: wrote past the items");
                    let mut got = out[..written].to_vec();
                    if site.algorithm().stable() {
                        assert_eq!(got, want[..written], "{name} cap={cap}");
                    } else {
                        got.sort_unstable();
                        // Distinct values: a short capacity holds distinct kept items.
                        assert!(got.windows(2).all(|w| w[0] < w[1]), "{name} cap={cap}: an item twice");
                        assert!(got.iter().all(|x| want.binary_search(x).is_ok()), "{name} cap={cap}");
                    }
                }
            }
        }
    }

    #[test]
    fn tiles_of_any_size_give_the_same_order() {
        let b = CpuBackend::new();
        let want = reference(1000);
        for a in [Algorithm::Lookback, Algorithm::Chained] {
            for tile in [1, 3, 32, 999, 1000, 1001] {
                let mut site = CpuSite::new(&b, a, true).unwrap();
                site.tuning.tile = tile;
                let mut out = vec![STALE; want.len()];
                site.produce(&b, 1000, CANDIDATES, &producer, &mut out).unwrap();
                assert_eq!(out, want, "{a} tile={tile}");
            }
        }
    }

    #[test]
    fn counted_runs_read_n_and_overwrite_a_stale_count() {
        let b = CpuBackend::new();
        let want = reference(700);
        for site in sites(&b) {
            let mut words = vec![STALE, 700, 9];
            let mut out = vec![STALE; want.len()];
            let lens = Lens { words: &mut words, input: 1, output: 0 };
            let r = site.produce_counted(&b, lens, CANDIDATES, &producer, &mut out).unwrap();
            assert_eq!(words, [want.len() as u64, 700, 9], "{}", site.algorithm());
            assert!(matches!(r.count(), Err(Error::CountInLens { word: 0 })));
            let mut words = vec![3, 3];
            let lens = Lens { words: &mut words, input: 1, output: 1 };
            let err = site.produce_counted(&b, lens, CANDIDATES, &producer, &mut out).unwrap_err();
            assert!(matches!(err, Error::LensAliased { word: 1 }), "{err}");
        }
    }

    #[test]
    fn a_producer_past_its_fan_out_is_an_error_on_every_path() {
        let b = CpuBackend::new();
        let greedy = |i: u64, e: &mut Emit<'_, u64>| {
            let c = if i == 300 || i == 700 { 3 } else { 1 };
            (0..c).for_each(|j| e.push(i * 4 + j));
        };
        for site in sites(&b) {
            let mut out = vec![0; 2000];
            let c = Candidates { per_item: 2, dead: DEAD };
            let err = site.produce(&b, 1000, c, &greedy, &mut out).unwrap_err();
            assert!(err.to_string().contains("more than 2 candidates for input item 300"), "{err}");
        }
    }

    #[test]
    fn bad_shapes_are_typed_errors() {
        let b = CpuBackend::new();
        let mut site = CpuSite::new(&b, Algorithm::Lookback, true).unwrap();
        let mut out = vec![0u64; 8];
        let wide = Candidates { per_item: MAX_PER_ITEM + 1, dead: DEAD };
        let err = site.produce(&b, 4, wide, &producer, &mut out).unwrap_err();
        assert!(err.to_string().contains("at most 32"), "{err}");
        let err = site.produce(&b, u64::MAX, CANDIDATES, &producer, &mut out).unwrap_err();
        assert!(err.to_string().contains("32-bit tile ids"), "{err}");
        site.tuning.tile = 0;
        let err = site.produce(&b, 4, CANDIDATES, &producer, &mut out).unwrap_err();
        assert!(matches!(err, Error::Tuning { .. }), "{err}");
        let odd = CpuSite::new(&b, Algorithm::Atomic, true).unwrap();
        let err = odd.produce(&b, 4, Candidates { per_item: 1, dead: [0u8; 3] }, &|_, _| {}, &mut [[1u8; 3]; 4]);
        assert!(matches!(err, Err(Error::ElementSize { size: 3 })), "{err:?}");
    }

    #[test]
    fn a_producer_may_call_into_rayon() {
        let b = CpuBackend::new();
        let want = reference(5000);
        let nested = |i: u64, e: &mut Emit<'_, u64>| {
            let ((), ()) = rayon::join(|| {}, || {});
            producer(i, e)
        };
        for site in sites(&b).into_iter().filter(|s| s.path() == SitePath::Fused) {
            let mut out = vec![STALE; want.len()];
            let r = site.produce(&b, 5000, CANDIDATES, &nested, &mut out).unwrap();
            assert_eq!(r.count, want.len() as u64, "{}", site.algorithm());
        }
    }

    #[test]
    fn phases_are_named() {
        let b = CpuBackend::new();
        let names = |a, fuse| {
            let site = CpuSite::new(&b, a, fuse).unwrap();
            let r = site.produce(&b, 100, CANDIDATES, &producer, &mut [0; 400]).unwrap();
            r.phases.iter().map(|p| p.name).collect::<Vec<_>>()
        };
        assert_eq!(names(Algorithm::Lookback, true), ["produce", "prefix", "write"]);
        assert_eq!(names(Algorithm::Atomic, true), ["produce"]);
        assert_eq!(names(Algorithm::Atomic, false), ["produce", "append", "copy"]);
    }
}
