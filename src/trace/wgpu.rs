//! The wavefront stages on wgpu: host side of `shaders/trace/wavefront.wgsl`,
//! the twin of `cuda.rs`. Each [`Engine`] method records one dispatch into
//! the frame's command encoder (clock.rs `Pending`), with its scalars in a
//! parameter slot and its buffers in a bind group in the shader's binding
//! order; the encoder is submitted whenever the library runs a call of its
//! own (through [`Engine::backend`], so the call lands after the stages
//! recorded before it) and at the frame's end, where the host reads the
//! frame's words and its stage times once. Compaction is the library's
//! counted calls ([`crate::compaction::Backend::select_counted`]) on the
//! [`WgpuBackend`], or a fused site (compaction/site.wgsl, wgpu/site.rs):
//! the `*_atomic`, `*_lookback` and `*_chained` entries write only live
//! items, so no pass follows them.
//!
//! The viewer's image leaves through [`WgpuEngine::tonemap_into`]: the sums
//! tonemapped straight into a `texture_storage_2d<rgba8unorm, write>` of the
//! same device, so a viewer drawing on this adapter never copies through the host.
//!
//! One file a little past 600 lines, cuda.rs's twin: the engine's state, its
//! kernels and its dispatch (bind groups, parameters) belong together; the
//! `Engine` methods live in wgpu/engine.rs, the clock in wgpu/clock.rs.

mod clock;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::compaction::wgpu::{WgpuBackend, WgpuBuffer};
use crate::frontier::Step;
use crate::trace::gpu::{GpuState, Indices};
use crate::trace::layout::CameraLayout;
use crate::trace::{
    BvhKind, DepthFirst, Engine, EngineSetup, FrameEnd, FrontierRun, Queue, Shading, Shard, TraceError, TraceResult,
    Words, Work,
};
use crate::wgpu_runtime::{self as rt, Device, Shader, wgsl_source};
pub use clock::WgpuClock;
use clock::{Pending, Shared, lock, rt_err};

/// The tracer's layouts, bindings and shared functions (common.cuh's twin).
pub const COMMON: Shader = wgsl_source!("trace/common.wgsl");
pub const TEXTURE: Shader = wgsl_source!("trace/texture.wgsl", headers: &[COMMON]);
pub const BSDF: Shader = wgsl_source!("trace/bsdf.wgsl", headers: &[COMMON]);
pub const WIDE: Shader = wgsl_source!("trace/wide.wgsl", headers: &[COMMON]);
/// The level loop's device side (kernels/frontier.cuh's twin).
pub const FRONTIER: Shader = wgsl_source!("frontier.wgsl", headers: &[COMMON, crate::compaction::wgpu::runtime::SITE]);
pub const WAVEFRONT: Shader = wgsl_source!("trace/wavefront.wgsl", headers: &[COMMON, TEXTURE, BSDF, WIDE, FRONTIER]);
/// WAVEFRONT's hit merge, put before it as its prelude: one u64 atomicMin
/// where the device has 64-bit atomics ([`Device::int64_atomics`]), else a
/// lock in 32-bit words.
pub const HIT64: Shader = wgsl_source!("trace/hit64.wgsl");
pub const HIT_LOCK: Shader = wgsl_source!("trace/hit_lock.wgsl");
/// How wide depth-first's lanes take rays, also a prelude: a subgroup's idle
/// lanes together where the device has subgroups, else each lane alone.
pub const FETCH_SUBGROUP: Shader = wgsl_source!("trace/fetch_subgroup.wgsl");
pub const FETCH_LANE: Shader = wgsl_source!("trace/fetch_lane.wgsl");
/// The sums to 8-bit sRGB (tonemap.cu's twin), into a storage texture or words.
pub const TONEMAP: Shader = wgsl_source!("trace/tonemap.wgsl");

