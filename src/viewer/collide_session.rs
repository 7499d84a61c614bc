//! The collision demo the viewer shows: a scenario's bodies in an engine of
//! either backend, kept alive between frames with its pair frontier, stepped
//! one frame per displayed frame. The compaction algorithm and the sort
//! only change the next frame's [`CollideSettings`]; a new backend builds a
//! new engine from the current bodies, so the simulation goes on. `--gpus N`
//! splits the scene over N ranks (`collide::split`: CPU ranks, or one CUDA
//! GPU each), which step the bodies as one engine does.

use crate::collide::cpu::CpuCollide;
use crate::collide::layout::SPHERE;
use crate::collide::scenario::{self, Scenario};
use crate::collide::split::SplitCollide;
use crate::collide::{
    Body, CollideResult, CollideSettings, Compaction, Engine, FrameStats, Live, Simulation, SortMethod, World,
};
use crate::compaction::{Backend, CpuBackend};

use super::ViewerError;
use super::collide_state::CollideChoices;
#[cfg(feature = "cuda")]
use super::session::cuda_backend;
use super::session::{BackendKind, DisplayDevice, Engines, OnBackend, on_backend, wgpu_backend};
use glam::Vec3;

/// The most slots a frontier level may hold: a level of `none` past it stops
/// the frame with a message instead of allocating gigabytes.
pub const MAX_FRONTIER: u64 = 1 << 26;
/// The seed every scenario is built with, as `reap collide`'s default.
pub const SEED: u64 = 1;

/// What the view steps on a backend ([`Simulation`]), with its compaction
/// backend (for the choices it offers) and a way to put bodies back.
pub trait Stepped: Simulation {
    type B: Backend;
    fn backend(&self) -> &Self::B;
}

impl<E: Engine> Stepped for Live<E> {
    type B = E::B;
    fn backend(&self) -> &E::B {
        self.engine.backend()
    }
}

impl Stepped for SplitCollide {
    type B = CpuBackend;
    fn backend(&self) -> &CpuBackend {
        SplitCollide::backend(self)
    }
}

#[cfg(feature = "cuda")]
impl Stepped for crate::collide::split::cuda::CudaSplit {
    type B = crate::compaction::cuda::CudaBackend;
    fn backend(&self) -> &Self::B {
        crate::collide::split::cuda::CudaSplit::backend(self)
    }
}

/// A backend's collider: one engine, or the scene split over `--gpus` ranks
/// (CPU ranks, or one CUDA GPU each).
pub enum Colliders<E: Engine, S> {
    One(Live<E>),
    Split(S),
}

impl<E: Engine, S: Stepped<B = E::B>> Colliders<E, S> {
    fn sim(&self) -> &dyn Simulation {
        match self {
            Colliders::One(l) => l,
            Colliders::Split(s) => s,
        }
    }
}

impl<E: Engine, S: Stepped<B = E::B>> Simulation for Colliders<E, S> {
    fn world(&self) -> &World {
        self.sim().world()
    }
    fn len(&self) -> u32 {
        self.sim().len()
    }
    fn ranks(&self) -> usize {
        self.sim().ranks()
    }
    fn step(&mut self, s: &CollideSettings, index: u32) -> CollideResult<FrameStats> {
        match self {
            Colliders::One(l) => l.step(s, index),
            Colliders::Split(split) => split.step(s, index),
        }
    }
    fn bodies(&self) -> CollideResult<Vec<Body>> {
        self.sim().bodies()
    }
    fn contact_list(&self) -> CollideResult<Vec<crate::collide::Contact>> {
        self.sim().contact_list()
    }
    fn candidate_pairs(&self) -> CollideResult<Vec<u64>> {
        self.sim().candidate_pairs()
    }
    fn set_bodies(&mut self, bodies: &[Body]) -> CollideResult<()> {
        match self {
            Colliders::One(l) => l.engine.set_bodies(bodies),
            Colliders::Split(s) => s.set_bodies(bodies),
        }
    }
    fn split_stats(&self) -> Option<&crate::collide::split::SplitStats> {
        self.sim().split_stats()
    }
}

impl<E: Engine, S: Stepped<B = E::B>> Stepped for Colliders<E, S> {
    type B = E::B;
    fn backend(&self) -> &E::B {
        match self {
            Colliders::One(l) => l.engine.backend(),
            Colliders::Split(s) => s.backend(),
        }
    }
}

