//! Compaction across several devices of one kind (ranks): an input split into
//! contiguous shards, one per rank, each compacted by any catalog algorithm on
//! its own device with its count left on the device; one all-gather of the
//! per-rank counts gives every rank the global offsets; the output stays
//! sharded (each rank's part and its offset) or is gathered on one rank.
//!
//! Because the shards are contiguous and in rank order, the gathered result
//! is the single-device result: a stable select keeps input order, a
//! partition puts every rank's kept part (rank order) before every rank's
//! rejected part, and a scan adds to each rank's exclusive scan the totals of
//! the ranks before it (integers: exact).
//!
//! The collectives are the backend's ([`Sharding`]): NCCL between CUDA
//! devices (`cuda.rs`), plain copies between CPU ranks (`cpu.rs`), which is how
//! CI runs several ranks without a GPU, and one rank's own copies on wgpu
//! (`wgpu.rs`), which has no collectives between adapters.
//!
//! A group holds every rank in one process ([`Group::new`]), or this
//! process's one rank of a [`Cluster`] of processes ([`Group::join`]): one
//! process per GPU, as separate hosts run. Ranks are numbered across the
//! processes; a group's buffers are those of the ranks it holds.

use std::sync::Arc;

use crate::cluster::Cluster;
use crate::compaction::{Algorithm, Backend, Element, Error, Keep, Lens, Rejected, Report, Result, ScanElement};

mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "wgpu")]
mod wgpu;

#[cfg(feature = "cuda")]
pub use cuda::CudaGroup;

/// One piece of a gather: `len` elements from `start` of a rank's buffer to
/// `at` in the destination. `buffer` is `None` where another process holds the rank.
pub struct Part<'a, B: Backend + ?Sized, T: Element> {
    pub rank: usize,
    pub buffer: Option<&'a B::Buffer<T>>,
    pub start: u64,
    pub len: u64,
    pub at: u64,
}

