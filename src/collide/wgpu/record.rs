//! How the wgpu engine records a frame: its dispatches, clears and timestamps
//! wait in a list until something else must run after them (a library call,
//! which submits its own work; the frame's end), then go to the queue as one
//! submission (stages do not submit on their own). The recorder is also the frame's [`Clock`]: a stage is the
//! span between two timestamps written into the queue's order, so a stage
//! that calls the library (the split sort, the pair frontier's compaction)
//! is timed like the engine's own. Without timestamps inside encoders the
//! host clock times each stage around a device wait (said by [`Recorder::clock`]).

use std::sync::Arc;
use std::time::Instant;

use crate::clocks::Clock;
use crate::collide::layout::World;
use crate::collide::{CollideError, CollideResult, StageId};
use crate::compaction::Error;
use crate::compaction::wgpu::WgpuBackend;
use crate::wgpu_runtime::{Device, timer};

/// One dispatch's parameters: shaders/collide/collide.wgsl `Params`, keep
/// in sync (176 bytes, at its own 256-byte offset of a submission's uniforms).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub world: World,
    pub n: u32,
    pub cap: u32,
    pub cand_cap: u32,
    pub contact_cap: u32,
    pub len_in: u32,
    pub live_in: u32,
    pub len_out: u32,
    pub live_out: u32,
    pub last: u32,
    pub write_root: u32,
    pub prev_count: u32,
    pub cand_word: u32,
    pub contact_word: u32,
    pub table_cap: u32,
    /// Always 0 (collide.wgsl `zero`).
    pub zero: u32,
    /// 1 in the first restitution pass, and in a colouring round's first step.
    pub first: u32,
    /// The colouring's colours, or the colour a coloured pass solves.
    pub colour: u32,
    /// 1: collide_apply leaves a body with no overflow point as it is.
    pub split_only: u32,
    /// 1: the pass is the relax pass of soft contacts.
    pub relax: u32,
    pub pad: u32,
}

const _: () = assert!(std::mem::size_of::<Params>() == 192);

/// Bytes between two dispatches' parameters (every adapter's uniform offset alignment divides it).
const STRIDE: u64 = 256;
/// Queries per query set: two per stage.
const QUERIES: u32 = 256;

/// What waits for the next submission.
enum Op {
    Clear(wgpu::Buffer),
    /// `groups` workgroups of `pipeline`; `params` are 256 bytes at most.
    Dispatch {
        pipeline: wgpu::ComputePipeline,
        params: Vec<u8>,
        binds: Vec<(u32, wgpu::Buffer)>,
        groups: Groups,
    },
    Timestamp(u32),
}

/// How many workgroups a dispatch runs.
enum Groups {
    /// Known on the host.
    Direct(u32),
    /// Read by the device from an indirect-arguments buffer at this offset.
    Indirect(wgpu::Buffer, u64),
}

/// Where a stage started.
pub enum Mark {
    Query(u32),
    Host(Instant),
}

/// A frame's pending work and its stage clock.
pub struct Recorder {
    dev: Arc<Device>,
    ops: Vec<Op>,
    /// Timestamps written inside encoders (else the host clock).
    inside: bool,
    sets: Vec<wgpu::QuerySet>,
    /// Queries used this frame.
    used: u32,
    /// Each stage of the frame with its two queries, or its host time (ms).
    stages: Vec<(StageId, u32, u32)>,
    host: Vec<(StageId, f64)>,
    /// The frame's encoder between submissions: what waits is encoded into
    /// it, and a library call records into it too ([`Recorder::lend`]).
    held: Option<wgpu::CommandEncoder>,
    /// Library calls lent the encoder so far, and how many between submissions.
    lends: u32,
    every: u32,
}

fn wgpu_err(e: crate::wgpu_runtime::Error) -> CollideError {
    CollideError::Compaction(Error::from(e))
}