/// The collision demo's engines, each with its frontier.
pub struct CollideEngines;

impl Engines for CollideEngines {
    type Cpu = Colliders<CpuCollide, SplitCollide>;
    #[cfg(feature = "cuda")]
    type Cuda = Colliders<crate::collide::cuda::CudaCollide, crate::collide::split::cuda::CudaSplit>;
    type Wgpu = Live<crate::collide::wgpu::WgpuCollide>;
}

/// A collision engine of either backend.
pub type AnyCollide = OnBackend<CollideEngines>;

impl AnyCollide {
    /// The pair compactions this backend runs, `none` first: read once per
    /// backend, so frames never parse a name.
    pub fn choices(&self) -> Vec<Compaction> {
        on_backend!(self, l => {
            let b = l.backend();
            Compaction::choices(b).into_iter().filter_map(|n| Compaction::parse(n, b, "compact-pairs").ok()).collect()
        })
    }

    /// The sorts this backend runs, `fast` first.
    pub fn sorts(&self) -> Vec<SortMethod> {
        on_backend!(self, l => {
            let b = l.backend();
            SortMethod::choices(b).iter().filter_map(|n| SortMethod::parse(n, b).ok()).collect()
        })
    }
}

/// A running scenario and its engine.
pub struct CollideSession {
    pub scenario: Scenario,
    pub bodies: u32,
    pub world: World,
    pub engine: AnyCollide,
    /// Ranks the scene is split over (`--gpus`: CPU ranks, or CUDA GPUs; wgpu runs it on one adapter).
    pub gpus: usize,
    /// Frames stepped since the scenario was built (the drum's angle follows it).
    pub frame_index: u32,
    /// The bodies after the last frame where the host has them: the CPU and
    /// CUDA engines' (read back by [`Self::frame`]). A wgpu engine's stay on
    /// the adapter the view draws with ([`Self::device_bodies`]) until
    /// something asks for them ([`Self::bodies`]).
    shown: Option<Vec<Body>>,
    /// How many of the bodies are spheres: a frame moves bodies and may
    /// reorder them, but never changes a shape.
    pub spheres: u32,
    /// A body this fast is drawn in the hottest colour.
    pub hot_speed: f32,
    /// "Compare all"'s starting point: the bodies and their frame index.
    snapshot: Option<(Vec<Body>, u32)>,
}

impl CollideSession {
    /// Builds `scenario` with `bodies` bodies on the `kind` backend.
    pub fn open(
        scenario: Scenario,
        bodies: u32,
        kind: BackendKind,
        gpus: usize,
        display: &DisplayDevice,
    ) -> Result<Self, ViewerError> {
        let (world, start) = scenario::build(scenario, bodies, SEED)?;
        let engine = build_engine(kind, world, &start, gpus, display)?;
        let hot_speed = hot_speed(&world, &start);
        let spheres = start.iter().filter(|b| b.shape == SPHERE).count() as u32;
        Ok(CollideSession {
            scenario,
            bodies,
            world,
            engine,
            gpus,
            frame_index: 0,
            shown: Some(start),
            spheres,
            hot_speed,
            snapshot: None,
        })
    }

    /// The same bodies, where they are now, in a new engine on `kind`.
    pub fn rebuild(&mut self, kind: BackendKind, display: &DisplayDevice) -> Result<(), ViewerError> {
        let bodies = self.bodies()?.to_vec();
        self.engine = build_engine(kind, self.world, &bodies, self.gpus, display)?;
        self.snapshot = None;
        Ok(())
    }

    /// The bodies after the last frame, read back from a wgpu engine on
    /// first use.
    pub fn bodies(&mut self) -> CollideResult<&[Body]> {
        let shown = match self.shown.take() {
            Some(b) => b,
            None => on_backend!(&self.engine, l => l.bodies())?,
        };
        Ok(self.shown.insert(shown))
    }

    /// A wgpu engine's body buffer (on the viewer's own device): the view
    /// groups it into its instances there instead of reading it back
    /// (2.5 ms a frame at 100k bodies on an H200, 34 ms at 1M).
    pub fn device_bodies(&self) -> Option<&wgpu::Buffer> {
        match &self.engine {
            OnBackend::Wgpu(l) => Some(l.engine.bodies_buffer()),
            _ => None,
        }
    }

