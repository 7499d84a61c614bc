//! Named, timed stages of one call: one compute pass per stage, timed by
//! timestamp queries at the pass's boundaries where the adapter has them.
//! Without, each stage is submitted alone and timed by the host clock around
//! submit-and-wait, which the reports say ([`Timing::clock`]).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::{Device, Error, Result};

/// Queries per query set: two per stage.
const QUERIES: u32 = 256;

/// A call's stages while they are recorded.
pub struct Stages {
    dev: Arc<Device>,
    encoder: Option<wgpu::CommandEncoder>,
    names: Vec<&'static str>,
    sets: Vec<wgpu::QuerySet>,
    /// Host-clock times, when the adapter has no timestamp queries.
    host: Vec<Duration>,
    /// Recording into a caller's encoder ([`Stages::into_encoder`]): no
    /// timestamps, no submission; the caller times and submits.
    recording: bool,
}

/// Which clock timed a call's stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Timestamp queries at each compute pass's start and end.
    Timestamps,
    /// The host's clock around each stage's submit and wait.
    Host,
}

impl Clock {
    pub fn name(self) -> &'static str {
        match self {
            Clock::Timestamps => "timestamp queries",
            Clock::Host => "host clock (the adapter has no timestamp queries)",
        }
    }
}

impl Stages {
    pub fn new(dev: &Arc<Device>) -> Self {
        let encoder = Some(dev.device.create_command_encoder(&Default::default()));
        Stages { dev: dev.clone(), encoder, names: Vec::new(), sets: Vec::new(), host: Vec::new(), recording: false }
    }

    /// Stages recorded into `encoder`, a workload's, which [`Stages::finish`]
    /// hands back unsubmitted: the call becomes part of the workload's own
    /// submission and stage, which time it.
    pub fn into_encoder(dev: &Arc<Device>, encoder: wgpu::CommandEncoder) -> Self {
        Stages {
            dev: dev.clone(),
            encoder: Some(encoder),
            names: Vec::new(),
            sets: Vec::new(),
            host: Vec::new(),
            recording: true,
        }
    }

    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// The encoder, for untimed copies and clears between stages.
    pub fn encoder(&mut self) -> &mut wgpu::CommandEncoder {
        self.encoder.get_or_insert_with(|| self.dev.device.create_command_encoder(&Default::default()))
    }

