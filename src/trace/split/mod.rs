//! Rendering split across ranks (a GPU, or a CPU rank in tests), all of them
//! at once, one thread each, two ways ([`SplitBy`]):
//! - **rows**: each frame split into bands of whole rows ([`Shard`]), one a
//!   rank. Every random number is drawn from the pixel, so the bands' sums
//!   together are the one-engine image bit for bit.
//! - **samples**: each rank traces the whole image for its own sample, rank r
//!   sample `first + r` of a round, into zeroed sums. Each rank keeps its band
//!   of the running image aside (its held sums), and after the round adds
//!   every rank's sample of that band into it in sample order
//!   ([`SplitEngine::reduce_samples`], a reduce-scatter: a rank takes in only
//!   the others' samples of its band), the additions one engine's accumulate
//!   makes, so the image is again the same bits. A rank's frame keeps one
//!   GPU's size, so the late bounces' small queues and each kernel's slowest
//!   rays weigh on it as on one GPU; a band of rows halves the rays but not
//!   those. A frame of one sample (the viewer's) has nothing to split this way.
//!
//! Bands follow the measured time: after each frame, each band's cost per row
//! (its rank's frame time over its rows) predicts the next frame, and the
//! boundaries move so that every rank's predicted time is equal. A pixel's
//! running sum lives on exactly one rank at a time: when a boundary moves, the
//! moved rows' sums travel to their new owner ([`SplitEngine::move_sums`],
//! NCCL sends on GPUs) before the next frame adds to them, so each pixel is
//! still summed in sample order and the image stays the same bits however
//! often the bands move. Reading the image gathers every band onto rank 0.
//!
//! The engines live in one process ([`Split::new`]), or each process holds
//! one rank's engine ([`Split::join`], one process per GPU as on separate
//! hosts): then the ranks' frame times and stats travel through the
//! processes' [`Cluster`] and the sums through NCCL (or, on CPU ranks, the
//! cluster's sockets), and only the process holding rank 0 has the image.

use std::sync::Arc;
use std::time::Instant;

use super::{Engine, FrameStats, Graphs, RenderSettings, Shard, TraceError, TraceResult, render};
use crate::cluster::Cluster;

mod bands;
mod engines;
mod wire;

use bands::balance;

pub use engines::CpuSplitComm;

/// The most CPU ranks a split or a sharded call takes: CPU ranks share the
/// cores and exist to run the multi-GPU protocol without GPUs.
pub const MAX_CPU_RANKS: usize = 64;

/// How a split shares the work of an image between its ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SplitBy {
    /// Each frame in bands of rows that follow the measured time.
    #[default]
    Rows,
    /// Each rank a whole frame of its own sample; rank 0 sums them in sample order.
    Samples,
}

impl SplitBy {
    pub const ALL: [SplitBy; 2] = [SplitBy::Rows, SplitBy::Samples];
    pub fn name(self) -> &'static str {
        match self {
            SplitBy::Rows => "rows",
            SplitBy::Samples => "samples",
        }
    }
}

impl std::fmt::Display for SplitBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SplitBy {
    type Err = TraceError;
    fn from_str(s: &str) -> TraceResult<Self> {
        super::settings::parse_named(&SplitBy::ALL, SplitBy::name, "split", s)
    }
}

/// One range of pixels' sums, from one engine to another (the same pixels on both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SumMove {
    pub from: usize,
    pub to: usize,
    pub first: u64,
    pub count: u64,
}