/// wavefront.wgsl's preludes for a device: its hit merge, its lanes' fetch
/// and its stable sites' rank and walk.
fn preludes(int64_atomics: bool, subgroups: bool) -> [Shader; 3] {
    use crate::compaction::wgpu::runtime::{SITE_LANE, SITE_SUBGROUP};
    [
        if int64_atomics { HIT64 } else { HIT_LOCK },
        if subgroups { FETCH_SUBGROUP } else { FETCH_LANE },
        if subgroups { SITE_SUBGROUP } else { SITE_LANE },
    ]
}

/// wavefront.wgsl's text for a device with (or without) 64-bit atomics and subgroups.
pub fn wavefront_text(int64_atomics: bool, subgroups: bool) -> String {
    let [hit, fetch, site] = preludes(int64_atomics, subgroups);
    WAVEFRONT.assemble(&format!("{}\n{}\n{}", hit.text, fetch.text, site.text))
}

/// Every variant of the tracer's shaders, (name, text, uses subgroups), for
/// the validate-everything test.
pub fn shader_variants() -> Vec<(String, String, bool)> {
    let mut v = Vec::new();
    for int64 in [true, false] {
        for subgroups in [true, false] {
            let [hit, fetch, site] = preludes(int64, subgroups);
            let name = format!("{} + {} + {} + {}", WAVEFRONT.name, hit.name, fetch.name, site.name);
            v.push((name, wavefront_text(int64, subgroups), subgroups));
        }
    }
    v.push((TONEMAP.name.to_string(), TONEMAP.assemble(""), false));
    v
}

/// The tracer's tuning: override constants of wavefront.wgsl.
#[derive(Clone, Copy, Debug)]
pub struct TraceTuning {
    /// Invocations per workgroup (`WG`), 64 to 256.
    pub workgroup: u32,
    /// Workgroups at most per dispatch; grid-stride loops cover the rest.
    /// About what a large GPU holds at once: every stage is dispatched for its
    /// buffer's capacity, so 65,535 workgroups of idle invocations cost a
    /// small level 0.05 ms, and the whole sphereflake frame 1.4x its time on
    /// an H200 (1024: 22.5 ms a frame, 65,535: 31.7; 512 to 4096 within 4 %).
    pub max_groups: u32,
    /// Attempts at a path's hit-key lock (hit_lock.wgsl `HIT_SPIN`), on
    /// devices without 64-bit atomics only: a holder releases it within the
    /// iteration it took it; the bound keeps lavapipe's loop limit out of reach.
    pub hit_spin: u32,
    /// Workgroups of wide depth-first, whose lanes fetch rays until the
    /// queue is spent: about what the GPU holds at once (CUDA launches all
    /// that fit, 2048 threads an SM; an H100's 132 SMs hold 2112 of 128).
    pub fetch_groups: u32,
    /// Idle lanes a subgroup gathers before it fetches (fetch_subgroup.wgsl `WIDE_FETCH`).
    pub wide_fetch: u32,
    /// Testing only (0: off): every n-th tile of a stable site publishes
    /// nothing (site.wgsl `SITE_WITHHOLD`), so that its successors stall.
    pub site_withhold: u32,
}

impl Default for TraceTuning {
    fn default() -> Self {
        TraceTuning {
            workgroup: 128,
            max_groups: 1024,
            hit_spin: 4096,
            fetch_groups: 2048,
            wide_fetch: 8,
            site_withhold: 0,
        }
    }
}

impl TraceTuning {
    /// The defaults with `REAP_WGPU_TRACE_TUNING="workgroup=64,fetch_groups=4096"`
    /// applied, for experiments.
    pub fn from_env() -> TraceResult<Self> {
        let mut t = TraceTuning::default();
        crate::compaction::tuning_from_env("REAP_WGPU_TRACE_TUNING", "wgpu tracer", |k, v| {
            let bad = |why: String| crate::compaction::Error::Tuning { algorithm: "wgpu tracer", why };
            let n = v.parse::<u32>().map_err(|_| bad(format!("`{k}={v}`: expected a whole number")))?;
            match k {
                "workgroup" if (1..=256).contains(&n) => t.workgroup = n,
                "max_groups" if n > 0 => t.max_groups = n,
                "hit_spin" => t.hit_spin = n,
                "fetch_groups" if n > 0 => t.fetch_groups = n,
                "wide_fetch" if n > 0 => t.wide_fetch = n,
                "site_withhold" => t.site_withhold = n,
                _ => return Err(bad(format!("`{k}={v}`: no such key, or out of range"))),
            }
            Ok(())
        })?;
        Ok(t)
    }
}

