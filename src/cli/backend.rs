//! `--backend`: the one place the binary opens a backend. Every command hands
//! [`with_backend`] a job written once over [`Opened`]; the job then builds
//! the engine it needs (a tracer, a collider) on whichever backend opened, so
//! no command matches on CPU against CUDA itself.

use anyhow::Result;
use clap::ValueEnum;

use reap::bench::Timed;
use reap::collide::{self, Body, Simulation, World};
use reap::compaction::shard::{Group, Sharding};
use reap::compaction::{Algorithm, CpuBackend};
use reap::trace::{
    self,
    layout::{CameraLayout, Packed},
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendChoice {
    /// The fastest backend that works here.
    Auto,
    /// rayon on every core.
    Cpu,
    /// NVIDIA GPU through CUDA (driver + NVRTC).
    Cuda,
    /// Any GPU wgpu opens (Vulkan, Metal, DX12; `--adapter` picks one).
    Wgpu,
}

/// What `--backend wgpu` says in a build without the `wgpu` feature.
#[cfg(not(feature = "wgpu"))]
const NO_WGPU_FEATURE: &str = "this reap was built without the `wgpu` feature; rebuild with default features \
     (or `--features wgpu`), or use --backend cuda or cpu";

/// `--adapter NAME|INDEX`: the wgpu adapter to open (a part of its name, or its place in
/// `reap::wgpu_runtime::adapters()`); the best one when absent.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct AdapterArg {
    /// With --backend wgpu: the adapter, as part of its name (e.g. `llvmpipe`, `nvidia`) or its index
    /// among the adapters wgpu lists [default: the first discrete GPU, else integrated, else software].
    #[arg(long, value_name = "NAME|INDEX")]
    pub adapter: Option<String>,
}

impl AdapterArg {
    /// Refuses `--adapter` beside a backend other than wgpu, where it would be ignored.
    pub fn check(&self, choice: BackendChoice) -> Result<()> {
        match (&self.adapter, choice) {
            (Some(a), c) if c != BackendChoice::Wgpu => {
                anyhow::bail!("--adapter {a} picks a wgpu adapter; add --backend wgpu (or drop --adapter)")
            }
            _ => Ok(()),
        }
    }

    /// Opens the wgpu backend on the adapter named, printing which one opened.
    #[cfg(feature = "wgpu")]
    pub fn open(&self) -> Result<reap::compaction::wgpu::WgpuBackend> {
        use reap::compaction::wgpu::{AdapterChoice, WgpuBackend};
        let choice = match &self.adapter {
            Some(a) => a.parse().unwrap_or_else(|never| match never {}),
            None => AdapterChoice::Best,
        };
        let backend = WgpuBackend::new(&choice)?;
        let (scans, clock) = (reap::bench::wgpu::workgroup_scans(&backend), reap::bench::wgpu::clock(&backend));
        println!("adapter: {}; workgroup scans: {scans}; clock: {clock}", backend.name());
        Ok(backend)
    }
}

/// What a path tracer is built from: the scene, the camera and the frame.
#[derive(Clone)]
pub struct TracerSetup {
    pub packed: Packed,
    pub camera: CameraLayout,
    pub width: u32,
    pub height: u32,
    pub seed: u32,
    pub max_bounces: u32,
}

impl TracerSetup {
    /// What the GPU engines take: the same, the scene borrowed (the CPU engine owns its copy).
    pub fn engine(&self) -> trace::EngineSetup<'_> {
        let TracerSetup { ref packed, camera, width, height, seed, max_bounces } = *self;
        trace::EngineSetup { packed, camera, width, height, seed, max_bounces }
    }
}