/// What an engine adds to render one frame split across several.
pub trait SplitEngine: Engine + Send + Sized {
    /// The state of the collectives between the engines (NCCL communicators).
    type Comm;
    fn connect(engines: &[Self]) -> TraceResult<Self::Comm>;
    /// Connects this process's one engine to the cluster's other processes.
    fn join(engine: &Self, cluster: &Arc<Cluster>) -> TraceResult<Self::Comm>;
    /// What carries the moves, for reports.
    fn carrier(comm: &Self::Comm) -> String;
    /// Copies each move's pixels' sums from rank `from` to rank `to`;
    /// `engines` are this process's, ranks `first..`. Every process passes every move.
    fn move_sums(comm: &Self::Comm, engines: &mut [Self], first: usize, moves: &[SumMove]) -> TraceResult<()>;
    /// Copies pixels `[first, first + count)` from the sums into the held
    /// sums (`to_held`), or back: a split by samples holds a rank's band of
    /// the running image there while its sums take each round's sample.
    fn hold(&mut self, first: u64, count: u64, to_held: bool) -> TraceResult<()>;
    /// A split by samples' round, after ranks `0..count` each traced one
    /// sample into zeroed sums: every rank r adds, over its band `bands[r]`
    /// (first pixel, pixels), those samples in rank order into its held sums,
    /// pixel by pixel as an engine's accumulate adds a sample; returns when
    /// every held sum is added. Every process calls it; `engines` as above.
    fn reduce_samples(
        comm: &Self::Comm,
        engines: &mut [Self],
        first: usize,
        count: usize,
        bands: &[(u64, u64)],
    ) -> TraceResult<()>;
}

/// Something that renders frames into per-pixel sums: one engine, or a split.
pub trait Renderer {
    /// Renders `s.spp` frames; `on_frame` sees each as it ends.
    fn render_frames(
        &mut self,
        s: &RenderSettings,
        on_frame: &mut dyn FnMut(&FrameStats),
    ) -> TraceResult<Vec<FrameStats>>;
    /// Clears the sums.
    fn reset_sums(&mut self) -> TraceResult<()>;
    /// The whole image's sums.
    fn sums(&mut self) -> TraceResult<Vec<[f32; 4]>>;
    /// Whether `algorithm`'s sites run fused into their producers ([`Engine::fuses`]).
    fn fuses_sites(&self, algorithm: crate::compaction::Algorithm) -> bool;
    /// Whether each engine records its frames as CUDA graphs ([`Engine::set_graphs`]).
    fn use_graphs(&mut self, graphs: Graphs);
    /// Ranks rendering (1 for one engine).
    fn ranks(&self) -> usize {
        1
    }
    /// Samples one frame adds: 1, or a samples split's ranks (a round).
    fn samples_per_frame(&self) -> u32 {
        1
    }
    /// Whether the last frame left the work where it was (a split: no band
    /// moved), so the next frame can replay what the last one recorded.
    fn settled(&self) -> bool {
        true
    }
}

impl<E: Engine> Renderer for E {
    fn render_frames(
        &mut self,
        s: &RenderSettings,
        on_frame: &mut dyn FnMut(&FrameStats),
    ) -> TraceResult<Vec<FrameStats>> {
        render(self, s, on_frame)
    }
    fn reset_sums(&mut self) -> TraceResult<()> {
        self.reset()
    }
    fn sums(&mut self) -> TraceResult<Vec<[f32; 4]>> {
        self.image()
    }
    fn fuses_sites(&self, algorithm: crate::compaction::Algorithm) -> bool {
        self.fuses(algorithm)
    }
    fn use_graphs(&mut self, graphs: Graphs) {
        self.set_graphs(graphs);
    }
}

/// Several engines rendering one image, in bands of rows or by samples.
pub struct Split<E: SplitEngine> {
    /// This process's engines: ranks `first..first + engines.len()`.
    engines: Vec<E>,
    first: usize,
    comm: E::Comm,
    /// The other processes, where each rank is a process.
    cluster: Option<Arc<Cluster>>,
    width: u32,
    /// Rows of each rank's band, in rank order (top band first), every rank's.
    rows: Vec<u32>,
    /// Whether the bands follow the measured times between frames.
    pub balance: bool,
    /// Each rank's frame time of the last frame, ms (what the bands follow).
    pub last_times: Vec<f64>,
    /// Whether the last frame moved a band boundary.
    moved: bool,
    by: SplitBy,
}

