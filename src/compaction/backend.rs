//! The backend trait: one API over the CPU, CUDA and wgpu backends, so
//! that callers pick an algorithm and a backend at run time and change nothing else.

use std::time::Duration;

use crate::compaction::{Algorithm, Element, Error, Result, ScanElement, SortKey};

/// Which backend a run used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    Cpu,
    Cuda,
    Wgpu,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
            BackendKind::Wgpu => "wgpu",
        }
    }

    /// Whether the workloads on this backend fuse `algorithm`'s sites into
    /// their producers: every single-pass algorithm, on the CPU, on CUDA
    /// (compaction/site.cuh) and on wgpu (compaction/site.wgsl, where a
    /// device too small for the stable sites' bindings runs `lookback` and
    /// `chained` separately: the engines' `fuses` say).
    pub fn fuses(self, algorithm: Algorithm) -> bool {
        let _ = self;
        algorithm.fuses()
    }
}

/// How a GPU backend compiles the keep rule into a kernel (`REAP_KEEP` in
/// kernels/compaction/common.cuh, `KEEP` in shaders/compaction/common.wgsl).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeepMode {
    Flags = 0,
    Sentinel = 1,
    Predicate = 2,
    /// Radix sort's split: keep elements whose key bit `param[0]` is 0.
    Bit = 3,
}

impl KeepMode {
    pub const ALL: [KeepMode; 4] = [KeepMode::Flags, KeepMode::Sentinel, KeepMode::Predicate, KeepMode::Bit];
}

/// Which elements survive a compaction.
pub enum Keep<'a, B: Backend + ?Sized, T: Element> {
    /// Keep element i where `flags[i] != 0`.
    Flags(&'a B::Buffer<u8>),
    /// Keep every element whose bits differ from the sentinel's.
    Sentinel(T),
    /// Keep elements the backend's predicate accepts (a closure on the CPU,
    /// CUDA source text on the GPU).
    Predicate(&'a B::Predicate<T>),
}

impl<B: Backend + ?Sized, T: Element> Clone for Keep<'_, B, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<B: Backend + ?Sized, T: Element> Copy for Keep<'_, B, T> {}

/// Where a counted call reads its input's length and writes its count: two
/// words of one u64 buffer of the backend, so that a loop keeps every level's
/// lengths in one array and never reads them on the host between calls.
pub struct Lens<'a, B: Backend + ?Sized> {
    pub words: &'a mut B::Buffer<u64>,
    /// Index of the word holding the input's length n.
    pub input: u64,
    /// Index of the word that receives the count.
    pub output: u64,
}

impl<B: Backend + ?Sized> Lens<'_, B> {
    /// Both indices inside a buffer of `words` words, and distinct: the
    /// count must not overwrite the length that the same call reads.
    pub fn check(&self, words: u64) -> Result<()> {
        for (which, word) in [("input length", self.input), ("count", self.output)] {
            if word >= words {
                return Err(Error::LensOutOfRange { which, word, words });
            }
        }
        if self.input == self.output {
            return Err(Error::LensAliased { word: self.input });
        }
        Ok(())
    }
}

/// The order of a partition's rejected half.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Rejected {
    /// In input order after the kept ones: both halves stable. A single pass
    /// cannot know where that half starts until every element is counted, so
    /// `lookback` and `chained` count first (or reverse after, on the CPU).
    #[default]
    InOrder,
    /// In reverse input order from the end of the output backwards, as CUB's
    /// `DevicePartition::If` leaves them: element i rejected goes to
    /// `n - 1 - (rejected before i)`. No pass needs the kept total first.
    /// Only algorithms whose [`Algorithm::reverses_rejected`] is true offer it.
    Reversed,
}

impl Rejected {
    pub const ALL: [Rejected; 2] = [Rejected::InOrder, Rejected::Reversed];
    pub fn name(self) -> &'static str {
        match self {
            Rejected::InOrder => "in-order",
            Rejected::Reversed => "reversed",
        }
    }
}

/// Applies the `key=value,key=value` list in the environment variable `var`
/// through `set`: the GPU backends' tuning overrides for experiments
/// (`REAP_CUDA_TUNING`, `REAP_WGPU_TUNING`).
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub(crate) fn tuning_from_env(
    var: &str,
    backend: &'static str,
    mut set: impl FnMut(&str, &str) -> Result<()>,
) -> Result<()> {
    let Ok(list) = std::env::var(var) else { return Ok(()) };
    for item in list.split(',').filter(|s| !s.trim().is_empty()) {
        let (key, value) = item.split_once('=').ok_or_else(|| Error::Tuning {
            algorithm: backend,
            why: format!("{var} entry `{item}` is not key=value"),
        })?;
        set(key.trim(), value.trim())?;
    }
    Ok(())
}

/// The checks every backend's radix sort makes: values, if any, as many as keys.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub(crate) fn check_sort_values(keys: u64, values: Option<u64>) -> Result<()> {
    match values {
        Some(v) if v != keys => Err(Error::LengthMismatch { what: "values", expected: keys, actual: v }),
        _ => Ok(()),
    }
}

