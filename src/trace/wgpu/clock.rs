//! What the wgpu engine records into and times its stages with: one
//! command encoder that every stage records into ([`Pending`]), submitted
//! whenever the library is about to run a call of its own (so the call lands
//! after the stages before it) and at the frame's end; and [`WgpuClock`],
//! timestamps written into that encoder at each stage's start and end, read
//! once per frame. An adapter without timestamps inside encoders is timed by
//! the host clock instead: each stage is submitted and waited for (the
//! reports then say "host clock").

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::clocks::Clock;
use crate::compaction::wgpu::WgpuBackend;
use crate::trace::{StageId, TraceError, TraceResult};
use crate::wgpu_runtime::{self as rt, Device};

/// Bytes between two dispatches' parameters in the uniform buffer (the
/// largest uniform offset alignment wgpu allows an adapter).
pub const PARAMS_STRIDE: u64 = 256;
/// Dispatches one submission holds (the uniform buffer's slots).
pub const SLOTS: u64 = 1024;
/// Dispatches recorded before they are submitted: the GPU runs them while
/// the host records the next ones. One submission a frame kept the GPU idle
/// while the host recorded the whole frame: with the fused sites, whose
/// frames make no library call that submits, sphereflake's frame took 28.3 ms
/// by the wall clock for 9.5 ms of device time on an H200. Swept there
/// (docs/render/wgpu-fused-h200), cornell / sphereflake wall ms a frame:
/// 4: 3.64 / 11.41, 8: 3.72 / 10.95, 16: 3.70 / 11.13, 32: 4.12 / 11.31,
/// 1024: 5.04 / 15.87.
pub const DISPATCHES_PER_SUBMISSION: u64 = 8;
/// Queries per query set (wgpu's most).
const QUERIES: u32 = 4096;

pub(super) fn rt_err(e: rt::Error) -> TraceError {
    TraceError::Compaction(e.into())
}

/// Work recorded but not yet submitted, and the parameters its dispatches read.
pub struct Pending {
    dev: Arc<Device>,
    encoder: Option<wgpu::CommandEncoder>,
    /// Parameters of the dispatches recorded since the last submission, one slot each.
    params: Vec<u8>,
    pub uniforms: wgpu::Buffer,
    /// Library calls lent the encoder so far, and how many between submissions.
    lends: u32,
    every: u32,
    /// Dispatches between submissions ([`DISPATCHES_PER_SUBMISSION`], or
    /// `REAP_WGPU_DISPATCHES_PER_SUBMISSION`), at most [`SLOTS`].
    dispatches: u64,
}

impl Pending {
    pub fn new(dev: &Arc<Device>) -> TraceResult<Self> {
        let uniforms = dev
            .scoped(
                || "the tracer's parameter slots".into(),
                || {
                    dev.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("reap trace params"),
                        size: SLOTS * PARAMS_STRIDE,
                        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    })
                },
            )
            .map_err(rt_err)?;
        let every = rt::lends_per_submission();
        let dispatches = std::env::var("REAP_WGPU_DISPATCHES_PER_SUBMISSION")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(DISPATCHES_PER_SUBMISSION)
            .clamp(1, SLOTS);
        Ok(Pending { dev: dev.clone(), encoder: None, params: Vec::new(), uniforms, lends: 0, every, dispatches })
    }

    pub fn encoder(&mut self) -> &mut wgpu::CommandEncoder {
        self.encoder.get_or_insert_with(|| self.dev.device.create_command_encoder(&Default::default()))
    }

    /// Lends the frame's encoder to the library for a call (`f`), which
    /// records into it after the stages before it (`WgpuBackend::record_into`):
    /// one submission a frame, not one a compaction.
    pub fn lend<R>(&mut self, b: &WgpuBackend, f: impl FnOnce(&WgpuBackend) -> R) -> R {
        self.lends += 1;
        if self.lends.is_multiple_of(self.every) {
            // What is recorded so far runs while the host records the rest.
            self.submit();
        }
        let enc = self.encoder.take().unwrap_or_else(|| self.dev.device.create_command_encoder(&Default::default()));
        b.record_into(enc);
        let r = f(b);
        self.encoder = b.take_recording();
        r
    }

    /// A slot for one dispatch's parameters: its uniform offset. Every
    /// `dispatches` dispatches, what is recorded is submitted
    /// first (the parameters' upload lands before it).
    pub fn slot(&mut self, bytes: &[u8]) -> u32 {
        if self.params.len() as u64 >= self.dispatches * PARAMS_STRIDE {
            self.submit();
        }
        let at = self.params.len();
        self.params.extend_from_slice(bytes);
        self.params.resize(at + PARAMS_STRIDE as usize, 0);
        at as u32
    }

    /// Submits what was recorded. The parameters are written first: a
    /// queue write lands before the next submission and after the ones
    /// before it, so every submission may reuse the slots from 0.
    pub fn submit(&mut self) {
        if let Some(enc) = self.encoder.take() {
            if !self.params.is_empty() {
                self.dev.queue.write_buffer(&self.uniforms, 0, &self.params);
            }
            self.dev.queue.submit([enc.finish()]);
        }
        self.params.clear();
    }
}

/// Shared by the engine (which records) and its clock (which marks stages).
pub type Shared = Arc<Mutex<Pending>>;

