//! The scene the viewer shows and the engine that traces it, on either
//! backend: `reap render`'s flow (scene → BVH → `Packed` → engine) kept alive
//! between frames. The engine does not depend on the compaction choice, so
//! switching algorithms only changes the `RenderSettings` of the next frame;
//! a new backend, resolution or bounce count builds a new engine from the
//! same `Packed` scene.

use crate::bvh;
use crate::compaction::CpuBackend;
use crate::scene::{self, Camera};
use crate::trace::cpu::CpuEngine;
use crate::trace::layout::{CameraLayout, Packed};
use crate::trace::split::{Renderer, Split};
use crate::trace::{Compaction, EngineSetup, Estimator, FrameStats, RenderSettings, TraceResult};

use super::ViewerError;
use super::trace_state::Choices;

/// Which backend computes the image: the library's own kind.
pub use crate::compaction::BackendKind;

/// One workload's engine types, per backend.
pub trait Engines {
    type Cpu;
    #[cfg(feature = "cuda")]
    type Cuda;
    type Wgpu;
}

/// The display adapter's device as the wgpu backend would compute on it, or
/// why it cannot (`Gpu::compute_device`): the viewer's wgpu engines are
/// built on it, so their images never leave the adapter.
pub type DisplayDevice = Result<std::sync::Arc<crate::wgpu_runtime::Device>, String>;

/// The wgpu backend on the display adapter's device.
pub fn wgpu_backend(display: &DisplayDevice) -> Result<crate::compaction::wgpu::WgpuBackend, ViewerError> {
    let dev = display.as_ref().map_err(|e| ViewerError::Backend(e.clone()))?;
    crate::compaction::wgpu::WgpuBackend::on_device(dev.clone()).map_err(|e| ViewerError::Backend(e.to_string()))
}

/// One workload's engine on either backend.
#[allow(clippy::large_enum_variant)] // one per viewer, never moved in a loop
pub enum OnBackend<E: Engines> {
    Cpu(E::Cpu),
    #[cfg(feature = "cuda")]
    Cuda(E::Cuda),
    Wgpu(E::Wgpu),
}

/// Runs `$body` with `$e` bound to the engine, whatever its backend.
macro_rules! on_backend {
    ($any:expr, $e:ident => $body:expr) => {
        match $any {
            OnBackend::Cpu($e) => $body,
            #[cfg(feature = "cuda")]
            OnBackend::Cuda($e) => $body,
            OnBackend::Wgpu($e) => $body,
        }
    };
}
pub(super) use on_backend;

impl<E: Engines> OnBackend<E> {
    pub fn kind(&self) -> BackendKind {
        match self {
            OnBackend::Cpu(_) => BackendKind::Cpu,
            #[cfg(feature = "cuda")]
            OnBackend::Cuda(_) => BackendKind::Cuda,
            OnBackend::Wgpu(_) => BackendKind::Wgpu,
        }
    }
}

/// The path tracer's engines: a split over `--gpus` ranks (one rank: the
/// whole image on one engine).
pub struct Tracers;

impl Engines for Tracers {
    type Cpu = Split<CpuEngine>;
    #[cfg(feature = "cuda")]
    type Cuda = Split<crate::trace::cuda::CudaEngine>;
    type Wgpu = Split<crate::trace::wgpu::WgpuEngine>;
}

/// The path tracer's engine on either backend.
pub type AnyEngine = OnBackend<Tracers>;

impl AnyEngine {
    /// What each compaction site offers on this backend, `none` first:
    /// read once per backend, so frames never parse a name.
    pub fn choices(&self) -> Vec<Compaction> {
        on_backend!(self, e => {
            let b = e.backend();
            Compaction::choices(b).into_iter().filter_map(|n| Compaction::parse(n, b, "compact-paths").ok()).collect()
        })
    }
}

