//! One breadth-first level loop, shared by the tracer (rays against BVH
//! nodes) and the collider (node pairs): { compact → expand } for a bounded
//! number of levels, with every length on the device.
//!
//! Mechanism, and why: capacity-sized launches over a bounded number of
//! levels. Every level's lengths live in one per-frame `u64` array of the
//! backend (the *words*); each kernel reads its input length from a word and
//! writes its output length to another, threads past the length exit, and the
//! compaction is the library's counted call ([`Backend::select_counted`]). The
//! host enqueues the whole loop without reading anything and reads the words
//! once after the frame. Conditional graph nodes (CUDA ≥ 12.4 only) and a
//! persistent kernel were not taken. The price is the launches of levels past
//! the natural depth, whose frontier is empty: that fixed per-level overhead
//! is reported.
//!
//! What changed with fused sites ([`Plan::fused`]): a producer kernel can now
//! call the library's single-pass algorithms itself (kernels/compaction/site.cuh),
//! so the reason a level needed two launches (expand, then the library's
//! compaction) is gone for `lookback`, `chained` and `atomic`: their expand
//! writes only live items, compacted, and the loop runs one launch per level.
//! The multi-pass algorithms keep { compact → expand }. A fused launch is a
//! resident grid that draws tiles until the device length runs out, so an
//! empty level costs one launch of blocks that exit (about 6 µs on an H100).
//!
//! Why a frame is now one CUDA graph ([`Graphs`](crate::replay::Graphs)), where it was first ruled
//! out: with every length on the device, a frame's launch sequence is fixed by
//! its configuration, and the three things that made launches differ between
//! frames of one configuration moved off the launch arguments. The sample
//! index is a device word the host sets before the frame; the single-pass
//! algorithms' tile-state epochs start over at each frame
//! (`CudaBackend::restart_tile_states`, a clear of the states), so a frame's
//! calls pass the same epochs every time; and [`run`] leaves the frontier's
//! two buffers in the roles it found them (the tracer's queues likewise), so
//! every frame launches on the same addresses. A GPU engine streams the first
//! frame of a configuration (kernels compile, sites and scratch are made),
//! captures the second into a graph, and replays it while the frame's key
//! (settings, buffers, capacities, the level bound) stays the same; a grown
//! frontier or a new bound is a new key. Per-stage times survive: while
//! capturing, the stage timer records its events as event-record nodes, read
//! after each replay as before. The capacity and the bound still change
//! between configurations, which is why a graph is recorded per key rather
//! than built once.
//!
//! A level cannot grow past the capacity fixed before the frame: an expand
//! whose output would not fit writes nothing, sets [`status::OVERFLOW`] and
//! records the capacity it needed ([`NEEDED`]); an expand at the last level
//! that still emits live items sets [`status::UNFINISHED`]. Stages that
//! change persistent state (the tracer's accumulate, the collider's solver
//! and integration) do nothing on the device when the status word is set, so
//! the driver can redo the frame with a larger capacity or bound.
//!
//! Over 600 lines, kept whole: the level loop, its words and the trait a
//! workload implements to run it (with its compaction hook) read together.

use crate::compaction::{Algorithm, Backend, BackendKind, Element, Keep, Lens};
use crate::memory::{self, Limit};

/// The loop's device side for CUDA workloads: list it in a kernel source's
/// `headers` and `#include "../frontier.cuh"` (includes resolve from the
/// including file's folder).
#[cfg(feature = "cuda")]
pub const CUDA_HEADER: crate::cuda_runtime::Source = crate::cuda_runtime::kernel_source!("frontier.cuh");

/// Word of the status flags ([`status`]).
pub const STATUS: u64 = 0;
/// Word of the largest frontier capacity an overflowing expand needed.
pub const NEEDED: u64 = 1;
/// The first word a workload may use for its own lengths and counters.
pub const FIRST_FREE: u64 = 2;

