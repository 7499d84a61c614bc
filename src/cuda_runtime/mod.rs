//! The CUDA layer that the library and the workloads share: finding the
//! driver and NVRTC, compiling kernel sources and caching the modules, opening
//! a device, launch helpers, the one stage timer, and the count of host
//! synchronisations.
//!
//! It knows no algorithm and no workload: each module owns its kernel
//! sources (`compaction` owns `kernels/compaction/`, `trace` owns
//! `kernels/trace/`, `collide` owns `kernels/collide/`, `bench` owns
//! `kernels/bench/`) and declares them with [`kernel_source!`], naming the
//! headers each includes.
//!
//! cudarc panics when libcuda or libnvrtc cannot be loaded, so every entry
//! point here checks for the libraries first and returns a typed error.

mod compile;
mod device;
pub mod graph;
mod library;
pub mod nccl;
mod sync;
mod timer;

pub use compile::{IEEE, Kernels, Source, Spec, Specialise, arch_name, compile, translation_unit};
pub use device::{Device, DeviceInfo, copy_dtod, device_count, enable_peer_access, free_memory, grid, ptr};
pub use graph::{FrameGraphs, GraphCounts};
pub use library::{cuda_driver_version, driver_available, kernel_driver_version, nvrtc_available, nvrtc_version};
pub use nccl::nccl_available;
pub use sync::{SyncMark, dtoh, dtoh_into, host_syncs, htod, pinned, synchronize, thread_host_syncs};
pub use timer::{StageEvents, Started, Timer, stage_times};

/// The GPU layer's errors. Each message says what went wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the CUDA backend cannot run here: {what}. {how}")]
    Unavailable { what: String, how: &'static str },

    #[error("NVRTC could not compile kernels/{kernel} ({options}):\n{log}")]
    Compile { kernel: String, options: String, log: String },

    #[error("CUDA driver error in {during}: {error}")]
    Driver { during: &'static str, error: String },

    #[error("{items} items need more blocks of {block} threads than one launch has (2^31 - 1)")]
    GridTooLarge { items: u64, block: u32 },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Maps a driver error to [`Error::Driver`], naming what reap was doing.
pub fn driver_error(during: &'static str) -> impl Fn(cudarc::driver::DriverError) -> Error {
    move |e| Error::Driver { during, error: e.to_string() }
}

/// A kernel source file under `kernels/`, embedded at build time:
/// `kernel_source!("trace/wavefront.cu", headers: &[COMMON])`, with NVRTC
/// options after `options:` where a source needs its own.
macro_rules! kernel_source {
    ($path:literal $(, headers: $headers:expr)? $(, options: $options:expr)? $(,)?) => {
        $crate::cuda_runtime::Source {
            name: $path,
            text: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/", $path)),
            headers: $crate::cuda_runtime::kernel_source!(@or $($headers)?),
            options: $crate::cuda_runtime::kernel_source!(@or $($options)?),
        }
    };
    (@or $e:expr) => { $e };
    (@or) => { &[] };
}
pub(crate) use kernel_source;
