//! Radix sort by repeated split (seed 000 §5.3) on the GPU: one stable
//! partition per key bit with the chosen algorithm, zeros first, ping-ponging
//! between two buffers. Key-value pairs travel interleaved (kernels/compaction/sort.cu).

use cudarc::driver::{LaunchConfig, PushKernelArg};

use crate::compaction::cuda::runtime::{KeepMode, SORT, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, CudaBuffer, Extent, Io, KeepArgs, raw_ptr};
use crate::compaction::{Algorithm, Result, SortKey};

pub fn radix_sort<K: SortKey>(
    b: &CudaBackend,
    algorithm: Algorithm,
    keys: &mut CudaBuffer<K>,
    values: Option<&mut CudaBuffer<u32>>,
    st: &mut Stages,
) -> Result<()> {
    let n = keys.len();
    if n == 0 {
        return Ok(());
    }
    let key_bytes = std::mem::size_of::<K>() as u32;
    let elem_bytes = if values.is_some() { 2 * key_bytes } else { key_bytes };
    let mut v = Variant::new(elem_bytes as usize, KeepMode::Bit);
    v.key_bytes = key_bytes;
    let sort_v = {
        let mut s = Variant::new(4, KeepMode::Flags);
        s.key_bytes = key_bytes;
        s
    };
    let cfg = LaunchConfig {
        grid_dim: (n.div_ceil(256).min(b.info.sms as u64 * 16) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let bytes = n * elem_bytes as u64;
    let (mut a, mut c) = (b.scratch(bytes)?, b.scratch(bytes)?);
    let count = b.zeroed(8)?;
    let pa = raw_ptr(&a);
    match &values {
        Some(vals) => {
            let f = b.kernels().function(&SORT, &sort_v, "interleave")?;
            let (kp, vp) = (keys.ptr(), vals.ptr());
            st.run("interleave", || {
                let mut l = b.stream().launch_builder(&f);
                l.arg(&n).arg(&kp).arg(&vp).arg(&pa);
                // SAFETY: matches `interleave(u64, const Key*, const u32*, Key*)`; `a` holds n pairs.
                unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching interleave"))
            })?;
        }
        None => {
            let src = keys.ptr();
            st.run("copy", || {
                // SAFETY: both device ranges hold `bytes` bytes and do not overlap.
                let r = unsafe {
                    cudarc::driver::sys::cuMemcpyDtoDAsync_v2(pa, src, bytes as usize, b.stream().cu_stream())
                };
                r.result().map_err(driver_error("copying keys"))
            })?;
        }
    }
    st.run("split", || {
        let mut scratch_stages = Stages::new(b.stream());
        for bit in 0..K::BITS {
            let keep = KeepArgs { param: [bit as u64, 0], ..KeepArgs::default() };
            let io = Io { ext: Extent::host(n), input: raw_ptr(&a), output: raw_ptr(&c), count: raw_ptr(&count) };
            b.partition_raw(algorithm, &v, keep, io, &mut scratch_stages)?;
            std::mem::swap(&mut a, &mut c);
        }
        Ok(())
    })?;
    let pa = raw_ptr(&a);
    match values {
        Some(vals) => {
            let f = b.kernels().function(&SORT, &sort_v, "deinterleave")?;
            let (kp, vp) = (keys.ptr(), vals.ptr());
            st.run("deinterleave", || {
                let mut l = b.stream().launch_builder(&f);
                l.arg(&n).arg(&pa).arg(&kp).arg(&vp);
                // SAFETY: matches `deinterleave(u64, const Key*, Key*, u32*)`; `a` holds n pairs.
                unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching deinterleave"))
            })?;
        }
        None => {
            let dst = keys.ptr();
            st.run("copy", || {
                // SAFETY: both device ranges hold `bytes` bytes and do not overlap.
                let r = unsafe {
                    cudarc::driver::sys::cuMemcpyDtoDAsync_v2(dst, pa, bytes as usize, b.stream().cu_stream())
                };
                r.result().map_err(driver_error("copying keys"))
            })?;
        }
    }
    Ok(())
}
