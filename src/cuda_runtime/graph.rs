//! A workload's frame as one CUDA graph: recorded by stream capture the
//! second time a configuration runs, launched again for every later frame of
//! it, so the host enqueues one graph instead of hundreds of launches.
//!
//! The workload names a frame's configuration by a key: everything its
//! launches depend on (settings, buffer addresses, capacities, the level
//! bound). A frame is streamed the first time its key is seen (lazily made
//! kernels, sites and scratch exist after it), captured the second time, and
//! replayed from then on. Whatever changes between frames of one key must
//! reach the kernels through device memory that the host sets before the
//! frame (a sample index, a contact count), never through launch arguments.
//! The stage timer records its events as event-record nodes while capturing,
//! so a replayed frame keeps its per-stage times.

use std::collections::VecDeque;
use std::sync::Arc;

use cudarc::driver::{CudaGraph, CudaStream, sys};

use super::timer::{StageEvents, stage_times};
use super::{Result, Timer, driver_error};
use crate::replay::{FramePath, Graphs};

/// Recorded graphs kept per engine: a workload whose buffers alternate
/// between frames (the collider's two contact lists) needs two, and each
/// holds the device memory its frame's scratch takes (stream-ordered
/// allocations captured as graph memory), so no more are kept.
const KEPT: usize = 2;

/// A frame's graph and the stages its event nodes time.
struct Recorded<L> {
    key: u64,
    graph: CudaGraph,
    stages: StageEvents<L>,
}

// SAFETY: cudarc's graph is not Send because CUDA graph objects are not
// internally synchronized. A `Recorded` is owned by one engine and reached
// only through `&mut FrameGraphs`, so every call on it is serialized, which is
// all CUDA asks; moving the engine to another thread (a split frame's ranks)
// moves the graph with it.
unsafe impl<L: Send> Send for Recorded<L> {}

/// Frames streamed, captured and replayed so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GraphCounts {
    pub streamed: u64,
    pub captured: u64,
    pub replayed: u64,
}

/// One engine's recorded frames.
pub struct FrameGraphs<L> {
    mode: Graphs,
    /// Keys of frames streamed once: the next frame with one is captured.
    seen: VecDeque<u64>,
    recorded: VecDeque<Recorded<L>>,
    /// Keys whose capture failed: streamed from then on.
    refused: Vec<u64>,
    /// The frame in progress: its key, its path, and (captured or replayed) its graph's index.
    current: Option<(u64, FramePath)>,
    counts: GraphCounts,
}

impl<L: Copy> Default for FrameGraphs<L> {
    fn default() -> Self {
        FrameGraphs {
            mode: Graphs::Auto,
            seen: VecDeque::new(),
            recorded: VecDeque::new(),
            refused: Vec::new(),
            current: None,
            counts: GraphCounts::default(),
        }
    }
}

/// Whether `stream` is being captured into a graph: what must not allocate
/// state that outlives the frame (it would become the graph's memory).
pub fn capturing(stream: &CudaStream) -> bool {
    !matches!(stream.capture_status(), Ok(sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE))
}

impl<L: Copy> FrameGraphs<L> {
    pub fn mode(&self) -> Graphs {
        self.mode
    }

    /// `Off` forgets every recorded graph; `Auto` records from the next frame on.
    pub fn set_mode(&mut self, mode: Graphs) {
        self.mode = mode;
        if mode == Graphs::Off {
            self.recorded.clear();
            self.seen.clear();
        }
    }

    pub fn counts(&self) -> GraphCounts {
        self.counts
    }