/// The checks every backend's in-place removal makes before it runs: a
/// supported element size and at most one index per element.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub(crate) fn check_removal_len<T: Element>(data: u64, removal: u64) -> Result<()> {
    crate::compaction::check_element::<T>()?;
    if removal > data {
        return Err(Error::LengthMismatch {
            what: "removal-index list (at most one entry per element)",
            expected: data,
            actual: removal,
        });
    }
    Ok(())
}

/// Refuses a partition with the rejected half reversed from an algorithm
/// that does not offer it; every backend checks this first.
pub(crate) fn check_rejected(algorithm: Algorithm, split: bool, rejected: Rejected) -> Result<()> {
    if split && rejected == Rejected::Reversed && !algorithm.reverses_rejected() {
        let others: Vec<_> = Algorithm::ALL.iter().filter(|a| a.reverses_rejected()).map(|a| a.name()).collect();
        return Err(Error::Unsupported {
            algorithm: algorithm.name(),
            operation: "a partition with the rejected half reversed",
            hint: format!("; these do: {} (every stable algorithm partitions in order)", others.join(", ")),
        });
    }
    Ok(())
}

/// A select (`split` false) or partition (`split` true) as the backend's
/// [`Backend::compact`] receives it; with `lens`, a counted call.
pub struct CompactCall<'a, B: Backend + ?Sized, T: Element> {
    pub algorithm: Algorithm,
    pub split: bool,
    /// The rejected half's order (a partition's; a select ignores it).
    pub rejected: Rejected,
    pub input: &'a B::Buffer<T>,
    pub keep: Keep<'a, B, T>,
    pub output: &'a mut B::Buffer<T>,
    pub lens: Option<Lens<'a, B>>,
}

/// An exclusive scan as the backend's [`Backend::scan`] receives it; with
/// `lens`, a counted call.
pub struct ScanCall<'a, B: Backend + ?Sized, S: ScanElement> {
    pub algorithm: Algorithm,
    pub input: &'a B::Buffer<S>,
    pub output: &'a mut B::Buffer<S>,
    pub lens: Option<Lens<'a, B>>,
}

/// One named phase of a run and how long it took (device events on a GPU).
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseTime {
    pub name: &'static str,
    pub time: Duration,
}

/// What a run leaves behind. On a GPU the count stays on the device and the
/// phase times stay in events until asked for; asking may synchronise.
pub trait Report {
    /// Elements kept (select, partition: the split point), elements left
    /// (remove), or the scan's total. A counted call (`*_counted`) leaves its
    /// count in its [`Lens`] word instead and answers [`Error::CountInLens`].
    fn count(&self) -> Result<u64>;
    /// The run's phases in order, named as in the algorithm's paper.
    fn phases(&self) -> Result<Vec<PhaseTime>>;
    /// Sum of the phases.
    fn total(&self) -> Result<Duration> {
        Ok(self.phases()?.iter().map(|p| p.time).sum())
    }
    /// From the start of the first phase to the end of the last, gaps
    /// between launches included: what a caller waits.
    fn span(&self) -> Result<Duration> {
        self.total()
    }
}

/// A compaction backend. Buffers live where the backend computes; `upload`
/// and `download` cross to the host.
pub trait Backend {
    type Buffer<T: Element>;
    type Predicate<T: Element>: ?Sized;
    type Report: Report;

    fn kind(&self) -> BackendKind;

    /// Whether this backend runs the algorithm at all (`Algorithm::supports`
    /// says which operations it has).
    fn runs(&self, algorithm: Algorithm) -> bool;

    fn upload<T: Element>(&self, data: &[T]) -> Result<Self::Buffer<T>>;
    /// A buffer of `len` elements with unspecified contents.
    fn alloc<T: Element>(&self, len: u64) -> Result<Self::Buffer<T>>;
    fn download<T: Element>(&self, buffer: &Self::Buffer<T>) -> Result<Vec<T>>;
    fn len<T: Element>(&self, buffer: &Self::Buffer<T>) -> u64;