/// What a backend adds to run one operation over several ranks.
pub trait Sharding: Backend + Sized {
    /// The state of the collectives between the ranks (NCCL communicators).
    type Comm;
    /// Connects the ranks, in rank order.
    fn connect(ranks: &[Self]) -> Result<Self::Comm>;
    /// Connects this process's one rank to the cluster's other processes.
    fn join(rank: &Self, cluster: &Arc<Cluster>) -> Result<Self::Comm>;
    /// What carries the collectives, for reports ("NCCL 2.27.3 (...)").
    fn carrier(comm: &Self::Comm) -> String;
    /// Every rank's `words[src]` into every rank's `words[dst..dst + ranks]`,
    /// in rank order: one all-gather, enqueued (no host wait). `ranks` and
    /// `words` are this process's.
    fn all_gather_word(
        comm: &Self::Comm,
        ranks: &[Self],
        words: &mut [Self::Buffer<u64>],
        src: u64,
        dst: u64,
    ) -> Result<()>;
    /// The parts into `dst`, a buffer on rank `root` (`None` where another
    /// process holds the root). Every process passes every part.
    fn gather<T: Element>(
        comm: &Self::Comm,
        ranks: &[Self],
        parts: &[Part<'_, Self, T>],
        root: usize,
        dst: Option<&mut Self::Buffer<T>>,
    ) -> Result<()>;
    /// A copy of `src` on this rank, enqueued (no host wait).
    fn duplicate<T: Element>(&self, src: &Self::Buffer<T>) -> Result<Self::Buffer<T>>;
    /// Whether `algorithm`'s scan here adds a carry as it stores
    /// ([`Sharding::scan_carried`]). Then a sharded scan totals each shard
    /// first and scans once; otherwise it scans, then adds the totals of the
    /// ranks before in a second pass over the output ([`Sharding::add_prefix`]).
    fn takes_carry(&self, _algorithm: Algorithm) -> bool {
        false
    }
    /// The sum of `input`'s first `n` values into `words[dst]` (zero before), enqueued.
    fn total<S: ScanElement>(
        &self,
        _input: &Self::Buffer<S>,
        _n: u64,
        _words: &mut Self::Buffer<u64>,
        _dst: u64,
    ) -> Result<()> {
        Err(Error::Backend("this backend's sharded scan adds its prefix after the scan (no carried scan)".into()))
    }
    /// `algorithm`'s counted exclusive scan with the sum of
    /// `lens.words[first..first + count]` added to every output; its own
    /// total goes to `lens.words[lens.output]`. Only where [`Sharding::takes_carry`].
    fn scan_carried<S: ScanElement>(
        &self,
        algorithm: Algorithm,
        _input: &Self::Buffer<S>,
        _output: &mut Self::Buffer<S>,
        _lens: Lens<'_, Self>,
        _first: u64,
        _count: u32,
    ) -> Result<Self::Report> {
        Err(Error::Backend(format!("`{}` takes no carry on this backend", algorithm.name())))
    }
    /// Adds `words[first..first + count]`'s sum to `data[..n]` on this rank:
    /// a rank's exclusive scan becomes its part of the global scan.
    fn add_prefix<S: ScanElement>(
        &self,
        data: &mut Self::Buffer<S>,
        n: u64,
        words: &Self::Buffer<u64>,
        first: u64,
        count: u32,
    ) -> Result<()>;
    /// Waits for everything enqueued on this rank.
    fn finish(&self) -> Result<()>;
}

/// Several backends of one kind, one per rank, and what connects them.
pub struct Group<B: Sharding> {
    /// The ranks this process holds: `first..first + ranks.len()` of `world`.
    ranks: Vec<B>,
    first: usize,
    world: usize,
    comm: B::Comm,
    /// The other processes, where the ranks are processes.
    cluster: Option<Arc<Cluster>>,
}

/// An input split across the ranks: rank r holds elements
/// `[starts[r], starts[r] + lens[r])` of the whole; `shards` are the ranks
/// this process holds.
pub struct Sharded<B: Backend, T: Element> {
    pub shards: Vec<B::Buffer<T>>,
    pub starts: Vec<u64>,
    pub lens: Vec<u64>,
    pub total: u64,
    /// Each rank's word buffer as a call starts it (`[n_r, 0, …]`), uploaded
    /// once: a call copies it on the device rather than uploading from the host.
    words: Vec<B::Buffer<u64>>,
}

/// The keep rule of a sharded call: the same for every rank, or per-rank flags.
pub enum ShardKeep<'a, B: Backend, T: Element> {
    Sentinel(T),
    /// One predicate for every rank (a closure on the CPU, CUDA source on a GPU).
    Predicate(&'a B::Predicate<T>),
    /// Flags sharded like the input.
    Flags(&'a Sharded<B, u8>),
}

/// Which operation made a [`ShardedOutput`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardOp {
    Select,
    Partition,
    Scan,
}

/// A sharded result: each rank's own output, and on each rank the device
/// words `[n_r, count_r, count_0, …, count_{R-1}]` (the all-gathered counts,
/// or a scan's totals) from which the global offsets follow.
pub struct ShardedOutput<B: Backend, T: Element> {
    pub op: ShardOp,
    /// The outputs and words of the ranks this process holds.
    pub shards: Vec<B::Buffer<T>>,
    pub words: Vec<B::Buffer<u64>>,
    /// Every rank's input length.
    pub lens: Vec<u64>,
    /// Each rank's run: its phases, named as in the algorithm's paper.
    pub reports: Vec<B::Report>,
}

/// Words of a rank's word buffer: its input length, its count, then the gathered counts.
const N: u64 = 0;
const COUNT: u64 = 1;
const GATHERED: u64 = 2;

/// Where each of `sizes` starts when they are laid end to end.
fn exclusive_prefix(sizes: &[u64]) -> Vec<u64> {
    sizes
        .iter()
        .scan(0u64, |at, &n| {
            let start = *at;
            *at += n;
            Some(start)
        })
        .collect()
}

/// Shard lengths of `n` elements over `ranks`: equal, the first `n % ranks` one longer.
pub fn shard_lens(n: u64, ranks: usize) -> Vec<u64> {
    let r = ranks.max(1) as u64;
    (0..r).map(|i| n / r + u64::from(i < n % r)).collect()
}

impl<B: Sharding> Group<B> {
    /// The ranks in order; at least one.
    pub fn new(ranks: Vec<B>) -> Result<Self> {
        if ranks.is_empty() {
            return Err(Error::Tuning { algorithm: "shard", why: "a group needs at least one rank".into() });
        }
        let comm = B::connect(&ranks)?;
        let world = ranks.len();
        Ok(Group { ranks, first: 0, world, comm, cluster: None })
    }

