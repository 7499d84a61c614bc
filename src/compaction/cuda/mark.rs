//! Host side of kernels/compaction/mark.cu: the marking phase the
//! flag-consuming algorithms share, Redzone's rejected-index list, and a copy.

use cudarc::driver::{LaunchConfig, PushKernelArg};

use crate::compaction::Result;
use crate::compaction::cuda::runtime::{MARK, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, Extent, KeepArgs};

/// Every SM filled several times over; the kernels loop over the rest.
fn grid_stride(b: &CudaBackend, cap: u64) -> LaunchConfig {
    b.grid_stride(cap, 256, 16)
}

/// Stage "mark": `flags[i]` (u32) = 1 when element i survives.
pub fn flags(
    b: &CudaBackend,
    v: &Variant,
    keep: KeepArgs,
    ext: Extent,
    input: u64,
    flags: u64,
    st: &mut Stages,
) -> Result<()> {
    if ext.cap == 0 {
        return Ok(());
    }
    let f = b.kernels().function(&MARK, v, "mark_flags")?;
    st.run("mark", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&ext).arg(&input).arg(&keep).arg(&flags);
        // SAFETY: matches `mark_flags(Extent, const Elem*, KeepArgs, u32*)`; input holds the capacity's
        // elements, flags as many u32.
        unsafe { l.launch(grid_stride(b, ext.cap)) }.map(drop).map_err(driver_error("launching mark_flags"))
    })
}

/// Stage "mark": appends every rejected index to `list`, its length to `len` (a zeroed u64).
pub fn rejected(
    b: &CudaBackend,
    v: &Variant,
    keep: KeepArgs,
    ext: Extent,
    input: u64,
    list: u64,
    len: u64,
    st: &mut Stages,
) -> Result<()> {
    if ext.cap == 0 {
        return Ok(());
    }
    let f = b.kernels().function(&MARK, v, "mark_rejected")?;
    st.run("mark", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&ext).arg(&input).arg(&keep).arg(&list).arg(&len);
        // SAFETY: matches `mark_rejected(Extent, const Elem*, KeepArgs, u64*, u64*)`; input holds the
        // capacity's elements, list as many u64, len one.
        unsafe { l.launch(grid_stride(b, ext.cap)) }.map(drop).map_err(driver_error("launching mark_rejected"))
    })
}

/// Stage "copy": `output[..n] = input[..n]`.
pub fn copy(b: &CudaBackend, v: &Variant, ext: Extent, input: u64, output: u64, st: &mut Stages) -> Result<()> {
    if ext.cap == 0 {
        return Ok(());
    }
    let f = b.kernels().function(&MARK, v, "copy_elems")?;
    st.run("copy", || {
        let mut l = b.stream().launch_builder(&f);
        l.arg(&ext).arg(&input).arg(&output);
        // SAFETY: matches `copy_elems(Extent, const Elem*, Elem*)`; both hold the capacity's elements.
        unsafe { l.launch(grid_stride(b, ext.cap)) }.map(drop).map_err(driver_error("launching copy_elems"))
    })
}