impl<E: SplitEngine> Split<E> {
    /// Engines of one image (`width` x `height`), one per rank, into equal bands.
    pub fn new(engines: Vec<E>, width: u32, height: u32) -> TraceResult<Self> {
        let ranks = engines.len();
        Self::check(&engines, ranks, width, height)?;
        let comm = E::connect(&engines)?;
        Self::start(engines, 0, comm, None, ranks, width, height)
    }

    /// This process's engine as its cluster rank; the other processes hold
    /// the other ranks' engines (every process calls it).
    pub fn join(engine: E, cluster: Arc<Cluster>, width: u32, height: u32) -> TraceResult<Self> {
        let ranks = cluster.ranks();
        Self::check(std::slice::from_ref(&engine), ranks, width, height)?;
        let comm = E::join(&engine, &cluster)?;
        let first = cluster.rank();
        Self::start(vec![engine], first, comm, Some(cluster), ranks, width, height)
    }

    fn check(engines: &[E], ranks: usize, width: u32, height: u32) -> TraceResult<()> {
        if ranks == 0 || engines.is_empty() {
            return Err(TraceError::Settings("a split render needs at least one engine".into()));
        }
        if ranks as u64 > height as u64 {
            return Err(TraceError::Settings(format!(
                "{ranks} ranks need at least {ranks} rows to split; the image has {height}"
            )));
        }
        let image = width as u64 * height as u64;
        if let Some(e) = engines.iter().find(|e| e.image_pixels() != image) {
            return Err(TraceError::Settings(format!(
                "the engines were made for {} pixels and the split for {image}",
                e.image_pixels()
            )));
        }
        Ok(())
    }

    fn start(
        engines: Vec<E>,
        first: usize,
        comm: E::Comm,
        cluster: Option<Arc<Cluster>>,
        ranks: usize,
        width: u32,
        height: u32,
    ) -> TraceResult<Self> {
        let r = ranks as u32;
        let rows: Vec<u32> = (0..r).map(|i| height / r + u32::from(i < height % r)).collect();
        let mut split = Split {
            engines,
            first,
            comm,
            cluster,
            width,
            rows,
            balance: true,
            last_times: Vec::new(),
            moved: false,
            by: SplitBy::Rows,
        };
        split.apply_bands()?;
        Ok(split)
    }

    /// This process's engines.
    pub fn engines(&self) -> &[E] {
        &self.engines
    }

    /// Whether this process holds rank 0, which gathers the image.
    pub fn leads(&self) -> bool {
        self.first == 0
    }

    /// The whole image gathered on rank 0, whose engine is returned: what
    /// converts it for display (`rgba8`, or on wgpu straight into a texture).
    /// Only the process holding rank 0 has it: the others get `None`.
    pub fn gathered(&mut self) -> TraceResult<Option<&mut E>> {
        self.gather()?;
        Ok(if self.leads() { Some(&mut self.engines[0]) } else { None })
    }

    /// Rank 0's compaction backend (every rank's is of the same kind).
    pub fn backend(&self) -> &E::B {
        self.engines[0].backend()
    }

    /// Moves every rank's camera (the caller resets the sums).
    pub fn set_camera(&mut self, camera: crate::trace::layout::CameraLayout) {
        self.engines.iter_mut().for_each(|e| e.set_camera(camera));
    }

    pub fn carrier(&self) -> String {
        E::carrier(&self.comm)
    }

    /// How the ranks share the image.
    pub fn by(&self) -> SplitBy {
        self.by
    }

    /// Whether the rounds run split by samples: a single rank traces every
    /// sample of the whole image either way, so it renders as one engine, in
    /// place (wgpu, which holds no band aside, splits so).
    fn by_samples(&self) -> bool {
        self.by == SplitBy::Samples && self.rows.len() > 1
    }

    /// Shares the image `by` rows or samples from the next frame on, the
    /// image so far kept: each rank's band of it goes into its held sums
    /// (to samples) or back into its sums (to rows), on its own device.
    pub fn set_by(&mut self, by: SplitBy) -> TraceResult<()> {
        if by == self.by {
            return Ok(());
        }
        if self.rows.len() > 1 {
            self.hold_bands(by == SplitBy::Samples)?;
        }
        self.by = by;
        self.moved = false;
        self.apply_bands()
    }

