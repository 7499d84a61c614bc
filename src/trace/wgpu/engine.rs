//! `Engine` for [`WgpuEngine`]: one method per entry point of
//! wavefront.wgsl, in the shader file's order (cuda.rs's methods in
//! wavefront.cu's), each one recorded dispatch.

use super::site::{Entries, entry};
use super::*;
use crate::memory::{Limit, Place};

impl Engine for WgpuEngine {
    type B = WgpuBackend;
    type Clock = WgpuClock;

    /// Submits what the stages recorded first, so that a library call made
    /// through the backend runs after them (it submits work of its own).
    fn backend(&self) -> &WgpuBackend {
        lock(&self.pending).submit();
        &self.backend
    }

    /// Recorded into the frame's encoder after the stages before it: one
    /// submission per frame, not one per compaction.
    fn select_counted<T: crate::compaction::Element>(
        &mut self,
        algorithm: crate::compaction::Algorithm,
        input: &WgpuBuffer<T>,
        sentinel: T,
        output: &mut WgpuBuffer<T>,
        lens: crate::compaction::Lens<'_, WgpuBackend>,
    ) -> TraceResult<()> {
        let keep = crate::compaction::Keep::Sentinel(sentinel);
        lock(&self.pending).lend(&self.backend, |b| {
            crate::compaction::Backend::select_counted(b, algorithm, input, keep, output, lens)
        })?;
        Ok(())
    }

    fn image_pixels(&self) -> u64 {
        self.gpu.image_pixels()
    }

    fn shard(&self) -> Shard {
        self.gpu.shard
    }

    fn set_shard(&mut self, shard: Shard) -> TraceResult<()> {
        if let Some((pv, pw)) = self.gpu.set_shard(shard, |room| alloc_paths(&self.backend, room))? {
            (self.pv, self.pw) = (pv, pw);
            // alloc_paths refuses 2^32 paths or more.
            self.info.counts[1] = self.gpu.path_capacity as u32;
            self.write_info();
        }
        Ok(())
    }

    fn bvh_depth(&self) -> u32 {
        self.gpu.depth
    }

    /// `atomic` fuses everywhere; `lookback` and `chained` where the device
    /// binds their tile states and they never stalled on it (site.rs).
    /// WGSL's wide expansion descends one level per step (no block step yet).
    fn has_block_step(&self) -> bool {
        false
    }

    fn fuses(&self, algorithm: crate::compaction::Algorithm) -> bool {
        self.site.fuses(&self.dev, algorithm)
    }

    /// wgpu reports no free memory: what bounds a frontier here is its two
    /// buffers, each bound whole as one storage binding.
    fn memory_limit(&self) -> TraceResult<Limit> {
        Ok(Limit {
            bytes: self.dev.limits.max_storage_buffer_binding_size.saturating_mul(2),
            place: Place::Device,
            source: "in two storage bindings of the adapter (wgpu reports no free memory)",
        })
    }

    fn work(&mut self) -> &mut Option<Work<Self>> {
        &mut self.work
    }

    fn clock(&mut self) -> &mut WgpuClock {
        &mut self.clock
    }

    fn begin_frame(
        &mut self,
        words: &mut Words<Self>,
        sample: u32,
        _key: u64,
    ) -> TraceResult<Option<crate::replay::FramePath>> {
        self.sample = sample;
        self.clock.clear();
        lock(&self.pending).encoder().clear_buffer(words.raw(), 0, None);
        Ok(None)
    }

    fn end_frame(&mut self, words: &Words<Self>) -> TraceResult<Option<FrameEnd>> {
        self.binds.clear();
        self.clock.resolve()?;
        // The words are read after the last stage (accumulate): this one wait completes the frame.
        let words = crate::compaction::Backend::download(self.backend(), words)?;
        if words.get(crate::frontier::STATUS as usize).is_some_and(|s| s & crate::frontier::status::STALLED != 0) {
            // The frame is redone; from now on through the separate pass.
            self.site.stalled = true;
        }
        let times = self.clock.times()?;
        Ok(Some((times, words)))
    }