impl Recorder {
    pub fn new(dev: &Arc<Device>) -> Self {
        let inside = dev.timestamps && dev.device.features().contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);
        Recorder {
            dev: dev.clone(),
            ops: Vec::new(),
            inside,
            sets: Vec::new(),
            used: 0,
            stages: Vec::new(),
            host: Vec::new(),
            held: None,
            lends: 0,
            every: crate::wgpu_runtime::lends_per_submission(),
        }
    }

    /// Which clock times the stages.
    pub fn clock(&self) -> timer::Clock {
        if self.inside { timer::Clock::Timestamps } else { timer::Clock::Host }
    }

    pub fn clear(&mut self, buffer: &wgpu::Buffer) {
        self.ops.push(Op::Clear(buffer.clone()));
    }

    /// `groups` workgroups (spread over x and y past 65,535; the shaders
    /// index them so), binding `binds` and the parameters at binding 0.
    pub fn dispatch<P: bytemuck::Pod>(
        &mut self,
        pipeline: &wgpu::ComputePipeline,
        params: &P,
        binds: &[(u32, &wgpu::Buffer)],
        groups: u32,
    ) {
        if groups == 0 {
            return;
        }
        self.push_dispatch(pipeline, params, binds, Groups::Direct(groups));
    }

    /// A dispatch whose workgroup counts the device reads from `args` at
    /// byte `offset` (x, y, z as [`Recorder::dispatch`] spreads them).
    pub fn dispatch_indirect<P: bytemuck::Pod>(
        &mut self,
        pipeline: &wgpu::ComputePipeline,
        params: &P,
        binds: &[(u32, &wgpu::Buffer)],
        args: &wgpu::Buffer,
        offset: u64,
    ) {
        self.push_dispatch(pipeline, params, binds, Groups::Indirect(args.clone(), offset));
    }

    fn push_dispatch<P: bytemuck::Pod>(
        &mut self,
        pipeline: &wgpu::ComputePipeline,
        params: &P,
        binds: &[(u32, &wgpu::Buffer)],
        groups: Groups,
    ) {
        let params = bytemuck::bytes_of(params).to_vec();
        debug_assert!(params.len() as u64 <= STRIDE);
        let binds = binds.iter().map(|&(i, b)| (i, b.clone())).collect();
        self.ops.push(Op::Dispatch { pipeline: pipeline.clone(), params, binds, groups });
    }

    /// Submits what waits, as one command buffer (nothing when nothing does).
    pub fn flush(&mut self) -> CollideResult<()> {
        self.encode()?;
        if let Some(enc) = self.held.take() {
            self.dev.queue.submit([enc.finish()]);
        }
        Ok(())
    }

    /// Before a library call: with timestamps in the queue, what waits is
    /// encoded and the frame's encoder lent to the library, whose call
    /// records into it (no submission of its own: each costs tens of
    /// microseconds, and the GPU idles between them); with the host clock,
    /// what waits is submitted and the library submits its own.
    pub fn lend(&mut self, b: &WgpuBackend) -> CollideResult<()> {
        self.reclaim(b);
        if !self.inside {
            return self.flush();
        }
        self.encode()?;
        self.lends += 1;
        if self.lends.is_multiple_of(self.every) {
            // What is recorded so far runs while the host records the rest.
            if let Some(enc) = self.held.take() {
                self.dev.queue.submit([enc.finish()]);
            }
        }
        let enc = self.held.take().unwrap_or_else(|| self.dev.device.create_command_encoder(&Default::default()));
        b.record_into(enc);
        Ok(())
    }

    /// Takes the frame's encoder back from the library (after its calls).
    pub fn reclaim(&mut self, b: &WgpuBackend) {
        if let Some(enc) = b.take_recording() {
            debug_assert!(self.held.is_none(), "the encoder was lent, so none is held");
            self.held = Some(enc);
        }
    }

    /// Encodes what waits into the frame's encoder.
    fn encode(&mut self) -> CollideResult<()> {
        if self.ops.is_empty() {
            return Ok(());
        }
        let mut enc = self.held.take().unwrap_or_else(|| self.dev.device.create_command_encoder(&Default::default()));
        let ops = std::mem::take(&mut self.ops);
        let dev = self.dev.clone();
        let mut uniforms = Vec::new();
        for op in &ops {
            if let Op::Dispatch { params, .. } = op {
                let at = uniforms.len();
                uniforms.resize(at + STRIDE as usize, 0u8);
                uniforms[at..at + params.len()].copy_from_slice(params);
            }
        }
        let sets = self.sets.clone();
        dev.scoped(
            || "recording the collider's stages".into(),
            || {
                use wgpu::util::DeviceExt;
                let uniform = (!uniforms.is_empty()).then(|| {
                    dev.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("reap collide params"),
                        contents: &uniforms,
                        usage: wgpu::BufferUsages::UNIFORM,
                    })
                });
                let mut k = 0u64;
                let mut i = 0;
                while i < ops.len() {
                    match &ops[i] {
                        Op::Clear(b) => enc.clear_buffer(b, 0, None),
                        Op::Timestamp(q) => enc.write_timestamp(&sets[(q / QUERIES) as usize], q % QUERIES),
                        Op::Dispatch { .. } => {
                            // Consecutive dispatches share a pass: each still sees the writes of those before.
                            let mut pass = enc.begin_compute_pass(&Default::default());
                            while let Some(Op::Dispatch { pipeline, params, binds, groups }) = ops.get(i) {
                                let Some(uniform) = &uniform else { break };
                                let mut entries = vec![wgpu::BindGroupEntry {
                                    binding: 0,
                                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                        buffer: uniform,
                                        offset: k * STRIDE,
                                        size: std::num::NonZeroU64::new(params.len() as u64),
                                    }),
                                }];
                                entries.extend(binds.iter().map(|(binding, b)| wgpu::BindGroupEntry {
                                    binding: *binding,
                                    resource: b.as_entire_binding(),
                                }));
                                let bg = dev.device.create_bind_group(&wgpu::BindGroupDescriptor {
                                    label: None,
                                    layout: &pipeline.get_bind_group_layout(0),
                                    entries: &entries,
                                });
                                pass.set_pipeline(pipeline);
                                pass.set_bind_group(0, &bg, &[]);
                                match groups {
                                    Groups::Direct(n) => {
                                        let x = (*n).min(65_535);
                                        pass.dispatch_workgroups(x, n.div_ceil(x), 1);
                                    }
                                    Groups::Indirect(args, offset) => pass.dispatch_workgroups_indirect(args, *offset),
                                }
                                k += 1;
                                i += 1;
                            }
                            continue;
                        }
                    }
                    i += 1;
                }
            },
        )
        .map_err(wgpu_err)?;
        self.held = Some(enc);
        Ok(())
    }

    /// A timestamp in queue order, its query index.
    fn stamp(&mut self) -> CollideResult<u32> {
        let q = self.used;
        if (q / QUERIES) as usize == self.sets.len() {
            let dev = self.dev.clone();
            let set = dev
                .scoped(
                    || "a timestamp query set".into(),
                    || {
                        dev.device.create_query_set(&wgpu::QuerySetDescriptor {
                            label: Some("reap collide stages"),
                            ty: wgpu::QueryType::Timestamp,
                            count: QUERIES,
                        })
                    },
                )
                .map_err(wgpu_err)?;
            self.sets.push(set);
        }
        self.used += 1;
        self.ops.push(Op::Timestamp(q));
        Ok(q)
    }

    /// Ends a frame: submits what waits and reads the stage times (waits
    /// for the device once; the caller has read the words already or reads
    /// them after).
    pub fn finish(&mut self) -> CollideResult<Vec<(StageId, f64)>> {
        self.flush()?;
        let stages = std::mem::take(&mut self.stages);
        let used = std::mem::replace(&mut self.used, 0);
        if !self.inside || used == 0 {
            return Ok(std::mem::take(&mut self.host));
        }
        let dev = self.dev.clone();
        let bytes = used as u64 * 8;
        let (resolve, read) = dev
            .scoped(
                || "resolving the collider's timestamps".into(),
                || {
                    let mk = |usage| {
                        dev.device.create_buffer(&wgpu::BufferDescriptor {
                            label: Some("reap collide timestamps"),
                            size: bytes,
                            usage,
                            mapped_at_creation: false,
                        })
                    };
                    let resolve = mk(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC);
                    let read = mk(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
                    let mut enc = dev.device.create_command_encoder(&Default::default());
                    for (s, set) in self.sets.iter().enumerate() {
                        let first = s as u32 * QUERIES;
                        if first >= used {
                            break;
                        }
                        let n = (used - first).min(QUERIES);
                        enc.resolve_query_set(set, 0..n, &resolve, first as u64 * 8);
                    }
                    enc.copy_buffer_to_buffer(&resolve, 0, &read, 0, bytes);
                    dev.queue.submit([enc.finish()]);
                    (resolve, read)
                },
            )
            .map_err(wgpu_err)?;
        drop(resolve);
        dev.map(&read, "reading the collider's timestamps").map_err(wgpu_err)?;
        let ticks: Vec<u64> = {
            let view = read.slice(..).get_mapped_range().map_err(|e| {
                wgpu_err(crate::wgpu_runtime::Error::Lost {
                    during: "reading timestamps".into(),
                    message: e.to_string(),
                })
            })?;
            bytemuck::cast_slice(&view).to_vec()
        };
        read.unmap();
        let period = dev.timestamp_period as f64;
        let ms = |a: u32, b: u32| (ticks[b as usize].saturating_sub(ticks[a as usize]) as f64) * period * 1e-6;
        Ok(stages.into_iter().map(|(id, a, b)| (id, ms(a, b))).collect())
    }

    /// Forgets an abandoned frame's pending work and stages.
    pub fn abort(&mut self) {
        self.held = None;
        self.ops.clear();
        self.stages.clear();
        self.host.clear();
        self.used = 0;
    }
}

impl Clock<StageId> for Recorder {
    type Mark = Mark;
    type Error = CollideError;

    /// The stage starts after everything before it. With timestamps in the
    /// queue nothing is submitted here (one submission per stage costs tens
    /// of microseconds): a stage that calls the library flushes first
    /// (`Engine::before_library`), so the library's submissions follow.
    fn start(&mut self) -> CollideResult<Mark> {
        if self.inside {
            Ok(Mark::Query(self.stamp()?))
        } else {
            self.flush()?;
            self.dev.wait("timing a collide stage").map_err(wgpu_err)?;
            Ok(Mark::Host(Instant::now()))
        }
    }

    fn stop(&mut self, label: StageId, mark: Mark) -> CollideResult<()> {
        match mark {
            Mark::Query(a) => {
                let b = self.stamp()?;
                self.stages.push((label, a, b));
            }
            Mark::Host(t) => {
                self.flush()?;
                self.dev.wait("timing a collide stage").map_err(wgpu_err)?;
                self.host.push((label, crate::clocks::ms(t.elapsed())));
            }
        }
        Ok(())
    }
}