    /// Every engine of this process copies its band from its sums into its
    /// held sums (`to_held`), or back.
    fn hold_bands(&mut self, to_held: bool) -> TraceResult<()> {
        let pixels = self.pixel_bands();
        for (e, &(first, count)) in self.engines.iter_mut().zip(&pixels[self.first..]) {
            e.hold(first, count, to_held)?;
        }
        Ok(())
    }

    /// Each rank's band as pixels (first pixel, pixels).
    fn pixel_bands(&self) -> Vec<(u64, u64)> {
        let w = self.width as u64;
        self.bands().into_iter().map(|(first, rows)| (first as u64 * w, rows as u64 * w)).collect()
    }

    /// Each rank's band as rows (first row, rows); split by samples, the band
    /// of the image the rank holds and adds the round's samples into.
    pub fn bands(&self) -> Vec<(u32, u32)> {
        let mut first = 0;
        self.rows
            .iter()
            .map(|&r| {
                let band = (first, r);
                first += r;
                band
            })
            .collect()
    }

    /// Sets each rank's rows (rank order, top first; every rank at least
    /// one, all of them the image's height), moving the moved rows' sums.
    pub fn set_bands(&mut self, rows: Vec<u32>) -> TraceResult<()> {
        if self.by_samples() {
            return Err(TraceError::Settings("a split by samples has no bands: each rank traces every row".into()));
        }
        let height: u32 = self.rows.iter().sum();
        if rows.len() != self.rows.len()
            || rows.contains(&0)
            || rows.iter().map(|&r| r as u64).sum::<u64>() != height as u64
        {
            return Err(TraceError::Settings(format!(
                "bands {rows:?}: give each of the {} ranks at least one row, {height} rows in all",
                self.rows.len()
            )));
        }
        self.rebalance(rows)
    }

    /// Each engine's shard: its band, or split by samples the whole image.
    fn apply_bands(&mut self) -> TraceResult<()> {
        let (width, height, bands, whole) = (self.width, self.rows.iter().sum(), self.bands(), self.by_samples());
        for (e, &(first, rows)) in self.engines.iter_mut().zip(&bands[self.first..]) {
            e.set_shard(if whole { Shard::rows(width, 0, height) } else { Shard::rows(width, first, rows) })?;
        }
        Ok(())
    }

    /// `work(global rank, engine)` on every engine of this process at once,
    /// a thread each (none for one); every rank's result on every process, in
    /// rank order (`None` for a rank that had no frame).
    fn on_each(
        &mut self,
        work: impl Fn(usize, &mut E) -> TraceResult<Option<FrameStats>> + Sync,
    ) -> TraceResult<Vec<Option<FrameStats>>> {
        let first = self.first;
        let results: Vec<TraceResult<Option<FrameStats>>> = if self.engines.len() == 1 {
            // One rank (the viewer's default): no thread to start.
            vec![work(first, &mut self.engines[0])]
        } else {
            std::thread::scope(|scope| {
                let work = &work;
                let handles: Vec<_> =
                    self.engines.iter_mut().enumerate().map(|(i, e)| scope.spawn(move || work(first + i, e))).collect();
                let panicked = || Err(TraceError::Settings("a rank's render thread panicked".into()));
                handles.into_iter().map(|h| h.join().unwrap_or_else(|_| panicked())).collect()
            })
        };
        let mut frames = results.into_iter().collect::<TraceResult<Vec<_>>>()?;
        if let Some(c) = &self.cluster {
            // Every rank's frame on every process: the bands move alike everywhere.
            let mine = frames.remove(0);
            let all = c.all_gather(&mine.as_ref().map(wire::encode).unwrap_or_default())?;
            let unreadable = || {
                TraceError::Settings(
                    "a rank sent a frame this reap cannot read: run one reap build on every rank".into(),
                )
            };
            frames = all
                .iter()
                .map(|b| if b.is_empty() { Ok(None) } else { wire::decode(b).map(Some).ok_or_else(unreadable) })
                .collect::<TraceResult<Vec<_>>>()?;
            // How the sites and the frame ran is the same on every rank (same settings, bands moved
            // in the same frames): this process's answer stands for the others'.
            if let Some(mine) = mine {
                for f in frames.iter_mut().flatten() {
                    (f.paths_site, f.frontier_site, f.graph) = (mine.paths_site, mine.frontier_site, mine.graph);
                }
            }
        }
        Ok(frames)
    }