    fn abort_frame(&mut self) {
        self.binds.clear();
        lock(&self.pending).submit();
        self.clock.clear();
    }

    fn wide_ranges(&self) -> &[(u32, u32)] {
        &self.gpu.wide_ranges
    }

    fn wide_depth(&self) -> u32 {
        self.gpu.wide_depth
    }

    fn camera(&mut self, queue: &mut Queue<Self>, words: &mut Words<Self>, queue_len: u64) -> TraceResult<()> {
        let (base, count) = self.gpu.camera(&self.backend, queue, words, queue_len)?;
        let p = Params { queue_len: queue_len as u32, sample: self.sample, base, count, ..Default::default() };
        let io = Io { queue: Some(queue.raw()), words: Some(words.raw()), ..Default::default() };
        self.dispatch("trace_camera", count as u64, p, io)
    }

    fn depth_first(&mut self, queue: &Queue<Self>, words: &Words<Self>, run: DepthFirst) -> TraceResult<()> {
        self.gpu.depth_first(&self.backend, words, &run)?;
        let DepthFirst { shadow, queue_len, bvh } = run;
        let name = match bvh {
            BvhKind::Binary => "trace_depth_first",
            BvhKind::Wide => "trace_depth_first_wide",
        };
        let capacity = queue.len();
        let p = Params {
            capacity: cap32(capacity),
            shadow: shadow as u32,
            queue_len: queue_len as u32,
            ..Default::default()
        };
        let io = Io { queue: Some(queue.raw()), words: Some(words.raw()), ..Default::default() };
        let mut items = capacity;
        if bvh == BvhKind::Wide {
            // Its lanes fetch rays from the counter until the queue is spent.
            lock(&self.pending).encoder().clear_buffer(&self.fetch, 0, None);
            items = items.min(self.tuning.fetch_groups as u64 * self.tuning.workgroup as u64);
        }
        self.dispatch(name, items, p, io)
    }

    fn frontier_init(&mut self, step: Step<'_, WgpuBackend, u32>, run: FrontierRun) -> TraceResult<()> {
        self.gpu.frontier_init(&self.backend, &step, &run)?;
        let Step { at, input: queue, output: frontier, words } = step;
        let name = entry(run.fuse, &INIT)?;
        let p = Params {
            capacity: cap32(run.capacity),
            shadow: run.shadow as u32,
            input_len: at.input_len as u32,
            input_live: at.input_live as u32,
            output_len: at.output_len as u32,
            output_live: at.output_live as u32,
            last: at.last as u32,
            ..Default::default()
        };
        let io =
            Io { queue: Some(queue.raw()), words: Some(words.raw()), fout: Some(frontier.raw()), ..Default::default() };
        // A stable site tiles the whole queue: a longer one than the frontier is an overflow it counts.
        self.prepare_site(name, queue.len())?;
        self.dispatch(name, queue.len().min(run.capacity), p, io)
    }

    fn expand(&mut self, step: Step<'_, WgpuBackend>, run: FrontierRun) -> TraceResult<()> {
        self.gpu.expand(&self.backend, &step, &run)?;
        let Step { at, input, output, words } = step;
        let name = entry(run.fuse, if run.bvh == BvhKind::Binary { &EXPAND } else { &EXPAND_WIDE })?;
        let p = Params {
            capacity: cap32(run.capacity),
            shadow: run.shadow as u32,
            descend: run.descend,
            input_len: at.input_len as u32,
            input_live: at.input_live as u32,
            output_len: at.output_len as u32,
            output_live: at.output_live as u32,
            last: at.last as u32,
            ..Default::default()
        };
        let io =
            Io { words: Some(words.raw()), fin: Some(input.raw()), fout: Some(output.raw()), ..Default::default() };
        // Separate: n * fan slots fit the capacity. Fused: n items at most
        // the capacity, whatever they keep (a total past it is an overflow).
        let items = if run.fuse.is_some() { run.capacity } else { run.capacity / run.fan() };
        self.prepare_site(name, items)?;
        self.dispatch(name, items, p, io)
    }

