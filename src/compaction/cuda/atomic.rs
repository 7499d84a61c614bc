//! Host side of kernels/compaction/atomic.cu: `atomic`, pbrt-v4's GPU work
//! queues (`src/pbrt/wavefront/workqueue.h`), where survivors append to the
//! output through a warp-aggregated atomic add on the count. One launch, one
//! pass over the input, no scratch; unstable. The CPU twin is
//! `src/compaction/cpu/atomic.rs`.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use smart_default::SmartDefault;

use crate::compaction::Result;
use crate::compaction::cuda::runtime::{ATOMIC, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, Io, KeepArgs};

/// Tuning of `atomic_select` (`REAP_AT_ITEMS` in atomic.cu).
#[derive(Clone, Debug, SmartDefault)]
pub struct AtomicTuning {
    /// Threads per block (a multiple of 32).
    #[default(256)]
    pub block: u32,
    /// Ballots of 32 elements a warp takes per atomic: every atomic lands on
    /// one address, so fewer and larger reservations keep it off the critical path.
    // 512 elements per atomic: at 2^28 elements that is 2^19 same-address
    // atomics, well under the time to stream the data.
    #[default(16)]
    pub items: u32,
    /// Resident blocks per SM the grid aims at; the kernel strides over the rest.
    #[default(8)]
    pub blocks_per_sm: u32,
}

/// Unstable select by warp-aggregated atomic append; the count goes to `*io.count`.
pub fn select(b: &CudaBackend, v: &Variant, keep: KeepArgs, io: Io, st: &mut Stages) -> Result<()> {
    let t = &b.tuning.atomic;
    let block = t.block.clamp(32, 1024) / 32 * 32;
    let items = t.items.max(1);
    let v = v.with(&[("REAP_AT_ITEMS", items)]);
    let per_block = block as u64 * items as u64;
    let blocks = io.ext.cap.div_ceil(per_block).clamp(1, (b.info.sms * t.blocks_per_sm.max(1)) as u64) as u32;
    let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (block, 1, 1), shared_mem_bytes: 0 };
    let f = b.kernels().function(&ATOMIC, &v, "atomic_select")?;
    st.run("append", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&io.ext).arg(&io.input).arg(&keep).arg(&io.output).arg(&io.count);
        // SAFETY: matches `atomic_select(Extent, const Elem*, KeepArgs, Elem*, u64*)`; input and output hold
        // the extent's capacity of elements, count is one zeroed u64, and the block is a whole number of warps.
        unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching atomic_select"))
    })
}
