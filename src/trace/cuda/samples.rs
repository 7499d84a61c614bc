//! What a split by samples ([`crate::trace::split::SplitBy::Samples`]) adds
//! to the CUDA engine: the held sums (the rank's band of the running image,
//! while its sums take each round's sample), room for the other ranks'
//! samples of that band, and `trace_add_sample`, which adds a sample into the
//! held sums with the additions `trace_accumulate` makes.

use cudarc::driver::{CudaSlice, PushKernelArg, sys};

use super::{Build, CudaEngine, grid, launch_err};
use crate::cuda_runtime::ptr as raw_ptr;
use crate::trace::{Engine, Shard, TraceResult};

/// Bytes of one pixel's sum (RGBA f32).
const PIXEL: u64 = 16;

/// Made by a split by samples' first use; an engine that never splits so keeps none.
#[derive(Default)]
pub(super) struct SampleBuffers {
    /// Image-sized; only the rank's band is meaningful.
    held: Option<CudaSlice<u8>>,
    /// The other ranks' samples of the band, one after another.
    room: Option<CudaSlice<u8>>,
}

impl CudaEngine {
    /// The held sums' device address (made, zeroed, on first use).
    pub fn held_ptr(&mut self) -> TraceResult<u64> {
        if self.samples.held.is_none() {
            self.samples.held = Some(self.backend.zeroed(self.image_pixels() * PIXEL)?);
        }
        Ok(self.samples.held.as_ref().map_or(0, raw_ptr))
    }

    /// Room for `pixels` sums of other ranks' samples: its device address.
    pub fn sample_room(&mut self, pixels: u64) -> TraceResult<u64> {
        let bytes = pixels.max(1) * PIXEL;
        if self.samples.room.as_ref().is_none_or(|r| (r.len() as u64) < bytes) {
            self.samples.room = None; // freed before the larger one is made
            self.samples.room = Some(self.backend.zeroed(bytes)?);
        }
        Ok(self.samples.room.as_ref().map_or(0, raw_ptr))
    }

    /// Copies pixels `[first, first + count)` from the sums into the held
    /// sums (`to_held`), or back, on the engine's stream.
    pub fn hold(&mut self, first: u64, count: u64, to_held: bool) -> TraceResult<()> {
        Shard { base: first, count }.check(self.image_pixels())?;
        let (held, sums) = (self.held_ptr()? + first * PIXEL, self.sums_ptr() + first * PIXEL);
        let (dst, src) = if to_held { (held, sums) } else { (sums, held) };
        self.stream.context().bind_to_thread().map_err(launch_err("binding the engine's context"))?;
        // SAFETY: both ranges lie inside image-sized buffers of this device (checked above).
        let r = unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, (count * PIXEL) as usize, self.stream.cu_stream()) };
        r.result().map_err(launch_err("copying between the sums and the held sums"))
    }

    /// Adds `count` sums at device address `part` (this engine's) into the
    /// held sums from pixel `first` on (`trace_add_sample`), after what the
    /// stream holds: calls in sample order add in sample order.
    pub fn add_to_held(&mut self, first: u64, part: u64, count: u64) -> TraceResult<()> {
        Shard { base: first, count }.check(self.image_pixels())?;
        let dst = self.held_ptr()? + first * PIXEL;
        let f = self.function(Build::PLAIN, "trace_add_sample")?;
        let mut l = self.stream.launch_builder(&f);
        l.arg(&dst).arg(&part).arg(&count);
        // SAFETY: matches trace_add_sample(float4*, const float4*, u64); the held range lies in the image
        // (checked above), and the caller's `part` holds `count` sums on this device.
        unsafe { l.launch(grid(count)?) }.map(drop).map_err(launch_err("launching trace_add_sample"))
    }

    /// Waits for everything enqueued on the engine's stream.
    pub fn finish(&self) -> TraceResult<()> {
        self.stream.synchronize().map_err(launch_err("waiting for the engine's stream"))
    }
}