    /// This process's `rank` as its cluster rank among the cluster's processes.
    pub fn join(rank: B, cluster: Arc<Cluster>) -> Result<Self> {
        let comm = B::join(&rank, &cluster)?;
        let (first, world) = (cluster.rank(), cluster.ranks());
        Ok(Group { ranks: vec![rank], first, world, comm, cluster: Some(cluster) })
    }

    /// The ranks this process holds.
    pub fn ranks(&self) -> &[B] {
        &self.ranks
    }

    pub fn ranks_mut(&mut self) -> &mut [B] {
        &mut self.ranks
    }

    /// The global rank of this process's first rank.
    pub fn first(&self) -> usize {
        self.first
    }

    /// The other processes, where the ranks are processes.
    pub fn cluster(&self) -> Option<&Arc<Cluster>> {
        self.cluster.as_ref()
    }

    /// Whether this process holds rank 0, which gathers results and writes reports.
    pub fn leads(&self) -> bool {
        self.first == 0
    }

    /// Returns once every process is here (at once in one process).
    pub fn barrier(&self) -> Result<()> {
        match &self.cluster {
            Some(c) => Ok(c.barrier()?),
            None => Ok(()),
        }
    }

    /// The element-wise max of `mine` over the processes (`mine` itself in one process).
    pub fn max_over_processes(&self, mine: &[f64]) -> Result<Vec<f64>> {
        match &self.cluster {
            Some(c) => Ok(c.max_f64(mine)?),
            None => Ok(mine.to_vec()),
        }
    }

    /// Ranks across every process.
    pub fn len(&self) -> usize {
        self.world
    }

    /// `(global rank, backend)` of each rank this process holds.
    fn held(&self) -> impl Iterator<Item = (usize, &B)> {
        self.ranks.iter().enumerate().map(|(i, b)| (self.first + i, b))
    }

    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }

    pub fn comm(&self) -> &B::Comm {
        &self.comm
    }

    /// What carries the collectives.
    pub fn carrier(&self) -> String {
        B::carrier(&self.comm)
    }

    /// Splits `data` (the whole input, which every process has) into
    /// contiguous shards, one per rank ([`shard_lens`]); this process uploads its ranks'.
    pub fn scatter<T: Element>(&self, data: &[T]) -> Result<Sharded<B, T>> {
        let lens = shard_lens(data.len() as u64, self.len());
        let starts = exclusive_prefix(&lens);
        let shards = self
            .held()
            .map(|(g, b)| b.upload(&data[starts[g] as usize..(starts[g] + lens[g]) as usize]))
            .collect::<Result<Vec<_>>>()?;
        Ok(Sharded { words: self.words(&lens)?, total: lens.iter().sum(), shards, starts, lens })
    }

