//! The CPU backend (rayon). It is the executable specification every GPU
//! kernel is checked against, the fallback without an NVIDIA GPU, and what CI
//! runs. Each algorithm keeps its paper's parallel structure, phase by phase:
//! GPU blocks and warps become rayon tasks and fixed-width lane groups.

use std::time::Instant;

use rayon::prelude::*;

use crate::compaction::backend::check_rejected;
use crate::compaction::{
    Algorithm, Backend, BackendKind, CompactCall, Element, Error, Keep, Lens, Operation, PhaseTime, Rejected, Report,
    Result, ScanCall, ScanElement, SortKey, check_element, same_bits,
};

pub mod atomic;
pub mod billeter;
pub mod blelloch;
pub mod chained;
pub mod horn;
pub mod lookback;
pub mod redzone;
pub mod roger;
pub mod sengupta;
pub mod sequential;
pub mod single_pass;
pub mod site;
pub mod sort;
pub mod stencil;
#[cfg(test)]
mod testing;

/// Every CPU algorithm's tuning, one plain struct per algorithm.
#[derive(Clone, Debug, Default)]
pub struct CpuTuning {
    pub billeter: billeter::BilleterTuning,
    pub sengupta: sengupta::SenguptaTuning,
    pub roger: roger::RogerTuning,
    pub single_pass: single_pass::SinglePassTuning,
    pub atomic: atomic::AtomicTuning,
    pub redzone: redzone::RedzoneTuning,
    pub stencil: stencil::StencilTuning,
}

/// The CPU backend. Buffers are `Vec`s; predicates are closures.
#[derive(Clone, Debug, Default)]
pub struct CpuBackend {
    pub tuning: CpuTuning,
}

impl CpuBackend {
    pub fn new() -> Self {
        Self::default()
    }
}

/// A CPU run: the count and the wall-clock time of each phase.
#[derive(Clone, Debug)]
pub struct CpuReport {
    pub count: u64,
    pub phases: Vec<PhaseTime>,
    /// A counted call's lens word, where the count went (as on a GPU, the
    /// report does not hand it out).
    pub count_word: Option<u64>,
}

impl Report for CpuReport {
    fn count(&self) -> Result<u64> {
        match self.count_word {
            Some(word) => Err(Error::CountInLens { word }),
            None => Ok(self.count),
        }
    }
    fn phases(&self) -> Result<Vec<PhaseTime>> {
        Ok(self.phases.clone())
    }
}

/// Records a run's phases under their paper names.
#[derive(Default)]
pub struct Phases(Vec<PhaseTime>);

impl Phases {
    /// Runs `f` as the phase `name` and records its wall-clock time.
    pub fn time<R>(&mut self, name: &'static str, f: impl FnOnce() -> R) -> R {
        let start = Instant::now();
        let r = f();
        self.0.push(PhaseTime { name, time: start.elapsed() });
        r
    }

    /// Records a phase timed elsewhere (e.g. summed over many passes).
    pub fn push(&mut self, name: &'static str, time: std::time::Duration) {
        self.0.push(PhaseTime { name, time });
    }

    fn report(self, count: usize) -> CpuReport {
        CpuReport { count: count as u64, phases: self.0, count_word: None }
    }
}

/// A raw output pointer shared by the tasks of one phase. The algorithms
/// compute disjoint output slots for every element, which is what makes the
/// concurrent writes sound; each call site says why its slots are disjoint.
#[derive(Clone, Copy)]
pub struct Scatter<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: `Scatter` only hands out writes to slots the caller proves disjoint.
unsafe impl<T: Send> Send for Scatter<T> {}
unsafe impl<T: Send> Sync for Scatter<T> {}

impl<T: Copy> Scatter<T> {
    pub fn new(out: &mut [T]) -> Self {
        Scatter { ptr: out.as_mut_ptr(), len: out.len() }
    }

    /// # Safety
    /// No other task writes or reads slot `i` during the phase.
    #[inline]
    pub unsafe fn write(&self, i: usize, v: T) {
        assert!(i < self.len, "scatter out of bounds: {i} >= {}", self.len);
        // SAFETY: in bounds (checked above); exclusive by the caller's contract.
        unsafe { self.ptr.add(i).write(v) }
    }

    /// # Safety
    /// Slot `i` was written earlier in a phase that has finished, and no task
    /// writes it now.
    #[inline]
    pub unsafe fn read(&self, i: usize) -> T {
        assert!(i < self.len, "scatter out of bounds: {i} >= {}", self.len);
        // SAFETY: as above.
        unsafe { self.ptr.add(i).read() }
    }
}

