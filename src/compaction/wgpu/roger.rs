//! Host side of shaders/compaction/roger.wgsl: the hierarchical stream
//! reduction of seed 003 §III (Roger, Assarsson, Holzschuch 2007).
//!
//! Mark; blocks of s elements, each reduced on its own (§III-B): a prefix sum
//! of its empty elements ("sum inside blocks"), then for each output position
//! the improved dichotomic search of Fig. 5 ("dichotomic search"); a scan of
//! the blocks' empty counts gives each block's displacement (§III-C, Fig. 6:
//! "global sum"); each block's run is then moved into place ("concatenation",
//! line drawing in the paper). O(n + n log s) work. Phase names follow Fig. 10,
//! as in the CUDA twin, `src/compaction/cuda/roger.rs`.
//!
//! The CUDA twin's global sum is blelloch.cu's tree; here it is a tree of
//! workgroup scans in roger.wgsl itself (up: each tile scanned in place, its
//! total one level up; down: each tile adds its prefix), O(n / s) work too.

use smart_default::SmartDefault;

use crate::compaction::wgpu::runtime::{Params, ROGER};
use crate::compaction::wgpu::{Bind, Io, KeepRule, Plan, WgpuBackend, groups_for};
use crate::compaction::{Error, Result};

/// Tuning of `roger` (`S` in roger.wgsl).
#[derive(Clone, Debug, SmartDefault)]
pub struct RogerTuning {
    /// Elements per block, s, 1 to the adapter's workgroup limit: one
    /// workgroup of s invocations (rounded up to whole subgroups) works on
    /// each. 003 §V-A (Fig. 11) found 64 best up to 16M elements.
    #[default(64)]
    pub block: u32,
}

impl RogerTuning {
    /// Invocations of a block's workgroups on `b`'s adapter (s rounded up to
    /// whole subgroups, which the workgroup scan assumes), or why s does not fit.
    pub(super) fn workgroup(&self, b: &WgpuBackend, subgroups: bool) -> Result<u32> {
        let s = self.block;
        let limits = &b.device().limits;
        let limit = limits.max_compute_invocations_per_workgroup.min(limits.max_compute_workgroup_size_x);
        let unit = if subgroups { b.device().subgroup_sizes.1.max(32) } else { 32 };
        let block_wg = s.checked_next_multiple_of(unit).unwrap_or(u32::MAX);
        if s == 0 || block_wg > limit {
            return Err(Error::Tuning {
                algorithm: "roger",
                why: format!("the block size s must be 1 to {} on this adapter, not {s}", limit / unit * unit),
            });
        }
        Ok(block_wg)
    }
}

/// Invocations of the mark and the global sum's workgroups.
const WG: u32 = 256;
/// Values one invocation of the global sum scans (`SUM_ITEMS` in roger.wgsl).
const SUM_ITEMS: u32 = 4;
/// `sums` holds the total first, then the levels (`SUMS_LEVEL0`).
const SUMS_LEVEL0: u32 = 1;

/// Select, or with `split` partition: kept elements first, then the
/// rejected ones, both in input order. Each block also gathers its rejected
/// elements after its kept ones, with the same search on the mirrored prefix sum.
pub fn compact(b: &WgpuBackend, rule: &KeepRule, io: &Io, split: bool, plan: &mut Plan) -> Result<()> {
    let s = b.tuning.roger.block;
    let block_wg = b.tuning.roger.workgroup(b, rule.variant.subgroups)?;
    let cap = io.cap as u64;
    let blocks = io.cap.div_ceil(s);
    let v = &rule.variant;
    let p = |entry, wg| b.pipeline(&ROGER, v, entry, &[("WG", wg), ("S", s)]);
    let (mark, sum_inside, search, up, down, concatenation) = (
        p("roger_mark", WG)?,
        p("roger_sum_inside_blocks", block_wg)?,
        p("roger_dichotomic_search", block_wg)?,
        p("roger_global_sum_up", WG)?,
        p("roger_global_sum_down", WG)?,
        p("roger_concatenation", block_wg)?,
    );
    // The global sum's levels: the blocks' counts, then one value per tile below.
    let tile = WG * SUM_ITEMS;
    let mut levels = vec![(SUMS_LEVEL0, blocks)];
    while let Some(&(at, len)) = levels.last().filter(|l| l.1 > tile) {
        levels.push((at + len, len.div_ceil(tile)));
    }
    let (last_at, last_len) = levels[levels.len() - 1];
    let sums_len = last_at as u64 + last_len as u64;

    let marks = b.raw_buffer("roger's marks", cap * 4)?;
    let psum = b.raw_buffer("roger's pSum", cap * 4)?;
    let reduced = b.raw_buffer("roger's reduced blocks", cap * v.elem_bytes as u64)?;
    let sums = b.raw_buffer("roger's global sum", sums_len * 4)?;
    let base = Params { split: split as u32, ..io.params() };
    let scratch = Bind { state: Some(marks), aux: Some(psum), aux2: Some(sums), ..Default::default() };

    // Every scratch value is written before it is read: no clears.
    let keep = Bind { state: scratch.state.clone(), ..rule.bind(io) };
    plan.stage("mark").dispatch(mark, rule.params(base), keep, groups_for(io.cap, WG));
    let words = Bind { words: Some(io.words.clone()), ..scratch.clone() };
    plan.stage("sum inside blocks").dispatch(sum_inside, base, words.clone(), blocks);
    let gather = Bind { src: Some(io.input.clone()), dst: Some(reduced.clone()), ..words.clone() };
    plan.stage("dichotomic search").dispatch(search, base, gather, blocks);
    plan.stage("global sum");
    for (l, &(at, len)) in levels.iter().enumerate() {
        let next = levels.get(l + 1).map_or(0, |n| n.0);
        plan.dispatch(up.clone(), Params { b: at, c: len, d: next, ..base }, scratch.clone(), len.div_ceil(tile));
    }
    for (l, &(at, len)) in levels.iter().enumerate().rev().skip(1) {
        let next = levels[l + 1].0;
        plan.dispatch(down.clone(), Params { b: at, c: len, d: next, ..base }, scratch.clone(), len.div_ceil(WG));
    }
    let out = Bind { src: Some(reduced), dst: Some(io.output.clone()), ..words };
    plan.stage("concatenation").dispatch(concatenation, base, out, blocks);
    Ok(())
}
