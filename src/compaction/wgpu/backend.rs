//! The `Backend` trait over the wgpu backend: each call's checks, the
//! buffers it hands the algorithms (an [`Io`]), and the dispatch by catalog name.

use std::marker::PhantomData;

use crate::compaction::backend::{check_rejected, check_removal_len, check_sort_values};
use crate::compaction::wgpu::runtime::{NO_WORD, Variant};
use crate::compaction::wgpu::single_pass::{self, Chaining};
use crate::compaction::wgpu::{
    Count, Io, KeepRule, Plan, WgpuBackend, WgpuBuffer, WgpuPredicate, WgpuReport, atomic, billeter, blelloch, horn,
    redzone, roger, sengupta, sort,
};
use crate::compaction::{
    Algorithm, Backend, BackendKind, CompactCall, Element, Error, Keep, KeepMode, Lens, Operation, Rejected, Result,
    ScanCall, ScanElement, SortKey, check_element,
};

/// The wgpu backend indexes elements with 32-bit words (WGSL has no 64-bit
/// indices without an optional feature); no adapter binds more anyway.
fn indexable(what: &'static str, len: u64) -> Result<()> {
    if len > u32::MAX as u64 {
        return Err(Error::Backend(format!(
            "{what}: {len} elements; the wgpu backend indexes at most {} (split the input, or use --backend cuda or cpu)",
            u32::MAX
        )));
    }
    Ok(())
}

impl WgpuBackend {
    /// Radix sort's split on key bit `bit` of `elem_bytes`-byte elements
    /// (the key leads the element): keeps the elements whose bit is 0.
    pub(crate) fn bit_rule(&self, elem_bytes: usize, bit: u32) -> KeepRule {
        KeepRule {
            variant: self.variant(elem_bytes, KeepMode::Bit, None),
            flags: None,
            sentinel: [0; 8],
            pred: [bit, 0, 0, 0],
        }
    }

    fn keep_rule<T: Element>(&self, n: u64, keep: Keep<'_, Self, T>) -> Result<KeepRule> {
        let size = std::mem::size_of::<T>();
        let mut rule = KeepRule {
            variant: self.variant(size, KeepMode::Flags, None),
            flags: None,
            sentinel: [0; 8],
            pred: [0; 4],
        };
        match keep {
            Keep::Flags(flags) => {
                if flags.len != n {
                    return Err(Error::LengthMismatch { what: "flags", expected: n, actual: flags.len });
                }
                rule.flags = Some(flags.raw.clone());
            }
            Keep::Sentinel(v) => {
                bytemuck::cast_slice_mut::<u32, u8>(&mut rule.sentinel)[..size].copy_from_slice(bytemuck::bytes_of(&v));
                rule.variant = self.variant(size, KeepMode::Sentinel, None);
            }
            Keep::Predicate(p) => {
                let [a, b] = p.params;
                rule.pred = [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32];
                rule.variant = self.variant(size, KeepMode::Predicate, Some(p.source.clone()));
            }
        }
        Ok(rule)
    }

    /// The checks every call from an input to an output of its length makes.
    fn check_call(&self, algorithm: Algorithm, op: Operation, input_len: u64, output_len: u64) -> Result<()> {
        if output_len != input_len {
            return Err(Error::LengthMismatch { what: "output", expected: input_len, actual: output_len });
        }
        if !algorithm.supports(op) || !self.runs(algorithm) {
            return Err(self.not_here(algorithm));
        }
        indexable("input", input_len)?;
        Ok(())
    }

    /// Runs `record` over a call's buffers and submits it. With `lens`, a
    /// counted call: its count word is zeroed first (so that it reads 0 after
    /// a device length of 0 whatever the shaders skip) and receives the count.
    /// Without, a fresh zeroed count word.
    fn call(
        &self,
        cap: u64,
        input: &::wgpu::Buffer,
        output: &::wgpu::Buffer,
        lens: Option<Lens<'_, Self>>,
        record: impl FnOnce(&Io, &mut Plan) -> Result<()>,
    ) -> Result<WgpuReport> {
        let (plan, count) = self.plan_call(cap, input, output, lens, record)?;
        let timings = vec![self.run(plan)?];
        Ok(WgpuReport { dev: self.device().clone(), count, timings })
    }