/// A loaded scene and its engine.
pub struct Session {
    pub scene_name: String,
    pub triangles: usize,
    pub bvh_depth: u32,
    /// The scene's own camera: where "reset camera" goes.
    pub home: Camera,
    packed: Packed,
    pub engine: AnyEngine,
    pub width: u32,
    pub height: u32,
    pub max_bounces: u32,
    /// BVH levels one breadth-first expansion descends (`--descend`).
    pub descend: u32,
    /// Ranks the image is split across (`--gpus`).
    pub gpus: usize,
    /// The files the scene was read from, which no screenshot may replace.
    pub sources: Vec<std::path::PathBuf>,
}

/// Opens the CUDA backend, or says why not.
#[cfg(feature = "cuda")]
pub fn cuda_backend() -> Result<crate::compaction::cuda::CudaBackend, String> {
    crate::compaction::cuda::CudaBackend::new(0).map_err(|e| e.to_string())
}

#[cfg(not(feature = "cuda"))]
pub fn cuda_backend() -> Result<std::convert::Infallible, String> {
    Err("this reap was built without the `cuda` feature".into())
}

impl Session {
    /// Loads `spec` (a built-in name or an OBJ path) and builds an engine for it.
    pub fn open(
        spec: &str,
        kind: BackendKind,
        width: u32,
        height: u32,
        max_bounces: u32,
        camera: Option<&Camera>,
        gpus: usize,
        display: &DisplayDevice,
    ) -> Result<Self, ViewerError> {
        let sc = scene::load(spec)?;
        bvh::check_memory(sc.triangles.len(), crate::memory::Limit::host())?;
        let tree = bvh::build(&sc.triangles);
        let packed = Packed::new(&sc, &tree);
        let cam = camera.copied().unwrap_or(sc.camera);
        let engine = build_engine(kind, &packed, &cam, (width, height), max_bounces, gpus, display)?;
        Ok(Session {
            scene_name: sc.name.clone(),
            triangles: sc.triangles.len(),
            bvh_depth: tree.depth,
            home: sc.camera,
            packed,
            engine,
            width,
            height,
            max_bounces,
            descend: crate::trace::DESCEND,
            gpus,
            sources: sc.sources,
        })
    }

    /// A new engine for the same scene: another backend, size or bounce count.
    pub fn rebuild(
        &mut self,
        kind: BackendKind,
        width: u32,
        height: u32,
        max_bounces: u32,
        camera: &Camera,
        display: &DisplayDevice,
    ) -> Result<(), ViewerError> {
        self.engine = build_engine(kind, &self.packed, camera, (width, height), max_bounces, self.gpus, display)?;
        (self.width, self.height, self.max_bounces) = (width, height, max_bounces);
        Ok(())
    }

    pub fn set_camera(&mut self, camera: &Camera) -> TraceResult<()> {
        let layout = CameraLayout::new(camera, self.width, self.height);
        on_backend!(&mut self.engine, e => {
            e.set_camera(layout);
            e.reset_sums()
        })
    }

    pub fn reset(&mut self) -> TraceResult<()> {
        on_backend!(&mut self.engine, e => e.reset_sums())
    }

    /// Renders `spp` samples per pixel on top of the `first_sample` already accumulated.
    pub fn frame(&mut self, choices: &Choices, spp: u32, first_sample: u32) -> TraceResult<Vec<FrameStats>> {
        let settings = RenderSettings {
            width: self.width,
            height: self.height,
            spp,
            max_bounces: self.max_bounces,
            estimator: Estimator::Mis,
            traversal: choices.traversal,
            compact_paths: choices.compact_paths,
            compact_frontier: choices.compact_frontier,
            seed: 1,
            first_sample,
            max_frontier: 1 << 28,
            fusion: choices.fusion,
            descend: self.descend,
            bvh: choices.bvh,
            block_levels: choices.block_levels,
            group_levels: choices.group_levels,
        };
        on_backend!(&mut self.engine, e => e.render_frames(&settings, &mut |_| {}))
    }