/// One select or partition, as every CPU algorithm takes it: the kept
/// elements go to `output` in input order (unstable algorithms: in any order);
/// with `split`, the rejected ones follow them (seed 000 §5.3's stream split).
/// `output` is as long as `input`.
pub struct Job<'a, T, K: ?Sized> {
    pub input: &'a [T],
    /// The keep rule as an index predicate.
    pub keep: &'a K,
    pub output: &'a mut [T],
    pub split: bool,
}

/// The keep rule as the CPU algorithms take it: an index predicate that
/// rayon tasks may call at once.
pub trait KeepIndex: Fn(usize) -> bool + Sync {}
impl<F: Fn(usize) -> bool + Sync + ?Sized> KeepIndex for F {}

/// Mark phase shared by the flag-consuming algorithms: one 0/1 word per element.
pub fn mark(n: usize, keep: &impl KeepIndex) -> Vec<u32> {
    (0..n).into_par_iter().map(|i| keep(i) as u32).collect()
}

/// The scan-based compactions (Horn, Sengupta, Blelloch): each scans the 0/1
/// flags its own way and places the elements by that scan; marking and the
/// choice of the offsets' width are shared.
pub trait FlagScan {
    /// Scans the flags in `job.keep` with offsets of type `S`, places the
    /// elements and returns the kept count. The input is not empty.
    fn place<T: Copy + Send + Sync, S: ScanElement>(&self, job: Job<'_, T, [u32]>, ph: &mut Phases) -> usize;
}

/// Mark, then `algorithm`'s scan and placement.
pub fn mark_and_place<T: Copy + Send + Sync>(
    algorithm: impl FlagScan,
    job: Job<'_, T, impl KeepIndex>,
    ph: &mut Phases,
) -> usize {
    let Job { input, keep, output, split } = job;
    let flags = ph.time("mark", || mark(input.len(), keep));
    if input.is_empty() {
        return 0;
    }
    let job = Job { input, keep: &flags[..], output, split };
    // u32 offsets are exact below 2^32 elements; above, the scan widens to u64.
    if input.len() <= u32::MAX as usize {
        algorithm.place::<T, u32>(job, ph)
    } else {
        algorithm.place::<T, u64>(job, ph)
    }
}

/// Cuts `xs` into consecutive mutable pieces of the given lengths: disjoint
/// output ranges that tasks can fill in safe code.
pub fn cut<X>(mut xs: &mut [X], lens: impl Iterator<Item = usize>) -> Vec<&mut [X]> {
    lens.map(|len| {
        let (head, tail) = std::mem::take(&mut xs).split_at_mut(len);
        xs = tail;
        head
    })
    .collect()
}

fn check_len(what: &'static str, expected: usize, actual: usize) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(Error::LengthMismatch { what, expected: expected as u64, actual: actual as u64 })
    }
}

fn unsupported(algorithm: Algorithm, op: Operation) -> Error {
    let others: Vec<_> = Algorithm::ALL.iter().filter(|a| a.supports(op)).map(|a| a.name()).collect();
    Error::Unsupported {
        algorithm: algorithm.name(),
        operation: op.name(),
        hint: format!("; these do: {}", others.join(", ")),
    }
}

/// Checks a removal-index list: every index below `len`, none twice.
pub fn check_removal(removal: &[u64], len: usize) -> Result<()> {
    let mut seen = vec![u32::MAX; len];
    for (pos, &idx) in removal.iter().enumerate() {
        if idx >= len as u64 {
            return Err(Error::RemovalOutOfRange { index: idx, position: pos as u64, len: len as u64 });
        }
        let slot = &mut seen[idx as usize];
        if *slot != u32::MAX {
            return Err(Error::RemovalDuplicate { index: idx, first: *slot as u64, second: pos as u64 });
        }
        *slot = pos as u32;
    }
    Ok(())
}