    /// The one entry of select and partition, counted or not: each backend
    /// makes its checks and runs the algorithm here; callers use the four
    /// named methods below.
    fn compact<T: Element>(&self, call: CompactCall<'_, Self, T>) -> Result<Self::Report>;

    /// The one entry of the exclusive scan, counted or not (see [`Backend::compact`]).
    fn scan<S: ScanElement>(&self, call: ScanCall<'_, Self, S>) -> Result<Self::Report>;

    /// Out-of-place compaction: the kept elements go to `output[..count]`,
    /// in input order when the algorithm is stable. `output` must hold as many
    /// elements as `input`; what lies past the count is unspecified.
    fn select<T: Element>(
        &self,
        algorithm: Algorithm,
        input: &Self::Buffer<T>,
        keep: Keep<'_, Self, T>,
        output: &mut Self::Buffer<T>,
    ) -> Result<Self::Report> {
        let rejected = Rejected::InOrder;
        self.compact(CompactCall { algorithm, split: false, rejected, input, keep, output, lens: None })
    }

    /// Stream split: kept elements to `output[..count]`, rejected ones to
    /// `output[count..]`, both halves in input order.
    fn partition<T: Element>(
        &self,
        algorithm: Algorithm,
        input: &Self::Buffer<T>,
        keep: Keep<'_, Self, T>,
        output: &mut Self::Buffer<T>,
    ) -> Result<Self::Report> {
        self.partition_with(algorithm, input, keep, output, Rejected::InOrder)
    }

    /// [`Backend::partition`] with the rejected half in the order `rejected`
    /// names ([`Rejected::Reversed`]: CUB's contract, one pass cheaper).
    fn partition_with<T: Element>(
        &self,
        algorithm: Algorithm,
        input: &Self::Buffer<T>,
        keep: Keep<'_, Self, T>,
        output: &mut Self::Buffer<T>,
        rejected: Rejected,
    ) -> Result<Self::Report> {
        self.compact(CompactCall { algorithm, split: true, rejected, input, keep, output, lens: None })
    }

    /// Exclusive prefix sum; the report's count is the total.
    fn exclusive_scan<S: ScanElement>(
        &self,
        algorithm: Algorithm,
        input: &Self::Buffer<S>,
        output: &mut Self::Buffer<S>,
    ) -> Result<Self::Report> {
        self.scan(ScanCall { algorithm, input, output, lens: None })
    }

    /// [`Backend::select`] with the length on the backend's side: `input`'s
    /// length is its capacity (`output` and a `Keep::Flags` buffer hold as
    /// many), the call compacts the first `n = min(words[lens.input],
    /// capacity)` elements (a length above the capacity is clamped to it) and
    /// writes the kept count to `words[lens.output]`, also when n is 0. On a
    /// GPU it only enqueues work sized from the capacity: no host
    /// synchronisation, no read of n or of the count. Nothing at or past n in
    /// `output` is specified, nothing past the capacity is touched, and the
    /// report's `count()` is an error that points at the word. The two words
    /// must differ.
    fn select_counted<T: Element>(
        &self,
        algorithm: Algorithm,
        input: &Self::Buffer<T>,
        keep: Keep<'_, Self, T>,
        output: &mut Self::Buffer<T>,
        lens: Lens<'_, Self>,
    ) -> Result<Self::Report> {
        let rejected = Rejected::InOrder;
        self.compact(CompactCall { algorithm, split: false, rejected, input, keep, output, lens: Some(lens) })
    }

    /// [`Backend::partition`] of the first n elements, read and counted as in
    /// [`Backend::select_counted`]: the kept count (the split point) goes to
    /// `words[lens.output]`, the rejected elements to `output[count..n]`.
    fn partition_counted<T: Element>(
        &self,
        algorithm: Algorithm,
        input: &Self::Buffer<T>,
        keep: Keep<'_, Self, T>,
        output: &mut Self::Buffer<T>,
        lens: Lens<'_, Self>,
    ) -> Result<Self::Report> {
        let rejected = Rejected::InOrder;
        self.compact(CompactCall { algorithm, split: true, rejected, input, keep, output, lens: Some(lens) })
    }

    /// [`Backend::exclusive_scan`] of the first n values, n read as in
    /// [`Backend::select_counted`]; the total of those n goes to `words[lens.output]`.
    fn exclusive_scan_counted<S: ScanElement>(
        &self,
        algorithm: Algorithm,
        input: &Self::Buffer<S>,
        output: &mut Self::Buffer<S>,
        lens: Lens<'_, Self>,
    ) -> Result<Self::Report> {
        self.scan(ScanCall { algorithm, input, output, lens: Some(lens) })
    }

    /// Radix sort by repeated split (one split per key bit), stable; `values`
    /// move with their keys.
    fn radix_sort<K: SortKey>(
        &self,
        algorithm: Algorithm,
        keys: &mut Self::Buffer<K>,
        values: Option<&mut Self::Buffer<u32>>,
    ) -> Result<Self::Report>;

    /// In place, remove the elements at the listed indices; the survivors end
    /// up in `data[..count]` (unstable). The list is checked for duplicates and
    /// out-of-range indices first, on the host: O(k), and a bad list must never
    /// reach the algorithms.
    fn remove<T: Element>(
        &self,
        algorithm: Algorithm,
        data: &mut Self::Buffer<T>,
        removal: &Self::Buffer<u64>,
    ) -> Result<Self::Report> {
        let list = self.download(removal)?;
        crate::compaction::cpu::check_removal(&list, self.len(data) as usize)?;
        // SAFETY: checked just above.
        unsafe { self.remove_unchecked(algorithm, data, removal) }
    }

    /// [`Backend::remove`] without the O(k) check of the list.
    ///
    /// # Safety
    /// Every index must be below the data's length and appear once: the
    /// algorithms fill holes concurrently, and a duplicate hole would be
    /// written by two threads at once.
    unsafe fn remove_unchecked<T: Element>(
        &self,
        algorithm: Algorithm,
        data: &mut Self::Buffer<T>,
        removal: &Self::Buffer<u64>,
    ) -> Result<Self::Report>;
}