    /// Buffers already on the ranks (one each, in rank order) as one sharded
    /// input: rank r's elements follow rank r - 1's. Every rank's length
    /// must be known here, so the group must hold every rank (one process).
    pub fn adopt<T: Element>(&self, shards: Vec<B::Buffer<T>>) -> Result<Sharded<B, T>> {
        if self.cluster.is_some() {
            return Err(Error::Backend(
                "a group of processes shards its input with `scatter`: `adopt` needs every rank's buffer in one \
                 process"
                    .into(),
            ));
        }
        self.check_shards(shards.len())?;
        let lens: Vec<u64> = shards.iter().zip(&self.ranks).map(|(s, b)| b.len(s)).collect();
        let starts = exclusive_prefix(&lens);
        Ok(Sharded { words: self.words(&lens)?, total: lens.iter().sum(), shards, starts, lens })
    }

    /// Each held rank's word buffer: its length and a zeroed count and gather area.
    fn words(&self, lens: &[u64]) -> Result<Vec<B::Buffer<u64>>> {
        self.held()
            .map(|(g, b)| {
                let mut w = vec![0u64; GATHERED as usize + self.world];
                w[N as usize] = lens[g];
                b.upload(&w)
            })
            .collect()
    }

    /// This call's word buffers, copied on each rank from the input's template.
    fn fresh_words(&self, template: &[B::Buffer<u64>]) -> Result<Vec<B::Buffer<u64>>> {
        self.ranks.iter().zip(template).map(|(b, w)| b.duplicate(w)).collect()
    }

    /// One shard per held rank.
    fn check_shards(&self, shards: usize) -> Result<()> {
        if shards != self.ranks.len() {
            return Err(Error::LengthMismatch {
                what: "shards (one per rank)",
                expected: self.ranks.len() as u64,
                actual: shards as u64,
            });
        }
        Ok(())
    }

    fn check_keep<T: Element>(&self, input: &Sharded<B, T>, keep: &ShardKeep<'_, B, T>) -> Result<()> {
        self.check_shards(input.shards.len())?;
        if let ShardKeep::Flags(f) = keep {
            for (r, (fl, inp)) in f.shards.iter().zip(&input.shards).enumerate() {
                let (a, b) = (self.ranks[r].len(fl), self.ranks[r].len(inp));
                if a != b {
                    return Err(Error::LengthMismatch {
                        what: "a rank's flags (as its shard)",
                        expected: b,
                        actual: a,
                    });
                }
            }
        }
        Ok(())
    }

    /// Select (`split` false) or partition on every rank, then one
    /// all-gather of the counts. Enqueued only: no host wait on a GPU.
    fn compact<T: Element>(
        &self,
        algorithm: Algorithm,
        split: bool,
        input: &Sharded<B, T>,
        keep: ShardKeep<'_, B, T>,
    ) -> Result<ShardedOutput<B, T>> {
        self.check_keep(input, &keep)?;
        let mut words = self.fresh_words(&input.words)?;
        let mut shards = Vec::with_capacity(self.ranks.len());
        let mut reports = Vec::with_capacity(self.ranks.len());
        for (r, b) in self.ranks.iter().enumerate() {
            let mut out = b.alloc::<T>(b.len(&input.shards[r]))?;
            let k = match &keep {
                ShardKeep::Sentinel(s) => Keep::Sentinel(*s),
                ShardKeep::Predicate(p) => Keep::Predicate(*p),
                ShardKeep::Flags(f) => Keep::Flags(&f.shards[r]),
            };
            let lens = Lens { words: &mut words[r], input: N, output: COUNT };
            let report = if split {
                b.partition_counted(algorithm, &input.shards[r], k, &mut out, lens)?
            } else {
                b.select_counted(algorithm, &input.shards[r], k, &mut out, lens)?
            };
            shards.push(out);
            reports.push(report);
        }
        B::all_gather_word(&self.comm, &self.ranks, &mut words, COUNT, GATHERED)?;
        let op = if split { ShardOp::Partition } else { ShardOp::Select };
        Ok(ShardedOutput { op, shards, words, lens: input.lens.clone(), reports })
    }