impl CpuBackend {
    /// Select, or with `split` partition, through any algorithm, with the keep
    /// rule as an index predicate.
    fn compact_by<T: Element>(
        &self,
        algorithm: Algorithm,
        (split, rejected): (bool, Rejected),
        input: &[T],
        keep: &impl KeepIndex,
        output: &mut [T],
    ) -> Result<CpuReport> {
        if split && !algorithm.supports(Operation::Partition) {
            return Err(unsupported(algorithm, Operation::Partition));
        }
        check_rejected(algorithm, split, rejected)?;
        let t = &self.tuning;
        let mut ph = Phases::default();
        let job = Job { input, keep, output, split };
        let count = match algorithm {
            Algorithm::Sequential if split => sequential::partition(input, keep, job.output, rejected, &mut ph),
            Algorithm::Sequential => sequential::select(input, keep, job.output, &mut ph),
            Algorithm::Horn => mark_and_place(horn::Horn, job, &mut ph),
            Algorithm::Sengupta => mark_and_place(sengupta::Sengupta(&t.sengupta), job, &mut ph),
            Algorithm::Blelloch => mark_and_place(blelloch::Blelloch, job, &mut ph),
            Algorithm::Roger => roger::compact(&t.roger, job, &mut ph),
            Algorithm::Billeter(v) => billeter::compact(v, &t.billeter, job, &mut ph),
            Algorithm::Chained => single_pass::compact(chained::Chained, &t.single_pass, job, rejected, &mut ph),
            Algorithm::Lookback => single_pass::compact(lookback::Decoupled, &t.single_pass, job, rejected, &mut ph),
            Algorithm::Stencil => stencil::compact(&t.stencil, job, &mut ph),
            // Select only: a partition was refused above.
            Algorithm::Atomic => atomic::select(&t.atomic, input, keep, job.output, &mut ph),
            Algorithm::RedzoneBlock | Algorithm::RedzoneGrid => {
                // Redzone removes in place by an index list. As seed 004 §5 does for
                // its competitors' inputs, phase 1 marks: the rejected indices are
                // gathered (in parallel, any order), then the copy is compacted in place.
                let removal: Vec<u64> = ph.time("mark", || {
                    (0..input.len()).into_par_iter().filter(|&i| !keep(i)).map(|i| i as u64).collect()
                });
                let output = job.output;
                ph.time("copy", || output.par_iter_mut().zip(input.par_iter()).for_each(|(o, i)| *o = *i));
                redzone::remove(algorithm, &t.redzone, output, &removal, &mut ph)
            }
        };
        Ok(ph.report(count))
    }
}

impl CpuBackend {
    /// Select or partition (`split`) over whole slices (the flags hold at least
    /// `input.len()`). One monomorphised call per rule, so the hot loops never
    /// go through a `dyn` for flags or sentinels.
    fn compact_n<T: Element>(
        &self,
        algorithm: Algorithm,
        split: (bool, Rejected),
        input: &[T],
        keep: Keep<'_, Self, T>,
        output: &mut [T],
    ) -> Result<CpuReport> {
        match keep {
            Keep::Flags(flags) => self.compact_by(algorithm, split, input, &|i| flags[i] != 0, output),
            Keep::Sentinel(v) => self.compact_by(algorithm, split, input, &|i| !same_bits(&input[i], &v), output),
            Keep::Predicate(p) => self.compact_by(algorithm, split, input, &|i| p(&input[i]), output),
        }
    }

    fn scan_n<S: ScanElement>(&self, algorithm: Algorithm, input: &[S], output: &mut [S]) -> Result<CpuReport> {
        if !algorithm.supports(Operation::Scan) {
            return Err(unsupported(algorithm, Operation::Scan));
        }
        let t = &self.tuning;
        let mut ph = Phases::default();
        let total = match algorithm {
            Algorithm::Sequential => sequential::scan(input, output, &mut ph),
            Algorithm::Horn => horn::scan(input, output, &mut ph),
            Algorithm::Sengupta => sengupta::scan(&t.sengupta, input, output, &mut ph),
            Algorithm::Blelloch => blelloch::scan(input, output, &mut ph),
            Algorithm::Billeter(_) => billeter::scan(&t.billeter, input, output, &mut ph),
            Algorithm::Chained => single_pass::scan(chained::Chained, &t.single_pass, input, output, &mut ph),
            Algorithm::Lookback => single_pass::scan(lookback::Decoupled, &t.single_pass, input, output, &mut ph),
            _ => return Err(unsupported(algorithm, Operation::Scan)),
        };
        Ok(CpuReport { count: total.to_u64(), phases: ph.0, count_word: None })
    }
}

/// The checks every select and partition makes.
fn check_compact<T: Element>(input: &[T], keep: &Keep<'_, CpuBackend, T>, output: &[T]) -> Result<()> {
    check_element::<T>()?;
    check_len("output", input.len(), output.len())?;
    match keep {
        Keep::Flags(flags) => check_len("flags", input.len(), flags.len()),
        _ => Ok(()),
    }
}

