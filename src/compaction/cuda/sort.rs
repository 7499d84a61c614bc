//! Radix sort by repeated split (seed 000 §5.3) on the GPU: one stable
//! partition per key bit with the chosen algorithm, zeros first, ping-ponging
//! between two buffers. Key-value pairs travel interleaved (kernels/compaction/sort.cu).

use cudarc::driver::{LaunchConfig, PushKernelArg};

use crate::compaction::cuda::runtime::{KeepMode, SORT, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, CudaBuffer, Extent, Io, KeepArgs, raw_ptr};
use crate::compaction::{Algorithm, Rejected, Result, SortKey};

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
    let cfg = b.grid_stride(n, 256, 16);
    let bytes = n * elem_bytes as u64;
    let (mut a, mut c) = (b.scratch(bytes)?, b.scratch(bytes)?);
    let count = b.zeroed(8)?;
    let vp = values.as_ref().map(|v| v.ptr());
    carry(b, &sort_v, cfg, Way::In, n, keys.ptr(), vp, raw_ptr(&a), st)?;
    st.run("split", || {
        let mut scratch_stages = Stages::new(b.stream());
        for bit in 0..K::BITS {
            let keep = KeepArgs { param: [bit as u64, 0], ..KeepArgs::default() };
            let io = Io { ext: Extent::host(n), input: raw_ptr(&a), output: raw_ptr(&c), count: raw_ptr(&count) };
            b.compact_raw(algorithm, (true, Rejected::InOrder), &v, keep, io, &mut scratch_stages)?;
            std::mem::swap(&mut a, &mut c);
        }
        Ok(())
    })?;
    carry(b, &sort_v, cfg, Way::Out, n, keys.ptr(), vp, raw_ptr(&a), st)?;
    Ok(())
}

/// Which way the keys (and values) travel: into the sort's scratch or back out.
#[derive(Clone, Copy)]
enum Way {
    In,
    Out,
}

/// Stage "interleave" / "deinterleave" with values, else "copy": moves the n
/// keys (and values) between the caller's buffers and `scratch` (n elements).
#[allow(clippy::too_many_arguments)]
fn carry(
    b: &CudaBackend,
    sort_v: &Variant,
    cfg: LaunchConfig,
    way: Way,
    n: u64,
    keys: u64,
    values: Option<u64>,
    scratch: u64,
    st: &mut Stages,
) -> Result<()> {
    match values {
        Some(vp) => {
            let (name, during, args) = match way {
                Way::In => ("interleave", "launching interleave", [keys, vp, scratch]),
                Way::Out => ("deinterleave", "launching deinterleave", [scratch, keys, vp]),
            };
            let f = b.kernels().function(&SORT, sort_v, name)?;
            st.run(name, || {
                let mut l = b.stream().launch_builder(&f);
                l.arg(&n).arg(&args[0]).arg(&args[1]).arg(&args[2]);
                // SAFETY: matches `interleave(u64, const Key*, const u32*, Key*)` and `deinterleave(u64, const
                // Key*, Key*, u32*)`; keys and values hold n entries, scratch n pairs.
                unsafe { l.launch(cfg) }.map(drop).map_err(driver_error(during))
            })
        }
        None => {
            let (dst, src) = match way {
                Way::In => (scratch, keys),
                Way::Out => (keys, scratch),
            };
            let bytes = n * sort_v.key_bytes as u64;
            st.run("copy", || {
                // SAFETY: both device ranges hold `bytes` bytes and do not overlap.
                let r = unsafe {
                    cudarc::driver::sys::cuMemcpyDtoDAsync_v2(dst, src, bytes as usize, b.stream().cu_stream())
                };
                r.result().map_err(driver_error("copying keys"))
            })
        }
    }
}