    /// Each rank selects its shard with `algorithm`; the counts are gathered
    /// on every rank (device words). Stable algorithms keep input order
    /// across the ranks too.
    pub fn select<T: Element>(
        &self,
        algorithm: Algorithm,
        input: &Sharded<B, T>,
        keep: ShardKeep<'_, B, T>,
    ) -> Result<ShardedOutput<B, T>> {
        self.compact(algorithm, false, input, keep)
    }

    /// Each rank partitions its shard (rejected half in order); gathered, every
    /// rank's kept part comes first, then every rank's rejected part.
    pub fn partition<T: Element>(
        &self,
        algorithm: Algorithm,
        input: &Sharded<B, T>,
        keep: ShardKeep<'_, B, T>,
    ) -> Result<ShardedOutput<B, T>> {
        crate::compaction::backend::check_rejected(algorithm, true, Rejected::InOrder)?;
        self.compact(algorithm, true, input, keep)
    }

    /// Every shard as its part of the global exclusive scan. Where the
    /// algorithm takes a carry ([`Sharding::takes_carry`]), each rank totals
    /// its shard, the totals are all-gathered, and each rank scans once,
    /// adding the totals of the ranks before it as it stores. Otherwise each
    /// rank scans, the totals are all-gathered, and each rank adds those of
    /// the ranks before it in a second pass.
    pub fn exclusive_scan<S: ScanElement>(
        &self,
        algorithm: Algorithm,
        input: &Sharded<B, S>,
    ) -> Result<ShardedOutput<B, S>> {
        self.check_shards(input.shards.len())?;
        let mut words = self.fresh_words(&input.words)?;
        let mut shards = Vec::with_capacity(self.ranks.len());
        let mut reports = Vec::with_capacity(self.ranks.len());
        if self.ranks.iter().all(|b| b.takes_carry(algorithm)) {
            for (r, b) in self.ranks.iter().enumerate() {
                b.total(&input.shards[r], b.len(&input.shards[r]), &mut words[r], COUNT)?;
            }
            B::all_gather_word(&self.comm, &self.ranks, &mut words, COUNT, GATHERED)?;
            for (r, (g, b)) in self.held().enumerate() {
                let mut out = b.alloc::<S>(b.len(&input.shards[r]))?;
                let l = Lens { words: &mut words[r], input: N, output: COUNT };
                reports.push(b.scan_carried(algorithm, &input.shards[r], &mut out, l, GATHERED, g as u32)?);
                shards.push(out);
            }
            return Ok(ShardedOutput { op: ShardOp::Scan, shards, words, lens: input.lens.clone(), reports });
        }
        for (r, b) in self.ranks.iter().enumerate() {
            let mut out = b.alloc::<S>(b.len(&input.shards[r]))?;
            let l = Lens { words: &mut words[r], input: N, output: COUNT };
            reports.push(b.exclusive_scan_counted(algorithm, &input.shards[r], &mut out, l)?);
            shards.push(out);
        }
        B::all_gather_word(&self.comm, &self.ranks, &mut words, COUNT, GATHERED)?;
        for (r, (g, b)) in self.held().enumerate() {
            if g > 0 {
                b.add_prefix(&mut shards[r], input.lens[g], &words[r], GATHERED, g as u32)?;
            }
        }
        Ok(ShardedOutput { op: ShardOp::Scan, shards, words, lens: input.lens.clone(), reports })
    }

    /// Waits for every rank.
    pub fn finish(&self) -> Result<()> {
        self.ranks.iter().try_for_each(|b| b.finish())
    }

    /// The gathered counts (a scan's per-rank totals, in its element's
    /// width), read from this process's first rank: one host wait.
    pub fn counts<T: Element>(&self, out: &ShardedOutput<B, T>) -> Result<Vec<u64>> {
        let w = self.ranks[0].download(&out.words[0])?;
        let gathered = &w[GATHERED as usize..GATHERED as usize + self.len()];
        // A carried scan gathers full 64-bit sums; its elements wrap at their width.
        let bits = 8 * std::mem::size_of::<T>() as u32;
        let mask = if out.op == ShardOp::Scan && bits < 64 { (1u64 << bits) - 1 } else { u64::MAX };
        Ok(gathered.iter().map(|&c| c & mask).collect())
    }