/// common.wgsl `SceneInfo`: keep in sync.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct SceneInfo {
    cam_origin: [f32; 4],
    cam_forward: [f32; 4],
    cam_right: [f32; 4],
    cam_up: [f32; 4],
    env: [f32; 4],
    light: [f32; 4],
    dims: [u32; 4],
    counts: [u32; 4],
    at_a: [u32; 4],
    at_b: [u32; 4],
    at_w: [u32; 4],
}

/// common.wgsl `Params`: keep in sync.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    capacity: u32,
    shadow: u32,
    queue_len: u32,
    alive: u32,
    shadows: u32,
    sample: u32,
    bounce: u32,
    estimator: u32,
    base: u32,
    count: u32,
    descend: u32,
    last: u32,
    input_len: u32,
    input_live: u32,
    output_len: u32,
    output_live: u32,
    stride: u32,
    next_len: u32,
    pad: [u32; 2],
}

/// The bindings of common.wgsl, by number: what each is.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Params,
    Uniform,
    Read,
    Write,
}
const KINDS: [Kind; 15] = [
    Kind::Params,  // prm
    Kind::Uniform, // info
    Kind::Read,    // sc
    Kind::Read,    // sw
    Kind::Write,   // pv
    Kind::Write,   // pw
    Kind::Write,   // queue
    Kind::Write,   // next
    Kind::Write,   // words
    Kind::Read,    // fin
    Kind::Write,   // fout
    Kind::Write,   // sums
    Kind::Write,   // pw64: the path words again, as u64s (hit64.wgsl)
    Kind::Write,   // fetch: wide depth-first's ray counter (fetch_*.wgsl)
    Kind::Write,   // site_states: the stable sites' tile states (site.rs)
];

/// Each entry point and the bindings it uses (at most 7 storage buffers, the
/// fewest the backend's device accepts; eight with a stable site's tile
/// states, site.rs). Binding 12 is dropped where the
/// hit merge is hit_lock.wgsl, which does not declare it.
const ENTRIES: &[(&str, &[u32])] = &[
    ("trace_camera", &[0, 1, 4, 5, 6, 8]),
    ("trace_depth_first", &[0, 1, 2, 4, 5, 6, 8]),
    ("trace_depth_first_wide", &[0, 1, 2, 4, 5, 6, 8, 13]),
    ("trace_bf_init", &[0, 1, 2, 4, 5, 6, 8, 10]),
    ("trace_bf_init_atomic", &[0, 1, 2, 4, 5, 6, 8, 10]),
    ("trace_bf_init_lookback", &[0, 1, 2, 4, 5, 6, 8, 10, 14]),
    ("trace_bf_init_chained", &[0, 1, 2, 4, 5, 6, 8, 10, 14]),
    ("trace_bf_expand", &[0, 1, 2, 4, 5, 8, 9, 10, 12]),
    ("trace_bf_expand_atomic", &[0, 1, 2, 4, 5, 8, 9, 10, 12]),
    ("trace_bf_expand_lookback", &[0, 1, 2, 4, 5, 8, 9, 10, 12, 14]),
    ("trace_bf_expand_chained", &[0, 1, 2, 4, 5, 8, 9, 10, 12, 14]),
    ("trace_bf_expand_wide", &[0, 1, 2, 4, 5, 8, 9, 10, 12]),
    ("trace_bf_expand_wide_atomic", &[0, 1, 2, 4, 5, 8, 9, 10, 12]),
    ("trace_bf_expand_wide_lookback", &[0, 1, 2, 4, 5, 8, 9, 10, 12, 14]),
    ("trace_bf_expand_wide_chained", &[0, 1, 2, 4, 5, 8, 9, 10, 12, 14]),
    ("trace_shade", &[0, 1, 2, 3, 4, 5, 6, 7, 8]),
    ("trace_shade_atomic", &[0, 1, 2, 3, 4, 5, 6, 7, 8]),
    ("trace_shade_lookback", &[0, 1, 2, 3, 4, 5, 6, 7, 8, 14]),
    ("trace_shade_chained", &[0, 1, 2, 3, 4, 5, 6, 7, 8, 14]),
    ("trace_nee", &[0, 1, 4, 5, 6, 8]),
    ("trace_accumulate", &[0, 1, 4, 8, 11]),
];