/// A counted call: `run` over the first n elements, n the input word clamped
/// to the capacity; its count then moves into the output word.
fn counted(
    lens: Lens<'_, CpuBackend>,
    capacity: usize,
    run: impl FnOnce(usize) -> Result<CpuReport>,
) -> Result<CpuReport> {
    lens.check(lens.words.len() as u64)?;
    let n = lens.words[lens.input as usize].min(capacity as u64) as usize;
    let mut report = run(n)?;
    lens.words[lens.output as usize] = report.count;
    report.count_word = Some(lens.output);
    Ok(report)
}

impl Backend for CpuBackend {
    type Buffer<T: Element> = Vec<T>;
    type Predicate<T: Element> = dyn Fn(&T) -> bool + Sync;
    type Report = CpuReport;

    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn runs(&self, _algorithm: Algorithm) -> bool {
        true
    }

    fn upload<T: Element>(&self, data: &[T]) -> Result<Vec<T>> {
        Ok(data.to_vec())
    }

    fn alloc<T: Element>(&self, len: u64) -> Result<Vec<T>> {
        Ok(crate::memory::filled_vec(len, T::zeroed(), "a CPU buffer", "ask for fewer elements")?)
    }

    fn download<T: Element>(&self, buffer: &Vec<T>) -> Result<Vec<T>> {
        Ok(buffer.clone())
    }

    fn len<T: Element>(&self, buffer: &Vec<T>) -> u64 {
        buffer.len() as u64
    }

    fn compact<T: Element>(&self, call: CompactCall<'_, Self, T>) -> Result<CpuReport> {
        let CompactCall { algorithm, split, rejected, input, keep, output, lens } = call;
        check_compact(input, &keep, output)?;
        let split = (split, rejected);
        match lens {
            None => self.compact_n(algorithm, split, input, keep, output),
            Some(lens) => {
                counted(lens, input.len(), |n| self.compact_n(algorithm, split, &input[..n], keep, &mut output[..n]))
            }
        }
    }

    fn scan<S: ScanElement>(&self, call: ScanCall<'_, Self, S>) -> Result<CpuReport> {
        let ScanCall { algorithm, input, output, lens } = call;
        check_len("output", input.len(), output.len())?;
        match lens {
            None => self.scan_n(algorithm, input, output),
            Some(lens) => counted(lens, input.len(), |n| self.scan_n(algorithm, &input[..n], &mut output[..n])),
        }
    }

    fn radix_sort<K: SortKey>(
        &self,
        algorithm: Algorithm,
        keys: &mut Vec<K>,
        values: Option<&mut Vec<u32>>,
    ) -> Result<CpuReport> {
        if !algorithm.supports(Operation::Sort) {
            return Err(unsupported(algorithm, Operation::Sort));
        }
        if let Some(v) = &values {
            check_len("values", keys.len(), v.len())?;
        }
        let mut ph = Phases::default();
        sort::radix_sort(self, algorithm, keys, values, &mut ph)?;
        Ok(ph.report(keys.len()))
    }

