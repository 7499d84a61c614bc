//! The CUDA side of the harness: the copy roofline, restores, seed 004's
//! competitor marking (kernels/bench/mark_removed.cu) and the platform facts
//! that go into results.json.

use std::time::Duration;

use cudarc::driver::{LaunchConfig, PushKernelArg, sys};

use crate::bench::{Platform, Timed};
use crate::compaction::cuda::runtime::{KeepMode, MARK_REMOVED, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, CudaBuffer};
use crate::compaction::{Element, Error, Result};

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
            driver: kernel_driver_version(),
            cuda_driver: cuda_driver_version(),
            nvrtc: nvrtc_version(),
            arch: Some(format!("sm_{major}{minor}")),
            sms: Some(self.info.sms),
            l2_bytes: self.info.l2_bytes,
        }
    }
    fn restore<T: Element>(&self, src: &CudaBuffer<T>, dst: &mut CudaBuffer<T>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { what: "restored buffer", expected: src.len(), actual: dst.len() });
        }
        let bytes = src.len() as usize * std::mem::size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: two live allocations of at least `bytes` bytes, ordered on the backend's stream.
        let r = unsafe { sys::cuMemcpyDtoDAsync_v2(dst.ptr(), src.ptr(), bytes, self.stream().cu_stream()) };
        r.result().map_err(driver_error("restoring a benchmark input"))
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

/// The NVIDIA kernel module's version, from /proc (Linux).
fn kernel_driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul ..."
    line.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(String::from)
}

fn cuda_driver_version() -> Option<String> {
    let mut v = 0i32;
    // SAFETY: the backend opened, so libcuda is loaded; one out-parameter.
    let r = unsafe { sys::cuDriverGetVersion(&mut v) };
    r.result().ok().map(|_| format!("{}.{}", v / 1000, (v % 1000) / 10))
}

fn nvrtc_version() -> Option<String> {
    let (mut major, mut minor) = (0i32, 0i32);
    // SAFETY: the backend checked that libnvrtc loads; two out-parameters.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then(|| format!("{major}.{minor}"))
}