/// A compiled entry point and the layout of its bind group.
struct Kernel {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    bindings: Vec<u32>,
}

/// The buffers a dispatch binds besides the engine's own.
#[derive(Default)]
struct Io<'a> {
    queue: Option<&'a wgpu::Buffer>,
    next: Option<&'a wgpu::Buffer>,
    words: Option<&'a wgpu::Buffer>,
    fin: Option<&'a wgpu::Buffer>,
    fout: Option<&'a wgpu::Buffer>,
}

/// The GPU engine on wgpu: the scene and path state in device buffers, one queue.
pub struct WgpuEngine {
    backend: WgpuBackend,
    dev: Arc<Device>,
    pub tuning: TraceTuning,
    /// The image, shard and scene depths, as the CUDA engine keeps them.
    gpu: GpuState,
    info: SceneInfo,
    info_buffer: wgpu::Buffer,
    /// The scene's sections, one after the other (read as vec4 records and as words).
    scene: wgpu::Buffer,
    /// Six vec4 fields of `gpu.path_capacity` entries (common.wgsl `pv`).
    pv: wgpu::Buffer,
    /// Four u32 fields (hit lo, hit hi, occluded, flags).
    pw: wgpu::Buffer,
    /// One vec4 sum per pixel of the whole image, whatever the shard.
    sum: wgpu::Buffer,
    /// Wide depth-first's ray counter, cleared before each of its dispatches.
    fetch: wgpu::Buffer,
    /// The stable fused sites' tile states.
    site: SiteStates,
    pending: Shared,
    clock: WgpuClock,
    sample: u32,
    module: Option<wgpu::ShaderModule>,
    kernels: HashMap<&'static str, Kernel>,
    /// Bind groups made this frame, by entry point and buffers: a frame's
    /// few hundred dispatches use a few dozen. Emptied at each frame's end,
    /// so no buffer the frame let go of (a regrown frontier) stays alive.
    binds: HashMap<(&'static str, Vec<wgpu::Buffer>), wgpu::BindGroup>,
    display: Option<Display>,
    rgba: Vec<[u8; 4]>,
    work: Option<Work<WgpuEngine>>,
}

/// One section of the packed scene: its first vec4.
fn push_section(words: &mut Vec<u32>, data: &[u32]) -> u32 {
    let at = words.len() / 4;
    words.extend_from_slice(data);
    words.resize(words.len().next_multiple_of(4), 0);
    at as u32
}

impl WgpuEngine {
    pub fn new(backend: WgpuBackend, setup: EngineSetup<'_>) -> TraceResult<Self> {
        let gpu = GpuState::new(&setup, Indices::U32)?;
        let (packed, pixels) = (setup.packed, gpu.image_pixels());
        let dev = backend.device().clone();
        let mut words: Vec<u32> = Vec::new();
        let cast = |b: &[u8]| -> Vec<u32> { bytemuck::pod_collect_to_vec(b) };
        let nodes = push_section(&mut words, &cast(bytemuck::cast_slice(&packed.nodes)));
        let tris = push_section(&mut words, &cast(bytemuck::cast_slice(&packed.tris)));
        let materials = push_section(&mut words, &cast(bytemuck::cast_slice(&packed.materials)));
        let textures = push_section(&mut words, &cast(bytemuck::cast_slice(&packed.textures)));
        let texels = push_section(&mut words, &cast(bytemuck::cast_slice(&packed.texels)));
        let wide_nodes = push_section(&mut words, &cast(bytemuck::cast_slice(&packed.wide.nodes)));
        let wide_tris = push_section(&mut words, &cast(bytemuck::cast_slice(&packed.wide_tris)));
        let normals = push_section(&mut words, &cast(bytemuck::cast_slice(&packed.normals)));
        let uvs = push_section(&mut words, &cast(bytemuck::cast_slice(&packed.uvs)));
        let light_tris = push_section(&mut words, &packed.light_tris);
        let light_cdf = push_section(&mut words, &cast(bytemuck::cast_slice(&packed.light_cdf)));
        if words.len() as u64 >= 1 << 32 || packed.texels.len() as u64 >= 1 << 32 {
            return Err(TraceError::Settings("the scene passes 2^32 words, which the wgpu tracer indexes".into()));
        }
        words.resize(words.len().max(4), 0);
        let scene = backend.raw_buffer("the scene", words.len() as u64 * 4)?;
        dev.queue.write_buffer(&scene, 0, bytemuck::cast_slice(&words));
        let info = SceneInfo {
            env: [packed.env[0], packed.env[1], packed.env[2], packed.eps],
            light: [packed.light_power, f32::INFINITY, 0.0, 0.0],
            dims: [gpu.width, gpu.height, gpu.seed, gpu.max_bounces],
            counts: [packed.light_tris.len() as u32, pixels as u32, pixels as u32, packed.nodes.len() as u32],
            at_a: [nodes, tris, materials, textures],
            at_b: [texels, wide_nodes, wide_tris, 0],
            at_w: [4 * normals, 4 * uvs, 4 * light_tris, 4 * light_cdf],
            ..Default::default()
        };
        let info_buffer = dev
            .scoped(
                || "the tracer's scene constants".into(),
                || {
                    dev.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("reap trace info"),
                        size: std::mem::size_of::<SceneInfo>() as u64,
                        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    })
                },
            )
            .map_err(rt_err)?;
        let (pv, pw) = alloc_paths(&backend, pixels)?;
        let sum = backend.raw_buffer("the image's sums", pixels.max(1) * 16)?;
        let fetch = backend.raw_buffer("wide depth-first's ray counter", 16)?;
        let site = SiteStates::new(&backend)?;
        let pending: Shared = Arc::new(Mutex::new(Pending::new(&dev)?));
        let clock = WgpuClock::new(&dev, &pending);
        let mut e = WgpuEngine {
            backend,
            dev,
            tuning: TraceTuning::from_env()?,
            gpu,
            info,
            info_buffer,
            scene,
            pv,
            pw,
            sum,
            fetch,
            site,
            pending,
            clock,
            sample: 0,
            module: None,
            kernels: HashMap::new(),
            binds: HashMap::new(),
            display: None,
            rgba: Vec::new(),
            work: None,
        };
        e.set_camera_layout(setup.camera);
        Ok(e)
    }

    /// Writes the scene constants with `camera`, after what was recorded
    /// under the old ones (a queue write lands before the next submission).
    fn set_camera_layout(&mut self, c: CameraLayout) {
        let v = |a: [f32; 3]| [a[0], a[1], a[2], 0.0];
        self.info.cam_origin = v(c.origin);
        self.info.cam_forward = v(c.forward);
        self.info.cam_right = v(c.right);
        self.info.cam_up = v(c.up);
        self.write_info();
    }

    fn write_info(&self) {
        lock(&self.pending).submit();
        self.dev.queue.write_buffer(&self.info_buffer, 0, bytemuck::bytes_of(&self.info));
    }
}