/// Flags of the status word, set on the device (atomic or).
pub mod status {
    /// An expand's output would not fit the frontier's capacity.
    pub const OVERFLOW: u64 = 1;
    /// The frontier still held live items after the last level of the bound.
    pub const UNFINISHED: u64 = 2;
    /// The collider's candidate list overflowed.
    pub const CANDIDATES: u64 = 4;
    /// A stable fused site (wgpu, compaction/site.wgsl) gave up waiting for
    /// a predecessor tile: WebGPU promises no forward progress between
    /// workgroups. The frame is redone through the separate pass.
    pub const STALLED: u64 = 8;
}

/// Dead frontier slot (every workload's items are u64).
pub const DEAD: u64 = u64::MAX;

/// Hands out word indices of a frame's word array, in order.
#[derive(Clone, Copy, Debug)]
pub struct WordAlloc {
    next: u64,
}

impl Default for WordAlloc {
    fn default() -> Self {
        WordAlloc { next: FIRST_FREE }
    }
}

impl WordAlloc {
    /// The first of `n` consecutive words.
    pub fn take(&mut self, n: u64) -> u64 {
        let first = self.next;
        self.next += n;
        first
    }
    /// Words handed out so far (the array's length must be at least this).
    pub fn used(&self) -> u64 {
        self.next
    }
    /// The words of one run of `levels` levels.
    pub fn levels(&mut self, levels: u32) -> LevelWords {
        LevelWords { first: self.take(LevelWords::count(levels)), levels }
    }
}

/// Where one run of the loop keeps its lengths: per level l (0 = what the
/// workload's init wrote) the slots written (`len`), the live ones among them
/// (`live`), under compaction the length after compacting (`kept`), and
/// where a grouped level's splits put their split points (`grouped`).
#[derive(Clone, Copy, Debug)]
pub struct LevelWords {
    first: u64,
    levels: u32,
}

impl LevelWords {
    /// Words needed for `levels` expansions.
    pub fn count(levels: u32) -> u64 {
        4 * (levels as u64 + 1)
    }
    pub fn levels(&self) -> u32 {
        self.levels
    }
    pub fn len(&self, level: u32) -> u64 {
        self.first + 4 * level as u64
    }
    pub fn live(&self, level: u32) -> u64 {
        self.first + 4 * level as u64 + 1
    }
    pub fn kept(&self, level: u32) -> u64 {
        self.first + 4 * level as u64 + 2
    }
    pub fn grouped(&self, level: u32) -> u64 {
        self.first + 4 * level as u64 + 3
    }
    /// The frontier entering each level, from the words read after the
    /// frame: the compacted length under compaction, else the slots (dead
    /// included); up to the first level without a live item.
    pub fn sizes(&self, words: &[u64], compacted: bool) -> Vec<u64> {
        let word = |i: u64| words.get(i as usize).copied().unwrap_or(0);
        (0..=self.levels)
            .take_while(|&l| word(self.live(l)) > 0)
            .map(|l| if compacted { word(self.kept(l)) } else { word(self.len(l)) })
            .collect()
    }
    /// Live items entering each level, as [`LevelWords::sizes`].
    pub fn live_counts(&self, words: &[u64]) -> Vec<u64> {
        let word = |i: u64| words.get(i as usize).copied().unwrap_or(0);
        (0..=self.levels).map(|l| word(self.live(l))).take_while(|&n| n > 0).collect()
    }
}

/// One expansion's words (frontier.cuh `FrontierLevel`, passed by value as a
/// `DeviceLevel`): its input's length and live count, where its output's
/// length and live count go, whether it is the last of the bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expand {
    pub level: u32,
    pub input_len: u64,
    pub input_live: u64,
    pub output_len: u64,
    pub output_live: u64,
    pub last: bool,
}

impl Expand {
    /// The four words it names, for the engines' bounds checks.
    pub fn words(&self) -> [u64; 4] {
        [self.input_len, self.input_live, self.output_len, self.output_live]
    }
}

/// An [`Expand`] as a kernel argument: frontier.cuh `FrontierLevel`, keep in
/// sync (both sides assert 40 bytes). The level number stays on the host.
#[cfg(feature = "cuda")]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DeviceLevel {
    input_len: u64,
    input_live: u64,
    output_len: u64,
    output_live: u64,
    last: u32,
    pad: u32,
}

