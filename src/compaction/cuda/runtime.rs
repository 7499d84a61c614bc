//! The library's kernel sources and how each is specialised (element size,
//! keep rule, tuning numbers). The CUDA runtime itself, finding the
//! libraries, NVRTC and the module cache, the stage timer, lives in
//! [`crate::cuda_runtime`]; the names re-exported here keep the algorithm files short.

use std::sync::Arc;
use std::time::Duration;

use crate::compaction::{Error, PhaseTime, Result};
use crate::cuda_runtime::{self, Spec, Specialise, kernel_source};
pub use crate::cuda_runtime::{Kernels, Source, arch_name, compile, driver_available, nvrtc_available};

/// Maps a driver error to the library's error, naming what it was doing.
pub fn driver_error(during: &'static str) -> impl Fn(cudarc::driver::DriverError) -> Error {
    move |e| Error::Gpu(cuda_runtime::driver_error(during)(e))
}

/// Warp-level helpers, shared with the collision demo's kernels.
pub const WARP: Source = kernel_source!("warp.cuh");
/// The tile-state word and its memory orderings (single-pass kernels and fused sites).
pub const TILE_STATE: Source = kernel_source!("compaction/tile_state.cuh");
/// Declares `REAP_ELEM_BYTES`, `REAP_KEEP`, `Elem`, `KeepArgs` and the keep rule.
pub const COMMON: Source = kernel_source!("compaction/common.cuh", headers: &[WARP, TILE_STATE]);
/// The `bulk-async` load style's ring of tiles (sm_90 bulk copies).
pub const SINGLE_PASS_RING: Source = kernel_source!("compaction/single_pass_ring.cuh");
/// The tile machinery `lookback` and `chained` share.
pub const SINGLE_PASS: Source = kernel_source!("compaction/single_pass.cuh", headers: &[COMMON, SINGLE_PASS_RING]);

/// `lookback`'s and `chained`'s protocols alone (no element type), for the
/// library's tiles and for fused sites.
pub const LOOKBACK_PROTOCOL: Source = kernel_source!("compaction/lookback.cuh", headers: &[WARP, TILE_STATE]);
pub const CHAINED_PROTOCOL: Source = kernel_source!("compaction/chained.cuh", headers: &[WARP, TILE_STATE]);
pub const LOOKBACK: Source = kernel_source!("compaction/lookback.cu", headers: &[SINGLE_PASS, LOOKBACK_PROTOCOL]);
pub const CHAINED: Source = kernel_source!("compaction/chained.cu", headers: &[SINGLE_PASS, CHAINED_PROTOCOL]);
/// The device API of a fused site (site.rs): list it in a producer source's headers.
pub const SITE: Source =
    kernel_source!("compaction/site.cuh", headers: &[WARP, TILE_STATE, LOOKBACK_PROTOCOL, CHAINED_PROTOCOL]);
/// The verify suite's synthetic producer, through a site.
pub const PRODUCE: Source = kernel_source!("compaction/produce.cu", headers: &[SITE]);
pub const MARK: Source = kernel_source!("compaction/mark.cu", headers: &[COMMON]);
pub const BILLETER: Source = kernel_source!("compaction/billeter.cu", headers: &[COMMON]);
pub const HORN: Source = kernel_source!("compaction/horn.cu", headers: &[COMMON]);
pub const SENGUPTA: Source = kernel_source!("compaction/sengupta.cu", headers: &[COMMON]);
pub const BLELLOCH: Source = kernel_source!("compaction/blelloch.cu", headers: &[COMMON]);
pub const ROGER: Source = kernel_source!("compaction/roger.cu", headers: &[COMMON]);
pub const ATOMIC: Source = kernel_source!("compaction/atomic.cu", headers: &[COMMON]);
pub const REDZONE: Source = kernel_source!("compaction/redzone.cu", headers: &[COMMON]);
pub const SORT: Source = kernel_source!("compaction/sort.cu", headers: &[COMMON]);
/// The sharded scan's prefix (src/compaction/shard/).
pub const SHARD: Source = kernel_source!("compaction/shard.cu", headers: &[COMMON]);

/// Every library kernel source, for the compile-everything test (each is
/// specialised by element size and keep rule).
pub const SOURCES: &[Source] =
    &[LOOKBACK, CHAINED, MARK, BILLETER, HORN, SENGUPTA, BLELLOCH, ROGER, ATOMIC, REDZONE, SORT, SHARD];

pub use crate::compaction::KeepMode;

/// What specialises one compiled module of the library.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    pub elem_bytes: u32,
    pub keep: KeepMode,
    /// Only with `KeepMode::Predicate`: the user's `reap_predicate` source.
    pub predicate: Option<Arc<str>>,
    /// For sort keys: bytes of the key at the front of the element.
    pub key_bytes: u32,
    /// Tuning numbers compiled in (block size, items per thread, …).
    pub defines: Vec<(&'static str, u32)>,
}

impl Variant {
    pub fn new(elem_bytes: usize, keep: KeepMode) -> Self {
        Variant { elem_bytes: elem_bytes as u32, keep, predicate: None, key_bytes: 4, defines: Vec::new() }
    }

    /// The same variant with tuning defines added.
    pub fn with(&self, defines: &[(&'static str, u32)]) -> Self {
        let mut v = self.clone();
        v.defines.extend_from_slice(defines);
        v
    }
}

impl Specialise for Variant {
    fn spec(&self) -> Spec {
        let mut defines = vec![
            ("REAP_ELEM_BYTES", self.elem_bytes),
            ("REAP_KEEP", self.keep as u32),
            ("REAP_KEY_BYTES", self.key_bytes),
        ];
        defines.extend_from_slice(&self.defines);
        // The predicate follows the common header, which declares Elem.
        let after_header = match (&self.predicate, self.keep) {
            (Some(p), KeepMode::Predicate) => Some((COMMON.name, p.clone())),
            _ => None,
        };
        Spec { defines, after_header }
    }
}

/// The stages of one library call: the GPU layer's timer with the library's
/// phase names, reporting [`PhaseTime`]s.
pub struct Stages(cuda_runtime::Timer<&'static str>);

impl Stages {
    pub fn new(stream: &Arc<cudarc::driver::CudaStream>) -> Self {
        Stages(cuda_runtime::Timer::new(stream))
    }

    /// Runs `f`, which enqueues the stage's work, between two timing events.
    pub fn run<R>(&mut self, name: &'static str, f: impl FnOnce() -> Result<R>) -> Result<R> {
        self.0.run(name, f)
    }

    /// From the first stage's start to the last stage's end (waits for it).
    pub fn span(&self) -> Result<Duration> {
        Ok(duration(self.0.span_ms()?))
    }

    /// Waits for the last stage and reads every stage's time.
    pub fn times(&self) -> Result<Vec<PhaseTime>> {
        Ok(self.0.times_ms()?.into_iter().map(|(name, ms)| PhaseTime { name, time: duration(ms) }).collect())
    }
}

fn duration(ms: f64) -> Duration {
    Duration::from_secs_f64(ms.max(0.0) / 1e3)
}
