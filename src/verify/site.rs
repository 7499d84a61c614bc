//! Fused compaction sites against the sequential reference: the synthetic
//! producer of kernels/compaction/produce.cu emits 0..4 candidates per input
//! item (a seeded hash picks them) through a [`CudaSite`], fused for the
//! single-pass algorithms and as a separate select after the producer for
//! every other one. Stable algorithms must give exactly the reference's
//! order, `atomic` its multiset; every run starts with a stale larger count
//! in the count word and a poisoned output whose guard past the capacity
//! must stay intact. One case per size also gives the site half the room it
//! needs: the count must still be the full total, and nothing may land past
//! the capacity.

use cudarc::driver::{LaunchConfig, PushKernelArg};

use crate::compaction::cuda::site::{CudaSite, DeviceSite, PRODUCE};
use crate::compaction::cuda::{CudaBackend, CudaBuffer};
use crate::compaction::{Algorithm, Backend, Error, Keep, Lens, SitePath};
use crate::cuda_runtime::Spec;

/// The producer's block (produce.cu `PRODUCE_BLOCK`): a site's tile of input items.
pub const TILE: u64 = 256;
/// Candidates per input item (produce.cu `PRODUCE_K`).
const K: u64 = 4;
const DEAD64: u64 = u64::MAX;
const DEAD32: u32 = u32::MAX;
/// What lies in the guard past an output's capacity.
const GUARD: u64 = 64;
const POISON64: u64 = 0xa5a5_a5a5_a5a5_a5a5;
/// A count no run can produce, left in the count word before each run.
const STALE: u64 = u64::MAX - 1;

/// Sizes every site case runs at: empty, one, a tile ± 1, odd sizes, 2^24 + 1.
pub const SIZES: [u64; 9] = [0, 1, TILE - 1, TILE, TILE + 1, 3 * TILE + 17, 20_011, 1_000_003, (1 << 24) + 1];

/// splitmix64 of the item and the seed (produce.cu `produce_mix`).
fn mix(i: u64, seed: u32) -> u64 {
    let mut z = (i ^ ((seed as u64) << 32)).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What the producer's kept candidates are, in input order.
fn reference_wide(n: u64, seed: u32) -> Vec<u64> {
    let mut out = Vec::new();
    for i in 0..n {
        let keep = mix(i, seed) & ((1 << K) - 1);
        out.extend((0..K).filter(|j| keep >> j & 1 == 1).map(|j| ((i << 5) | j) + 1));
    }
    out
}

fn reference_one(n: u64, seed: u32) -> Vec<u32> {
    (0..n).filter(|&i| mix(i, seed) & 1 == 1).map(|i| i as u32).collect()
}

/// One site case: which producer, at what size, with how much room.
#[derive(Clone, Debug)]
pub struct SiteCase {
    pub algorithm: Algorithm,
    pub path: SitePath,
    /// `wide`: four 8-byte candidates per item; else one 4-byte candidate.
    pub wide: bool,
    pub n: u64,
    /// Output slots, below the total in the short case.
    pub capacity: u64,
}

impl std::fmt::Display for SiteCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shape = if self.wide { "4 x u64" } else { "1 x u32" };
        write!(f, "site {} {} {shape} n={} capacity={}", self.algorithm.name(), self.path.name(), self.n, self.capacity)
    }
}

