//! The `Backend` trait over the CUDA backend: each call's checks, the
//! device addresses it hands the algorithms (an `Io`, whose `Extent` carries a
//! counted call's length word), and the dispatch by catalog name.

use std::marker::PhantomData;

use crate::compaction::backend::{check_rejected, check_removal_len, check_sort_values};
use crate::compaction::cuda::runtime::{KeepMode, Stages, Variant, driver_error};
use crate::compaction::cuda::{
    Count, CudaBackend, CudaBuffer, CudaPredicate, CudaReport, Extent, Io, KeepArgs, atomic, billeter, blelloch, horn,
    raw_ptr, redzone, roger, sengupta, single_pass, sort,
};
use crate::compaction::{
    Algorithm, Backend, BackendKind, CompactCall, Element, Error, Keep, Lens, Operation, Rejected, Result, ScanCall,
    ScanElement, SortKey, check_element,
};
use crate::cuda_runtime;

impl CudaBackend {
    fn keep_args<T: Element>(&self, n: u64, keep: Keep<'_, Self, T>) -> Result<(Variant, KeepArgs)> {
        let size = std::mem::size_of::<T>();
        let mut args = KeepArgs::default();
        let variant = match keep {
            Keep::Flags(flags) => {
                if flags.len() != n {
                    return Err(Error::LengthMismatch { what: "flags", expected: n, actual: flags.len() });
                }
                args.flags = flags.ptr();
                Variant::new(size, KeepMode::Flags)
            }
            Keep::Sentinel(v) => {
                bytemuck::cast_slice_mut::<u32, u8>(&mut args.sentinel)[..size].copy_from_slice(bytemuck::bytes_of(&v));
                Variant::new(size, KeepMode::Sentinel)
            }
            Keep::Predicate(p) => {
                args.param = p.params;
                let mut v = Variant::new(size, KeepMode::Predicate);
                v.predicate = Some(p.source.clone());
                v
            }
        };
        Ok((variant, args))
    }

    /// The checks every select and partition makes, and the kernels'
    /// specialisation and keep rule. `input`'s length is the capacity of a counted call.
    fn compact_args<T: Element>(
        &self,
        algorithm: Algorithm,
        op: Operation,
        input: &CudaBuffer<T>,
        keep: Keep<'_, Self, T>,
        output: &CudaBuffer<T>,
    ) -> Result<(Variant, KeepArgs)> {
        check_element::<T>()?;
        self.check_call(algorithm, op, input.len, output.len)?;
        self.keep_args(input.len, keep)
    }

    fn scan_args<S: ScanElement>(
        &self,
        algorithm: Algorithm,
        input: &CudaBuffer<S>,
        output: &CudaBuffer<S>,
    ) -> Result<Variant> {
        self.check_call(algorithm, Operation::Scan, input.len, output.len)?;
        Ok(Variant::new(std::mem::size_of::<S>(), KeepMode::Flags))
    }

    /// The checks every call from an input to an output of its length makes.
    fn check_call(&self, algorithm: Algorithm, op: Operation, input_len: u64, output_len: u64) -> Result<()> {
        if output_len != input_len {
            return Err(Error::LengthMismatch { what: "output", expected: input_len, actual: output_len });
        }
        if !algorithm.supports(op) || !self.runs(algorithm) {
            return Err(self.not_here(algorithm));
        }
        Ok(())
    }

    /// The device addresses of a counted call over a capacity of `cap`
    /// elements. Zeroes the count word in stream order (a memset, not a copy
    /// from the host), so that it reads 0 after a device length of 0 whatever
    /// the kernels skip, and so that the algorithms that add to their count
    /// (atomic) start from 0, as with the host-length calls' fresh word.
    fn counted_io(&self, cap: u64, input: u64, output: u64, lens: &mut Lens<'_, Self>) -> Result<Io> {
        lens.check(lens.words.len)?;
        let at = 8 * lens.output as usize;
        let mut word = lens.words.raw.slice_mut(at..at + 8);
        self.stream.memset_zeros(&mut word).map_err(driver_error("zeroing the count word"))?;
        let base = lens.words.ptr();
        Ok(Io { ext: Extent { cap, len: base + 8 * lens.input }, input, output, count: base + 8 * lens.output })
    }

