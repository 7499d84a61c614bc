//! Opening a device and the small helpers every launch uses.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, LaunchConfig, sys};

use super::{Error, Kernels, Result, arch_name, driver_available, driver_error, nvrtc_available};

/// What a device reports about itself, for tuning and for the results files.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub name: String,
    pub sms: u32,
    pub compute_capability: (i32, i32),
    pub l2_bytes: u64,
    /// Peak DRAM bandwidth in GB/s from the memory clock and bus width (0
    /// where the driver does not say): what tells an H200 from an H100.
    pub dram_gbps: f64,
}

/// One device, one stream, and its kernels.
pub struct Device {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub info: DeviceInfo,
    pub kernels: Kernels,
}

/// How many CUDA devices the driver sees, or why it cannot say.
pub fn device_count() -> Result<usize> {
    driver_available()?;
    let count = CudaContext::device_count().map_err(|e| Error::Unavailable {
        what: format!("the CUDA driver did not start ({e})"),
        how: "Check `nvidia-smi`; or use `--backend cpu`.",
    })?;
    Ok(count.max(0) as usize)
}

impl Device {
    /// Opens device `ordinal`, or says what is missing.
    pub fn open(ordinal: usize) -> Result<Self> {
        driver_available()?;
        nvrtc_available()?;
        let count = device_count()?;
        if (count as usize) <= ordinal {
            return Err(Error::Unavailable {
                what: format!("no CUDA device {ordinal} ({count} found)"),
                how: "Check `nvidia-smi`; or use `--backend cpu`.",
            });
        }
        let ctx = CudaContext::new(ordinal).map_err(driver_error("creating a context"))?;
        // One stream and no sharing across streams: cudarc's per-buffer events
        // would only add host work to every launch.
        // SAFETY: all work of reap goes through the device's one stream, in order.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(driver_error("creating a stream"))?;
        let attr = |a| ctx.attribute(a).map_err(driver_error("reading a device attribute"));
        let info = DeviceInfo {
            name: ctx.name().map_err(driver_error("reading the device name"))?,
            sms: attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            compute_capability: ctx.compute_capability().map_err(driver_error("reading the compute capability"))?,
            l2_bytes: attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
            dram_gbps: dram_gbps(&ctx),
        };
        keep_pool_memory(&ctx);
        let (major, minor) = info.compute_capability;
        let kernels = Kernels::new(ctx.clone(), arch_name(major, minor));
        Ok(Device { ctx, stream, info, kernels })
    }
}

/// Peak DRAM bandwidth: two transfers per memory clock (kHz) over the bus
/// width (bits); 0 if either attribute is missing.
fn dram_gbps(ctx: &Arc<CudaContext>) -> f64 {
    use sys::CUdevice_attribute::{CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE};
    match (
        ctx.attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        ctx.attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
    ) {
        (Ok(khz), Ok(bits)) if khz > 0 && bits > 0 => 2.0 * khz as f64 * 1e3 * (bits as f64 / 8.0) / 1e9,
        _ => 0.0,
    }
}

/// Keeps freed pool memory in the pool rather than returning it to the OS at
/// every synchronisation, so per-call scratch costs no allocation in steady state.
fn keep_pool_memory(ctx: &Arc<CudaContext>) {
    // SAFETY: plain driver calls on this context's device; failures only cost speed.
    unsafe {
        let mut pool = std::ptr::null_mut();
        if sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) == sys::CUresult::CUDA_SUCCESS {
            let mut threshold: u64 = u64::MAX;
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut threshold as *mut u64).cast(),
            );
        }
    }
}

/// A one-dimensional launch of `block`-thread blocks covering `n` items (at
/// least one block, so that a launch over nothing is still valid).
pub fn grid(n: u64, block: u32) -> Result<LaunchConfig> {
    let blocks = n.div_ceil(block.max(1) as u64).max(1);
    let blocks =
        u32::try_from(blocks).ok().filter(|b| *b <= i32::MAX as u32).ok_or(Error::GridTooLarge { items: n, block })?;
    Ok(LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (block, 1, 1), shared_mem_bytes: 0 })
}

/// The device address of an allocation, for kernel arguments.
pub fn ptr<T>(s: &CudaSlice<T>) -> u64 {
    // Event tracking is off (one stream), so the guard has nothing to record.
    let (p, _guard) = s.device_ptr(s.stream());
    p
}

/// Enqueues a copy of `bytes` bytes from device address `src` to `dst` on `stream`.
///
/// # Safety
/// Both ranges must lie in live allocations of the stream's context and must
/// not overlap.
pub unsafe fn copy_dtod(stream: &CudaStream, dst: u64, src: u64, bytes: usize, during: &'static str) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    let r = unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream.cu_stream()) };
    r.result().map_err(driver_error(during))
}

/// Lets kernels on `from`'s GPU read and write memory of `to`'s (over
/// NVLink or PCIe): false where the two GPUs cannot.
pub fn enable_peer_access(from: &Arc<CudaContext>, to: &Arc<CudaContext>) -> Result<bool> {
    if from.cu_device() == to.cu_device() {
        return Ok(true);
    }
    let mut can = 0;
    // SAFETY: a query of two valid device ordinals into a local.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, from.cu_device(), to.cu_device()) }
        .result()
        .map_err(driver_error("asking whether two GPUs reach each other's memory"))?;
    if can == 0 {
        return Ok(false);
    }
    from.bind_to_thread().map_err(driver_error("binding a context"))?;
    // SAFETY: `to` is a live context; the call acts on the current one (`from`).
    match unsafe { sys::cuCtxEnablePeerAccess(to.cu_ctx(), 0) } {
        sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
        e => return Err(driver_error("enabling peer access between two GPUs")(cudarc::driver::DriverError(e))),
    }
    // Stream-ordered allocations (most of reap's) come from `to`'s pool, which the context's peer access does not
    // open: the pool grants it itself.
    let desc = sys::CUmemAccessDesc {
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: from.cu_device(),
        },
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    let mut pool = std::ptr::null_mut();
    // SAFETY: plain driver calls on a valid device's default pool, with one access descriptor.
    unsafe {
        sys::cuDeviceGetDefaultMemPool(&mut pool, to.cu_device()).result().map_err(driver_error("finding a pool"))?;
        sys::cuMemPoolSetAccess(pool, &desc, 1).result().map_err(driver_error("opening a GPU's pool to a peer"))?;
    }
    Ok(true)
}

/// Free device memory in bytes (no synchronisation).
pub fn free_memory(stream: &CudaStream) -> Result<u64> {
    let (free, _) = stream.context().mem_get_info().map_err(driver_error("reading free memory"))?;
    Ok(free as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_cover_every_item_and_refuse_what_no_launch_can() {
        let g = grid(1000, 256).unwrap();
        assert_eq!((g.grid_dim, g.block_dim), ((4, 1, 1), (256, 1, 1)));
        assert_eq!(grid(0, 256).unwrap().grid_dim.0, 1);
        assert_eq!(grid(256, 256).unwrap().grid_dim.0, 1);
        assert_eq!(grid(257, 256).unwrap().grid_dim.0, 2);
        let most = (i32::MAX as u64) * 256;
        assert_eq!(grid(most, 256).unwrap().grid_dim.0, i32::MAX as u32);
        assert!(matches!(grid(most + 1, 256), Err(Error::GridTooLarge { block: 256, .. })));
    }
}