/// A backend the binary opened, with the workload engines built on it.
pub trait Opened: Timed + Sharding + Sized {
    type Tracer: trace::Engine + reap::trace::split::SplitEngine;
    type Collider: collide::Engine;
    /// The device as the reports name it.
    fn device(&self) -> String;
    /// The GPU's multiprocessors; `None` on the CPU.
    fn sms(&self) -> Option<u32>;
    /// One more backend of the same kind, for a second engine.
    fn another() -> Result<Self>;
    /// Resets the kernels' tuning to the defaults, sets each `key=value`
    /// (`CudaTuning::set`, `WgpuTuning::set`), then checks that the result runs
    /// on this device for elements of `element_sizes` bytes; the CPU backend
    /// has no kernel shapes to set.
    fn retune(&mut self, pairs: &[(String, String)], element_sizes: &[usize]) -> Result<()>;
    /// `gpus` backends of this kind, this one the first (`--gpus`): the
    /// GPUs 0..gpus on CUDA, as many CPU ranks on the CPU.
    fn ranks(self, gpus: usize) -> Result<Vec<Self>>;
    /// The ranks, connected for sharded compaction: `gpus` of them in this
    /// process, or where this process is one rank of several (`reap launch`,
    /// REAP_RANKS), this backend as that rank.
    fn group(self, gpus: usize) -> Result<Group<Self>> {
        if let Some(place) = super::ranks::place()? {
            super::ranks::check_gpus(place, gpus)?;
            let cluster = super::ranks::cluster()?.expect("a place gives a cluster");
            return Ok(Group::join(self, cluster)?);
        }
        Ok(Group::new(self.ranks(gpus)?)?)
    }
    /// One path tracer per rank, for a split frame.
    fn tracers(self, gpus: usize, setup: TracerSetup) -> Result<Vec<Self::Tracer>> {
        self.ranks(gpus)?.into_iter().map(|b| b.tracer(setup.clone())).collect()
    }
    /// A split frame over `gpus` ranks in this process, or where this process
    /// is one rank of several (`reap launch`, REAP_RANKS), over the processes;
    /// `prepare` readies each engine this process holds before the split starts.
    fn split(
        self,
        gpus: usize,
        setup: TracerSetup,
        mut prepare: impl FnMut(&mut Self::Tracer) -> Result<()>,
    ) -> Result<trace::split::Split<Self::Tracer>> {
        let (width, height) = (setup.width, setup.height);
        if let Some(place) = super::ranks::place()? {
            super::ranks::check_gpus(place, gpus)?;
            let mut engine = self.tracer(setup)?;
            prepare(&mut engine)?;
            let cluster = super::ranks::cluster()?.expect("a place gives a cluster");
            return Ok(trace::split::Split::join(engine, cluster, width, height)?);
        }
        let mut engines = self.tracers(gpus, setup)?;
        engines.iter_mut().try_for_each(&mut prepare)?;
        Ok(trace::split::Split::new(engines, width, height)?)
    }
    /// The path tracer on this backend.
    fn tracer(self, setup: TracerSetup) -> Result<Self::Tracer>;
    /// The collision demo on this backend.
    fn collider(self, world: World, bodies: &[Body]) -> Result<Self::Collider>;
    /// The collision demo split over `gpus` ranks (`collide::split`): CPU
    /// ranks in this process, or one GPU each.
    type SplitCollider: Simulation;
    fn split_collider(self, gpus: usize, world: World, bodies: &[Body]) -> Result<Self::SplitCollider>;
    /// Runs the fused-site cases of `algorithms` at `sizes` (reap::verify::site),
    /// printing failures (and every case when `verbose`): (passed, failed), or
    /// `None` where the backend has no fused sites.
    fn verify_sites(
        &self,
        _algorithms: &[Algorithm],
        _sizes: &[u64],
        _seed: u32,
        _verbose: bool,
    ) -> Option<(u64, u64)> {
        None
    }
}

impl Opened for CpuBackend {
    type Tracer = trace::cpu::CpuEngine;
    type Collider = collide::cpu::CpuCollide;
    fn device(&self) -> String {
        format!("CPU ({} threads)", rayon::current_num_threads())
    }
    fn sms(&self) -> Option<u32> {
        None
    }
    fn another() -> Result<Self> {
        Ok(CpuBackend::new())
    }
    fn retune(&mut self, _: &[(String, String)], _: &[usize]) -> Result<()> {
        anyhow::bail!("--tuning sets CUDA kernel shapes; use --backend cuda")
    }
    fn ranks(self, gpus: usize) -> Result<Vec<Self>> {
        // CPU ranks share the cores: they are there to run the protocol, so a bound keeps a typo
        // (`--gpus 1000000`) from allocating a million ranks' buffers.
        if gpus > reap::trace::split::MAX_CPU_RANKS {
            anyhow::bail!(
                "--gpus {gpus} with --backend cpu: CPU ranks share the cores and run the multi-GPU protocol for \
                 testing; use at most {}",
                reap::trace::split::MAX_CPU_RANKS
            );
        }
        check_gpus(gpus, usize::MAX)?;
        Ok(std::iter::once(self).chain((1..gpus).map(|_| CpuBackend::new())).collect())
    }
    fn tracer(self, t: TracerSetup) -> Result<Self::Tracer> {
        Ok(trace::cpu::CpuEngine::new(self, t.packed, t.camera, t.width, t.height, t.seed, t.max_bounces))
    }
    fn collider(self, world: World, bodies: &[Body]) -> Result<Self::Collider> {
        Ok(collide::cpu::CpuCollide::new(world, bodies)?)
    }
    type SplitCollider = collide::split::SplitCollide;
    fn split_collider(self, gpus: usize, world: World, bodies: &[Body]) -> Result<Self::SplitCollider> {
        Ok(collide::split::SplitCollide::new(world, bodies, gpus)?)
    }
}

