//! Host side of shaders/compaction/atomic.wgsl: `atomic`, pbrt-v4's GPU work
//! queues, where survivors append to the output through one atomic add per
//! workgroup tile. One dispatch, one pass over the input, no scratch;
//! unstable. The CUDA twin is `src/compaction/cuda/atomic.rs`.

use smart_default::SmartDefault;

use crate::compaction::Result;
use crate::compaction::wgpu::runtime::ATOMIC;
use crate::compaction::wgpu::{Io, KeepRule, Plan, WgpuBackend, groups_for};

/// Tuning of `atomic_select`.
#[derive(Clone, Debug, SmartDefault)]
pub struct AtomicTuning {
    /// Invocations per workgroup (WG).
    #[default(256)]
    pub block: u32,
    /// Elements per invocation (ITEMS): one atomic per WG * ITEMS elements.
    #[default(16)]
    pub items: u32,
}

/// Unstable select by workgroup-aggregated atomic append.
pub fn select(b: &WgpuBackend, rule: &KeepRule, io: &Io, plan: &mut Plan) -> Result<()> {
    let t = &b.tuning.atomic;
    // At most 32 items: the kept mask's bits.
    let (block, items) = (t.block.clamp(32, 1024), t.items.clamp(1, 32));
    let p = b.pipeline(&ATOMIC, &rule.variant, "atomic_select", &[("WG", block), ("ITEMS", items)])?;
    plan.stage("append").dispatch(p, rule.params(io.params()), rule.bind(io), groups_for(io.cap, block * items));
    Ok(())
}
