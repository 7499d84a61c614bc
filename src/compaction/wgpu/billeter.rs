//! Host side of shaders/compaction/billeter.wgsl: Billeter, Olsson and
//! Assarsson's three-phase compaction (seed 000 §3-4) with one subgroup per
//! virtual processor (or 32 invocations through workgroup memory where the
//! adapter has no subgroups), its stream split (§5.3) and its global prefix
//! sum (§5.2). The phases are named as on CUDA (`src/compaction/cuda/billeter.rs`):
//! `count`, `scan`, `move`, and for the prefix sum `sum`, `scan`, `prefix`.
//!
//! Phase 2 writes the count (or the scan's total) to the call's count word
//! on the device, and phase 3 of a split reads it there. P and the scratch
//! are sized from the capacity; the shaders cut the ranges from the device
//! length.

use smart_default::SmartDefault;

use crate::compaction::wgpu::runtime::{BILLETER, Params, Variant};
use crate::compaction::wgpu::{Bind, Io, KeepRule, Plan, WgpuBackend};
use crate::compaction::{Billeter, CompactSimd, Error, OutputMode, Result};

/// SIMD width of a virtual processor without subgroups (`VP_WIDTH` in workgroup.wgsl).
const VP_WIDTH: u32 = 32;
/// Invocations of the single phase-2 workgroup, as CUDA's `BT_SCAN_THREADS`
/// where the adapter allows.
const SCAN_WG: u32 = 1024;
/// Most groups a processor loads at once (`BT_MAX_UNROLL` in billeter.wgsl).
const MAX_UNROLL: u32 = 8;

/// Billeter's tuning: the machine model of §3.1 mapped onto a GPU. The keys
/// are CUDA's (`billeter.processors_per_sm` …) plus `billeter.sms`.
#[derive(Clone, Debug, SmartDefault)]
pub struct BilleterTuning {
    /// Virtual processors per core (SM, compute unit), used when `processors`
    /// is None: 32, as on CUDA.
    #[default(32)]
    pub processors_per_sm: u32,
    /// Cores the default P assumes: wgpu does not tell how many an adapter
    /// has, so an H100's 132 SMs stand in (P = 4224, CUDA's on that card).
    #[default(132)]
    pub sms: u32,
    /// Virtual processors P, overriding `processors_per_sm` (for sweeps).
    /// Never more than the number of granules (32 elements, or S where larger).
    #[default(None)]
    pub processors: Option<u32>,
    /// Workgroup size in 32-invocation warps: WG = 32 × this, rounded up to
    /// a multiple of the subgroup size (and down to what the adapter's
    /// workgroup memory holds). A workgroup runs WG / S processors.
    #[default(8)]
    pub warps_per_block: u32,
    /// Groups a processor loads before processing them (UNROLL, 1 to 8): the
    /// counterpart of the paper's 64-bit loads (§4.3).
    #[default(4)]
    pub unroll: u32,
    /// Selective output: a processor stages a stream when that stream's share
    /// of its range is at least this ratio, and scatters it otherwise (§4.2).
    #[default(0.5)]
    pub staged_ratio: f64,
}

/// Which compactSIMD path runs on `b` (for reports): the popc flavour's
/// ballot and the prefix flavour's lane prefix sum both go through subgroup
/// operations where the adapter has them, else through workgroup memory.
pub fn path(b: &WgpuBackend) -> &'static str {
    if b.subgroups { "subgroup ballot" } else { "workgroup memory" }
}

/// [`path`] for one flavour: what moves a group's flags between lanes.
pub fn path_of(b: &WgpuBackend, which: Billeter) -> &'static str {
    match (b.subgroups, which.simd) {
        (false, _) => "workgroup memory",
        (true, CompactSimd::Popc) => "subgroup ballot",
        (true, CompactSimd::Prefix) => "subgroup prefix sum",
    }
}

/// The machine one call runs on.
struct Machine {
    /// Invocations per workgroup.
    wg: u32,
    /// Elements per granule: ranges are whole granules.
    gran: u32,
    /// Virtual processors P.
    procs: u32,
    /// Workgroups of phases 1 and 3: at least P SIMD groups.
    groups: u32,
}

impl Machine {
    /// `slot_bytes`: workgroup memory per invocation beyond the helpers' own.
    fn new(b: &WgpuBackend, cap: u32, slot_bytes: u32) -> Machine {
        let t = &b.tuning.billeter;
        let dev = b.device();
        // The widest S the shaders may see: the subgroup size at its largest.
        let s = if b.subgroups {
            match dev.subgroup_sizes.1 {
                0 => 128,
                s => s.clamp(4, 128).next_power_of_two(),
            }
        } else {
            VP_WIDTH
        };
        let gran = s.max(32);
        let max_wg = dev.limits.max_compute_invocations_per_workgroup.min(dev.limits.max_compute_workgroup_size_x);
        let mut wg = (t.warps_per_block.clamp(1, 32) * 32).next_multiple_of(s).min((max_wg / s).max(1) * s);
        // The staging slots and the helpers' words (workgroup.wgsl) must fit.
        let fits =
            |wg: u32| wg as u64 * (slot_bytes as u64 + 12) + 64 <= dev.limits.max_compute_workgroup_storage_size as u64;
        while wg > s && !fits(wg) {
            wg -= s;
        }
        let granules = cap.div_ceil(gran).max(1);
        let procs = t.processors.unwrap_or_else(|| t.processors_per_sm.saturating_mul(t.sms)).clamp(1, granules);
        Machine { wg, gran, procs, groups: procs.div_ceil(wg / s) }
    }
}