    /// With several ranks: each one's rows and last frame time, for the overlay.
    pub fn split_line(&self) -> Option<String> {
        on_backend!(&self.engine, e => {
            (e.ranks() > 1).then(|| {
                let bands: Vec<String> = e
                    .bands()
                    .iter()
                    .zip(e.last_times.iter().map(Some).chain(std::iter::repeat(None)))
                    .map(|((_, rows), t)| match t {
                        Some(t) => format!("{rows} rows {t:.2} ms"),
                        None => format!("{rows} rows"),
                    })
                    .collect();
                format!("split over {} ranks: {}", e.ranks(), bands.join(" | "))
            })
        })
    }

    /// The image as shown, 8-bit sRGB RGBA, converted where the engine
    /// computes: on a GPU only these bytes come back to the host.
    pub fn rgba8(&mut self) -> TraceResult<&[[u8; 4]]> {
        on_backend!(&mut self.engine, e => e.rgba8())
    }

    /// On the wgpu backend, the image written straight into the display
    /// texture `target` (same device): `Some(result)`; `None` on the other
    /// backends, whose image comes through [`Session::rgba8`].
    pub fn tonemap_into(&mut self, target: &wgpu::TextureView) -> Option<TraceResult<()>> {
        match &mut self.engine {
            // The viewer's split holds every rank, so rank 0's engine is always here.
            OnBackend::Wgpu(split) => Some(split.gathered().and_then(|e| match e {
                Some(e) => e.tonemap_into(target),
                None => Err(crate::trace::TraceError::Settings("the viewer runs every rank in its process".into())),
            })),
            _ => None,
        }
    }
}

#[allow(unused_variables)]
fn build_engine(
    kind: BackendKind,
    packed: &Packed,
    camera: &Camera,
    (width, height): (u32, u32),
    max_bounces: u32,
    gpus: usize,
    display: &DisplayDevice,
) -> Result<AnyEngine, ViewerError> {
    let layout = CameraLayout::new(camera, width, height);
    if gpus == 0 || gpus as u64 > height as u64 {
        return Err(ViewerError::Backend(format!("--gpus must be from 1 to the image's {height} rows")));
    }
    if kind == BackendKind::Cpu && gpus > crate::trace::split::MAX_CPU_RANKS {
        return Err(ViewerError::Backend(format!(
            "--gpus {gpus} on the CPU: CPU ranks share the cores; use at most {}",
            crate::trace::split::MAX_CPU_RANKS
        )));
    }
    // The viewer's paths all start from seed 1: a view differs from the last by its camera alone.
    let setup = EngineSetup { packed, camera: layout, width, height, seed: 1, max_bounces };
    match kind {
        BackendKind::Cpu => {
            let engines = (0..gpus)
                .map(|_| {
                    CpuEngine::new(CpuBackend::new(), packed.clone(), layout, width, height, setup.seed, max_bounces)
                })
                .collect();
            Ok(OnBackend::Cpu(Split::new(engines, width, height)?))
        }
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => {
            let count = crate::cuda_runtime::device_count().map_err(|e| ViewerError::Backend(e.to_string()))?;
            if gpus > count {
                return Err(ViewerError::Backend(format!("--gpus {gpus}: this machine has {count} GPU(s)")));
            }
            let mut engines = Vec::with_capacity(gpus);
            for d in 0..gpus {
                let backend = match d {
                    0 => cuda_backend(),
                    _ => crate::compaction::cuda::CudaBackend::new(d).map_err(|e| e.to_string()),
                }
                .map_err(ViewerError::Backend)?;
                engines.push(crate::trace::cuda::CudaEngine::new(backend, setup)?);
            }
            Ok(OnBackend::Cuda(Split::new(engines, width, height)?))
        }
        #[cfg(not(feature = "cuda"))]
        BackendKind::Cuda => Err(ViewerError::Backend("this reap was built without the `cuda` feature".into())),
        BackendKind::Wgpu => {
            if gpus > 1 {
                return Err(ViewerError::Backend(format!(
                    "--gpus {gpus} on wgpu: wgpu computes on the display adapter alone; use --backend cuda"
                )));
            }
            let backend = wgpu_backend(display)?;
            let engine = crate::trace::wgpu::WgpuEngine::new(backend, setup)?;
            Ok(OnBackend::Wgpu(Split::new(vec![engine], width, height)?))
        }
    }
}
