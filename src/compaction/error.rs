//! The library's typed errors. Each message says what went wrong and what to do.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error("unknown algorithm `{name}`; the catalog has: {known}")]
    UnknownAlgorithm { name: String, known: String },

    #[error("`{algorithm}` does not implement {operation}{hint}")]
    Unsupported { algorithm: &'static str, operation: &'static str, hint: String },

    #[error("the {backend} backend does not run `{algorithm}`; `reap algorithms` lists what each backend runs")]
    NotOnBackend { algorithm: &'static str, backend: &'static str },

    #[error(transparent)]
    Memory(#[from] crate::memory::MemoryError),

    /// The processes' channel, where ranks are processes.
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),

    #[error("elements of {size} bytes are not supported; use 4, 8, 16 or 32-byte elements")]
    ElementSize { size: usize },

    #[error("{what}: expected length {expected}, got {actual}")]
    LengthMismatch { what: &'static str, expected: u64, actual: u64 },

    #[error("removal-index list: index {index} at position {position} is out of range for {len} elements")]
    RemovalOutOfRange { index: u64, position: u64, len: u64 },

    #[error("removal-index list: index {index} appears more than once (positions {first} and {second})")]
    RemovalDuplicate { index: u64, first: u64, second: u64 },

    #[error("lens: the {which} word {word} is outside the lens buffer of {words} words")]
    LensOutOfRange { which: &'static str, word: u64, words: u64 },

    #[error("lens: the input length and the count are both word {word}; give the count its own word")]
    LensAliased { word: u64 },

    #[error(
        "a counted call leaves its count in word {word} of its lens buffer, where the backend computes: read \
         that word (download the buffer, or hand it to the next call) instead of asking the report"
    )]
    CountInLens { word: u64 },

    #[error("invalid tuning for `{algorithm}`: {why}")]
    Tuning { algorithm: &'static str, why: String },

    /// The CUDA layer's errors: libraries missing, NVRTC, the driver.
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Gpu(#[from] crate::cuda_runtime::Error),

    /// The wgpu layer's errors: no adapter, limits, validation.
    #[cfg(feature = "wgpu")]
    #[error(transparent)]
    Wgpu(crate::wgpu_runtime::Error),

    #[error("{0}")]
    Backend(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