fn output(alg: Billeter) -> u32 {
    match alg.output {
        OutputMode::Scattered => 0,
        OutputMode::Staged => 1,
        OutputMode::Buffered => 2,
        OutputMode::Selective => 3,
    }
}

/// Select, or with `split` the stream split (§5.3): kept first, rejected
/// after, both in input order.
pub fn compact(b: &WgpuBackend, which: Billeter, rule: &KeepRule, io: &Io, split: bool, plan: &mut Plan) -> Result<()> {
    let t = &b.tuning.billeter;
    let popc = which.simd == CompactSimd::Popc;
    let streams = if split { 2 } else { 1 };
    let staging = which.output != OutputMode::Scattered;
    let slot_bytes = if staging { streams * rule.variant.elem_bytes } else { 0 };
    let m = Machine::new(b, io.cap, slot_bytes);
    let unroll = t.unroll.clamp(1, MAX_UNROLL);
    let popc_flag = u32::from(popc);
    let slots = if staging { streams * m.wg } else { 1 };

    // Counts and offsets, one u64 per processor; popc's ballots, one bit per
    // element of the capacity's granules. Every word read is written first.
    let counts = b.raw_buffer("billeter's counts", m.procs as u64 * 8)?;
    let offsets = b.raw_buffer("billeter's offsets", m.procs as u64 * 8)?;
    let masks = if popc {
        Some(b.raw_buffer("billeter's ballots", io.cap.div_ceil(m.gran) as u64 * m.gran as u64 / 8)?)
    } else {
        None
    };

    // Every pipeline compiled (on first use) before the first stage is recorded.
    let v = &rule.variant;
    let f_count =
        b.pipeline(&BILLETER, v, "billeter_count", &[("WG", m.wg), ("UNROLL", unroll), ("BT_POPC", popc_flag)])?;
    let f_scan = b.pipeline(&BILLETER, v, "billeter_scan", &[("WG", scan_wg(b))])?;
    let f_move = b.pipeline(
        &BILLETER,
        v,
        "billeter_move",
        &[("WG", m.wg), ("UNROLL", unroll), ("BT_POPC", popc_flag), ("BT_OUTPUT", output(which)), ("BT_SLOTS", slots)],
    )?;

    let base = rule.params(io.params());
    let params = runtime_params(base, m.procs, m.gran, t.staged_ratio, split);
    let bind = Bind { state: Some(counts), aux: Some(offsets), aux2: masks, ..rule.bind(io) };
    plan.stage("count").dispatch(f_count, params, bind.clone(), m.groups);
    plan.stage("scan").dispatch(f_scan, params, bind.clone(), 1);
    plan.stage("move").dispatch(f_move, params, bind, m.groups);
    Ok(())
}

/// The params of every dispatch of a call: P in `b`, the granule in `c`,
/// the selective ratio's f32 bits in `d` (`a` is the keep rule's).
fn runtime_params(base: Params, procs: u32, gran: u32, ratio: f64, split: bool) -> Params {
    Params { b: procs, c: gran, d: (ratio as f32).to_bits(), split: u32::from(split), ..base }
}

/// Phase 2's workgroup: one, as large as the adapter allows up to `SCAN_WG`.
fn scan_wg(b: &WgpuBackend) -> u32 {
    let l = &b.device().limits;
    SCAN_WG.min(l.max_compute_invocations_per_workgroup).min(l.max_compute_workgroup_size_x)
}

/// Exclusive scan of u32 or u64 values (§5.2); the total goes to the count word.
pub fn scan(b: &WgpuBackend, v: &Variant, io: &Io, plan: &mut Plan) -> Result<()> {
    if v.elem_bytes != 4 && v.elem_bytes != 8 {
        return Err(Error::Backend(format!("billeter scans u32 or u64 values, not {}-byte ones", v.elem_bytes)));
    }
    let t = &b.tuning.billeter;
    let m = Machine::new(b, io.cap, 0);
    let unroll = t.unroll.clamp(1, MAX_UNROLL);
    // Sums and offsets, one u64 per processor.
    let sums = b.raw_buffer("billeter's sums", m.procs as u64 * 8)?;
    let offsets = b.raw_buffer("billeter's offsets", m.procs as u64 * 8)?;

    let f_sum = b.pipeline(&BILLETER, v, "billeter_sum", &[("WG", m.wg), ("UNROLL", unroll)])?;
    let f_scan = b.pipeline(&BILLETER, v, "billeter_scan", &[("WG", scan_wg(b))])?;
    let f_prefix = b.pipeline(&BILLETER, v, "billeter_prefix", &[("WG", m.wg), ("UNROLL", unroll)])?;

    let mut params = runtime_params(io.params(), m.procs, m.gran, t.staged_ratio, false);
    // u64 values: phase 2 keeps the high words.
    params.e = u32::from(v.elem_bytes == 8);
    let bind = Bind { state: Some(sums), aux: Some(offsets), ..io.bind() };
    plan.stage("sum").dispatch(f_sum, params, bind.clone(), m.groups);
    plan.stage("scan").dispatch(f_scan, params, bind.clone(), 1);
    plan.stage("prefix").dispatch(f_prefix, params, bind, m.groups);
    Ok(())
}
