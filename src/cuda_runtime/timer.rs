//! The one stage timer: named stages between device events on one stream,
//! read back once. The library labels stages with `&'static str` (a phase of
//! a paper), the workloads with their `StageId` (name, bounce, level).

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream, sys};

use super::sync::wait_event;
use super::{Error, Result, driver_error};

/// Where a stage started: give it back to [`Timer::stop`].
pub struct Started(CudaEvent);

/// Stages recorded between device events, so each is timed on the GPU
/// without the host waiting until the times are read.
pub struct Timer<L> {
    stream: Arc<CudaStream>,
    stages: Vec<(L, CudaEvent, CudaEvent)>,
    /// Events of cleared stages, recorded again by the next ones (a frame has
    /// hundreds of stages: creating events each frame costs host time).
    spare: Vec<CudaEvent>,
    /// The stream is being captured into a graph: events become record nodes.
    capturing: bool,
    /// Events the host has recorded so far (a replayed graph records its own).
    records: u64,
}

/// Stages whose events a CUDA graph records when it is replayed
/// ([`Timer::take_stages`]): read with [`stage_times`].
pub type StageEvents<L> = Vec<(L, CudaEvent, CudaEvent)>;

impl<L: Copy> Timer<L> {
    pub fn new(stream: &Arc<CudaStream>) -> Self {
        Timer { stream: stream.clone(), stages: Vec::new(), spare: Vec::new(), capturing: false, records: 0 }
    }

    /// While the stream is captured into a graph, each event is recorded as
    /// an event-record node (`CU_EVENT_RECORD_EXTERNAL`), so that every
    /// replay of the graph records it again and the stage keeps its time.
    pub fn set_capturing(&mut self, capturing: bool) {
        self.capturing = capturing;
    }

    /// The stages recorded so far, handed to the graph that captured them
    /// (their events are its nodes); the timer starts empty.
    pub fn take_stages(&mut self) -> StageEvents<L> {
        std::mem::take(&mut self.stages)
    }

    /// Events recorded by the host since the timer was made: a replayed
    /// frame adds none (tests count the host's work per frame with it).
    pub fn records(&self) -> u64 {
        self.records
    }

    fn record(&mut self) -> Result<CudaEvent> {
        let event = match self.spare.pop() {
            Some(e) => e,
            // cudarc's events disable timing unless asked: ask.
            None => self
                .stream
                .context()
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver_error("creating a timing event"))?,
        };
        if self.capturing {
            let flags = sys::CUevent_record_flags::CU_EVENT_RECORD_EXTERNAL as u32;
            // SAFETY: a live event and stream of one context; the node records the event at each replay.
            let r = unsafe { sys::cuEventRecordWithFlags(event.cu_event(), self.stream.cu_stream(), flags) };
            r.result().map_err(driver_error("recording a timing event into a graph"))?;
        } else {
            event.record(&self.stream).map_err(driver_error("recording a timing event"))?;
        }
        self.records += 1;
        Ok(event)
    }

    /// Marks the start of a stage: what is enqueued from here on belongs to it.
    pub fn start(&mut self) -> Result<Started> {
        Ok(Started(self.record()?))
    }

    /// Ends the stage `label` that began at `started`.
    pub fn stop(&mut self, label: L, started: Started) -> Result<()> {
        let end = self.record()?;
        self.stages.push((label, started.0, end));
        Ok(())
    }

    /// Runs `f`, which enqueues the stage's work, as the stage `label`.
    pub fn run<R, E: From<Error>>(&mut self, label: L, f: impl FnOnce() -> Result<R, E>) -> Result<R, E> {
        let started = self.start()?;
        let r = f()?;
        self.stop(label, started)?;
        Ok(r)
    }

    pub fn len(&self) -> usize {
        self.stages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// Forgets the stages, keeping their events for the next ones.
    pub fn clear(&mut self) {
        for (_, start, end) in self.stages.drain(..) {
            self.spare.push(start);
            self.spare.push(end);
        }
    }

    /// Every stage with its time in ms, in the order recorded: one wait for
    /// the last stage's end (events on one stream complete in order), then
    /// plain reads.
    pub fn times_ms(&self) -> Result<Vec<(L, f64)>> {
        stage_times(&self.stages)
    }

    /// From the first stage's start to the last stage's end, ms.
    pub fn span_ms(&self) -> Result<f64> {
        match (self.stages.first(), self.stages.last()) {
            (Some((_, start, _)), Some((_, _, end))) => {
                wait_event(end, "waiting for the last stage")?;
                elapsed_ms(start, end)
            }
            _ => Ok(0.0),
        }
    }
}

/// Every stage of `stages` with its time in ms (one wait for the last end,
/// then plain reads): a timer's, or a replayed graph's.
pub fn stage_times<L: Copy>(stages: &StageEvents<L>) -> Result<Vec<(L, f64)>> {
    let Some((_, _, last)) = stages.last() else { return Ok(Vec::new()) };
    wait_event(last, "waiting for the last stage")?;
    stages.iter().map(|(label, start, end)| Ok((*label, elapsed_ms(start, end)?))).collect()
}

/// The time between two completed events of one context. cudarc's
/// `elapsed_ms` waits for both events first; the timer has already waited
/// for the last one (and counted that wait), so the raw call is used: it
/// never blocks.
fn elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f64> {
    // SAFETY: both events were recorded on the timer's stream and the later
    // one has completed, so both have; wait_event bound their context to this thread.
    let ms = unsafe { cudarc::driver::result::event::elapsed(start.cu_event(), end.cu_event()) }
        .map_err(driver_error("reading a stage time"))?;
    Ok(ms as f64)
}

impl<L: Copy> crate::clocks::Clock<L> for Timer<L> {
    type Mark = Started;
    type Error = super::Error;
    fn start(&mut self) -> Result<Started> {
        Timer::start(self)
    }
    fn stop(&mut self, label: L, started: Started) -> Result<()> {
        Timer::stop(self, label, started)
    }
}