    /// Records one stage: `f` sets pipelines and dispatches in one compute pass.
    pub fn pass<R>(&mut self, name: &'static str, f: impl FnOnce(&mut wgpu::ComputePass<'_>) -> R) -> Result<R> {
        let stage = self.names.len() as u32;
        self.names.push(name);
        if self.recording {
            let enc = self.encoder();
            let mut pass =
                enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(name), timestamp_writes: None });
            return Ok(f(&mut pass));
        }
        if self.dev.timestamps {
            let set = (stage * 2 / QUERIES) as usize;
            if set == self.sets.len() {
                let qs = self.dev.scoped(
                    || "a timestamp query set".into(),
                    || {
                        self.dev.device.create_query_set(&wgpu::QuerySetDescriptor {
                            label: Some("reap stages"),
                            ty: wgpu::QueryType::Timestamp,
                            count: QUERIES,
                        })
                    },
                )?;
                self.sets.push(qs);
            }
            let first = stage * 2 % QUERIES;
            let qs = self.sets[set].clone();
            let enc = self.encoder();
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(name),
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: &qs,
                    beginning_of_pass_write_index: Some(first),
                    end_of_pass_write_index: Some(first + 1),
                }),
            });
            Ok(f(&mut pass))
        } else {
            let start = Instant::now();
            let r = {
                let enc = self.encoder();
                let mut pass =
                    enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(name), timestamp_writes: None });
                f(&mut pass)
            };
            let enc = self.encoder.take().expect("the encoder was just used");
            self.dev.queue.submit([enc.finish()]);
            self.dev.wait(name)?;
            self.host.push(start.elapsed());
            Ok(r)
        }
    }

    /// Resolves the timestamps and submits everything recorded; recording
    /// into a caller's encoder, hands it back with no times.
    pub fn finish(mut self) -> Result<(Timing, Option<wgpu::CommandEncoder>)> {
        if self.recording {
            let enc = self.encoder.take();
            let clock = if self.dev.timestamps { Clock::Timestamps } else { Clock::Host };
            let timing = Timing {
                dev: self.dev,
                names: Vec::new(),
                resolve: Vec::new(),
                host: Vec::new(),
                clock,
                read: OnceLock::new(),
            };
            return Ok((timing, enc));
        }
        let stages = self.names.len() as u32;
        let mut resolve = Vec::new();
        if self.dev.timestamps && stages > 0 {
            let sets = std::mem::take(&mut self.sets);
            for (i, qs) in sets.iter().enumerate() {
                let used = (stages * 2 - i as u32 * QUERIES).min(QUERIES);
                let bytes = used as u64 * 8;
                let (src, dst) = self.dev.scoped(
                    || "timestamp buffers".into(),
                    || {
                        let mk = |usage| {
                            self.dev.device.create_buffer(&wgpu::BufferDescriptor {
                                label: Some("reap timestamps"),
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
                )?;
                let enc = self.encoder();
                enc.resolve_query_set(qs, 0..used, &src, 0);
                enc.copy_buffer_to_buffer(&src, 0, &dst, 0, bytes);
                resolve.push(dst);
            }
        }
        if let Some(enc) = self.encoder.take() {
            let dev = self.dev.clone();
            dev.scoped(|| "submitting a call's commands".into(), || dev.queue.submit([enc.finish()]))?;
        }
        let clock = if self.dev.timestamps { Clock::Timestamps } else { Clock::Host };
        let host = std::mem::take(&mut self.host);
        Ok((Timing { dev: self.dev, names: self.names, resolve, host, clock, read: OnceLock::new() }, None))
    }
}

/// A submitted call's stage times, read when first asked for (that waits).
pub struct Timing {
    dev: Arc<Device>,
    names: Vec<&'static str>,
    resolve: Vec<wgpu::Buffer>,
    host: Vec<Duration>,
    pub clock: Clock,
    read: OnceLock<std::result::Result<(Vec<Duration>, Duration), String>>,
}

impl Timing {
    /// Each stage's name and time, in order.
    pub fn times(&self) -> Result<Vec<(&'static str, Duration)>> {
        let (times, _) = self.read()?;
        Ok(self.names.iter().copied().zip(times).collect())
    }

    /// From the first stage's start to the last one's end.
    pub fn span(&self) -> Result<Duration> {
        Ok(self.read()?.1)
    }

    fn read(&self) -> Result<(Vec<Duration>, Duration)> {
        let r = self.read.get_or_init(|| self.read_now().map_err(|e| e.to_string()));
        r.clone().map_err(|message| Error::Lost { during: "reading stage times".into(), message })
    }

    fn read_now(&self) -> Result<(Vec<Duration>, Duration)> {
        if self.clock == Clock::Host {
            let span = self.host.iter().sum();
            return Ok((self.host.clone(), span));
        }
        let mut ticks: Vec<u64> = Vec::with_capacity(self.names.len() * 2);
        for buffer in &self.resolve {
            self.dev.map(buffer, "reading timestamps")?;
            let view = buffer
                .slice(..)
                .get_mapped_range()
                .map_err(|e| Error::Lost { during: "reading timestamps".into(), message: e.to_string() })?;
            ticks.extend_from_slice(bytemuck::cast_slice(&view));
            drop(view);
            buffer.unmap();
        }
        let period = self.dev.timestamp_period as f64;
        let ns = |a: u64, b: u64| Duration::from_nanos((b.saturating_sub(a) as f64 * period) as u64);
        let times = ticks.chunks(2).map(|p| ns(p[0], p[1])).collect();
        let span = match (ticks.first(), ticks.last()) {
            (Some(&a), Some(&b)) => ns(a, b),
            _ => Duration::ZERO,
        };
        Ok((times, span))
    }
}
