//! Host side of fused compaction sites (kernels/compaction/site.cuh): a
//! producer kernel of a workload compacts the items it makes through the
//! library's single-pass algorithms, inside the same kernel. A [`CudaSite`]
//! names the algorithm, owns the scratch that returns to zero after every use
//! (tile counter, done count, atomic tally), takes a tile-state epoch per use
//! from the backend, says how the producer is compiled ([`CudaSite::define`])
//! and sizes its grid.

use std::collections::HashMap;
use std::sync::Mutex;

use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr};

use crate::compaction::cuda::runtime::driver_error;
pub use crate::compaction::cuda::runtime::{PRODUCE, SITE};
use crate::compaction::cuda::{CudaBackend, raw_ptr};
use crate::compaction::{Algorithm, Error, Result, SitePath};

/// site.cuh's scratch: three u32 words and the atomic's u64 tally at byte 8.
const SCRATCH_BYTES: u64 = 16;

/// Which code a producer compiles for a site (`REAP_SITE_*` in site.cuh).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SiteKernel {
    /// The producer writes its slots, dead ones included; the library's pass runs after.
    Separate = 0,
    Lookback = 1,
    Chained = 2,
    Atomic = 3,
}

impl SiteKernel {
    /// The fused kernel of `algorithm`, or `Separate` for one that does not fuse.
    pub fn of(algorithm: Algorithm) -> SiteKernel {
        match algorithm {
            Algorithm::Lookback => SiteKernel::Lookback,
            Algorithm::Chained => SiteKernel::Chained,
            Algorithm::Atomic => SiteKernel::Atomic,
            _ => SiteKernel::Separate,
        }
    }
    /// The value a producer's `#define` takes (a `REAP_SITE_*`).
    pub fn define(self) -> u32 {
        self as u32
    }
}

/// site.cuh `Site`, passed by value to a producer: keep in sync (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceSite {
    state: u64,
    scratch: u64,
    capacity: u64,
    epoch: u32,
    pad: u32,
}

const _: () = assert!(std::mem::size_of::<DeviceSite>() == 32);

// SAFETY: plain repr(C) data laid out as site.cuh's `Site` (three u64, two u32).
unsafe impl DeviceRepr for DeviceSite {}

/// One compaction site of a workload on the CUDA backend.
pub struct CudaSite {
    algorithm: Algorithm,
    kernel: SiteKernel,
    scratch: CudaSlice<u8>,
    /// Resident blocks of each producer function, asked of the driver once.
    resident: Mutex<HashMap<(String, u32), u32>>,
}

impl CudaSite {
    /// A site that runs `algorithm`; `fuse` false runs even a single-pass
    /// algorithm as a separate pass (to measure what fusion is worth).
    pub fn new(b: &CudaBackend, algorithm: Algorithm, fuse: bool) -> Result<Self> {
        if !CudaBackend::implements(algorithm) {
            return Err(Error::Unsupported {
                algorithm: algorithm.name(),
                operation: "a compaction site on the CUDA backend",
                hint: String::new(),
            });
        }
        if crate::cuda_runtime::graph::capturing(b.stream()) {
            // Its scratch would be the graph's memory, gone after the frame.
            return Err(Error::Backend("a compaction site cannot be made while a frame is being captured".into()));
        }
        let kernel = if fuse { SiteKernel::of(algorithm) } else { SiteKernel::Separate };
        Ok(CudaSite { algorithm, kernel, scratch: b.zeroed(SCRATCH_BYTES)?, resident: Default::default() })
    }

    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// Which path the site takes.
    pub fn path(&self) -> SitePath {
        if self.kernel == SiteKernel::Separate { SitePath::Separate } else { SitePath::Fused }
    }

    /// What the producer compiles for this site.
    pub fn kernel(&self) -> SiteKernel {
        self.kernel
    }

    /// The arguments of one use whose output holds `capacity` slots, over an
    /// input of at most `max_tiles` tiles. Takes a fresh tile-state epoch
    /// (lookback, chained), so uses follow each other in stream order with
    /// no clearing in between.
    pub fn bind(&self, b: &CudaBackend, capacity: u64, max_tiles: u64) -> Result<DeviceSite> {
        let scratch = raw_ptr(&self.scratch);
        let (state, epoch) = match self.kernel {
            SiteKernel::Lookback | SiteKernel::Chained => {
                let (words, epoch) = b.tile_states(max_tiles.max(1))?;
                // The backend's first 8 bytes are the library's own tile counter.
                (words + 8, epoch)
            }
            SiteKernel::Atomic | SiteKernel::Separate => (0, 0),
        };
        Ok(DeviceSite { state, scratch, capacity, epoch, pad: 0 })
    }

    /// Blocks of a fused launch of `f` (named `name`, `block` threads,
    /// `shared` bytes of dynamic shared memory) over at most `max_tiles`
    /// tiles: as many as the device holds at once, each looping over tiles,
    /// no more than the tiles. A site's tile ids and draws count in 32 bits.
    pub fn grid(
        &self,
        b: &CudaBackend,
        f: &CudaFunction,
        name: &str,
        block: u32,
        shared: u32,
        max_tiles: u64,
    ) -> Result<u32> {
        let key = (name.to_string(), block);
        let cached = self.resident.lock().unwrap_or_else(|p| p.into_inner()).get(&key).copied();
        let resident = match cached {
            Some(r) => r,
            None => {
                let per_sm = f
                    .occupancy_max_active_blocks_per_multiprocessor(block, shared as usize, None)
                    .map_err(driver_error("asking the occupancy of a producer kernel"))?;
                let r = per_sm.max(1).saturating_mul(b.info.sms.max(1));
                self.resident.lock().unwrap_or_else(|p| p.into_inner()).insert(key, r);
                r
            }
        };
        let grid = (resident as u64).min(max_tiles.max(1));
        if max_tiles.saturating_add(grid) > u32::MAX as u64 {
            return Err(Error::Backend(format!(
                "{max_tiles} tiles of {block} items overflow a site's 32-bit tile ids; produce fewer items per launch"
            )));
        }
        Ok(grid as u32)
    }
}
