//! Host side of kernels/compaction/billeter.cu: Billeter, Olsson and
//! Assarsson's three-phase compaction (seed 000 §3-4) with one warp per virtual
//! processor, its stream split (§5.3) and its global prefix sum (§5.2). The
//! phases are named as in the CPU port (src/compaction/cpu/billeter/):
//! `count`, `scan`, `move`, and for the prefix sum `sum`, `scan`, `prefix`.
//!
//! Every call only enqueues kernels: phase 2 writes the count (or the scan's
//! total) to `io.count` on the device, and phase 3 of a split reads it there.
//! P and the scratch are sized from the capacity; the kernels cut the ranges
//! from the device length (billeter.cu).

use cudarc::driver::{LaunchConfig, PushKernelArg};
use smart_default::SmartDefault;

use crate::compaction::cuda::runtime::{BILLETER, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, Io, KeepArgs, raw_ptr};
use crate::compaction::{Billeter, CompactSimd, Error, OutputMode, Result};

/// SIMD width S: one warp (§4.1).
const LANES: u64 = 32;
/// Threads of the single phase-2 block (`BT_SCAN_THREADS` in billeter.cu).
const SCAN_THREADS: u32 = 1024;

/// Billeter's tuning: the machine model of §3.1 mapped onto a GPU.
#[derive(Clone, Debug, SmartDefault)]
pub struct BilleterTuning {
    /// Virtual processors (warps) per SM, used when `processors` is None.
    /// The paper ran 480 on a GTX 280's 30 SMs, half of its 32 resident warps
    /// per SM, as few as hide latency (§4.1). 32 per SM is half of a Hopper
    /// SM's 64; `unroll` adds the loads in flight that its longer memory
    /// latency needs. 4224 processors on a 132-SM H100.
    #[default(32)]
    pub processors_per_sm: u32,
    /// Virtual processors P, overriding `processors_per_sm` (for sweeps).
    /// Never more than the number of 32-element groups.
    #[default(None)]
    pub processors: Option<u32>,
    /// Warps per block (`REAP_BILLETER_WARPS`): 8, so 4 blocks per SM make up
    /// the default 32 warps.
    #[default(8)]
    pub warps_per_block: u32,
    /// Groups a warp loads before processing them (`REAP_BILLETER_UNROLL`): the
    /// counterpart of the paper's 64-bit loads (§4.3), 4 independent loads per
    /// lane in flight.
    #[default(4)]
    pub unroll: u32,
    /// Selective output: a warp stages a stream when that stream's share of its
    /// range is at least this ratio, and scatters it otherwise (§4.2, Figure 3).
    /// As on the CPU; worth a sweep, since a warp's scattered stores already
    /// land in one contiguous run on current GPUs.
    #[default(0.5)]
    pub staged_ratio: f64,
}

impl BilleterTuning {
    fn specialise(&self, v: &Variant) -> Variant {
        v.with(&[("REAP_BILLETER_WARPS", self.warps_per_block.max(1)), ("REAP_BILLETER_UNROLL", self.unroll.max(1))])
    }

    /// P for `n` elements on `b` (a counted call's capacity): at least 1, at
    /// most one processor per group.
    fn processors(&self, b: &CudaBackend, n: u64) -> u64 {
        let p = self.processors.unwrap_or_else(|| self.processors_per_sm.saturating_mul(b.info.sms));
        (p.max(1) as u64).min(n.div_ceil(LANES).max(1))
    }

    /// One warp per processor.
    fn config(&self, procs: u64) -> Result<LaunchConfig> {
        let warps = self.warps_per_block.max(1);
        let blocks = u32::try_from(procs.div_ceil(warps as u64))
            .map_err(|_| Error::Backend(format!("{procs} processors need more than 2^32 blocks")))?;
        Ok(LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (warps * 32, 1, 1), shared_mem_bytes: 0 })
    }
}

/// Phase 2 is one block: P is small and the phase is not time critical (§3.2).
const SCAN_CONFIG: LaunchConfig =
    LaunchConfig { grid_dim: (1, 1, 1), block_dim: (SCAN_THREADS, 1, 1), shared_mem_bytes: 0 };

fn simd_name(alg: Billeter) -> &'static str {
    match alg.simd {
        CompactSimd::Prefix => "prefix",
        CompactSimd::Popc => "popc",
    }
}

fn output_name(alg: Billeter) -> &'static str {
    match alg.output {
        OutputMode::Scattered => "scattered",
        OutputMode::Staged => "staged",
        OutputMode::Buffered => "buffered",
        OutputMode::Selective => "selective",
    }
}

