//! The CUDA side of the harness: the copy roofline, restores, seed 004's
//! competitor marking (kernels/bench/mark_removed.cu) and the platform facts
//! that go into results.json.

use std::time::Duration;

use cudarc::driver::{LaunchConfig, PushKernelArg};

use crate::bench::{Platform, Timed};
use crate::compaction::cuda::runtime::{self, KeepMode, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, CudaBuffer};
use crate::compaction::{Element, Error, Result};
use crate::cuda_runtime::{self, Source, kernel_source};

/// The benchmark's marking phase for Redzone's competitors (seed 004 §5),
/// specialised by element size like the library's kernels.
pub const MARK_REMOVED: Source = kernel_source!("bench/mark_removed.cu", headers: &[runtime::COMMON]);

/// The harness's kernel sources, for the compile-everything test.
pub const SOURCES: &[Source] = &[MARK_REMOVED, crate::bench::hop::KERNEL];

impl Timed for CudaBackend {
    fn copy_time(&self, bytes: u64, reps: usize) -> Result<Duration> {
        self.time_copy(bytes, reps)
    }
    fn cache_bytes(&self) -> u64 {
        self.info.l2_bytes
    }
    fn device_name(&self) -> String {
        self.info.name.clone()
    }
    fn platform(&self) -> Platform {
        let (major, minor) = self.info.compute_capability;
        Platform {
            backend: "cuda".into(),
            device: self.info.name.clone(),
            driver: cuda_runtime::kernel_driver_version(),
            cuda_driver: cuda_runtime::cuda_driver_version(),
            nvrtc: cuda_runtime::nvrtc_version(),
            arch: Some(format!("sm_{major}{minor}")),
            sms: Some(self.info.sms),
            l2_bytes: self.info.l2_bytes,
            clock: Some("CUDA events".into()),
            workgroup_scans: None,
            copy_rates: None,
        }
    }
    fn restore<T: Element>(&self, src: &CudaBuffer<T>, dst: &mut CudaBuffer<T>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { what: "restored buffer", expected: src.len(), actual: dst.len() });
        }
        let bytes = src.len() as usize * std::mem::size_of::<T>();
        // SAFETY: two distinct live allocations of at least `bytes` bytes, ordered on the backend's stream.
        Ok(unsafe {
            cuda_runtime::copy_dtod(self.stream(), dst.ptr(), src.ptr(), bytes, "restoring a benchmark input")
        }?)
    }
    fn mark_removed<T: Element>(&self, data: &mut CudaBuffer<T>, removal: &CudaBuffer<u64>) -> Result<Duration> {
        let k = removal.len();
        if k == 0 {
            return Ok(Duration::ZERO);
        }
        let v = Variant::new(std::mem::size_of::<T>(), KeepMode::Sentinel);
        let f = self.kernels().function(&MARK_REMOVED, &v, "mark_removed")?;
        let blocks = k.div_ceil(256).clamp(1, self.info.sms as u64 * 16) as u32;
        let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let (list, out) = (removal.ptr(), data.ptr());
        let mut st = Stages::new(self.stream());
        st.run("mark", || {
            let mut l = self.stream().launch_builder(&f);
            l.arg(&k).arg(&list).arg(&out);
            // SAFETY: matches `mark_removed(u64, const u64*, Elem*)`; the list holds k
            // indices below data's length (the harness draws them).
            unsafe { l.launch(cfg) }.map(drop).map_err(driver_error("launching mark_removed"))
        })?;
        st.span()
    }
}