#[cfg(feature = "cuda")]
const _: () = assert!(std::mem::size_of::<DeviceLevel>() == 40);

// SAFETY: plain repr(C) data laid out as frontier.cuh's `FrontierLevel` (four u64, two u32).
#[cfg(feature = "cuda")]
unsafe impl cudarc::driver::DeviceRepr for DeviceLevel {}

#[cfg(feature = "cuda")]
impl From<Expand> for DeviceLevel {
    fn from(at: Expand) -> Self {
        DeviceLevel {
            input_len: at.input_len,
            input_live: at.input_live,
            output_len: at.output_len,
            output_live: at.output_live,
            last: at.last as u32,
            pad: 0,
        }
    }
}

/// The CPU twin of frontier.cuh's device functions (`frontier_n` is [`n`],
/// and so on), for the workloads' CPU engines: same rules, one thread. The
/// words an [`Expand`] names must lie in `words` (the callers check them, or
/// made the array themselves).
///
/// [`n`]: host::n
pub mod host {
    use super::{Expand, NEEDED, STATUS, status};

    /// Items the expansion reads: the input's length, or 0 when the level
    /// before held no live item. The device reads past nothing because its
    /// launches cover the capacity; a caller here clamps `n` to the slice it
    /// indexes.
    pub fn n(words: &[u64], at: Expand) -> u64 {
        if words[at.input_live as usize] == 0 { 0 } else { words[at.input_len as usize] }
    }

    /// Whether `fan_out × n` slots fit `capacity`; if not, the status says
    /// so, the need is recorded (the largest of the frame's) and the output
    /// is empty. Sets the output's length either way.
    pub fn fits(words: &mut [u64], at: Expand, n: u64, fan_out: u64, capacity: u64) -> bool {
        let fits = n <= capacity / fan_out;
        words[at.output_len as usize] = if fits { n * fan_out } else { 0 };
        if !fits {
            words[STATUS as usize] |= status::OVERFLOW;
            words[NEEDED as usize] = words[NEEDED as usize].max(n * fan_out);
        }
        fits
    }

    /// Adds the expansion's live slots to the output's live count; at the
    /// last level of the bound, a live slot means unfinished.
    pub fn count_live(words: &mut [u64], at: Expand, live: u64) {
        words[at.output_live as usize] += live;
        if at.last && live > 0 {
            words[STATUS as usize] |= status::UNFINISHED;
        }
    }

    /// A fused expansion's kept total becomes the output's length and live
    /// count: past `capacity` it is an overflow (the slots below it were
    /// written); at the last level of the bound, a live item means unfinished.
    pub fn close(words: &mut [u64], at: Expand, total: u64, capacity: u64) {
        words[at.output_len as usize] = total;
        words[at.output_live as usize] = total;
        if total > capacity {
            words[STATUS as usize] |= status::OVERFLOW;
            words[NEEDED as usize] = words[NEEDED as usize].max(total);
        }
        if at.last && total > 0 {
            words[STATUS as usize] |= status::UNFINISHED;
        }
    }

    /// Whether a stage that changes persistent state may run: not after an
    /// overflow or an unfinished loop. An array without a status word (no
    /// level ran) has nothing to report.
    pub fn ok(words: &[u64]) -> bool {
        words.get(STATUS as usize).copied().unwrap_or(0) == 0
    }
}

/// Names of the loop's stages in the workload's reports.
#[derive(Clone, Copy, Debug)]
pub struct Names {
    pub expand: &'static str,
    pub compact: &'static str,
    pub group: &'static str,
}

/// Levels a run may group, from level 1 (level 0 holds the workload's roots).
pub const MAX_GROUPED: usize = 8;