    fn shade(
        &mut self,
        queue: &Queue<Self>,
        next: &mut Queue<Self>,
        words: &mut Words<Self>,
        s: Shading,
    ) -> TraceResult<()> {
        let Shading { sample, bounce, estimator, queue_len, counts, next_len, fuse } = s;
        self.gpu.check_words(&self.backend, words, &[queue_len, counts.alive, counts.shadow, next_len])?;
        let name = entry(fuse, &SHADE)?;
        let capacity = queue.len().min(next.len());
        let p = Params {
            capacity: cap32(capacity),
            queue_len: queue_len as u32,
            alive: counts.alive as u32,
            shadows: counts.shadow as u32,
            sample,
            bounce,
            estimator: estimator as u32,
            base: self.gpu.shard32().0,
            next_len: next_len as u32,
            ..Default::default()
        };
        let io =
            Io { queue: Some(queue.raw()), next: Some(next.raw()), words: Some(words.raw()), ..Default::default() };
        self.prepare_site(name, capacity)?;
        self.dispatch(name, capacity, p, io)
    }

    fn nee(&mut self, queue: &Queue<Self>, words: &Words<Self>, queue_len: u64) -> TraceResult<()> {
        self.gpu.check_words(&self.backend, words, &[queue_len])?;
        let capacity = queue.len();
        let p = Params { capacity: cap32(capacity), queue_len: queue_len as u32, ..Default::default() };
        let io = Io { queue: Some(queue.raw()), words: Some(words.raw()), ..Default::default() };
        self.dispatch("trace_nee", capacity, p, io)
    }

    fn accumulate(&mut self, words: &Words<Self>) -> TraceResult<()> {
        self.gpu.check_words(&self.backend, words, &[crate::frontier::STATUS])?;
        let (base, count) = self.gpu.shard32();
        let p = Params { base, count, ..Default::default() };
        let io = Io { words: Some(words.raw()), ..Default::default() };
        self.dispatch("trace_accumulate", count as u64, p, io)
    }

    fn reset(&mut self) -> TraceResult<()> {
        let mut p = lock(&self.pending);
        p.encoder().clear_buffer(&self.sum, 0, None);
        p.submit();
        Ok(())
    }

    fn set_camera(&mut self, camera: CameraLayout) {
        self.set_camera_layout(camera);
    }

    fn image(&self) -> TraceResult<Vec<[f32; 4]>> {
        lock(&self.pending).submit();
        let bytes = self.dev.read(&self.sum, 0, self.image_pixels() * 16, "reading the image").map_err(rt_err)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    fn rgba8(&mut self) -> TraceResult<&[[u8; 4]]> {
        let words = self.tonemap_words()?;
        self.rgba = words.iter().map(|w| w.to_le_bytes()).collect();
        Ok(&self.rgba)
    }
}

/// Each stage's entry points, separate and through each fused site.
const INIT: Entries = Entries {
    separate: "trace_bf_init",
    atomic: "trace_bf_init_atomic",
    lookback: "trace_bf_init_lookback",
    chained: "trace_bf_init_chained",
};
const EXPAND: Entries = Entries {
    separate: "trace_bf_expand",
    atomic: "trace_bf_expand_atomic",
    lookback: "trace_bf_expand_lookback",
    chained: "trace_bf_expand_chained",
};
const EXPAND_WIDE: Entries = Entries {
    separate: "trace_bf_expand_wide",
    atomic: "trace_bf_expand_wide_atomic",
    lookback: "trace_bf_expand_wide_lookback",
    chained: "trace_bf_expand_wide_chained",
};
const SHADE: Entries = Entries {
    separate: "trace_shade",
    atomic: "trace_shade_atomic",
    lookback: "trace_shade_lookback",
    chained: "trace_shade_chained",
};

impl WgpuEngine {
    /// Before a stable site's dispatch over `items` items (the most its
    /// shader may tile): its tile states, cleared.
    fn prepare_site(&mut self, name: &'static str, items: u64) -> TraceResult<()> {
        if name.ends_with("_lookback") || name.ends_with("_chained") {
            let mut pending = lock(&self.pending);
            self.site.prepare(&self.backend, pending.encoder(), items, self.tuning.workgroup)?;
        }
        Ok(())
    }
}