    /// Moves the band boundaries to `rows`, carrying the moved rows' sums.
    fn rebalance(&mut self, rows: Vec<u32>) -> TraceResult<()> {
        let owners = |rows: &[u32]| -> Vec<usize> {
            rows.iter().enumerate().flat_map(|(r, &n)| std::iter::repeat_n(r, n as usize)).collect()
        };
        let (old, new) = (owners(&self.rows), owners(&rows));
        let mut moves: Vec<SumMove> = Vec::new();
        let w = self.width as u64;
        for (y, (&from, &to)) in old.iter().zip(&new).enumerate() {
            if from == to {
                continue;
            }
            match moves.last_mut() {
                Some(m) if m.from == from && m.to == to && m.first + m.count == y as u64 * w => m.count += w,
                _ => moves.push(SumMove { from, to, first: y as u64 * w, count: w }),
            }
        }
        E::move_sums(&self.comm, &mut self.engines, self.first, &moves)?;
        self.rows = rows;
        self.apply_bands()
    }

    /// One frame on every rank at once, in bands of rows; the merged stats.
    fn frame(&mut self, s: &RenderSettings, sample: u32) -> TraceResult<FrameStats> {
        let one = RenderSettings { spp: 1, first_sample: sample, ..s.clone() };
        let clock = Instant::now();
        let frames = self.on_each(|_, e| render(e, &one, |_| {}).map(|mut f| Some(f.remove(0))))?;
        let frames: Vec<FrameStats> = frames.into_iter().flatten().collect();
        let mut merged = merge(&frames);
        // The device's own stage times where the engine has them: the host's clock adds launch
        // jitter that would move the bands every frame for nothing.
        self.last_times = frames.iter().map(|f| if f.frame_ms > 0.0 { f.frame_ms } else { f.wall_ms }).collect();
        if self.balance && self.rows.len() > 1 {
            let rows = balance(&self.rows, &self.last_times);
            // A move costs a copy per moved row and may grow a rank's buffers: skip ones that buy under 1 %.
            let worst = self.last_times.iter().cloned().fold(0.0, f64::max);
            let mean = self.last_times.iter().sum::<f64>() / self.last_times.len() as f64;
            self.moved = rows != self.rows && worst > mean * 1.01;
            if self.moved {
                self.rebalance(rows)?;
            }
        }
        merged.wall_ms = crate::clocks::ms(clock.elapsed());
        Ok(merged)
    }

    /// One round split by samples: rank r traces sample `sample + r` of the
    /// whole image into zeroed sums, for the first `count` ranks; then every
    /// rank adds the samples of its band into its held sums, in rank order.
    fn round(&mut self, s: &RenderSettings, sample: u32, count: usize) -> TraceResult<FrameStats> {
        let clock = Instant::now();
        let frames = self.on_each(|rank, e| {
            if rank >= count {
                return Ok(None);
            }
            e.reset()?;
            let one = RenderSettings { spp: 1, first_sample: sample + rank as u32, ..s.clone() };
            render(e, &one, |_| {}).map(|mut f| Some(f.remove(0)))
        })?;
        let frames: Vec<FrameStats> = frames.into_iter().flatten().collect();
        let adding = Instant::now();
        let bands = self.pixel_bands();
        E::reduce_samples(&self.comm, &mut self.engines, self.first, count, &bands)?;
        let gather_ms = crate::clocks::ms(adding.elapsed());
        self.last_times = frames.iter().map(|f| if f.frame_ms > 0.0 { f.frame_ms } else { f.wall_ms }).collect();
        let mut merged = merge(&frames);
        // The slowest rank's stages, then the adds (by the host's clock: they end the round).
        merged.stages.push((super::StageId::frame(super::stage::GATHER_SAMPLES), gather_ms));
        merged.frame_ms += gather_ms;
        merged.sample = sample;
        merged.samples = count as u32;
        merged.wall_ms = crate::clocks::ms(clock.elapsed());
        Ok(merged)
    }