/// Grouping levels by node before their expansion (Garanzha & Loop's
/// node-major order; issue 47 item 2): a least-significant-digit radix sort
/// of the level's items by `item's node - base` over `bits` bits, one stable
/// partition by split per bit through the library (seed 000 §5.3), so that
/// the items of one node sit together and a workgroup reads the node once.
#[derive(Clone, Copy, Debug)]
pub struct Grouping {
    /// A stable algorithm: the splits of an LSD sort must keep the order.
    pub algorithm: Algorithm,
    /// Level l (1 ≤ l ≤ `count`) is sorted by `levels[l - 1]` = (bits, base).
    pub levels: [(u32, u32); MAX_GROUPED],
    pub count: u32,
}

impl Grouping {
    /// (bits, base) of `level`, if it is grouped.
    pub fn at(&self, level: u32) -> Option<(u32, u32)> {
        (level >= 1 && level <= self.count.min(MAX_GROUPED as u32)).then(|| self.levels[level as usize - 1])
    }
}

/// One split of a grouping: items whose `(node - base) >> bit & 1` is 0 go
/// first, the rest after, each half in its input order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupSplit {
    pub bit: u32,
    pub base: u32,
}

impl GroupSplit {
    /// Whether `item` ((path << 32) | node) goes to the first half.
    pub fn first(self, item: u64) -> bool {
        ((item as u32).wrapping_sub(self.base) >> self.bit) & 1 == 0
    }
}

/// What one run of the loop does.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Expansions at most (the bound).
    pub levels: u32,
    /// The frontier's compaction, or `None` to keep the dead slots.
    pub compaction: Option<Algorithm>,
    /// The compaction is fused into the workload's expand (and init), which
    /// then write only live items: no compaction stage runs.
    pub fused: bool,
    pub names: Names,
    /// Levels sorted by node before their expansion.
    pub group: Option<Grouping>,
}

/// The workload's side of the loop. An expand reads n from
/// `words[input_len]` (0 when `words[input_live]` is 0: the input held no
/// live item), writes `fan_out × n` slots to `output` (dead ones [`DEAD`]),
/// adds the live ones to `words[output_live]` and sets `words[output_len]`;
/// on overflow it follows the module's rules.
pub trait Levels {
    type B: Backend;
    type Error: From<crate::compaction::Error>;
    fn backend(&self) -> &Self::B;
    /// Runs `f` as the stage `name` of level `level`, timed.
    fn level_stage(
        &mut self,
        name: &'static str,
        level: u32,
        f: &mut dyn FnMut(&mut Self) -> Result<(), Self::Error>,
    ) -> Result<(), Self::Error>;
    fn expand(&mut self, step: Step<'_, Self::B>) -> Result<(), Self::Error>;
    /// A level's compaction: the counted select of the live items
    /// ([`Backend::select_counted`], dead items the sentinel). A workload may
    /// record it with its own stages rather than have the backend submit it.
    fn compact(
        &mut self,
        algorithm: Algorithm,
        input: &Buf<Self::B>,
        output: &mut Buf<Self::B>,
        lens: Lens<'_, Self::B>,
    ) -> Result<(), Self::Error> {
        self.backend().select_counted(algorithm, input, Keep::Sentinel(DEAD), output, lens)?;
        Ok(())
    }
    /// One split of a grouped level ([`Grouping`]): the backend's counted
    /// stable partition by [`GroupSplit::first`], the split point to
    /// `words[lens.output]`. A workload that groups nothing need not have it.
    fn group_split(
        &mut self,
        _algorithm: Algorithm,
        _input: &Buf<Self::B>,
        _split: GroupSplit,
        _output: &mut Buf<Self::B>,
        _lens: Lens<'_, Self::B>,
    ) -> Result<(), Self::Error> {
        Err(crate::compaction::Error::Backend("this workload does not group its frontier by node".into()).into())
    }
}

/// A frontier buffer of the backend.
pub type Buf<B> = <B as Backend>::Buffer<u64>;

/// What one expansion reads and writes: its words' indices, its input and
/// output frontiers and the frame's word array. Every workload's expand
/// takes these four, so they travel together. A workload's level-0 init is a
/// step too, whose input is the workload's own list (`I`: the tracer's
/// queue of u32 path ids).
pub struct Step<'a, B: Backend, I: Element = u64> {
    pub at: Expand,
    pub input: &'a B::Buffer<I>,
    pub output: &'a mut Buf<B>,
    pub words: &'a mut Buf<B>,
}

