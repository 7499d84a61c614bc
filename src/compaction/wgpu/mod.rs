//! The wgpu backend: the library on any GPU wgpu opens (Vulkan, Metal, DX12),
//! with every GPU algorithm of the catalog in WGSL under `shaders/compaction/`.
//!
//! A call records its work as a [`Plan`], a list of named stages of
//! dispatches, then runs it as one submission: one compute pass per stage,
//! timed by timestamp queries (or the host clock where the adapter has
//! none). Counts stay on the device until asked for; the counted calls take
//! their length from the device too. The `Backend` implementation, each
//! call's checks and the dispatch by catalog name, is in backend.rs; one file
//! per algorithm holds its host side, beside `shaders/compaction/NAME.wgsl`.
//! Inside this module `::wgpu::` names the crate.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::compaction::{Algorithm, Error, PhaseTime, Report, Result};
use crate::wgpu_runtime::{self as rt, Device, Stages, Timing, pipelines::Pipelines};

pub mod atomic;
pub mod backend;
pub mod billeter;
pub mod blelloch;
pub mod horn;
mod plan;
pub mod redzone;
pub mod roger;
pub mod runtime;
pub mod sengupta;
pub mod single_pass;
pub mod sort;

pub(crate) use plan::Step;
pub use plan::{Bind, Io, KeepRule, Plan};
pub use rt::AdapterChoice;
use runtime::{PARAMS_STRIDE, Params, Variant};

impl From<rt::Error> for Error {
    fn from(e: rt::Error) -> Self {
        Error::Wgpu(e)
    }
}

/// A device buffer of `len` elements of `T`.
pub struct WgpuBuffer<T> {
    raw: ::wgpu::Buffer,
    len: u64,
    cap: u64,
    _t: PhantomData<T>,
}

impl<T> WgpuBuffer<T> {
    pub fn len(&self) -> u64 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Elements the allocation holds; `len` may be set anywhere up to it.
    pub fn capacity(&self) -> u64 {
        self.cap
    }
    /// Sets the length the library sees; the contents stay as they were.
    pub fn set_len(&mut self, len: u64) -> Result<()> {
        if len > self.cap {
            return Err(Error::LengthMismatch {
                what: "buffer length above its capacity",
                expected: self.cap,
                actual: len,
            });
        }
        self.len = len;
        Ok(())
    }
    /// The wgpu buffer, for a workload's own shaders.
    pub fn raw(&self) -> &::wgpu::Buffer {
        &self.raw
    }
}

/// A keep rule as WGSL source: it must define
/// `fn reap_predicate(x: Elem, p: vec4<u32>) -> bool`, where `Elem` is the
/// element type (`u32`, `vec2<u32>`, `vec4<u32>` or `Elem32 { lo, hi }`; read
/// a word with `elem_word(x, k)`) and `p` holds `params` as (lo, hi, lo, hi).
#[derive(Clone, Debug)]
pub struct WgpuPredicate {
    pub source: Arc<str>,
    pub params: [u64; 2],
}

impl WgpuPredicate {
    pub fn new(source: impl Into<Arc<str>>, params: [u64; 2]) -> Self {
        WgpuPredicate { source: source.into(), params }
    }
}

/// Where a run's count is.
enum Count {
    /// A device word (u64) of the run's own.
    Device(::wgpu::Buffer),
    /// Known on the host (a sort's is its length).
    Host(u64),
    /// A counted call's: this word of the caller's lens buffer.
    Lens(u64),
}

/// A submitted run: the count on the device and the stages' timestamps.
pub struct WgpuReport {
    dev: Arc<Device>,
    count: Count,
    /// One per submission (a sort submits a split at a time, so that each
    /// split's scratch is freed before the next allocates its own).
    timings: Vec<Timing>,
}

