//! The fast radix sort's host side on wgpu (shaders/collide/radix_sort.wgsl),
//! the twin of `CudaCollide::fast_sort`: per pass of up to 8 bits a tile
//! histogram, the library's exclusive scan of it, a stable scatter; four
//! passes over 30-bit Morton codes, so the result lands where it started.

use smart_default::SmartDefault;

use super::record::Recorder;
use crate::collide::{CollideError, CollideResult};
use crate::compaction::wgpu::{WgpuBackend, WgpuBuffer};
use crate::compaction::{Algorithm, Backend};
use crate::wgpu_runtime::{Shader, wgsl_source};

/// shaders/collide/radix_sort.wgsl, after a prelude that sets `RS_ITEMS`.
pub const RADIX_SORT: Shader = wgsl_source!("collide/radix_sort.wgsl");
/// radix_sort.wgsl `RS_WG` and `RADIX`.
const RS_WG: u64 = 256;
const RADIX: u64 = 256;
/// Morton codes are 30 bits: passes of 8, 8, 8 and 6 bits order them as a
/// sort of all 32 would.
const KEY_BITS: u32 = 30;

/// Tuning of the fast radix sort.
#[derive(Clone, Debug, SmartDefault)]
pub struct FastSortTuning {
    /// Keys per invocation (`RS_ITEMS`); a tile is 256 of these. Its keys
    /// and values sit in workgroup memory (8 bytes a key), so the default
    /// stays within the 16 KiB every adapter offers.
    #[default(4)]
    pub items: u32,
}

/// radix_sort.wgsl `SortParams`, keep in sync.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct SortParams {
    n: u32,
    shift: u32,
    bits: u32,
    tiles: u32,
}

/// The sort's second key and value buffers, its digit counts and pipelines.
pub(super) struct FastSort {
    keys: wgpu::Buffer,
    values: wgpu::Buffer,
    /// Per pass: digit-major tile histograms, then their exclusive scan.
    hist: WgpuBuffer<u32>,
    offsets: WgpuBuffer<u32>,
    tiles: u32,
    histogram: wgpu::ComputePipeline,
    scatter: wgpu::ComputePipeline,
}

impl FastSort {
    pub(super) fn new(b: &WgpuBackend, n: u64, t: &FastSortTuning) -> CollideResult<Self> {
        if t.items == 0 || t.items > 32 {
            return Err(CollideError::Settings("fast sort: items per invocation must be between 1 and 32".into()));
        }
        let shared = RS_WG * t.items as u64 * 8 + 3 * RADIX * 4;
        let limit = b.device().limits.max_compute_workgroup_storage_size as u64;
        if shared > limit {
            return Err(CollideError::Settings(format!(
                "fast sort: {} items per invocation need {shared} bytes of workgroup memory, the adapter has {limit}",
                t.items
            )));
        }
        let tiles = n.div_ceil(RS_WG * t.items as u64);
        let tiles = u32::try_from(tiles).map_err(|_| CollideError::Settings(format!("{n} keys: too many tiles")))?;
        let prelude = format!("const RS_ITEMS: u32 = {}u;", t.items);
        let pipe = |entry| super::pipeline(b, &RADIX_SORT, &prelude, entry, &[]);
        Ok(FastSort {
            keys: b.raw_buffer("the fast sort's keys", n * 4)?,
            values: b.raw_buffer("the fast sort's values", n * 4)?,
            hist: b.alloc(RADIX * tiles as u64)?,
            offsets: b.alloc(RADIX * tiles as u64)?,
            tiles,
            histogram: pipe("radix_histogram")?,
            scatter: pipe("radix_scatter")?,
        })
    }

    /// LSD radix sort of `keys` with `ids`, 8 bits a pass.
    pub(super) fn run(
        &mut self,
        b: &WgpuBackend,
        rec: &mut Recorder,
        n: u32,
        keys: &wgpu::Buffer,
        ids: &wgpu::Buffer,
    ) -> CollideResult<()> {
        let tiles = self.tiles;
        let mut src = (keys.clone(), ids.clone());
        let mut dst = (self.keys.clone(), self.values.clone());
        let mut shift = 0;
        while shift < KEY_BITS {
            let bits = (KEY_BITS - shift).min(8);
            let entries = (1u64 << bits) * tiles as u64;
            self.hist.set_len(entries)?;
            self.offsets.set_len(entries)?;
            let p = SortParams { n, shift, bits, tiles };
            rec.dispatch(&self.histogram, &p, &[(1, &src.0), (3, self.hist.raw())], tiles);
            // The library's scan records after what waits.
            rec.lend(b)?;
            b.exclusive_scan(Algorithm::Lookback, &self.hist, &mut self.offsets)?;
            let binds = [(1, &src.0), (2, &src.1), (4, self.offsets.raw()), (5, &dst.0), (6, &dst.1)];
            rec.dispatch(&self.scatter, &p, &binds, tiles);
            std::mem::swap(&mut src, &mut dst);
            shift += bits;
        }
        // An even number of passes (four) leaves the result in `keys` and `ids`.
        const { assert!(KEY_BITS.div_ceil(8).is_multiple_of(2)) };
        Ok(())
    }
}

/// Every variant of the sort's shader, for the validate-everything test.
pub fn sources() -> Vec<(String, String)> {
    let t = FastSortTuning::default();
    let prelude = format!("const RS_ITEMS: u32 = {}u;", t.items);
    vec![(RADIX_SORT.name.to_string(), RADIX_SORT.assemble(&prelude))]
}
