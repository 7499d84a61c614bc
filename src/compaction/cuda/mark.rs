//! Host side of kernels/compaction/mark.cu: the marking phase the
//! flag-consuming algorithms share, Redzone's rejected-index list, and a copy.

use cudarc::driver::{LaunchConfig, PushKernelArg};

use crate::compaction::Result;
use crate::compaction::cuda::runtime::{MARK, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, KeepArgs};

fn grid_stride(b: &CudaBackend, n: u64) -> LaunchConfig {
    // Enough blocks to fill every SM several times over, no more: grid-stride loops do the rest.
    let blocks = n.div_ceil(256).clamp(1, b.info.sms as u64 * 16) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
}

/// Stage "mark": `flags[i]` (u32) = 1 when element i survives.
pub fn flags(
    b: &CudaBackend,
    v: &Variant,
    keep: KeepArgs,
    n: u64,
    input: u64,
    flags: u64,
    st: &mut Stages,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let f = b.kernels().function(&MARK, v, "mark_flags")?;
    st.run("mark", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&n).arg(&input).arg(&keep).arg(&flags);
        // SAFETY: matches `mark_flags(u64, const Elem*, KeepArgs, u32*)`; input holds n elements, flags n u32.
        unsafe { l.launch(grid_stride(b, n)) }.map(drop).map_err(driver_error("launching mark_flags"))
    })
}

/// Stage "mark": appends every rejected index to `list`, its length to `len` (a zeroed u64).
pub fn rejected(
    b: &CudaBackend,
    v: &Variant,
    keep: KeepArgs,
    n: u64,
    input: u64,
    list: u64,
    len: u64,
    st: &mut Stages,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let f = b.kernels().function(&MARK, v, "mark_rejected")?;
    st.run("mark", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&n).arg(&input).arg(&keep).arg(&list).arg(&len);
        // SAFETY: matches `mark_rejected(u64, const Elem*, KeepArgs, u64*, u64*)`; list holds n u64.
        unsafe { l.launch(grid_stride(b, n)) }.map(drop).map_err(driver_error("launching mark_rejected"))
    })
}

/// Stage "copy": `output[..n] = input[..n]`.
pub fn copy(b: &CudaBackend, v: &Variant, n: u64, input: u64, output: u64, st: &mut Stages) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let f = b.kernels().function(&MARK, v, "copy_elems")?;
    st.run("copy", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&n).arg(&input).arg(&output);
        // SAFETY: matches `copy_elems(u64, const Elem*, Elem*)`; both hold n elements.
        unsafe { l.launch(grid_stride(b, n)) }.map(drop).map_err(driver_error("launching copy_elems"))
    })
}