/// Runs every site case of `algorithms` (fused where the algorithm fuses,
/// and every one as a separate pass) at `sizes`; `seen` gets each result.
pub fn run(
    b: &CudaBackend,
    algorithms: &[Algorithm],
    sizes: &[u64],
    seed: u32,
    mut seen: impl FnMut(&SiteCase, &Result<(), String>),
) -> (u64, u64) {
    let (mut passed, mut failed) = (0, 0);
    for &algorithm in algorithms.iter().filter(|a| CudaBackend::implements(**a)) {
        let paths: &[bool] = if algorithm.fuses() { &[true, false] } else { &[false] };
        for &fuse in paths {
            for &n in sizes {
                for wide in [true, false] {
                    let total = if wide { reference_wide(n, seed).len() } else { reference_one(n, seed).len() } as u64;
                    let room = if wide { n * K } else { n };
                    // The short case: half what the kept items need (fused only; a separate select
                    // always has the producer's slots as room).
                    let capacities: &[u64] = if fuse && total > 1 { &[room, total / 2] } else { &[room] };
                    for &capacity in capacities {
                        let path = if fuse { SitePath::Fused } else { SitePath::Separate };
                        let case = SiteCase { algorithm, path, wide, n, capacity };
                        let r = run_case(b, &case, seed).and_then(|r| r);
                        if r.is_ok() {
                            passed += 1
                        } else {
                            failed += 1
                        }
                        seen(&case, &r);
                    }
                }
            }
        }
    }
    (passed, failed)
}

/// One case: `Err` on a driver or library error, `Ok(Err(why))` on a wrong result.
pub fn run_case(b: &CudaBackend, case: &SiteCase, seed: u32) -> Result<Result<(), String>, String> {
    let go = || -> Result<Result<(), String>, Error> {
        let site = CudaSite::new(b, case.algorithm, case.path == SitePath::Fused)?;
        if case.wide {
            let want = reference_wide(case.n, seed);
            let got = produce::<u64>(b, &site, case, seed)?;
            Ok(compare(case, &want, got, POISON64))
        } else {
            let want = reference_one(case.n, seed);
            let got = produce::<u32>(b, &site, case, seed)?;
            Ok(compare(case, &want, got, POISON64 as u32))
        }
    };
    go().map_err(|e| e.to_string())
}

/// Element types of the two producers.
trait Produced: crate::compaction::Element + Ord + std::fmt::Debug {
    const ENTRY: &'static str;
    const PER_ITEM: u64;
    const DEAD: Self;
}
impl Produced for u64 {
    const ENTRY: &'static str = "site_produce";
    const PER_ITEM: u64 = K;
    const DEAD: Self = DEAD64;
}
impl Produced for u32 {
    const ENTRY: &'static str = "site_produce_one";
    const PER_ITEM: u64 = 1;
    const DEAD: Self = DEAD32;
}

/// What a run left: the count word, the output up to its capacity and the guard after it.
struct Produce<T> {
    count: u64,
    out: Vec<T>,
}

