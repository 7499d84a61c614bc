//! `--backend`: the one place the binary opens a backend. Every command hands
//! [`with_backend`] a job written once over [`Opened`]; the job then builds
//! the engine it needs (a tracer, a collider) on whichever backend opened, so
//! no command matches on CPU against CUDA itself.

use anyhow::Result;
use clap::ValueEnum;

use reap::bench::Timed;
use reap::collide::{self, Body, World};
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
    /// Any GPU wgpu opens (Vulkan, Metal, DX12; `--adapter` picks one): `reap verify` and
    /// `reap bench compaction` only, for now.
    Wgpu,
}

/// Why `--backend wgpu` stops a command other than `verify` and `bench compaction`.
#[cfg(feature = "wgpu")]
const WORKLOADS_NOT_ON_WGPU: &str = "--backend wgpu runs the compaction library only (`reap verify`, `reap bench \
     compaction`): the path tracer, the collision demo, the viewer and their benchmarks are not on wgpu yet; \
     use --backend cuda or --backend cpu (or leave --backend at auto)";

/// What `--backend wgpu` says in a build without the `wgpu` feature.
#[cfg(not(feature = "wgpu"))]
const NO_WGPU_FEATURE: &str = "this reap was built without the `wgpu` feature; rebuild with default features \
     (or `--features wgpu`), or use --backend cuda or cpu";

/// The error of `--backend wgpu` where a command has no wgpu path: the
/// workloads are not on wgpu yet, or this build lacks the backend.
pub fn not_on_wgpu() -> anyhow::Error {
    #[cfg(not(feature = "wgpu"))]
    return anyhow::anyhow!(NO_WGPU_FEATURE);
    #[cfg(feature = "wgpu")]
    anyhow::anyhow!(WORKLOADS_NOT_ON_WGPU)
}

/// `--adapter NAME|INDEX` of `reap verify` and `reap bench compaction`: the
/// wgpu adapter to open (a part of its name, or its place in
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
    /// Resets the kernels' tuning to the defaults, then sets each `key=value`
    /// (`CudaTuning::set`); the CPU backend has no kernel shapes to set.
    fn retune(&mut self, pairs: &[(String, String)]) -> Result<()>;
    /// `gpus` backends of this kind, this one the first (`--gpus`): the
    /// GPUs 0..gpus on CUDA, as many CPU ranks on the CPU.
    fn ranks(self, gpus: usize) -> Result<Vec<Self>>;
    /// The ranks, connected for sharded compaction.
    fn group(self, gpus: usize) -> Result<Group<Self>> {
        Ok(Group::new(self.ranks(gpus)?)?)
    }
    /// One path tracer per rank, for a split frame.
    fn tracers(self, gpus: usize, setup: TracerSetup) -> Result<Vec<Self::Tracer>> {
        self.ranks(gpus)?.into_iter().map(|b| b.tracer(setup.clone())).collect()
    }
    /// The path tracer on this backend.
    fn tracer(self, setup: TracerSetup) -> Result<Self::Tracer>;
    /// The collision demo on this backend.
    fn collider(self, world: World, bodies: &[Body]) -> Result<Self::Collider>;
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
    fn retune(&mut self, _: &[(String, String)]) -> Result<()> {
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
    fn retune(&mut self, pairs: &[(String, String)]) -> Result<()> {
        self.tuning = Default::default();
        for (key, value) in pairs {
            self.tuning.set(key, value)?;
        }
        Ok(())
    }
    fn ranks(self, gpus: usize) -> Result<Vec<Self>> {
        check_gpus(gpus, reap::gpu::device_count()?)?;
        let mut ranks = vec![self];
        for ordinal in 1..gpus {
            ranks.push(Self::new(ordinal)?);
        }
        Ok(ranks)
    }
    fn tracer(self, t: TracerSetup) -> Result<Self::Tracer> {
        Ok(trace::cuda::CudaEngine::new(self, &t.packed, t.camera, t.width, t.height, t.seed, t.max_bounces)?)
    }
    fn collider(self, world: World, bodies: &[Body]) -> Result<Self::Collider> {
        Ok(collide::cuda::CudaCollide::new(self, world, bodies)?)
    }
    fn verify_sites(&self, algorithms: &[Algorithm], sizes: &[u64], seed: u32, verbose: bool) -> Option<(u64, u64)> {
        Some(reap::verify::site::run(self, algorithms, sizes, seed, |case, r| match r {
            Ok(()) if verbose => println!("    ok   {case}"),
            Ok(()) => {}
            Err(e) => println!("    FAIL {case}: {e}"),
        }))
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
/// when it works and otherwise the CPU, with one line saying why; an explicit
/// `cuda` that cannot run is an error, and so is `wgpu`, which has no tracer
/// or collider (`verify` and `bench compaction` open it themselves). Opening
/// CUDA goes through `CudaBackend::new`, which checks that libcuda and
/// libnvrtc load before cudarc touches them (cudarc panics otherwise).
#[cfg(feature = "cuda")]
pub fn with_backend<J: OnBackend>(choice: BackendChoice, job: J) -> Result<J::Output> {
    use reap::compaction::cuda::CudaBackend;
    match choice {
        BackendChoice::Cpu => job.run(CpuBackend::new()),
        BackendChoice::Cuda => job.run(CudaBackend::new(0)?),
        BackendChoice::Wgpu => Err(not_on_wgpu()),
        BackendChoice::Auto => match CudaBackend::new(0) {
            Ok(cuda) => job.run(cuda),
            Err(e) => {
                eprintln!("note: using the CPU backend; CUDA is unavailable: {e}");
                job.run(CpuBackend::new())
            }
        },
    }
}

/// Without the `cuda` feature there is no CUDA backend to open.
#[cfg(not(feature = "cuda"))]
pub fn with_backend<J: OnBackend>(choice: BackendChoice, job: J) -> Result<J::Output> {
    match choice {
        BackendChoice::Cuda => anyhow::bail!(
            "this reap was built without the `cuda` feature; rebuild with default features or use --backend cpu"
        ),
        BackendChoice::Wgpu => Err(not_on_wgpu()),
        BackendChoice::Auto | BackendChoice::Cpu => job.run(CpuBackend::new()),
    }
}