#[cfg(feature = "cuda")]
impl Opened for reap::compaction::cuda::CudaBackend {
    type Tracer = trace::cuda::CudaEngine;
    type Collider = collide::cuda::CudaCollide;
    fn device(&self) -> String {
        self.info.name.clone()
    }
    fn sms(&self) -> Option<u32> {
        Some(self.info.sms)
    }
    fn another() -> Result<Self> {
        Ok(Self::new(0)?)
    }
    fn retune(&mut self, pairs: &[(String, String)], element_sizes: &[usize]) -> Result<()> {
        self.tuning = Default::default();
        for (key, value) in pairs {
            self.tuning.set(key, value)?;
        }
        Ok(self.check_tuning(element_sizes)?)
    }
    fn ranks(self, gpus: usize) -> Result<Vec<Self>> {
        check_gpus(gpus, reap::cuda_runtime::device_count()?)?;
        let mut ranks = vec![self];
        for ordinal in 1..gpus {
            ranks.push(Self::new(ordinal)?);
        }
        Ok(ranks)
    }
    fn tracer(self, t: TracerSetup) -> Result<Self::Tracer> {
        Ok(trace::cuda::CudaEngine::new(self, t.engine())?)
    }
    fn collider(self, world: World, bodies: &[Body]) -> Result<Self::Collider> {
        Ok(collide::cuda::CudaCollide::new(self, world, bodies)?)
    }
    type SplitCollider = collide::split::cuda::CudaSplit;
    fn split_collider(self, gpus: usize, world: World, bodies: &[Body]) -> Result<Self::SplitCollider> {
        Ok(collide::split::cuda::CudaSplit::new(world, bodies, self.ranks(gpus)?)?)
    }
    fn verify_sites(&self, algorithms: &[Algorithm], sizes: &[u64], seed: u32, verbose: bool) -> Option<(u64, u64)> {
        Some(reap::verify::site::run(self, algorithms, sizes, seed, |case, r| match r {
            Ok(()) if verbose => println!("    ok   {case}"),
            Ok(()) => {}
            Err(e) => println!("    FAIL {case}: {e}"),
        }))
    }
}

#[cfg(feature = "wgpu")]
impl Opened for reap::compaction::wgpu::WgpuBackend {
    type Tracer = trace::wgpu::WgpuEngine;
    type Collider = collide::wgpu::WgpuCollide;
    fn device(&self) -> String {
        self.name().to_string()
    }
    fn sms(&self) -> Option<u32> {
        None
    }
    fn another() -> Result<Self> {
        Ok(Self::new(&Default::default())?)
    }
    fn retune(&mut self, pairs: &[(String, String)], element_sizes: &[usize]) -> Result<()> {
        self.tuning = Default::default();
        for (key, value) in pairs {
            self.tuning.set(key, value)?;
        }
        Ok(self.check_tuning(element_sizes)?)
    }
    fn ranks(self, gpus: usize) -> Result<Vec<Self>> {
        if gpus != 1 {
            anyhow::bail!(
                "--gpus {gpus} with --backend wgpu: wgpu has no collectives between adapters, so it runs on one; \
                 use --backend cuda for several GPUs"
            );
        }
        Ok(vec![self])
    }
    fn tracer(self, t: TracerSetup) -> Result<Self::Tracer> {
        Ok(trace::wgpu::WgpuEngine::new(self, t.engine())?)
    }
    fn collider(self, world: World, bodies: &[Body]) -> Result<Self::Collider> {
        Ok(collide::wgpu::WgpuCollide::new(self, world, bodies)?)
    }
    type SplitCollider = collide::split::SplitCollide;
    fn split_collider(self, gpus: usize, _: World, _: &[Body]) -> Result<Self::SplitCollider> {
        self.ranks(gpus)?; // refuses more than one, saying why
        anyhow::bail!("the collision demo splits over CUDA GPUs or CPU ranks; --backend wgpu runs it on one adapter")
    }
}

/// Refuses `--gpus 0` and more GPUs than the machine has.
fn check_gpus(gpus: usize, count: usize) -> Result<()> {
    if gpus == 0 {
        anyhow::bail!("--gpus must be at least 1");
    }
    if gpus > count {
        anyhow::bail!("--gpus {gpus} asks for more GPUs than this machine has ({count}); `nvidia-smi -L` lists them");
    }
    Ok(())
}

/// A job that runs on whichever backend opened: a closure generic over the
/// backend, which Rust's closures cannot be.
pub trait OnBackend {
    type Output;
    fn run<B: Opened>(self, backend: B) -> Result<Self::Output>;
}