    /// One time step with `choices`; the host keeps the bodies it leaves
    /// where the engine is not on the view's device.
    pub fn frame(&mut self, choices: &CollideChoices) -> CollideResult<FrameStats> {
        let (substeps, iterations) = self.scenario.solver();
        let settings = CollideSettings {
            compact_pairs: choices.compact_pairs,
            sort: choices.sort,
            substeps,
            iterations,
            max_frontier: MAX_FRONTIER,
            max_candidates: crate::collide::DEFAULT_MAX_CANDIDATES,
            fusion: Default::default(),
            order: Default::default(),
        };
        let index = self.frame_index;
        let stats = on_backend!(&mut self.engine, l => l.step(&settings, index))?;
        self.frame_index += 1;
        self.shown = match &self.engine {
            OnBackend::Wgpu(_) => None,
            any => Some(on_backend!(any, l => l.bodies())?),
        };
        Ok(stats)
    }

    /// Remembers the bodies as they are now.
    pub fn take_snapshot(&mut self) -> CollideResult<()> {
        let bodies = self.bodies()?.to_vec();
        self.snapshot = Some((bodies, self.frame_index));
        Ok(())
    }

    /// Puts the remembered bodies back (nothing when none was taken).
    pub fn restore_snapshot(&mut self) -> CollideResult<()> {
        let Some((bodies, index)) = &self.snapshot else { return Ok(()) };
        on_backend!(&mut self.engine, l => l.set_bodies(bodies))?;
        self.shown = Some(bodies.clone());
        self.frame_index = *index;
        Ok(())
    }

    /// Ranks the scene is split over (1: one engine).
    pub fn ranks(&self) -> usize {
        on_backend!(&self.engine, l => l.ranks())
    }

    /// Simulated seconds since the start.
    pub fn time(&self) -> f32 {
        self.frame_index as f32 * self.world.dt
    }
}

#[allow(unused_variables)]
fn build_engine(
    kind: BackendKind,
    world: World,
    bodies: &[Body],
    gpus: usize,
    display: &DisplayDevice,
) -> Result<AnyCollide, ViewerError> {
    match kind {
        BackendKind::Cpu if gpus > 1 => Ok(OnBackend::Cpu(Colliders::Split(SplitCollide::new(world, bodies, gpus)?))),
        BackendKind::Cpu => Ok(OnBackend::Cpu(Colliders::One(Live::new(CpuCollide::new(world, bodies)?)?))),
        #[cfg(feature = "cuda")]
        BackendKind::Cuda if gpus > 1 => {
            let mut ranks = vec![cuda_backend().map_err(ViewerError::Backend)?];
            for ordinal in 1..gpus {
                let b = crate::compaction::cuda::CudaBackend::new(ordinal);
                ranks
                    .push(b.map_err(|e| ViewerError::Backend(format!("opening GPU {ordinal} of --gpus {gpus}: {e}")))?);
            }
            let split = crate::collide::split::cuda::CudaSplit::new(world, bodies, ranks)?;
            Ok(OnBackend::Cuda(Colliders::Split(split)))
        }
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => {
            let backend = cuda_backend().map_err(ViewerError::Backend)?;
            let e = crate::collide::cuda::CudaCollide::new(backend, world, bodies)?;
            Ok(OnBackend::Cuda(Colliders::One(Live::new(e)?)))
        }
        #[cfg(not(feature = "cuda"))]
        BackendKind::Cuda => Err(ViewerError::Backend("this reap was built without the `cuda` feature".into())),
        BackendKind::Wgpu => {
            let e = crate::collide::wgpu::WgpuCollide::new(wgpu_backend(display)?, world, bodies)?;
            Ok(OnBackend::Wgpu(Live::new(e)?))
        }
    }
}

/// The speed drawn hottest: what a fall through the container's height
/// reaches, or (no gravity) twice the starting mean speed.
fn hot_speed(world: &World, start: &[Body]) -> f32 {
    let g = Vec3::from(world.gravity).length();
    let h = world.max[1] - world.min[1];
    if g > 0.0 {
        return (2.0 * g * h).sqrt() * 0.5;
    }
    let n = start.len().max(1) as f32;
    (2.0 * start.iter().map(|b| Vec3::from(b.vel).length()).sum::<f32>() / n).max(1e-3)
}