    /// Starts the frame `key` on `stream`: launches its recorded graph
    /// (`Replayed`: the caller enqueues nothing), or begins capturing it when
    /// the key ran before (`Captured`: the caller enqueues the frame as usual
    /// and its work is recorded, not run, until [`FrameGraphs::end`]), or
    /// leaves the caller to stream it. Anything the host sets in device
    /// memory for this frame must be enqueued before this call.
    pub fn begin(&mut self, key: u64, stream: &Arc<CudaStream>, timer: &mut Timer<L>) -> Result<FramePath> {
        timer.clear();
        let path = match self.mode {
            Graphs::Off => FramePath::Streamed,
            Graphs::Auto if self.recorded.iter().any(|r| r.key == key) => FramePath::Replayed,
            Graphs::Auto if self.seen.contains(&key) && !self.refused.contains(&key) => FramePath::Captured,
            Graphs::Auto => {
                if !self.seen.contains(&key) {
                    self.seen.push_back(key);
                    if self.seen.len() > KEPT {
                        self.seen.pop_front();
                    }
                }
                FramePath::Streamed
            }
        };
        match path {
            FramePath::Replayed => {
                let r = self.recorded.iter().find(|r| r.key == key).expect("found above");
                r.graph.launch().map_err(driver_error("launching a frame's graph"))?;
            }
            FramePath::Captured => {
                // Thread-local: a call of this thread that cannot be captured fails (and the frame is
                // streamed again) instead of running outside the graph; other threads are not affected.
                let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
                stream.begin_capture(mode).map_err(driver_error("starting to capture a frame"))?;
                timer.set_capturing(true);
            }
            FramePath::Streamed => {}
        }
        self.current = Some((key, path));
        match path {
            FramePath::Streamed => self.counts.streamed += 1,
            FramePath::Captured => self.counts.captured += 1,
            FramePath::Replayed => self.counts.replayed += 1,
        }
        Ok(path)
    }

    /// After the caller enqueued the frame: ends a capture, instantiates the
    /// graph and launches it. `false` when the capture failed: nothing of the
    /// frame ran and its key is refused, so enqueue the frame again (streamed).
    pub fn end(&mut self, stream: &Arc<CudaStream>, timer: &mut Timer<L>) -> Result<bool> {
        let Some((key, FramePath::Captured)) = self.current else { return Ok(true) };
        timer.set_capturing(false);
        let graph = match stream.end_capture(sys::CUgraphInstantiate_flags(0)) {
            Ok(Some(graph)) => graph,
            Ok(None) | Err(_) => {
                self.refuse(key, timer);
                return Ok(false);
            }
        };
        graph.launch().map_err(driver_error("launching a frame's graph"))?;
        self.recorded.push_back(Recorded { key, graph, stages: timer.take_stages() });
        if self.recorded.len() > KEPT {
            self.recorded.pop_front();
        }
        Ok(true)
    }

    /// Abandons a frame whose enqueueing failed: a capture in progress ends
    /// and is discarded, and its key is not captured again.
    pub fn abort(&mut self, stream: &Arc<CudaStream>, timer: &mut Timer<L>) {
        if let Some((key, FramePath::Captured)) = self.current.take() {
            timer.set_capturing(false);
            if capturing(stream) {
                // The capture's graph, if any, is dropped unlaunched.
                drop(stream.end_capture(sys::CUgraphInstantiate_flags(0)));
            }
            self.refuse(key, timer);
        }
    }

    fn refuse(&mut self, key: u64, timer: &mut Timer<L>) {
        timer.clear();
        self.counts.captured -= 1;
        self.refused.push(key);
        self.current = None;
    }

    /// The frame's stage times, in ms: the timer's for a streamed frame, the
    /// event nodes' of its graph for one captured or replayed.
    pub fn times(&self, timer: &Timer<L>) -> Result<Vec<(L, f64)>> {
        match self.current {
            Some((key, FramePath::Captured | FramePath::Replayed)) => {
                let r = self.recorded.iter().find(|r| r.key == key).expect("recorded when captured");
                stage_times(&r.stages)
            }
            _ => timer.times_ms(),
        }
    }

    /// The path of the frame begun last.
    pub fn path(&self) -> Option<FramePath> {
        self.current.map(|(_, p)| p)
    }
}