    /// Runs `run` over a call's device addresses and reports its count. With
    /// `lens`, a counted call over a capacity of `cap`: the addresses
    /// `counted_io` gives, the count staying in the caller's lens word.
    /// Without, a call of host length `cap` with a fresh zeroed count word.
    fn call(
        &self,
        count_what: &'static str,
        cap: u64,
        input: u64,
        output: u64,
        lens: Option<Lens<'_, Self>>,
        run: impl FnOnce(Io, &mut Stages) -> Result<()>,
    ) -> Result<CudaReport> {
        let mut st = Stages::new(&self.stream);
        let count = match lens {
            Some(mut lens) => {
                run(self.counted_io(cap, input, output, &mut lens)?, &mut st)?;
                Count::Lens(lens.output)
            }
            None => {
                let count = self.stream.alloc_zeros::<u64>(1).map_err(driver_error(count_what))?;
                run(Io { ext: Extent::host(cap), input, output, count: raw_ptr(&count) }, &mut st)?;
                Count::Device(count)
            }
        };
        Ok(CudaReport { count, stages: st })
    }

    /// The single-pass algorithms' chaining (`lookback`: decoupled look-back).
    fn chaining(algorithm: Algorithm) -> single_pass::Chaining {
        match algorithm {
            Algorithm::Chained => single_pass::Chaining::Chained,
            _ => single_pass::Chaining::Decoupled,
        }
    }

    /// Whether `algorithm`'s scan adds a carry as it stores
    /// ([`Self::scan_with_carry`]): the single-pass ones.
    pub(crate) fn scan_takes_carry(algorithm: Algorithm) -> bool {
        matches!(algorithm, Algorithm::Lookback | Algorithm::Chained)
    }

    /// A counted exclusive scan (`lookback` or `chained`) that adds `carry`
    /// to every output; its own total goes to the lens word.
    pub(crate) fn scan_with_carry<S: ScanElement>(
        &self,
        algorithm: Algorithm,
        input: &CudaBuffer<S>,
        output: &mut CudaBuffer<S>,
        lens: Lens<'_, Self>,
        carry: single_pass::Carry,
    ) -> Result<CudaReport> {
        if !Self::scan_takes_carry(algorithm) {
            return Err(self.not_here(algorithm));
        }
        let variant = self.scan_args(algorithm, input, output)?;
        self.call("allocating the total", input.len, input.ptr(), output.ptr(), Some(lens), |io, st| {
            if io.ext.cap == 0 {
                return Ok(());
            }
            single_pass::scan(self, Self::chaining(algorithm), &variant, io, carry, st)
        })
    }

    fn scan_raw(&self, algorithm: Algorithm, v: &Variant, io: Io, st: &mut Stages) -> Result<()> {
        if io.ext.cap == 0 {
            return Ok(()); // nothing to enqueue: the total was zeroed
        }
        match algorithm {
            Algorithm::Lookback | Algorithm::Chained => {
                single_pass::scan(self, Self::chaining(algorithm), v, io, single_pass::Carry::default(), st)
            }
            Algorithm::Billeter(_) => billeter::scan(self, v, io, st),
            Algorithm::Horn => horn::scan(self, v, io, st),
            Algorithm::Sengupta => sengupta::scan(self, v, io, st),
            Algorithm::Blelloch => blelloch::scan(self, v, io, st),
            _ => Err(self.not_here(algorithm)),
        }
    }

    /// Select, or with `split` partition, by device addresses; also for the
    /// backend's own multi-pass users (sort). The algorithms' entry points
    /// here and in `scan_raw` see a capacity > 0 only.
    pub(crate) fn compact_raw(
        &self,
        algorithm: Algorithm,
        (split, rejected): (bool, Rejected),
        v: &Variant,
        args: KeepArgs,
        io: Io,
        st: &mut Stages,
    ) -> Result<()> {
        // A split's layout for the single pass: None selects.
        let layout = split.then_some(rejected);
        if io.ext.cap == 0 {
            return Ok(()); // nothing to enqueue: the count was zeroed
        }
        match algorithm {
            Algorithm::Lookback => {
                single_pass::compact(self, single_pass::Chaining::Decoupled, v, args, io, layout, st)
            }
            Algorithm::Chained => single_pass::compact(self, single_pass::Chaining::Chained, v, args, io, layout, st),
            Algorithm::Billeter(b) => billeter::compact(self, b, v, args, io, split, st),
            Algorithm::Horn => horn::compact(self, v, args, io, split, st),
            Algorithm::Sengupta => sengupta::compact(self, v, args, io, split, st),
            Algorithm::Blelloch => blelloch::compact(self, v, args, io, split, st),
            Algorithm::Roger => roger::compact(self, v, args, io, split, st),
            // Unstable: no partition.
            Algorithm::Atomic if !split => atomic::select(self, v, args, io, st),
            Algorithm::RedzoneBlock | Algorithm::RedzoneGrid if !split => {
                redzone::select(self, algorithm, v, args, io, st)
            }
            _ => Err(self.not_here(algorithm)),
        }
    }