/// Zeroed path state for `count` paths: the vec4 fields and the word fields.
fn alloc_paths(backend: &WgpuBackend, count: u64) -> TraceResult<(wgpu::Buffer, wgpu::Buffer)> {
    if count >= 1 << 32 {
        return Err(TraceError::Settings("the wgpu tracer indexes paths with 32 bits".into()));
    }
    let count = count.max(1);
    Ok((backend.raw_buffer("the path state", count * 6 * 16)?, backend.raw_buffer("the path words", count * 4 * 4)?))
}

impl WgpuEngine {
    /// The per-pixel sums of the whole image: `image_pixels` vec4s (RGBA, A = samples).
    pub fn sums(&self) -> &wgpu::Buffer {
        &self.sum
    }

    /// The closest-hit key of each of the shard's paths as the last ray
    /// traversal left it: tests compare traversals with it.
    pub fn hits(&self) -> TraceResult<Vec<u64>> {
        lock(&self.pending).submit();
        let n = self.gpu.shard.count;
        // common.wgsl `key_at`: each key's (lo, hi) words side by side, a little-endian u64.
        let keys = self.dev.read(&self.pw, 0, n * 8, "reading the hit keys").map_err(rt_err)?;
        Ok(bytemuck::pod_collect_to_vec(&keys))
    }