impl Report for WgpuReport {
    fn count(&self) -> Result<u64> {
        match &self.count {
            Count::Device(b) => {
                let bytes = self.dev.read(b, 0, 8, "reading a count")?;
                Ok(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")))
            }
            Count::Host(n) => Ok(*n),
            Count::Lens(word) => Err(Error::CountInLens { word: *word }),
        }
    }
    fn phases(&self) -> Result<Vec<PhaseTime>> {
        let mut phases = Vec::new();
        for t in &self.timings {
            phases.extend(t.times()?.into_iter().map(|(name, time)| PhaseTime { name, time }));
        }
        Ok(phases)
    }
    /// Each submission's span, summed (the host's gaps between them left out).
    fn span(&self) -> Result<std::time::Duration> {
        let mut span = std::time::Duration::ZERO;
        for t in &self.timings {
            span += t.span()?;
        }
        Ok(span)
    }
}

impl WgpuReport {
    /// Which clock timed the stages.
    pub fn clock(&self) -> rt::timer::Clock {
        self.timings.first().map_or(rt::timer::Clock::Timestamps, |t| t.clock)
    }
}

/// One stage of a plan as `run` encodes it: its name, the clears and copies
/// before its pass, and its dispatches with their parameters' uniform offsets.
type StageSteps<'a> = (&'static str, Vec<&'a Step>, Vec<(u64, &'a Step)>);

/// Every wgpu algorithm's tuning, one plain struct per algorithm.
#[derive(Clone, Debug, Default)]
pub struct WgpuTuning {
    pub atomic: atomic::AtomicTuning,
    pub horn: horn::HornTuning,
    pub sengupta: sengupta::SenguptaTuning,
    pub blelloch: blelloch::BlellochTuning,
    pub roger: roger::RogerTuning,
    pub redzone: redzone::RedzoneTuning,
    pub single_pass: single_pass::SinglePassTuning,
    pub billeter: billeter::BilleterTuning,
}

impl WgpuTuning {
    /// Sets one tuning number by name, `algorithm.field` (e.g. `atomic.block`).
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let bad = |why: String| Error::Tuning { algorithm: "wgpu", why };
        let int = || value.parse::<u32>().map_err(|_| bad(format!("`{key}={value}`: expected a whole number")));
        match key {
            "atomic.block" => self.atomic.block = int()?,
            "atomic.items" => self.atomic.items = int()?,
            "horn.block" => self.horn.block = int()?,
            "sengupta.degree_of_parallelism" => self.sengupta.degree_of_parallelism = int()? as u64,
            "sengupta.block" => self.sengupta.block = int()?,
            "blelloch.block" => self.blelloch.block = int()?,
            "roger.block" => self.roger.block = int()?,
            "redzone.block_threads" => self.redzone.block_threads = int()?,
            "redzone.grid_threads" => self.redzone.grid_threads = int()?,
            "redzone.items" => self.redzone.items = int()?,
            "lookback.block" | "chained.block" => self.single_pass.block = int()?,
            "lookback.bytes" | "chained.bytes" => self.single_pass.bytes = int()?,
            "lookback.spin" => self.single_pass.spin = int()?,
            "chained.spin" => self.single_pass.chained_spin = int()?,
            "lookback.polls" | "chained.polls" => self.single_pass.polls = int()?,
            "lookback.withhold" | "chained.withhold" => self.single_pass.withhold = int()?,
            "lookback.span" => self.single_pass.span = int()?,
            "lookback.stats" | "chained.stats" => self.single_pass.stats = int()? != 0,
            "lookback.wide_state" | "chained.wide_state" => self.single_pass.wide_state = int()? != 0,
            "lookback.probe" | "chained.probe" => self.single_pass.probe = int()?,
            "lookback.direct" | "chained.direct" => self.single_pass.direct = int()? != 0,
            "billeter.processors_per_sm" => self.billeter.processors_per_sm = int()?,
            "billeter.sms" => self.billeter.sms = int()?,
            "billeter.processors" => self.billeter.processors = Some(int()?),
            "billeter.warps_per_block" => self.billeter.warps_per_block = int()?,
            "billeter.unroll" => self.billeter.unroll = int()?,
            "billeter.staged_ratio" => {
                self.billeter.staged_ratio =
                    value.parse().map_err(|_| bad(format!("`{key}={value}`: expected a number")))?
            }
            _ => return Err(bad(format!("unknown tuning key `{key}`; see WgpuTuning::set for the list"))),
        }
        Ok(())
    }
}