    /// Every band's sums onto rank 0 (rank 0 then holds the whole image);
    /// split by samples, each band from its rank's held sums.
    fn gather(&mut self) -> TraceResult<()> {
        if self.by_samples() {
            // The sums take the next round's sample after a reset: the image stays held.
            self.hold_bands(false)?;
        }
        let w = self.width as u64;
        let moves: Vec<SumMove> = self
            .bands()
            .into_iter()
            .enumerate()
            .skip(1)
            .map(|(r, (first, rows))| SumMove { from: r, to: 0, first: first as u64 * w, count: rows as u64 * w })
            .collect();
        E::move_sums(&self.comm, &mut self.engines, self.first, &moves)
    }

    /// The whole image as rank 0's engine shows it (gathered first; empty
    /// in a process that does not hold rank 0).
    pub fn rgba8(&mut self) -> TraceResult<&[[u8; 4]]> {
        self.gather()?;
        if !self.leads() {
            return Ok(&[]);
        }
        self.engines[0].rgba8()
    }
}

/// A split frame as one frame: the rays of every rank, the slowest rank's stages.
fn merge(frames: &[FrameStats]) -> FrameStats {
    let slowest = frames.iter().max_by(|a, b| a.frame_ms.total_cmp(&b.frame_ms)).cloned().unwrap_or_default();
    let add = |pick: fn(&FrameStats) -> &Vec<u64>| -> Vec<u64> {
        let len = frames.iter().map(|f| pick(f).len()).max().unwrap_or(0);
        (0..len).map(|i| frames.iter().map(|f| pick(f).get(i).copied().unwrap_or(0)).sum()).collect()
    };
    FrameStats {
        queue: add(|f| &f.queue),
        alive: add(|f| &f.alive),
        shadow_rays: add(|f| &f.shadow_rays),
        rays: frames.iter().map(|f| f.rays).sum(),
        ..slowest
    }
}

impl<E: SplitEngine> Renderer for Split<E> {
    fn render_frames(
        &mut self,
        s: &RenderSettings,
        on_frame: &mut dyn FnMut(&FrameStats),
    ) -> TraceResult<Vec<FrameStats>> {
        s.check()?;
        let mut frames = Vec::with_capacity(s.spp as usize);
        let (mut sample, end) = (s.first_sample, s.first_sample + s.spp);
        while sample < end {
            let f = match self.by_samples() {
                false => self.frame(s, sample)?,
                true => self.round(s, sample, self.rows.len().min((end - sample) as usize))?,
            };
            sample += f.samples();
            on_frame(&f);
            frames.push(f);
        }
        Ok(frames)
    }
    fn reset_sums(&mut self) -> TraceResult<()> {
        self.engines.iter_mut().try_for_each(|e| e.reset())?;
        match self.by_samples() {
            false => Ok(()),
            true => self.hold_bands(true),
        }
    }
    /// The whole image on the process holding rank 0; empty on the others.
    fn sums(&mut self) -> TraceResult<Vec<[f32; 4]>> {
        self.gather()?;
        if !self.leads() {
            return Ok(Vec::new());
        }
        self.engines[0].image()
    }
    fn fuses_sites(&self, algorithm: crate::compaction::Algorithm) -> bool {
        self.engines[0].fuses(algorithm)
    }
    fn use_graphs(&mut self, graphs: Graphs) {
        self.engines.iter_mut().for_each(|e| e.set_graphs(graphs));
    }
    fn ranks(&self) -> usize {
        self.rows.len()
    }
    fn samples_per_frame(&self) -> u32 {
        match self.by {
            SplitBy::Rows => 1,
            SplitBy::Samples => self.rows.len() as u32,
        }
    }
    fn settled(&self) -> bool {
        !self.moved
    }
}