    unsafe fn remove_unchecked<T: Element>(
        &self,
        algorithm: Algorithm,
        data: &mut Vec<T>,
        removal: &Vec<u64>,
    ) -> Result<CpuReport> {
        check_element::<T>()?;
        if !algorithm.supports(Operation::Remove) {
            return Err(unsupported(algorithm, Operation::Remove));
        }
        if removal.len() > data.len() {
            return Err(Error::LengthMismatch {
                what: "removal-index list (at most one entry per element)",
                expected: data.len() as u64,
                actual: removal.len() as u64,
            });
        }
        let mut ph = Phases::default();
        let count = redzone::remove(algorithm, &self.tuning.redzone, data, removal, &mut ph);
        Ok(ph.report(count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lens(words: &mut Vec<u64>, input: u64, output: u64) -> Lens<'_, CpuBackend> {
        Lens { words, input, output }
    }

    #[test]
    fn counted_calls_read_the_length_word_and_write_the_count_word() {
        let b = CpuBackend::new();
        let input: Vec<u32> = (0..100).collect();
        let keep = |x: &u32| x.is_multiple_of(3);
        let pred: &(dyn Fn(&u32) -> bool + Sync) = &keep;
        for alg in Algorithm::ALL {
            // n = 40 of a capacity of 100; the other words stay as they were.
            let mut words = vec![7, 40, u64::MAX, 9];
            let mut out = vec![u32::MAX; 100];
            let r = b.select_counted(alg, &input, Keep::Predicate(pred), &mut out, lens(&mut words, 1, 2)).unwrap();
            let want: Vec<u32> = (0..40).filter(|x| x % 3 == 0).collect();
            assert_eq!(words, [7, 40, want.len() as u64, 9], "{alg}");
            let mut got = out[..want.len()].to_vec();
            if !alg.stable() {
                got.sort_unstable();
            }
            assert_eq!(got, want, "{alg}");
            assert!(out[40..].iter().all(|&x| x == u32::MAX), "{alg} wrote past n");
            assert!(matches!(r.count(), Err(Error::CountInLens { word: 2 })), "{alg}");
            assert!(!r.phases().unwrap().is_empty(), "{alg}: phases still work");
            if alg.supports(Operation::Partition) {
                let mut words = vec![40, 0];
                b.partition_counted(alg, &input, Keep::Predicate(pred), &mut out, lens(&mut words, 0, 1)).unwrap();
                let rejected = (0..40).filter(|x| x % 3 != 0);
                let want_split: Vec<u32> = want.iter().copied().chain(rejected).collect();
                assert_eq!(words[1], want.len() as u64, "{alg}");
                assert_eq!(out[..40], want_split, "{alg}");
            }
            if alg.supports(Operation::Scan) {
                let values: Vec<u64> = (1..=100).collect();
                let mut sums = vec![0; 100];
                let mut words = vec![0, 10];
                b.exclusive_scan_counted(alg, &values, &mut sums, lens(&mut words, 1, 0)).unwrap();
                assert_eq!(words[0], 55, "{alg}: the total of the first 10");
                assert_eq!(sums[..10], [0, 1, 3, 6, 10, 15, 21, 28, 36, 45], "{alg}");
            }
        }
    }

    #[test]
    fn counted_lengths_above_the_capacity_are_clamped() {
        let b = CpuBackend::new();
        let input: Vec<u64> = (0..50).collect();
        let mut out = vec![0; 50];
        for len in [50, 51, u64::MAX] {
            let mut words = vec![len, 0];
            b.select_counted(Algorithm::Lookback, &input, Keep::Sentinel(7), &mut out, lens(&mut words, 0, 1)).unwrap();
            assert_eq!(words, [len, 49], "length {len}");
            let mut words = vec![0, len];
            b.exclusive_scan_counted(Algorithm::Blelloch, &input, &mut out, lens(&mut words, 1, 0)).unwrap();
            assert_eq!(words, [49 * 50 / 2, len], "length {len}");
        }
        // Length 0 still writes the count.
        let mut words = vec![0, 123];
        b.select_counted(Algorithm::Horn, &input, Keep::Sentinel(7), &mut out, lens(&mut words, 0, 1)).unwrap();
        assert_eq!(words, [0, 0]);
    }

    #[test]
    fn counted_calls_reject_one_word_for_both_and_words_out_of_range() {
        let b = CpuBackend::new();
        let input: Vec<u32> = (0..10).collect();
        let mut out = vec![u32::MAX; 10];
        let mut words = vec![5, 5];
        let err = b.select_counted(Algorithm::Atomic, &input, Keep::Sentinel(1), &mut out, lens(&mut words, 1, 1));
        assert!(matches!(err, Err(Error::LensAliased { word: 1 })), "{err:?}");
        let err = b.partition_counted(Algorithm::Roger, &input, Keep::Sentinel(1), &mut out, lens(&mut words, 0, 2));
        assert!(matches!(err, Err(Error::LensOutOfRange { which: "count", word: 2, words: 2 })), "{err:?}");
        let err = b.exclusive_scan_counted(Algorithm::Horn, &input, &mut out, lens(&mut words, 9, 0));
        assert!(matches!(err, Err(Error::LensOutOfRange { which: "input length", .. })), "{err:?}");
        assert_eq!(words, [5, 5], "a rejected call leaves the words alone");
        assert!(out.iter().all(|&x| x == u32::MAX), "a rejected call leaves the output alone");
        // The capacity rules of the host-length calls hold too.
        let mut short = vec![0u32; 9];
        let err = b.select_counted(Algorithm::Lookback, &input, Keep::Sentinel(1), &mut short, lens(&mut words, 0, 1));
        assert!(matches!(err, Err(Error::LengthMismatch { what: "output", .. })), "{err:?}");
    }
}