    /// [`Backend::select_counted`] with a sentinel keep rule, recorded into
    /// `encoder` instead of submitted ([`WgpuBackend::record`]): the count
    /// lands in `words[lens.output]` when the encoder's work runs.
    pub(crate) fn record_select_counted<T: Element>(
        &self,
        algorithm: Algorithm,
        input: &WgpuBuffer<T>,
        sentinel: T,
        output: &mut WgpuBuffer<T>,
        lens: Lens<'_, Self>,
        encoder: &mut ::wgpu::CommandEncoder,
    ) -> Result<()> {
        check_element::<T>()?;
        self.check_call(algorithm, Operation::Select, input.len, output.len)?;
        let rule = self.keep_rule(input.len, Keep::Sentinel(sentinel))?;
        let (plan, _) = self.plan_call(input.len, &input.raw, &output.raw, Some(lens), |io, plan| {
            self.compact_raw(algorithm, (false, Rejected::InOrder), &rule, io, plan)
        })?;
        self.record(&plan, encoder)
    }

    /// A call's plan (see [`Self::call`]) and where its count lands.
    fn plan_call(
        &self,
        cap: u64,
        input: &::wgpu::Buffer,
        output: &::wgpu::Buffer,
        lens: Option<Lens<'_, Self>>,
        record: impl FnOnce(&Io, &mut Plan) -> Result<()>,
    ) -> Result<(Plan, Count)> {
        let mut plan = Plan::default();
        let (io, count) = match lens {
            Some(lens) => {
                lens.check(lens.words.len)?;
                plan.clear(&lens.words.raw, 8 * lens.output, Some(8));
                let io = Io {
                    cap: cap as u32,
                    len_word: 2 * lens.input as u32,
                    count_word: 2 * lens.output as u32,
                    input: input.clone(),
                    output: output.clone(),
                    words: lens.words.raw.clone(),
                };
                (io, Count::Lens(lens.output))
            }
            None => {
                let count = self.raw_buffer("a count", 8)?;
                let io = Io {
                    cap: cap as u32,
                    len_word: NO_WORD,
                    count_word: 0,
                    input: input.clone(),
                    output: output.clone(),
                    words: count.clone(),
                };
                (io, Count::Device(count))
            }
        };
        if cap > 0 {
            record(&io, &mut plan)?;
        }
        Ok((plan, count))
    }

    /// Records a select, or with `split` a partition, for the backend's own
    /// multi-pass users too (sort). Sees a capacity > 0 only.
    pub(crate) fn compact_raw(
        &self,
        algorithm: Algorithm,
        (split, rejected): (bool, Rejected),
        rule: &KeepRule,
        io: &Io,
        plan: &mut Plan,
    ) -> Result<()> {
        // A split's layout for the single pass: None selects.
        let layout = split.then_some(rejected);
        match algorithm {
            Algorithm::Lookback => single_pass::compact(self, Chaining::Decoupled, rule, io, layout, plan),
            Algorithm::Chained => single_pass::compact(self, Chaining::Chained, rule, io, layout, plan),
            Algorithm::Billeter(which) => billeter::compact(self, which, rule, io, split, plan),
            Algorithm::Horn => horn::compact(self, rule, io, split, plan),
            Algorithm::Sengupta => sengupta::compact(self, rule, io, split, plan),
            Algorithm::Blelloch => blelloch::compact(self, rule, io, split, plan),
            Algorithm::Roger => roger::compact(self, rule, io, split, plan),
            // Unstable: no partition.
            Algorithm::Atomic if !split => atomic::select(self, rule, io, plan),
            Algorithm::RedzoneBlock | Algorithm::RedzoneGrid if !split => {
                redzone::select(self, algorithm, rule, io, plan)
            }
            _ => Err(self.not_here(algorithm)),
        }
    }

    fn scan_raw(&self, algorithm: Algorithm, v: &Variant, io: &Io, plan: &mut Plan) -> Result<()> {
        match algorithm {
            Algorithm::Lookback => single_pass::scan(self, Chaining::Decoupled, v, io, plan),
            Algorithm::Chained => single_pass::scan(self, Chaining::Chained, v, io, plan),
            Algorithm::Billeter(_) => billeter::scan(self, v, io, plan),
            Algorithm::Horn => horn::scan(self, v, io, plan),
            Algorithm::Sengupta => sengupta::scan(self, v, io, plan),
            Algorithm::Blelloch => blelloch::scan(self, v, io, plan),
            _ => Err(self.not_here(algorithm)),
        }
    }

    /// The buffer's whole allocation, up to its capacity.
    pub fn download_to_capacity<T: Element>(&self, buffer: &WgpuBuffer<T>) -> Result<Vec<T>> {
        self.download_first(buffer, buffer.cap)
    }

    fn download_first<T: Element>(&self, buffer: &WgpuBuffer<T>, n: u64) -> Result<Vec<T>> {
        let bytes = n * std::mem::size_of::<T>() as u64;
        let raw = self.device().read(&buffer.raw, 0, bytes, "downloading")?;
        let mut host = vec![T::zeroed(); n as usize];
        bytemuck::cast_slice_mut::<T, u8>(&mut host).copy_from_slice(&raw);
        Ok(host)
    }