    /// The buffer's whole allocation, up to its capacity: what lies past its
    /// length too (a counted call's stale content, a guard region).
    pub fn download_to_capacity<T: Element>(&self, buffer: &CudaBuffer<T>) -> Result<Vec<T>> {
        self.download_first(buffer, buffer.capacity())
    }

    /// The buffer's first `n` elements (`n` at most its capacity).
    fn download_first<T: Element>(&self, buffer: &CudaBuffer<T>, n: u64) -> Result<Vec<T>> {
        let mut host = vec![T::zeroed(); n as usize];
        if !host.is_empty() {
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut host);
            let len = bytes.len();
            // To pageable memory the copy returns when done: no separate wait.
            cuda_runtime::dtoh_into(&self.stream, &buffer.raw.slice(..len), bytes, "downloading")?;
        }
        Ok(host)
    }

    fn not_here(&self, algorithm: Algorithm) -> Error {
        Error::NotOnBackend { algorithm: algorithm.name(), backend: "cuda" }
    }
}

impl Backend for CudaBackend {
    type Buffer<T: Element> = CudaBuffer<T>;
    type Predicate<T: Element> = CudaPredicate;
    type Report = CudaReport;

    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn runs(&self, algorithm: Algorithm) -> bool {
        Self::implements(algorithm)
    }

    fn upload<T: Element>(&self, data: &[T]) -> Result<CudaBuffer<T>> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let raw =
            if bytes.is_empty() { self.scratch(1)? } else { cuda_runtime::htod(&self.stream, bytes, "uploading")? };
        Ok(CudaBuffer { raw, len: data.len() as u64, _t: PhantomData })
    }

    fn alloc<T: Element>(&self, len: u64) -> Result<CudaBuffer<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>() as u64).ok_or(Error::LengthMismatch {
            what: "allocation (bytes overflow)",
            expected: u64::MAX,
            actual: len,
        })?;
        Ok(CudaBuffer { raw: self.scratch(bytes)?, len, _t: PhantomData })
    }

    fn download<T: Element>(&self, buffer: &CudaBuffer<T>) -> Result<Vec<T>> {
        self.download_first(buffer, buffer.len)
    }

    fn len<T: Element>(&self, buffer: &CudaBuffer<T>) -> u64 {
        buffer.len
    }

    fn compact<T: Element>(&self, call: CompactCall<'_, Self, T>) -> Result<CudaReport> {
        let CompactCall { algorithm, split, rejected, input, keep, output, lens } = call;
        let op = if split { Operation::Partition } else { Operation::Select };
        let (variant, args) = self.compact_args(algorithm, op, input, keep, output)?;
        check_rejected(algorithm, split, rejected)?;
        self.call("allocating the count", input.len, input.ptr(), output.ptr(), lens, |io, st| {
            self.compact_raw(algorithm, (split, rejected), &variant, args, io, st)
        })
    }

    fn scan<S: ScanElement>(&self, call: ScanCall<'_, Self, S>) -> Result<CudaReport> {
        let ScanCall { algorithm, input, output, lens } = call;
        let variant = self.scan_args(algorithm, input, output)?;
        self.call("allocating the total", input.len, input.ptr(), output.ptr(), lens, |io, st| {
            self.scan_raw(algorithm, &variant, io, st)
        })
    }

    fn radix_sort<K: SortKey>(
        &self,
        algorithm: Algorithm,
        keys: &mut CudaBuffer<K>,
        values: Option<&mut CudaBuffer<u32>>,
    ) -> Result<CudaReport> {
        if !algorithm.supports(Operation::Sort) || !self.runs(algorithm) {
            return Err(self.not_here(algorithm));
        }
        check_sort_values(keys.len, values.as_ref().map(|v| v.len))?;
        let mut st = Stages::new(&self.stream);
        sort::radix_sort(self, algorithm, keys, values, &mut st)?;
        Ok(CudaReport { count: Count::Host(keys.len), stages: st })
    }

    unsafe fn remove_unchecked<T: Element>(
        &self,
        algorithm: Algorithm,
        data: &mut CudaBuffer<T>,
        removal: &CudaBuffer<u64>,
    ) -> Result<CudaReport> {
        check_removal_len::<T>(data.len, removal.len)?;
        if !algorithm.supports(Operation::Remove) {
            return Err(self.not_here(algorithm));
        }
        let variant = Variant::new(std::mem::size_of::<T>(), KeepMode::Flags);
        let count = self.stream.alloc_zeros::<u64>(1).map_err(driver_error("allocating the count"))?;
        let mut st = Stages::new(&self.stream);
        redzone::remove(
            self,
            algorithm,
            &variant,
            data.ptr(),
            data.len,
            removal.ptr(),
            removal.len,
            raw_ptr(&count),
            &mut st,
        )?;
        Ok(CudaReport { count: Count::Device(count), stages: st })
    }
}
