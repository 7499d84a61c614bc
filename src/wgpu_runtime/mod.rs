//! The wgpu layer under the library's third backend, the twin of [`crate::cuda_runtime`]
//! (CUDA): opening an adapter ([`device`]), assembling and caching WGSL
//! pipelines ([`pipelines`]), timing stages with timestamp queries or the host
//! clock ([`timer`]) and the host waits ([`device::Device::wait`]).
//!
//! wgpu reports validation failures through error scopes or, uncaught, by
//! panicking; every call here runs inside a scope and turns what it catches
//! into a typed [`Error`], so a bad size or a missing limit never aborts.

pub mod device;
pub mod pipelines;
pub mod timer;

pub use device::{AdapterChoice, AdapterSummary, Device, Features, adapters, pick};
pub use pipelines::Shader;

/// `wgsl_source!("compaction/atomic.wgsl", headers: &[COMMON])`.
macro_rules! wgsl_source {
    ($path:literal $(, headers: $headers:expr)? $(,)?) => {
        $crate::wgpu_runtime::Shader {
            name: $path,
            text: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/", $path)),
            headers: $crate::wgpu_runtime::wgsl_source!(@or $($headers)?),
        }
    };
    (@or $e:expr) => { $e };
    (@or) => { &[] };
}
pub use timer::{Stages, Timing};

/// A compute shader's buffer binding of type `ty` (storage or uniform),
/// with or without a dynamic offset: the one layout entry every compute
/// pipeline here is made of.
pub fn buffer_entry(binding: u32, ty: wgpu::BufferBindingType, dynamic: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: dynamic, min_binding_size: None },
        count: None,
    }
}

/// [`buffer_entry`] for a storage buffer.
pub fn storage_entry(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    buffer_entry(binding, wgpu::BufferBindingType::Storage { read_only }, false)
}

/// Library calls a workload lends its frame's encoder to
/// (`WgpuBackend::record_into`) between two submissions of what it holds:
/// one submission a frame leaves the GPU idle while the host records the
/// whole frame; one a call pays a submission each (tens of microseconds
/// through Vulkan). `REAP_WGPU_LENDS_PER_SUBMISSION=N` overrides it.
pub const LENDS_PER_SUBMISSION: u32 = 4;

/// [`LENDS_PER_SUBMISSION`], or what the environment sets (at least 1).
pub fn lends_per_submission() -> u32 {
    std::env::var("REAP_WGPU_LENDS_PER_SUBMISSION")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(LENDS_PER_SUBMISSION)
        .max(1)
}
pub(crate) use wgsl_source;

/// The wgpu layer's errors. Each message says what went wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the wgpu backend cannot run here: {what}. {how}")]
    Unavailable { what: String, how: String },

    #[error(
        "{what} needs {bytes} bytes in one storage binding, but the adapter {adapter} binds at most {limit} \
         (max_storage_buffer_binding_size); split the input into parts of at most {limit} bytes, or use \
         --backend cuda or cpu"
    )]
    BindingTooLarge { what: &'static str, bytes: u64, limit: u64, adapter: String },

    #[error(
        "{what} needs a buffer of {bytes} bytes, but the adapter {adapter} allows at most {limit} \
         (max_buffer_size); split the input, or use --backend cuda or cpu"
    )]
    BufferTooLarge { what: &'static str, bytes: u64, limit: u64, adapter: String },

    #[error("the adapter {adapter} lacks {what}, which {needed_by} needs; {how}")]
    MissingCapability { adapter: String, what: String, needed_by: String, how: String },

    #[error("wgpu refused {during}: {message}")]
    Validation { during: String, message: String },

    #[error("the GPU ran out of memory while {during}: {message}; use smaller sizes or another backend")]
    OutOfMemory { during: String, message: String },

    #[error("the GPU device was lost while {during}: {message}")]
    Lost { during: String, message: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Drives a wgpu future to completion. On native backends these resolve at
/// once (or after a device poll), so polling with a no-op waker spares an executor.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}