/// The wgpu backend on one adapter and its queue.
pub struct WgpuBackend {
    dev: Arc<Device>,
    pipelines: Pipelines,
    /// Bound where a dispatch binds nothing: one read-only, one per read-write slot.
    dummy_ro: ::wgpu::Buffer,
    dummy_rw: [::wgpu::Buffer; 5],
    pub tuning: WgpuTuning,
    /// Scratch kept across calls (tile states, counters), by slot: calls run
    /// in queue order and clear what they use, so one buffer serves them all.
    scratch: std::sync::Mutex<Vec<Option<::wgpu::Buffer>>>,
    /// A workload's encoder the calls record into instead of submitting
    /// ([`WgpuBackend::record_into`]).
    recording: std::sync::Mutex<Option<::wgpu::CommandEncoder>>,
    /// Whether the shaders use subgroup operations: the adapter has them and
    /// they were not turned off (`REAP_WGPU_SUBGROUPS=0`, [`rt::Features`]).
    pub subgroups: bool,
}

impl WgpuBackend {
    /// Opens the adapter `choice` names, or says what is missing.
    pub fn new(choice: &AdapterChoice) -> Result<Self> {
        Self::open(choice, rt::Features::from_env())
    }

    /// Opens the adapter using only the optional `features` given (where it has them).
    pub fn open(choice: &AdapterChoice, features: rt::Features) -> Result<Self> {
        Self::on_device(Arc::new(Device::open(choice, features)?))
    }