pub fn lock(p: &Shared) -> std::sync::MutexGuard<'_, Pending> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where a stage started.
pub enum Mark {
    Query(u32),
    Host(Instant),
}

/// The engine's stage clock: timestamps inside the frame's encoder, or the
/// host's clock around submit-and-wait where the adapter has none.
pub struct WgpuClock {
    dev: Arc<Device>,
    pending: Shared,
    inside: bool,
    sets: Vec<wgpu::QuerySet>,
    used: u32,
    marks: Vec<(StageId, u32, u32)>,
    host: Vec<(StageId, f64)>,
    /// The frame's resolved timestamps, mapped at its end.
    read_back: Option<wgpu::Buffer>,
}

impl WgpuClock {
    pub fn new(dev: &Arc<Device>, pending: &Shared) -> Self {
        let inside = dev.timestamps && dev.device.features().contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);
        WgpuClock {
            dev: dev.clone(),
            pending: pending.clone(),
            inside,
            sets: Vec::new(),
            used: 0,
            marks: Vec::new(),
            host: Vec::new(),
            read_back: None,
        }
    }

    /// Which clock times the stages.
    pub fn clock(&self) -> rt::timer::Clock {
        if self.inside { rt::timer::Clock::Timestamps } else { rt::timer::Clock::Host }
    }

    pub fn clear(&mut self) {
        self.used = 0;
        self.marks.clear();
        self.host.clear();
        self.read_back = None;
    }

    fn query(&mut self) -> TraceResult<u32> {
        let q = self.used;
        if q / QUERIES == self.sets.len() as u32 {
            let dev = &self.dev;
            let set = dev
                .scoped(
                    || "a timestamp query set".into(),
                    || {
                        dev.device.create_query_set(&wgpu::QuerySetDescriptor {
                            label: Some("reap trace stages"),
                            ty: wgpu::QueryType::Timestamp,
                            count: QUERIES,
                        })
                    },
                )
                .map_err(rt_err)?;
            self.sets.push(set);
        }
        let set = self.sets[(q / QUERIES) as usize].clone();
        lock(&self.pending).encoder().write_timestamp(&set, q % QUERIES);
        self.used += 1;
        Ok(q)
    }

    /// Records the resolve of the frame's timestamps into the pending
    /// encoder (the caller submits it).
    pub fn resolve(&mut self) -> TraceResult<()> {
        if !self.inside || self.used == 0 {
            return Ok(());
        }
        let bytes = self.used as u64 * 8;
        let dev = self.dev.clone();
        let (src, dst) = dev
            .scoped(
                || "the frame's timestamp buffers".into(),
                || {
                    let mk = |usage| {
                        dev.device.create_buffer(&wgpu::BufferDescriptor {
                            label: Some("reap trace timestamps"),
                            size: bytes,
                            usage,
                            mapped_at_creation: false,
                        })
                    };
                    (
                        mk(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
                        mk(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
                    )
                },
            )
            .map_err(rt_err)?;
        let mut p = lock(&self.pending);
        let enc = p.encoder();
        for (i, set) in self.sets.iter().enumerate() {
            let first = i as u32 * QUERIES;
            if first >= self.used {
                break;
            }
            let n = (self.used - first).min(QUERIES);
            enc.resolve_query_set(set, 0..n, &src, first as u64 * 8);
        }
        enc.copy_buffer_to_buffer(&src, 0, &dst, 0, bytes);
        self.read_back = Some(dst);
        Ok(())
    }

    /// Each stage and its time in ms, after the frame's commands completed.
    pub fn times(&mut self) -> TraceResult<Vec<(StageId, f64)>> {
        if !self.inside {
            return Ok(std::mem::take(&mut self.host));
        }
        let Some(buffer) = self.read_back.take() else { return Ok(Vec::new()) };
        self.dev.map(&buffer, "reading the frame's timestamps").map_err(rt_err)?;
        let ticks: Vec<u64> = {
            let view = buffer.slice(..).get_mapped_range().map_err(|e| {
                rt_err(rt::Error::Lost { during: "reading the frame's timestamps".into(), message: e.to_string() })
            })?;
            bytemuck::pod_collect_to_vec(&view)
        };
        buffer.unmap();
        let period = self.dev.timestamp_period as f64;
        let at = |q: u32| ticks.get(q as usize).copied().unwrap_or(0);
        let ms = |a: u32, b: u32| at(b).saturating_sub(at(a)) as f64 * period * 1e-6;
        Ok(self.marks.drain(..).map(|(id, a, b)| (id, ms(a, b))).collect())
    }
}

impl Clock<StageId> for WgpuClock {
    type Mark = Mark;
    type Error = TraceError;
    fn start(&mut self) -> TraceResult<Mark> {
        if self.inside {
            return Ok(Mark::Query(self.query()?));
        }
        lock(&self.pending).submit();
        self.dev.wait("timing a stage").map_err(rt_err)?;
        Ok(Mark::Host(Instant::now()))
    }
    fn stop(&mut self, label: StageId, mark: Mark) -> TraceResult<()> {
        match mark {
            Mark::Query(a) => {
                let b = self.query()?;
                self.marks.push((label, a, b));
            }
            Mark::Host(t) => {
                lock(&self.pending).submit();
                self.dev.wait("timing a stage").map_err(rt_err)?;
                self.host.push((label, crate::clocks::ms(t.elapsed())));
            }
        }
        Ok(())
    }
}