    /// A buffer of `len` elements of `bytes_each` bytes, or the typed error
    /// that says the adapter cannot hold or bind it.
    fn buffer<T>(&self, len: u64) -> Result<WgpuBuffer<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>() as u64).ok_or(Error::LengthMismatch {
            what: "allocation (bytes overflow)",
            expected: u64::MAX,
            actual: len,
        })?;
        Ok(WgpuBuffer { raw: self.raw_buffer("a buffer", bytes)?, len, cap: len, _t: PhantomData })
    }
}

impl Backend for WgpuBackend {
    type Buffer<T: Element> = WgpuBuffer<T>;
    type Predicate<T: Element> = WgpuPredicate;
    type Report = WgpuReport;

    fn kind(&self) -> BackendKind {
        BackendKind::Wgpu
    }

    fn runs(&self, algorithm: Algorithm) -> bool {
        Self::implements(algorithm)
    }

    fn upload<T: Element>(&self, data: &[T]) -> Result<WgpuBuffer<T>> {
        let buffer = self.buffer::<T>(data.len() as u64)?;
        let bytes: &[u8] = bytemuck::cast_slice(data);
        if !bytes.is_empty() {
            let padded = bytes.len().next_multiple_of(4);
            let dev = self.device();
            dev.scoped(
                || "uploading".into(),
                || {
                    if padded == bytes.len() {
                        dev.queue.write_buffer(&buffer.raw, 0, bytes);
                    } else {
                        let mut p = bytes.to_vec();
                        p.resize(padded, 0);
                        dev.queue.write_buffer(&buffer.raw, 0, &p);
                    }
                },
            )?;
        }
        Ok(buffer)
    }

    fn alloc<T: Element>(&self, len: u64) -> Result<WgpuBuffer<T>> {
        self.buffer::<T>(len)
    }

    fn download<T: Element>(&self, buffer: &WgpuBuffer<T>) -> Result<Vec<T>> {
        self.download_first(buffer, buffer.len)
    }

    fn len<T: Element>(&self, buffer: &WgpuBuffer<T>) -> u64 {
        buffer.len
    }

    fn compact<T: Element>(&self, call: CompactCall<'_, Self, T>) -> Result<WgpuReport> {
        let CompactCall { algorithm, split, rejected, input, keep, output, lens } = call;
        check_element::<T>()?;
        let op = if split { Operation::Partition } else { Operation::Select };
        self.check_call(algorithm, op, input.len, output.len)?;
        check_rejected(algorithm, split, rejected)?;
        let rule = self.keep_rule(input.len, keep)?;
        self.call(input.len, &input.raw, &output.raw, lens, |io, plan| {
            self.compact_raw(algorithm, (split, rejected), &rule, io, plan)
        })
    }

    fn scan<S: ScanElement>(&self, call: ScanCall<'_, Self, S>) -> Result<WgpuReport> {
        let ScanCall { algorithm, input, output, lens } = call;
        self.check_call(algorithm, Operation::Scan, input.len, output.len)?;
        let v = self.variant(std::mem::size_of::<S>(), KeepMode::Flags, None);
        self.call(input.len, &input.raw, &output.raw, lens, |io, plan| self.scan_raw(algorithm, &v, io, plan))
    }

    fn radix_sort<K: SortKey>(
        &self,
        algorithm: Algorithm,
        keys: &mut WgpuBuffer<K>,
        values: Option<&mut WgpuBuffer<u32>>,
    ) -> Result<WgpuReport> {
        if !algorithm.supports(Operation::Sort) || !self.runs(algorithm) {
            return Err(self.not_here(algorithm));
        }
        check_sort_values(keys.len, values.as_ref().map(|v| v.len))?;
        indexable("keys", keys.len)?;
        let timings = sort::radix_sort(self, algorithm, keys, values)?;
        Ok(WgpuReport { dev: self.device().clone(), count: Count::Host(keys.len), timings })
    }

    unsafe fn remove_unchecked<T: Element>(
        &self,
        algorithm: Algorithm,
        data: &mut WgpuBuffer<T>,
        removal: &WgpuBuffer<u64>,
    ) -> Result<WgpuReport> {
        check_removal_len::<T>(data.len, removal.len)?;
        if !algorithm.supports(Operation::Remove) {
            return Err(self.not_here(algorithm));
        }
        indexable("data", data.len)?;
        let v = self.variant(std::mem::size_of::<T>(), KeepMode::Flags, None);
        let count = self.raw_buffer("a count", 8)?;
        let mut plan = Plan::default();
        redzone::remove(self, algorithm, &v, &data.raw, data.len, &removal.raw, removal.len, &count, &mut plan)?;
        let timings = vec![self.run(plan)?];
        Ok(WgpuReport { dev: self.device().clone(), count: Count::Device(count), timings })
    }
}