/// Opens the backend `choice` names and runs `job` on it. `auto` takes CUDA
/// when it works, else a hardware GPU through wgpu, else the CPU, and says in
/// one line which and why; an explicit choice that cannot run is an error.
/// Opening CUDA goes through `CudaBackend::new`, which checks that libcuda and
/// libnvrtc load before cudarc touches them (cudarc panics otherwise).
pub fn with_backend<J: OnBackend>(choice: BackendChoice, adapter: &AdapterArg, job: J) -> Result<J::Output> {
    adapter.check(choice)?;
    match choice {
        BackendChoice::Cpu => job.run(CpuBackend::new()),
        BackendChoice::Cuda => run_cuda(open_cuda()?, job),
        BackendChoice::Wgpu => run_on_wgpu(adapter, job),
        BackendChoice::Auto => {
            let cuda = match open_cuda() {
                Ok(cuda) => return run_cuda(cuda, job),
                Err(e) => e,
            };
            match hardware_wgpu() {
                Ok(Some(w)) => {
                    eprintln!("note: using the wgpu backend on {}; CUDA is unavailable: {cuda}", wgpu_name(&w));
                    return run_wgpu(w, job);
                }
                Ok(None) | Err(_) => {}
            }
            let why = match hardware_wgpu_reason() {
                Some(w) => format!("CUDA is unavailable ({cuda}) and {w}"),
                None => format!("CUDA is unavailable: {cuda}"),
            };
            eprintln!("note: using the CPU backend; {why}");
            job.run(CpuBackend::new())
        }
    }
}

/// Device 0, or where this process is one rank of several, the rank's own GPU.
#[cfg(feature = "cuda")]
fn open_cuda() -> Result<reap::compaction::cuda::CudaBackend> {
    let ordinal = match super::ranks::place()? {
        Some(place) => super::ranks::device_of(place, reap::cuda_runtime::device_count()?)?,
        None => 0,
    };
    Ok(reap::compaction::cuda::CudaBackend::new(ordinal)?)
}

/// Without the `cuda` feature there is no CUDA backend to open.
#[cfg(not(feature = "cuda"))]
fn open_cuda() -> Result<std::convert::Infallible> {
    anyhow::bail!("this reap was built without the `cuda` feature; rebuild with default features or use --backend cpu")
}

#[cfg(feature = "cuda")]
fn run_cuda<J: OnBackend>(cuda: reap::compaction::cuda::CudaBackend, job: J) -> Result<J::Output> {
    job.run(cuda)
}

/// Without the `cuda` feature `open_cuda` never returns a backend.
#[cfg(not(feature = "cuda"))]
fn run_cuda<J: OnBackend>(never: std::convert::Infallible, _job: J) -> Result<J::Output> {
    match never {}
}

#[cfg(feature = "wgpu")]
fn run_wgpu<J: OnBackend>(backend: reap::compaction::wgpu::WgpuBackend, job: J) -> Result<J::Output> {
    job.run(backend)
}

#[cfg(feature = "wgpu")]
fn run_on_wgpu<J: OnBackend>(adapter: &AdapterArg, job: J) -> Result<J::Output> {
    job.run(adapter.open()?)
}

#[cfg(not(feature = "wgpu"))]
fn run_on_wgpu<J: OnBackend>(_: &AdapterArg, _: J) -> Result<J::Output> {
    anyhow::bail!(NO_WGPU_FEATURE)
}

/// The best wgpu adapter when it is a hardware GPU (not a software
/// rasteriser, which the CPU backend outruns): what `auto` takes after CUDA.
#[cfg(feature = "wgpu")]
fn hardware_wgpu() -> Result<Option<reap::compaction::wgpu::WgpuBackend>> {
    use reap::compaction::wgpu::{AdapterChoice, WgpuBackend};
    let b = WgpuBackend::new(&AdapterChoice::Best)?;
    Ok(b.device().is_hardware().then_some(b))
}

#[cfg(not(feature = "wgpu"))]
fn hardware_wgpu() -> Result<Option<std::convert::Infallible>> {
    Ok(None)
}

#[cfg(not(feature = "wgpu"))]
fn run_wgpu<J: OnBackend>(never: std::convert::Infallible, _: J) -> Result<J::Output> {
    match never {}
}

#[cfg(feature = "wgpu")]
fn wgpu_name(w: &reap::compaction::wgpu::WgpuBackend) -> String {
    w.name().to_string()
}

#[cfg(not(feature = "wgpu"))]
fn wgpu_name(never: &std::convert::Infallible) -> String {
    match *never {}
}

/// Why `auto` found no hardware wgpu adapter, for its one line.
fn hardware_wgpu_reason() -> Option<String> {
    #[cfg(feature = "wgpu")]
    return Some(match reap::wgpu_runtime::pick(&Default::default()) {
        Ok(a) => format!("wgpu finds only the software adapter {}", a.get_info().name),
        Err(e) => format!("wgpu has no adapter ({e})"),
    });
    #[cfg(not(feature = "wgpu"))]
    None
}
