//! The tracer's fused sites on wgpu (compaction/site.wgsl): which entry point
//! a stage runs for its algorithm, and the stable sites' tile states.

use crate::compaction::Algorithm;
use crate::compaction::wgpu::WgpuBackend;
use crate::trace::{TraceError, TraceResult};
use crate::wgpu_runtime::Device;

/// A stage's entry points: the separate pass's (dead slots written), then
/// one per fused site.
pub(super) struct Entries {
    pub separate: &'static str,
    pub atomic: &'static str,
    pub lookback: &'static str,
    pub chained: &'static str,
}

/// The entry point that runs a stage whose site `fuse` names (None: separate).
pub(super) fn entry(fuse: Option<Algorithm>, e: &Entries) -> TraceResult<&'static str> {
    match fuse {
        None => Ok(e.separate),
        Some(Algorithm::Atomic) => Ok(e.atomic),
        Some(Algorithm::Lookback) => Ok(e.lookback),
        Some(Algorithm::Chained) => Ok(e.chained),
        Some(a) => Err(TraceError::Settings(format!(
            "{}: `{a}` has no fused site (only lookback, chained and atomic do); use --fusion off",
            e.separate
        ))),
    }
}

/// Storage buffers a stable site's entry points bind (shade: seven of its
/// own and the tile states).
const STABLE_STORAGE: u32 = 8;

/// The stable sites' words (site.wgsl `site_states`): the tile counter and
/// one state per tile, cleared before each dispatch that uses them.
pub(super) struct SiteStates {
    buffer: wgpu::Buffer,
    /// Set once a frame's status said a stable site gave up waiting
    /// (site.wgsl `SITE_STALLED`): this device then runs them separately.
    pub stalled: bool,
}

impl SiteStates {
    pub fn new(backend: &WgpuBackend) -> TraceResult<Self> {
        Ok(SiteStates { buffer: backend.raw_buffer("the stable sites' tile states", 4096)?, stalled: false })
    }

    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Whether this device fuses `algorithm`'s sites into the tracer's stages.
    pub fn fuses(&self, dev: &Device, algorithm: Algorithm) -> bool {
        match algorithm {
            Algorithm::Atomic => true,
            Algorithm::Lookback | Algorithm::Chained => {
                !self.stalled && dev.limits.max_storage_buffers_per_shader_stage >= STABLE_STORAGE
            }
            _ => false,
        }
    }

    /// Ready for a dispatch of `groups` workgroups over tiles of `wg` of
    /// `items` items: grown to hold their states, the words they use cleared
    /// in `enc` (recorded before the dispatch, so they land before it).
    pub fn prepare(
        &mut self,
        backend: &WgpuBackend,
        enc: &mut wgpu::CommandEncoder,
        items: u64,
        wg: u32,
    ) -> TraceResult<()> {
        let bytes = 4 * (1 + items.div_ceil(wg.max(1) as u64));
        if bytes > self.buffer.size() {
            self.buffer = backend.raw_buffer("the stable sites' tile states", bytes.next_power_of_two())?;
        }
        enc.clear_buffer(&self.buffer, 0, Some(bytes.next_multiple_of(4)));
        Ok(())
    }
}