/// Select, or with `split` the stream split (§5.3): kept first, rejected
/// after, both in input order.
pub fn compact(
    b: &CudaBackend,
    alg: Billeter,
    v: &Variant,
    keep: KeepArgs,
    io: Io,
    split: bool,
    st: &mut Stages,
) -> Result<()> {
    let t = &b.tuning.billeter;
    let v = t.specialise(v);
    let procs = t.processors(b, io.ext.cap);
    let cfg = t.config(procs)?;
    let groups = io.ext.cap.div_ceil(LANES);
    let popc = alg.simd == CompactSimd::Popc;
    // Counts and offsets (one u64 per processor), then popc's ballot words
    // (one u32 per group). Every word is written before it is read.
    let scratch = b.scratch(procs * 16 + if popc { groups * 4 } else { 0 })?;
    let counts = raw_ptr(&scratch);
    let offsets = counts + procs * 8;
    let masks = if popc { offsets + procs * 8 } else { 0 };

    // Every kernel compiled (on first use) before the first stage starts.
    let f_count = b.kernels().function(&BILLETER, &v, &format!("billeter_{}_count", simd_name(alg)))?;
    let f_scan = b.kernels().function(&BILLETER, &v, "billeter_scan_counts")?;
    let name =
        format!("billeter_{}_{}_{}", simd_name(alg), output_name(alg), if split { "partition" } else { "select" });
    let f_move = b.kernels().function(&BILLETER, &v, &name)?;

    st.run("count", || {
        let mut l = b.stream().launch_builder(&f_count);
        l.arg(&io.ext).arg(&io.input).arg(&keep).arg(&procs).arg(&counts).arg(&masks);
        // SAFETY: matches `billeter_*_count(Extent, const Elem*, KeepArgs, u64, u64*, u32*)`; input holds the
        // capacity's elements, counts `procs` u64 and masks (popc only; unused by prefix) one u32 per group.
        unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching billeter count"))
    })?;

    st.run("scan", || {
        let mut l = b.stream().launch_builder(&f_scan);
        l.arg(&procs).arg(&counts).arg(&offsets).arg(&io.count);
        // SAFETY: matches `billeter_scan_counts(u64, const u64*, u64*, u64*)`; counts and offsets hold
        // `procs` u64, count is one u64.
        unsafe { l.launch(SCAN_CONFIG) }.map(drop).map_err(driver_error("launching billeter scan"))
    })?;

    st.run("move", || {
        let mut l = b.stream().launch_builder(&f_move);
        l.arg(&io.ext).arg(&io.input).arg(&keep).arg(&io.output).arg(&io.count);
        l.arg(&procs).arg(&counts).arg(&offsets).arg(&masks).arg(&t.staged_ratio);
        // SAFETY: matches `BT_MOVE` in billeter.cu: (Extent, const Elem*, KeepArgs, Elem*, const u64*, u64,
        // const u64*, const u64*, const u32*, double); input and output hold the capacity's elements, the
        // scratch words were all written by the two kernels before on this stream.
        unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching billeter move"))
    })?;
    drop(scratch); // freed in stream order, after the kernels
    Ok(())
}

/// Exclusive scan of u32 or u64 values (§5.2); the total goes to `io.count`.
pub fn scan(b: &CudaBackend, v: &Variant, io: Io, st: &mut Stages) -> Result<()> {
    if v.elem_bytes != 4 && v.elem_bytes != 8 {
        return Err(Error::Backend(format!("billeter scans u32 or u64 values, not {}-byte ones", v.elem_bytes)));
    }
    let t = &b.tuning.billeter;
    let v = t.specialise(v);
    let procs = t.processors(b, io.ext.cap);
    let cfg = t.config(procs)?;
    // Sums and offsets, one value each per processor, 8 bytes wide at most.
    let scratch = b.scratch(procs * 16)?;
    let sums = raw_ptr(&scratch);
    let offsets = sums + procs * 8;

    let f_sum = b.kernels().function(&BILLETER, &v, "billeter_sum")?;
    let f_scan = b.kernels().function(&BILLETER, &v, "billeter_scan_sums")?;
    let f_prefix = b.kernels().function(&BILLETER, &v, "billeter_prefix")?;

    st.run("sum", || {
        let mut l = b.stream().launch_builder(&f_sum);
        l.arg(&io.ext).arg(&io.input).arg(&procs).arg(&sums);
        // SAFETY: matches `billeter_sum(Extent, const Elem*, u64, Elem*)`; input holds the capacity's values,
        // sums `procs`.
        unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching billeter sum"))
    })?;

    st.run("scan", || {
        let mut l = b.stream().launch_builder(&f_scan);
        l.arg(&procs).arg(&sums).arg(&offsets).arg(&io.count);
        // SAFETY: matches `billeter_scan_sums(u64, const Elem*, Elem*, u64*)`; sums and offsets hold
        // `procs` values, count is one u64.
        unsafe { l.launch(SCAN_CONFIG) }.map(drop).map_err(driver_error("launching billeter scan"))
    })?;

    st.run("prefix", || {
        let mut l = b.stream().launch_builder(&f_prefix);
        l.arg(&io.ext).arg(&io.input).arg(&io.output).arg(&procs).arg(&offsets);
        // SAFETY: matches `billeter_prefix(Extent, const Elem*, Elem*, u64, const Elem*)`; input and output
        // hold the capacity's values, offsets `procs`, written by the scan before on this stream.
        unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching billeter prefix"))
    })?;
    drop(scratch);
    Ok(())
}