    /// Where each rank's part lies in the gathered result, and its length:
    /// `(at, start, len)` per piece (a partition has two pieces a rank).
    fn pieces<T: Element>(&self, out: &ShardedOutput<B, T>) -> Result<Vec<(usize, u64, u64, u64)>> {
        let mut pieces = Vec::new();
        match out.op {
            // A scan's parts are its shards, in place: no count to read.
            ShardOp::Scan => {
                let mut at = 0;
                for (r, &n) in out.lens.iter().enumerate() {
                    pieces.push((r, 0, n, at));
                    at += n;
                }
            }
            ShardOp::Select | ShardOp::Partition => {
                let counts = self.counts(out)?;
                let kept: u64 = counts.iter().sum();
                let (mut at, mut rejected_at) = (0, kept);
                for (r, (&k, &n)) in counts.iter().zip(&out.lens).enumerate() {
                    pieces.push((r, 0, k, at));
                    at += k;
                    if out.op == ShardOp::Partition {
                        pieces.push((r, k, n - k, rejected_at));
                        rejected_at += n - k;
                    }
                }
            }
        }
        Ok(pieces)
    }

    /// The global offset of each rank's (kept) part: the counts (a scan: the
    /// lengths) of the ranks before it.
    pub fn offsets<T: Element>(&self, out: &ShardedOutput<B, T>) -> Result<Vec<u64>> {
        let sizes = match out.op {
            ShardOp::Scan => out.lens.clone(),
            ShardOp::Select | ShardOp::Partition => self.counts(out)?,
        };
        Ok(exclusive_prefix(&sizes))
    }

    /// Elements in the gathered result (select: the kept total).
    pub fn gathered_len<T: Element>(&self, out: &ShardedOutput<B, T>) -> Result<u64> {
        Ok(self.pieces(out)?.iter().map(|p| p.2).sum())
    }

    /// The whole result in one buffer on rank `root`: what one device would
    /// have produced (`None` in the processes that do not hold the root).
    /// Reads the counts once (one host wait); every process calls it.
    pub fn gather<T: Element>(&self, out: &ShardedOutput<B, T>, root: usize) -> Result<Option<B::Buffer<T>>> {
        if root >= self.len() {
            return Err(Error::LengthMismatch {
                what: "gather root (a rank)",
                expected: self.len() as u64,
                actual: root as u64,
            });
        }
        let pieces = self.pieces(out)?;
        let total: u64 = pieces.iter().map(|p| p.2).sum();
        let held = |rank: usize| rank.checked_sub(self.first).filter(|&i| i < self.ranks.len());
        let mut dst = held(root).map(|i| self.ranks[i].alloc::<T>(total)).transpose()?;
        let parts: Vec<Part<'_, B, T>> = pieces
            .iter()
            .map(|&(rank, start, len, at)| Part { rank, buffer: held(rank).map(|i| &out.shards[i]), start, len, at })
            .collect();
        B::gather(&self.comm, &self.ranks, &parts, root, dst.as_mut())?;
        Ok(dst)
    }

    /// The gathered result on the host of the process that holds rank 0
    /// (`None` in the others).
    pub fn collect<T: Element>(&self, out: &ShardedOutput<B, T>) -> Result<Option<Vec<T>>> {
        match self.gather(out, 0)? {
            Some(dst) => Ok(Some(self.ranks[0].download(&dst)?)),
            None => Ok(None),
        }
    }
}

impl<B: Backend, T: Element> ShardedOutput<B, T> {
    /// Each held rank's phase times summed (device time; the ranks run at once).
    pub fn rank_times(&self) -> Result<Vec<std::time::Duration>> {
        self.reports.iter().map(|r| r.total()).collect()
    }
}

#[cfg(test)]
mod tests;
