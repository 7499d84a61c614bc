//! The tracer's typed errors. Split from `mod.rs`, which holds the frame.

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error(transparent)]
    Compaction(#[from] crate::compaction::Error),
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Gpu(#[from] crate::cuda_runtime::Error),
    #[error(transparent)]
    Scene(#[from] crate::scene::SceneError),
    #[error("{0}")]
    Settings(String),
    #[error(
        "the shard of pixels [{base}, {base} + {count}) is not a non-empty range of the image's {image} pixels: \
         give each engine a band inside the image"
    )]
    ShardOutsideImage { base: u64, count: u64, image: u64 },
    #[error(transparent)]
    Site(#[from] crate::compaction::SiteError),
    #[error(
        "the breadth-first frontier would need {items} items ({gib:.1} GiB) at level {level} of bounce {bounce}, \
         more than --max-frontier {max}: {advice}"
    )]
    FrontierTooLarge { items: u64, gib: f64, level: u32, bounce: u32, max: u64, advice: String },
    #[error(
        "the scene needs {bytes} bytes of GPU memory ({what}) and the device has {free} free: use a smaller \
         scene or image, or --backend cpu"
    )]
    OutOfMemory { what: &'static str, bytes: u64, free: u64 },
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
    #[error(transparent)]
    Memory(#[from] crate::memory::MemoryError),
    #[error(transparent)]
    Output(#[from] crate::files::OutputError),
}

impl From<std::convert::Infallible> for TraceError {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}

pub type TraceResult<T> = std::result::Result<T, TraceError>;