    /// Which clock timed the stages.
    pub fn stage_clock(&self) -> rt::timer::Clock {
        self.clock.clock()
    }

    /// Entry point `name` of wavefront.wgsl (compiled on first use).
    fn kernel(&mut self, name: &'static str) -> TraceResult<&Kernel> {
        if !self.kernels.contains_key(name) {
            let int64 = self.dev.int64_atomics;
            let bindings: Vec<u32> = ENTRIES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, b)| b.iter().copied().filter(|&b| int64 || b != 12).collect())
                .ok_or_else(|| {
                    TraceError::Settings(format!("wavefront.wgsl has no entry point {name} listed in ENTRIES"))
                })?;
            let dev = self.dev.clone();
            if self.module.is_none() {
                let text = wavefront_text(int64, dev.subgroups);
                let m = dev
                    .scoped(
                        || "the shader trace/wavefront.wgsl".into(),
                        || {
                            dev.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                                label: Some(WAVEFRONT.name),
                                source: wgpu::ShaderSource::Wgsl(text.into()),
                            })
                        },
                    )
                    .map_err(rt_err)?;
                self.module = Some(m);
            }
            let module = self.module.as_ref().ok_or_else(|| TraceError::Settings("no module".into()))?;
            let t = self.tuning;
            let mut consts = vec![("WG", t.workgroup as f64)];
            if !int64 {
                consts.push(("HIT_SPIN", t.hit_spin as f64));
            }
            if dev.subgroups {
                consts.push(("WIDE_FETCH", t.wide_fetch as f64));
            }
            if t.site_withhold != 0 {
                consts.push(("SITE_WITHHOLD", t.site_withhold as f64));
            }
            let (layout, pipeline) = dev
                .scoped(
                    || format!("the pipeline trace/wavefront.wgsl::{name}"),
                    || {
                        let entries: Vec<_> = bindings.iter().map(|&b| layout_entry(b)).collect();
                        let layout = dev.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                            label: Some(name),
                            entries: &entries,
                        });
                        let pl = dev.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                            label: Some(name),
                            bind_group_layouts: &[Some(&layout)],
                            immediate_size: 0,
                        });
                        let pipeline = dev.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                            label: Some(name),
                            layout: Some(&pl),
                            module,
                            entry_point: Some(name),
                            compilation_options: wgpu::PipelineCompilationOptions {
                                constants: &consts,
                                zero_initialize_workgroup_memory: false,
                            },
                            cache: None,
                        });
                        (layout, pipeline)
                    },
                )
                .map_err(rt_err)?;
            self.kernels.insert(name, Kernel { pipeline, layout, bindings });
        }
        self.kernels.get(name).ok_or_else(|| TraceError::Settings(format!("no kernel {name}")))
    }

    /// Records one dispatch of `name` over `items` invocations' worth of
    /// work (grid-stride beyond the group cap), with `p` and `io`.
    fn dispatch(&mut self, name: &'static str, items: u64, mut p: Params, io: Io<'_>) -> TraceResult<()> {
        let t = self.tuning;
        let groups = items.div_ceil(t.workgroup as u64).clamp(1, t.max_groups.clamp(1, 65_535) as u64) as u32;
        p.stride = groups * t.workgroup;
        let dev = self.dev.clone();
        self.kernel(name)?;
        let (pv, pw, sum, scene, info) = (&self.pv, &self.pw, &self.sum, &self.scene, &self.info_buffer);
        let (fetch, site) = (&self.fetch, self.site.buffer());
        let uniforms = lock(&self.pending).uniforms.clone();
        let kernel = self.kernels.get(name).ok_or_else(|| TraceError::Settings(format!("no kernel {name}")))?;
        let missing = |what: &str| TraceError::Settings(format!("{name} binds {what}, which the stage did not pass"));
        // The buffers in binding order (the parameters' at 0), the bind group's key.
        let mut buffers = Vec::with_capacity(kernel.bindings.len());
        for &b in &kernel.bindings {
            let buffer = match b {
                0 => &uniforms,
                1 => info,
                2 | 3 => scene,
                4 => pv,
                5 | 12 => pw,
                13 => fetch,
                14 => site,
                6 => io.queue.ok_or_else(|| missing("a queue"))?,
                7 => io.next.ok_or_else(|| missing("a next queue"))?,
                8 => io.words.ok_or_else(|| missing("the frame's words"))?,
                9 => io.fin.ok_or_else(|| missing("an input frontier"))?,
                10 => io.fout.ok_or_else(|| missing("an output frontier"))?,
                _ => sum,
            };
            buffers.push(buffer.clone());
        }
        let pipeline = kernel.pipeline.clone();
        let key = (name, buffers);
        if !self.binds.contains_key(&key) {
            let entries: Vec<_> = kernel
                .bindings
                .iter()
                .zip(&key.1)
                .map(|(&binding, buffer)| wgpu::BindGroupEntry {
                    binding,
                    resource: match binding {
                        // The parameters: one slot, at the dispatch's dynamic offset.
                        0 => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer,
                            offset: 0,
                            size: std::num::NonZeroU64::new(std::mem::size_of::<Params>() as u64),
                        }),
                        _ => buffer.as_entire_binding(),
                    },
                })
                .collect();
            let layout = &kernel.layout;
            let bind = dev
                .scoped(
                    || format!("the bind group of {name}"),
                    || {
                        dev.device.create_bind_group(&wgpu::BindGroupDescriptor {
                            label: Some(name),
                            layout,
                            entries: &entries,
                        })
                    },
                )
                .map_err(rt_err)?;
            self.binds.insert(key.clone(), bind);
        }
        let bind = self.binds.get(&key).ok_or_else(|| TraceError::Settings(format!("no bind group for {name}")))?;
        let mut pending = lock(&self.pending);
        let offset = pending.slot(bytemuck::bytes_of(&p));
        let enc = pending.encoder();
        let mut pass =
            enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(name), timestamp_writes: None });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, bind, &[offset]);
        pass.dispatch_workgroups(groups, 1, 1);
        Ok(())
    }
}

fn layout_entry(binding: u32) -> wgpu::BindGroupLayoutEntry {
    match KINDS[binding as usize] {
        Kind::Params => rt::buffer_entry(binding, wgpu::BufferBindingType::Uniform, true),
        Kind::Uniform => rt::buffer_entry(binding, wgpu::BufferBindingType::Uniform, false),
        Kind::Read => rt::storage_entry(binding, true),
        Kind::Write => rt::storage_entry(binding, false),
    }
}

/// A buffer's entries as the shader's u32 capacity.
fn cap32(n: u64) -> u32 {
    n.min(u32::MAX as u64) as u32
}

mod display;
use display::Display;
mod engine;
mod site;
use site::SiteStates;