/// The loop's two buffers, each of the frontier's capacity; the workload's
/// init writes level 0 into [`Frontier::front_mut`].
pub struct Frontier<B: Backend> {
    front: Buf<B>,
    back: Buf<B>,
    capacity: u64,
    /// Poisoned slots past the capacity ([`Frontier::guarded`]).
    guard: u64,
}

/// What the guard slots of [`Frontier::guarded`] hold.
pub const POISON: u64 = 0x0bad_f00d_dead_beef;

impl<B: Backend> Frontier<B> {
    pub fn new(backend: &B, capacity: u64) -> crate::compaction::Result<Self> {
        let capacity = capacity.max(1);
        check_host(backend, capacity, 0, Limit::host())?;
        Ok(Frontier { front: backend.alloc(capacity)?, back: backend.alloc(capacity)?, capacity, guard: 0 })
    }
    /// A frontier whose buffers hold `guard` slots of [`POISON`] past the
    /// capacity, so that a test can see that nothing wrote past it
    /// ([`Frontier::guard_intact`]). The buffers are uploaded from the host
    /// (made before a frame, not inside one). The library's counted calls see
    /// the buffers' whole length as their capacity, but they read and write
    /// only below their length words, which the workload keeps within the
    /// capacity. `guard` 0 is [`Frontier::new`].
    pub fn guarded(backend: &B, capacity: u64, guard: u64) -> crate::compaction::Result<Self> {
        if guard == 0 {
            return Self::new(backend, capacity);
        }
        let capacity = capacity.max(1);
        check_host(backend, capacity, guard, Limit::host())?;
        let mut host = memory::filled_vec(capacity.saturating_add(guard), DEAD, "a frontier", CHANGE)?;
        host[capacity as usize..].fill(POISON);
        Ok(Frontier { front: backend.upload(&host)?, back: backend.upload(&host)?, capacity, guard })
    }
    /// Whether both buffers' guard slots still hold the poison (reads them
    /// back: for tests, after a frame).
    pub fn guard_intact(&self, backend: &B) -> crate::compaction::Result<bool> {
        for buffer in [&self.front, &self.back] {
            let host = backend.download(buffer)?;
            let guard = host.get(self.capacity as usize..).unwrap_or(&[]);
            if guard.len() as u64 != self.guard || guard.iter().any(|&x| x != POISON) {
                return Ok(false);
            }
        }
        Ok(true)
    }
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    pub fn front_mut(&mut self) -> &mut Buf<B> {
        &mut self.front
    }
    pub fn front(&self) -> &Buf<B> {
        &self.front
    }
}

/// What to change when a frontier does not fit memory.
const CHANGE: &str = "lower --max-frontier, or compact the frontier";

/// On the CPU a frontier's two buffers are host memory: refuse what `host`
/// cannot hold before allocating (a GPU workload checks the device's free
/// memory itself, beside its other buffers).
fn check_host<B: Backend>(backend: &B, capacity: u64, guard: u64, host: Limit) -> Result<(), memory::MemoryError> {
    if backend.kind() != BackendKind::Cpu {
        return Ok(());
    }
    let need = memory::times(capacity.saturating_add(guard), 2 * std::mem::size_of::<u64>() as u64);
    memory::check(format!("a frontier of {capacity} slots"), need, host, CHANGE)
}

/// What a user can change when a level would pass `--max-frontier`. Without
/// compaction the frontier keeps its dead slots, so compacting it is the fix;
/// with one picked it holds only live items, so the work itself must shrink.
/// `flag` is the workload's compaction flag, `less_work` its other knobs.
pub fn past_max_advice(compacted: bool, flag: &str, less_work: &str) -> String {
    if compacted {
        format!("raise --max-frontier (the frontier, compacted by {flag}, holds only live items), or {less_work}")
    } else {
        format!(
            "pick an algorithm with {flag} (without compaction the dead slots stay and the frontier grows by the \
             fan-out every level), raise --max-frontier, or {less_work}"
        )
    }
}