    /// The backend on a device opened elsewhere (the viewer's display
    /// device, so that the workloads compute where the window draws).
    pub fn on_device(dev: Arc<Device>) -> Result<Self> {
        dev.check_compute()?;
        let pipelines = Pipelines::new(&dev)?;
        let mk = |label| {
            dev.device.create_buffer(&::wgpu::BufferDescriptor {
                label: Some(label),
                size: 64,
                usage: ::wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        };
        let (dummy_ro, dummy_rw) =
            dev.scoped(|| "the dummy bindings".into(), || (mk("reap dummy"), [(); 5].map(|_| mk("reap dummy rw"))))?;
        let mut tuning = WgpuTuning {
            single_pass: single_pass::SinglePassTuning::for_adapter(&dev.limits, dev.subgroups),
            ..WgpuTuning::default()
        };
        // `REAP_WGPU_TUNING="atomic.items=8"` overrides defaults for experiments.
        crate::compaction::backend::tuning_from_env("REAP_WGPU_TUNING", "wgpu", |k, v| tuning.set(k, v))?;
        let subgroups = dev.subgroups;
        Ok(WgpuBackend {
            dev,
            pipelines,
            dummy_ro,
            dummy_rw,
            tuning,
            scratch: Default::default(),
            recording: Default::default(),
            subgroups,
        })
    }

    /// Whether the wgpu backend has the algorithm (no adapter needed to ask).
    pub fn implements(algorithm: Algorithm) -> bool {
        // The sequential reference and Bernabé's stencil are CPU algorithms.
        !matches!(algorithm, Algorithm::Sequential | Algorithm::Stencil)
    }

    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// The adapter as reports name it.
    pub fn name(&self) -> &str {
        &self.dev.name
    }

    /// The pipeline of `entry` in `shader` for `v`, with override constants.
    pub fn pipeline(
        &self,
        shader: &rt::Shader,
        v: &Variant,
        entry: &'static str,
        constants: &[(&'static str, u32)],
    ) -> Result<::wgpu::ComputePipeline> {
        Ok(self.pipelines.get(&self.dev, shader, v.prelude(), entry, constants)?)
    }

    /// Whether [`WgpuBackend::tuning`] runs on this adapter for every element
    /// size in `element_sizes`; says which number does not. Checked once, up front, a wrong
    /// value is one error rather than a failure of every call that uses it.
    pub fn check_tuning(&self, element_sizes: &[usize]) -> Result<()> {
        let t = &self.tuning;
        for &es in element_sizes {
            // Scans take the staged tile; select and partition the direct one where it runs.
            t.single_pass.fitted_items(self, es as u32, false)?;
            t.single_pass.fitted_items(self, es as u32, t.single_pass.direct && self.subgroups)?;
        }
        t.blelloch.block()?;
        t.roger.workgroup(self, self.subgroups)?;
        Ok(())
    }

    /// Whether an input of `n` elements of `elem_bytes` bytes fits one storage
    /// binding of this adapter, as every call binds its input whole: asked
    /// before a run, so a size the adapter cannot bind is refused once, up front.
    pub fn check_elements(&self, n: u64, elem_bytes: usize) -> Result<()> {
        self.dev.check_size("an input", n.saturating_mul(elem_bytes as u64))?;
        Ok(())
    }

    /// The specialisation for elements of `elem_bytes` under `keep`.
    pub fn variant(
        &self,
        elem_bytes: usize,
        keep: crate::compaction::KeepMode,
        predicate: Option<Arc<str>>,
    ) -> Variant {
        Variant::new(elem_bytes, keep, predicate, self.subgroups)
    }

    /// A device buffer of `bytes` bytes (at least 64: nothing binds empty),
    /// zeroed, checked against the adapter's limits first.
    pub fn raw_buffer(&self, what: &'static str, bytes: u64) -> Result<::wgpu::Buffer> {
        self.dev.check_size(what, bytes)?;
        let size = bytes.max(64).next_multiple_of(4);
        Ok(self.dev.scoped(
            || format!("a {size}-byte buffer for {what}"),
            || {
                self.dev.device.create_buffer(&::wgpu::BufferDescriptor {
                    label: Some(what),
                    size,
                    usage: ::wgpu::BufferUsages::STORAGE
                        | ::wgpu::BufferUsages::COPY_SRC
                        | ::wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            },
        )?)
    }

    /// A scratch buffer of at least `bytes` bytes kept in `slot` across
    /// calls (grown when too small). Its contents are whatever the last call
    /// left: clear what the call reads.
    pub fn cached_scratch(&self, slot: usize, what: &'static str, bytes: u64) -> Result<::wgpu::Buffer> {
        let mut s = self.scratch.lock().unwrap_or_else(|p| p.into_inner());
        if s.len() <= slot {
            s.resize(slot + 1, None);
        }
        match &s[slot] {
            Some(b) if b.size() >= bytes => Ok(b.clone()),
            _ => {
                let b = self.raw_buffer(what, bytes.next_power_of_two().max(1 << 16))?;
                s[slot] = Some(b.clone());
                Ok(b)
            }
        }
    }

    /// Makes the calls that follow record into `encoder`, a workload's,
    /// rather than submit their own commands, until [`WgpuBackend::take_recording`]:
    /// a frame's compaction then rides in the frame's submission (each
    /// submission costs tens of microseconds through Vulkan), timed by the
    /// workload's stage around it. Only device work records: counted calls
    /// (`*_counted`), whose counts stay on the device. Uploads, downloads and
    /// reports' counts are host work and must wait until the recording ends.
    pub fn record_into(&self, encoder: ::wgpu::CommandEncoder) {
        *self.recording.lock().unwrap_or_else(|p| p.into_inner()) = Some(encoder);
    }

    /// Ends [`WgpuBackend::record_into`]: the encoder with the calls recorded since.
    pub fn take_recording(&self) -> Option<::wgpu::CommandEncoder> {
        self.recording.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Runs a plan as one submission: parameters uploaded, a bind group
    /// made per set of buffers, a pass per stage (or into the workload's encoder while one is
    /// held: [`WgpuBackend::record_into`]).
    pub fn run(&self, plan: Plan) -> Result<Timing> {
        let dispatches = plan.steps.iter().filter(|s| matches!(s, Step::Dispatch { .. })).count() as u64;
        let mut uniform_bytes = vec![0u8; (dispatches.max(1) * PARAMS_STRIDE) as usize];
        let mut k = 0;
        for s in &plan.steps {
            if let Step::Dispatch { params, .. } = s {
                let at = k * PARAMS_STRIDE as usize;
                uniform_bytes[at..at + std::mem::size_of::<Params>()].copy_from_slice(bytemuck::bytes_of(params));
                k += 1;
            }
        }
        let dev = &self.dev;
        let uniforms = dev.scoped(
            || "a call's parameters".into(),
            || {
                use ::wgpu::util::DeviceExt;
                dev.device.create_buffer_init(&::wgpu::util::BufferInitDescriptor {
                    label: Some("reap params"),
                    contents: &uniform_bytes,
                    usage: ::wgpu::BufferUsages::UNIFORM,
                })
            },
        )?;
        let held = self.take_recording();
        let recording = held.is_some();
        let mut st = match held {
            Some(enc) => Stages::into_encoder(dev, enc),
            None => Stages::new(dev),
        };
        // Group the steps by stage: clears and copies first, then one pass.
        let mut stages: Vec<StageSteps<'_>> = Vec::new();
        let mut k = 0u64;
        for s in &plan.steps {
            match s {
                Step::Stage(name) => stages.push((name, Vec::new(), Vec::new())),
                Step::Clear { .. } | Step::Copy { .. } => match stages.last_mut() {
                    Some(st) => st.1.push(s),
                    None => stages.push(("", vec![s], Vec::new())),
                },
                Step::Dispatch { .. } => {
                    let last = stages.last_mut().ok_or_else(|| Error::Backend("a dispatch before any stage".into()))?;
                    last.2.push((k * PARAMS_STRIDE, s));
                    k += 1;
                }
            }
        }
        // One bind group per set of buffers, not per dispatch: the
        // parameters differ only by their dynamic offset. The multi-pass
        // algorithms bind the same buffers at every level.
        // (A call binds a handful of sets: a list beats hashing.)
        let mut made: Vec<(&Bind, ::wgpu::BindGroup)> = Vec::new();
        dev.scoped(
            || "recording a call".into(),
            || -> Result<()> {
                for (name, transfers, work) in &stages {
                    for t in transfers {
                        match t {
                            Step::Clear { buffer, offset, size } => st.encoder().clear_buffer(buffer, *offset, *size),
                            Step::Copy { from, from_offset, to, to_offset, size } => {
                                st.encoder().copy_buffer_to_buffer(from, *from_offset, to, *to_offset, *size)
                            }
                            _ => {}
                        }
                    }
                    if work.is_empty() {
                        continue;
                    }
                    let groups: Vec<_> = work
                        .iter()
                        .map(|(offset, s)| match s {
                            Step::Dispatch { pipeline, bind, groups, .. } => {
                                let bg = match made.iter().find(|(b, _)| *b == bind) {
                                    Some((_, bg)) => bg.clone(),
                                    None => {
                                        let bg = self.bind_group(&uniforms, bind);
                                        made.push((bind, bg.clone()));
                                        bg
                                    }
                                };
                                (pipeline, bg, *offset as u32, *groups)
                            }
                            _ => unreachable!("only dispatches are listed as work"),
                        })
                        .collect();
                    st.pass(name, |pass| {
                        for (pipeline, bg, offset, n) in &groups {
                            pass.set_pipeline(pipeline);
                            pass.set_bind_group(0, bg, &[*offset]);
                            let x = (*n).min(65_535);
                            pass.dispatch_workgroups(x, n.div_ceil(x), 1);
                        }
                    })?;
                }
                Ok(())
            },
        )??;
        let (timing, enc) = st.finish()?;
        if recording {
            *self.recording.lock().unwrap_or_else(|p| p.into_inner()) = enc;
        }
        Ok(timing)
    }

    fn bind_group(&self, uniforms: &::wgpu::Buffer, b: &Bind) -> ::wgpu::BindGroup {
        let ro = |x: &Option<::wgpu::Buffer>| x.clone().unwrap_or_else(|| self.dummy_ro.clone());
        let rw = |x: &Option<::wgpu::Buffer>, i: usize| x.clone().unwrap_or_else(|| self.dummy_rw[i].clone());
        let buffers =
            [ro(&b.src), rw(&b.dst, 0), ro(&b.flags), rw(&b.words, 1), rw(&b.state, 2), rw(&b.aux, 3), rw(&b.aux2, 4)];
        let mut entries = vec![::wgpu::BindGroupEntry {
            binding: 0,
            resource: ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding {
                buffer: uniforms,
                offset: 0,
                size: std::num::NonZeroU64::new(std::mem::size_of::<Params>() as u64),
            }),
        }];
        for (i, buffer) in buffers.iter().enumerate() {
            entries.push(::wgpu::BindGroupEntry { binding: i as u32 + 1, resource: buffer.as_entire_binding() });
        }
        self.dev.device.create_bind_group(&::wgpu::BindGroupDescriptor {
            label: None,
            layout: &self.pipelines.bind_layout,
            entries: &entries,
        })
    }

    /// Times a buffer-to-buffer copy of `bytes` bytes (the roofline: it
    /// reads and writes each byte once), median of `reps` after a warm-up.
    pub fn time_copy(&self, bytes: u64, reps: usize) -> Result<std::time::Duration> {
        let (a, b) = (self.raw_buffer("the copy's source", bytes)?, self.raw_buffer("the copy's target", bytes)?);
        let mut times = Vec::with_capacity(reps);
        for rep in 0..=reps {
            let mut plan = Plan::default();
            plan.stage("copy");
            plan.copy(&a, 0, &b, 0, bytes.next_multiple_of(4));
            let t = self.time_transfer(plan)?;
            if rep > 0 {
                times.push(t);
            }
        }
        times.sort();
        Ok(times[times.len() / 2])
    }

    /// A plan of copies alone, timed with encoder timestamps where the
    /// adapter has them, else by the host clock around submit and wait.
    fn time_transfer(&self, plan: Plan) -> Result<std::time::Duration> {
        let dev = &self.dev;
        let inside = dev.device.features().contains(::wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);
        let start = std::time::Instant::now();
        let mut enc = dev.device.create_command_encoder(&Default::default());
        let qs = inside.then(|| {
            dev.device.create_query_set(&::wgpu::QuerySetDescriptor {
                label: Some("reap copy"),
                ty: ::wgpu::QueryType::Timestamp,
                count: 2,
            })
        });
        if let Some(q) = &qs {
            enc.write_timestamp(q, 0);
        }
        for s in &plan.steps {
            if let Step::Copy { from, from_offset, to, to_offset, size } = s {
                enc.copy_buffer_to_buffer(from, *from_offset, to, *to_offset, *size);
            }
        }
        let Some(q) = qs else {
            dev.queue.submit([enc.finish()]);
            dev.wait("timing a copy")?;
            return Ok(start.elapsed());
        };
        enc.write_timestamp(&q, 1);
        let resolve = self.raw_buffer_with(
            "timestamps",
            16,
            ::wgpu::BufferUsages::QUERY_RESOLVE | ::wgpu::BufferUsages::COPY_SRC,
        )?;
        enc.resolve_query_set(&q, 0..2, &resolve, 0);
        dev.queue.submit([enc.finish()]);
        let t = dev.read(&resolve, 0, 16, "reading a copy's timestamps")?;
        let t: &[u64] = bytemuck::cast_slice(&t);
        Ok(std::time::Duration::from_nanos((t[1].saturating_sub(t[0]) as f64 * dev.timestamp_period as f64) as u64))
    }

    fn raw_buffer_with(&self, what: &'static str, bytes: u64, usage: ::wgpu::BufferUsages) -> Result<::wgpu::Buffer> {
        Ok(self.dev.scoped(
            || format!("a buffer for {what}"),
            || {
                self.dev.device.create_buffer(&::wgpu::BufferDescriptor {
                    label: Some(what),
                    size: bytes,
                    usage,
                    mapped_at_creation: false,
                })
            },
        )?)
    }

    pub fn synchronize(&self) -> Result<()> {
        Ok(self.dev.wait("synchronising")?)
    }

    fn not_here(&self, algorithm: Algorithm) -> Error {
        Error::NotOnBackend { algorithm: algorithm.name(), backend: "wgpu" }
    }
}

/// How many workgroups of `per_group` items cover `cap` items.
pub fn groups_for(cap: u32, per_group: u32) -> u32 {
    cap.div_ceil(per_group.max(1)).max(1)
}