fn produce<T: Produced>(b: &CudaBackend, site: &CudaSite, case: &SiteCase, seed: u32) -> Result<Produce<T>, Error> {
    let poison: T = *bytemuck::from_bytes(&POISON64.to_le_bytes()[..std::mem::size_of::<T>()]);
    let capacity = case.capacity;
    let mut out: CudaBuffer<T> = b.upload(&vec![poison; (capacity + GUARD) as usize])?;
    // words: [n, count (stale), slots' length (separate)]
    let mut words: CudaBuffer<u64> = b.upload(&[case.n, STALE, STALE])?;
    let spec = Spec::default().with(&[("REAP_SITE_PRODUCE", site.kernel().define())]);
    let f = b.kernels().function(&PRODUCE, &spec, T::ENTRY)?;
    let tiles = case.n.div_ceil(TILE);
    let (wp, seed_arg) = (words.ptr(), seed);
    match site.path() {
        SitePath::Fused => {
            let dev: DeviceSite = site.bind(b, capacity, tiles)?;
            let grid = site.grid(b, &f, T::ENTRY, TILE as u32, 0, tiles)?;
            let op = out.ptr();
            let (len_at, count_at) = (0u64, 1u64);
            let mut l = b.stream().launch_builder(&f);
            l.arg(&wp).arg(&len_at).arg(&count_at).arg(&seed_arg).arg(&op).arg(&dev);
            let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (TILE as u32, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: matches site_produce(u64*, u64, u64, u32, T*, Site); words holds 3 u64, the output
            // `capacity` slots (writes stop there) plus the guard, the site's scratch and tile states are
            // sized for `tiles` tiles.
            unsafe { l.launch(cfg) }
                .map_err(crate::compaction::cuda::runtime::driver_error("launching site_produce"))?;
        }
        SitePath::Separate => {
            let slots_n = case.n * T::PER_ITEM;
            let slots: CudaBuffer<T> = b.upload(&vec![poison; slots_n.max(1) as usize])?;
            let (sp, len_at, count_at) = (slots.ptr(), 0u64, 2u64);
            let dev = DeviceSite::default();
            let mut l = b.stream().launch_builder(&f);
            l.arg(&wp).arg(&len_at).arg(&count_at).arg(&seed_arg).arg(&sp).arg(&dev);
            let cfg = crate::cuda_runtime::grid(case.n.max(1), TILE as u32)?;
            let cfg = LaunchConfig { grid_dim: (cfg.grid_dim.0.min(b.info.sms * 16).max(1), 1, 1), ..cfg };
            // SAFETY: matches site_produce(u64*, u64, u64, u32, T*, Site); the slots hold n * PER_ITEM
            // elements, which the grid-stride loop writes and no more.
            unsafe { l.launch(cfg) }
                .map_err(crate::compaction::cuda::runtime::driver_error("launching site_produce"))?;
            if slots_n > capacity {
                return Err(Error::Backend("a separate site needs room for every slot".into()));
            }
            let mut dst = out;
            dst.set_len(slots.len())?;
            let lens = Lens { words: &mut words, input: 2, output: 1 };
            b.select_counted(site.algorithm(), &slots, Keep::Sentinel(T::DEAD), &mut dst, lens)?;
            out = dst;
        }
    }
    let w = b.download(&words)?;
    let all = b.download_to_capacity(&out)?;
    Ok(Produce { count: w[1], out: all })
}

fn compare<T: Produced>(case: &SiteCase, want: &[T], got: Produce<T>, poison: T) -> Result<(), String> {
    let total = want.len() as u64;
    if got.count != total {
        return Err(format!("count {} (reference {total})", got.count));
    }
    let cap = case.capacity as usize;
    let guard = &got.out[cap..];
    if guard.iter().any(|&g| g != poison) {
        return Err("wrote past the output's capacity".into());
    }
    let written = cap.min(want.len());
    let mut have = got.out[..written].to_vec();
    if case.algorithm.stable() {
        if cap >= want.len() {
            if have != want {
                let at = have.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
                return Err(format!("order differs from the reference at {at}: {:?} vs {:?}", have[at], want[at]));
            }
        } else if have[..] != want[..written] {
            return Err("the slots below a short capacity differ from the reference's first ones".into());
        }
        return Ok(());
    }
    // Unstable: the same multiset; with a short capacity, distinct kept items.
    have.sort_unstable();
    if cap >= want.len() {
        let mut w = want.to_vec();
        w.sort_unstable();
        if have != w {
            return Err("not the reference's multiset".into());
        }
    } else {
        let mut w = want.to_vec();
        w.sort_unstable();
        if have.windows(2).any(|p| p[0] == p[1]) || have.iter().any(|x| w.binary_search(x).is_err()) {
            return Err("a short capacity holds items the reference does not keep, or one twice".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_emits_zero_to_four_candidates_per_item() {
        let n = 4096;
        let counts: Vec<u32> = (0..n).map(|i| (mix(i, 7) & 0xf).count_ones()).collect();
        for k in 0..=4 {
            assert!(counts.contains(&k), "some item emits {k}");
        }
        assert_eq!(reference_wide(n, 7).len() as u32, counts.iter().sum::<u32>());
        assert!(reference_wide(n, 7).windows(2).all(|w| w[0] < w[1]), "input order");
        assert_ne!(reference_one(n, 7), reference_one(n, 8), "seeded");
    }
}