/// Runs the levels after the workload's init wrote level 0 (its items in
/// `f.front`, `words[at.len(0)]` and `words[at.live(0)]`): per level, compact
/// the frontier (unless `plan.compaction` is `None`), then expand it. Only
/// enqueues work: reads nothing back. The two buffers end in the roles they
/// began in (their contents are spent once the loop ends): every run of a
/// configuration then launches on the same addresses, so a frame recorded as
/// a CUDA graph can be replayed.
pub fn run<W: Levels>(
    w: &mut W,
    f: &mut Frontier<W::B>,
    words: &mut Buf<W::B>,
    at: LevelWords,
    plan: &Plan,
) -> Result<(), W::Error> {
    let mut swaps = 0u32;
    for level in 0..plan.levels.min(at.levels()) {
        let input_len = match plan.compaction {
            None => at.len(level),
            Some(_) if plan.fused => at.len(level),
            Some(alg) => {
                let (front, back) = (&f.front, &mut f.back);
                w.level_stage(plan.names.compact, level, &mut |w| {
                    let lens = Lens { words: &mut *words, input: at.len(level), output: at.kept(level) };
                    w.compact(alg, front, back, lens)
                })?;
                std::mem::swap(&mut f.front, &mut f.back);
                swaps += 1;
                at.kept(level)
            }
        };
        // A grouped level: one stable split per bit of its items' node numbers.
        if let Some((g, (bits, base))) = plan.group.and_then(|g| g.at(level).map(|at| (g, at))) {
            let alg = g.algorithm;
            for bit in 0..bits {
                let (front, back) = (&f.front, &mut f.back);
                w.level_stage(plan.names.group, level, &mut |w| {
                    let lens = Lens { words: &mut *words, input: input_len, output: at.grouped(level) };
                    w.group_split(alg, front, GroupSplit { bit, base }, back, lens)
                })?;
                std::mem::swap(&mut f.front, &mut f.back);
                swaps += 1;
            }
        }
        let e = Expand {
            level,
            input_len,
            input_live: at.live(level),
            output_len: at.len(level + 1),
            output_live: at.live(level + 1),
            last: level + 1 == plan.levels.min(at.levels()),
        };
        let (front, back) = (&f.front, &mut f.back);
        w.level_stage(plan.names.expand, level, &mut |w| {
            w.expand(Step { at: e, input: front, output: &mut *back, words: &mut *words })
        })?;
        std::mem::swap(&mut f.front, &mut f.back);
        swaps += 1;
    }
    if swaps % 2 == 1 {
        std::mem::swap(&mut f.front, &mut f.back);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::compaction::{CpuBackend, Error};

    /// A heap-ordered tree of `nodes` nodes walked from the root: every node
    /// emits its children that exist, and each visit is recorded, so the
    /// loop's bookkeeping shows in what the walk saw.
    struct Tree {
        backend: CpuBackend,
        nodes: u64,
        visited: Vec<u64>,
        stages: Vec<(&'static str, u32)>,
        /// The live items each level read, in their order.
        seen: Vec<Vec<u64>>,
        /// Emit the right child first, so that a level's items come out of node order.
        right_first: bool,
    }

    impl Levels for Tree {
        type B = CpuBackend;
        type Error = Error;
        fn backend(&self) -> &CpuBackend {
            &self.backend
        }
        fn level_stage(
            &mut self,
            name: &'static str,
            level: u32,
            f: &mut dyn FnMut(&mut Self) -> Result<(), Error>,
        ) -> Result<(), Error> {
            self.stages.push((name, level));
            f(self)
        }
        fn expand(&mut self, step: Step<'_, CpuBackend>) -> Result<(), Error> {
            let Step { at, input, output, words } = step;
            let n = host::n(words, at).min(input.len() as u64);
            if !host::fits(words, at, n, 2, output.len() as u64) {
                return Ok(());
            }
            let mut live = 0;
            let level = at.level as usize;
            self.seen.resize(self.seen.len().max(level + 1), Vec::new());
            self.seen[level].extend(input[..n as usize].iter().filter(|&&x| x != DEAD));
            for (i, &item) in input[..n as usize].iter().enumerate() {
                for c in 0..2 {
                    let turn = if self.right_first { 1 - c } else { c };
                    let child = if item == DEAD { DEAD } else { 2 * item + 1 + turn };
                    let slot = if child < self.nodes { child } else { DEAD };
                    if item != DEAD && c == 0 {
                        self.visited.push(item);
                    }
                    live += (slot != DEAD) as u64;
                    output[2 * i + c as usize] = slot;
                }
            }
            host::count_live(words, at, live);
            Ok(())
        }
        fn group_split(
            &mut self,
            algorithm: Algorithm,
            input: &Vec<u64>,
            split: GroupSplit,
            output: &mut Vec<u64>,
            lens: Lens<'_, CpuBackend>,
        ) -> Result<(), Error> {
            let first: &(dyn Fn(&u64) -> bool + Sync) = &move |x: &u64| split.first(*x);
            self.backend.partition_counted(algorithm, input, Keep::Predicate(first), output, lens)?;
            Ok(())
        }
    }

    fn walk(nodes: u64, levels: u32, capacity: u64, compaction: Option<Algorithm>) -> (Tree, Vec<u64>, LevelWords) {
        walk_grouped(nodes, levels, capacity, compaction, None, false)
    }

    fn walk_grouped(
        nodes: u64,
        levels: u32,
        capacity: u64,
        compaction: Option<Algorithm>,
        group: Option<Grouping>,
        right_first: bool,
    ) -> (Tree, Vec<u64>, LevelWords) {
        let backend = CpuBackend::new();
        let mut t = Tree { backend, nodes, visited: Vec::new(), stages: Vec::new(), seen: Vec::new(), right_first };
        let mut alloc = WordAlloc::default();
        let at = alloc.levels(levels);
        let mut words = vec![0u64; alloc.used() as usize];
        let mut f = Frontier::new(&t.backend, capacity).expect("frontier");
        f.front_mut()[0] = 0;
        words[at.len(0) as usize] = 1;
        words[at.live(0) as usize] = 1;
        let names = Names { expand: "expand", compact: "compact", group: "group" };
        let plan = Plan { levels, compaction, fused: false, names, group };
        run(&mut t, &mut f, &mut words, at, &plan).expect("run");
        t.visited.sort_unstable();
        (t, words, at)
    }

    #[test]
    fn every_node_is_visited_once_with_and_without_compaction() {
        // 100 nodes: depth 7 (levels 0..=6).
        for compaction in [None, Some(Algorithm::Lookback), Some(Algorithm::Atomic)] {
            let (t, words, at) = walk(100, 8, 1 << 12, compaction);
            assert_eq!(t.visited, (0..100).collect::<Vec<_>>(), "{compaction:?}");
            assert_eq!(words[STATUS as usize], 0, "{compaction:?}");
            assert_eq!(at.live_counts(&words), vec![1, 2, 4, 8, 16, 32, 37], "{compaction:?}");
            let sizes = at.sizes(&words, compaction.is_some());
            match compaction {
                None => assert_eq!(sizes, vec![1, 2, 4, 8, 16, 32, 64]),
                Some(_) => assert_eq!(sizes, vec![1, 2, 4, 8, 16, 32, 37]),
            }
        }
    }

    /// Issue 47 item 2: each grouped level holds exactly the items of the
    /// same level without grouping, now in node order, one split stage per
    /// bit of its node range; the levels after it hold the same items too.
    #[test]
    fn a_grouped_level_holds_the_ungrouped_items_in_node_order() {
        // Level l of the heap-ordered tree holds nodes 2^l - 1 ..= 2^(l+1) - 2: l bits from 2^l - 1.
        let mut levels = [(0, 0); MAX_GROUPED];
        for (l, slot) in levels.iter_mut().enumerate().take(4) {
            *slot = (l as u32 + 1, (1 << (l + 1)) - 1);
        }
        for (compaction, sort) in [
            (None, Algorithm::Lookback),
            (Some(Algorithm::Lookback), Algorithm::Lookback),
            (Some(Algorithm::Blelloch), Algorithm::Blelloch),
        ] {
            let grouping = Grouping { algorithm: sort, levels, count: 4 };
            let (plain, _, _) = walk_grouped(100, 8, 1 << 12, compaction, None, true);
            let (grouped, words, _) = walk_grouped(100, 8, 1 << 12, compaction, Some(grouping), true);
            assert_eq!(words[STATUS as usize], 0);
            assert_eq!(grouped.visited, (0..100).collect::<Vec<_>>(), "{compaction:?}");
            assert_eq!(plain.seen.len(), grouped.seen.len());
            for (l, (a, b)) in plain.seen.iter().zip(&grouped.seen).enumerate() {
                let (mut a, mut b_sorted) = (a.clone(), b.clone());
                a.sort_unstable();
                b_sorted.sort_unstable();
                assert_eq!(a, b_sorted, "{compaction:?}: level {l} holds other items when grouped");
                if (1..=4).contains(&l) {
                    assert_eq!(b, &b_sorted, "{compaction:?}: level {l} is not in node order");
                    // Right children first: without grouping the level is out of node order.
                    assert_ne!(&plain.seen[l], b, "{compaction:?}: level {l} was in order already");
                }
            }
            let splits = grouped.stages.iter().filter(|(n, _)| *n == "group").count();
            assert_eq!(splits, 1 + 2 + 3 + 4, "{compaction:?}: one split a bit");
        }
    }

    #[test]
    fn stages_alternate_compact_and_expand_for_every_level_of_the_bound() {
        let (t, _, _) = walk(100, 9, 1 << 12, Some(Algorithm::Lookback));
        let want: Vec<_> = (0..9).flat_map(|l| [("compact", l), ("expand", l)]).collect();
        assert_eq!(t.stages, want);
    }

    #[test]
    fn a_bound_below_the_depth_is_reported_unfinished() {
        let (t, words, _) = walk(100, 5, 1 << 12, Some(Algorithm::Lookback));
        assert_eq!(words[STATUS as usize], status::UNFINISHED);
        assert_eq!(t.visited.len(), 31, "levels 0..5 of the tree");
    }

    #[test]
    fn item2_a_frontier_the_host_cannot_hold_is_refused_before_allocating() {
        let small = Limit { bytes: 1 << 20, place: memory::Place::Host, source: "available" };
        let cpu = CpuBackend::new();
        assert!(check_host(&cpu, 1 << 10, 0, small).is_ok());
        let e = check_host(&cpu, 1 << 20, 0, small).unwrap_err().to_string();
        assert!(e.contains("a frontier of 1048576 slots needs 16.0 MiB (16777216 bytes) of host memory"), "{e}");
        assert!(e.contains("--max-frontier"), "{e}");
        // Through the constructor, with the machine's own limit: 10^12 slots fit no host.
        let e = Frontier::new(&cpu, 1_000_000_000_000).err().expect("refused").to_string();
        assert!(e.contains("a frontier of 1000000000000 slots") && e.contains("--max-frontier"), "{e}");
    }

    #[test]
    fn item9_past_max_advice_depends_on_whether_the_frontier_is_compacted() {
        let none = past_max_advice(false, "--compact-frontier", "render fewer pixels");
        assert!(none.starts_with("pick an algorithm with --compact-frontier"), "{none}");
        assert!(none.contains("--max-frontier"), "{none}");
        let some = past_max_advice(true, "--compact-frontier", "render fewer pixels");
        assert!(!some.contains("pick an algorithm"), "{some}");
        assert!(some.contains("raise --max-frontier") && some.ends_with("render fewer pixels"), "{some}");
    }

    #[test]
    fn an_overflow_stops_the_walk_and_says_what_was_needed() {
        // Without compaction the slots double every level: 64 > 40.
        let (t, words, _) = walk(100, 8, 40, None);
        assert_eq!(words[STATUS as usize], status::OVERFLOW);
        assert_eq!(words[NEEDED as usize], 64);
        assert!(t.visited.len() < 100);
    }
}
