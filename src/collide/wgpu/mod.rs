//! The collision stages on wgpu: host side of `shaders/collide/collide.wgsl`
//! (with warm.wgsl) and of the fast radix sort `shaders/collide/radix_sort.wgsl`,
//! the twin of `src/collide/cuda.rs` method for method. Each [`Engine`] method
//! records its dispatches (entry point, parameters, bindings in the shader's
//! order) in the frame's [`Recorder`], which submits them when a library call
//! or the frame's end needs them on the queue and times the stages. Every
//! count of a frame (the walk's lengths, candidates, contacts) is a word of
//! the driver's word array, read once in [`Engine::end_frame`]: dispatches
//! cover a capacity and each invocation reads its count from the words, so
//! nothing inside a frame waits for the host or the host for the device.
//!
//! The pipelines' bind-group layouts come from the shader (each entry point
//! binds only what it uses, at most seven storage buffers), so the engine
//! keeps its own pipeline cache beside the library's.

use std::collections::HashMap;

use crate::collide::gpu::{BodyTree, Lists, body_count};
use crate::collide::layout::{Body, Contact, World};
use crate::collide::physics::colour::MAX_COLOURS;
use crate::collide::{CollideError, CollideResult, words};
use crate::compaction::Error;
use crate::compaction::wgpu::WgpuBackend;
use crate::wgpu_runtime::{Shader, timer, wgsl_source};

mod engine;
mod fast_sort;
mod record;
mod warm;

use fast_sort::FastSort;
pub use fast_sort::FastSortTuning;
pub use record::Params;
use record::Recorder;
use warm::WarmStart;

/// The layouts of layout.rs and the arithmetic of physics/ (mod.rs, broad.rs).
pub const COMMON: Shader = wgsl_source!("collide/common.wgsl");
/// physics/narrow.rs and manifold.rs.
pub const NARROW: Shader = wgsl_source!("collide/narrow.wgsl");
/// physics/solver.rs and motion.rs.
pub const SOLVER: Shader = wgsl_source!("collide/solver.wgsl");
/// kernels/frontier.cuh's twin for the collider.
pub const FRONTIER: Shader = wgsl_source!("collide/frontier.wgsl");
/// Warm starting's entry points.
pub const WARM: Shader = wgsl_source!("collide/warm.wgsl");
/// physics/colour.rs.
pub const COLOUR: Shader = wgsl_source!("collide/colour.wgsl");
/// The collision stages, one module.
pub const COLLIDE: Shader = wgsl_source!("collide/collide.wgsl", headers: &[COMMON, crate::compaction::wgpu::runtime::SITE, NARROW, SOLVER, COLOUR, FRONTIER, WARM]);
pub use fast_sort::RADIX_SORT;

/// Tuning of the collision stages.
#[derive(Clone, Debug, smart_default::SmartDefault)]
pub struct CollideTuning {
    /// Invocations per workgroup of every collide entry point (`WG`).
    #[default(256)]
    pub workgroup: u32,
    /// Every product that meets an add kept out of FMA contraction
    /// (common.wgsl `rounded`): the CPU's rounding, at the price of the fused
    /// multiply-adds. Off, results differ from the CPU's in the last bits.
    #[default(true)]
    pub exact: bool,
    /// Testing only (0: off): every n-th tile of a stable site publishes
    /// nothing (site.wgsl `SITE_WITHHOLD`), so that its successors stall.
    pub site_withhold: u32,
    pub fast_sort: FastSortTuning,
}

impl CollideTuning {
    /// The defaults with `REAP_COLLIDE_WGPU_TUNING="exact=0,workgroup=128"`
    /// applied: the engine's overrides for experiments, as `REAP_WGPU_TUNING` is the library's.
    pub fn from_env() -> CollideResult<Self> {
        let mut t = CollideTuning::default();
        crate::compaction::tuning_from_env("REAP_COLLIDE_WGPU_TUNING", "wgpu collide", |k, v| {
            let bad = |why: String| Error::Tuning { algorithm: "wgpu collide", why };
            let int = || v.parse::<u32>().map_err(|_| bad(format!("`{k}={v}`: expected a whole number")));
            match k {
                "workgroup" => t.workgroup = int()?,
                "exact" => t.exact = int()? != 0,
                "site_withhold" => t.site_withhold = int()?,
                _ => return Err(bad(format!("no tuning key `{k}` (workgroup, exact, site_withhold)"))),
            }
            Ok(())
        })?;
        Ok(t)
    }
}

/// The solver's sums with two u32 atomics per u64.
pub const SUMS32: Shader = wgsl_source!("collide/sums32.wgsl");
/// The solver's sums with native 64-bit atomics.
pub const SUMS64: Shader = wgsl_source!("collide/sums64.wgsl");

/// What collide.wgsl's module starts with: whether products are kept out of
/// FMA contraction ([`CollideTuning::exact`]), and the solver's sums with
/// native 64-bit atomics (`int64`: the device has them) or two u32 each.
/// The stable sites walk back with one invocation (site_lane.wgsl): the
/// module uses no subgroup operation, and the pair walk's tiles are few.
pub fn collide_prelude(exact: bool, int64: bool) -> String {
    let sums = if int64 { &SUMS64 } else { &SUMS32 };
    format!("const EXACT: bool = {exact};\n{}\n{}", sums.text, crate::compaction::wgpu::runtime::SITE_LANE.text)
}

/// Every collide shader variant as assembled for its pipelines: (name,
/// text), for the validate-everything test.
pub fn shader_sources() -> Vec<(String, String)> {
    let mut all: Vec<_> = [(true, false), (false, false), (true, true), (false, true)]
        .iter()
        .map(|&(e, i)| (format!("{} exact={e} int64={i}", COLLIDE.name), COLLIDE.assemble(&collide_prelude(e, i))))
        .collect();
    all.extend(fast_sort::sources());
    all
}

/// collide.wgsl's sums per body: linear[3], angular[3], push[3], one u64 each.
const ACC_BYTES: u64 = 9 * 8;
/// Bytes of collide.wgsl's colour table: counts, starts (one more) and cursors per colour.
const COLOUR_TABLE: u64 = 3 * (MAX_COLOURS as u64 + 1) * 4;

pub(crate) fn wgpu_err(e: crate::wgpu_runtime::Error) -> CollideError {
    CollideError::Compaction(Error::from(e))
}

/// A compute pipeline of `entry` in `shader` after `prelude`, its layout
/// derived from what the entry point binds.
pub(crate) fn pipeline(
    b: &WgpuBackend,
    shader: &Shader,
    prelude: &str,
    entry: &'static str,
    constants: &[(&str, f64)],
) -> CollideResult<wgpu::ComputePipeline> {
    let dev = b.device();
    let text = shader.assemble(prelude);
    dev.scoped(
        || format!("the pipeline {}::{entry}", shader.name),
        || {
            let module = dev.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(shader.name),
                source: wgpu::ShaderSource::Wgsl(text.into()),
            });
            dev.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants,
                    zero_initialize_workgroup_memory: false,
                },
                cache: None,
            })
        },
    )
    .map_err(wgpu_err)
}

/// The slots of the indirect arguments (collide.wgsl ARGS_*): which length
/// a dispatch covers.
#[derive(Clone, Copy)]
pub(crate) enum Slot {
    /// A level's input pairs (collide_groups_expand).
    Expand = 0,
    /// The stored candidates (collide_groups_candidates).
    Candidates = 1,
    /// The stored contacts (collide_groups_contacts).
    Contacts = 2,
    /// Colour 0's manifolds (collide_colour_scan); colour k's follow at k.
    Colours = 3,
}

/// Slots of the indirect arguments.
const SLOTS: u64 = Slot::Colours as u64 + MAX_COLOURS as u64;

/// The indirect arguments' buffer: x, y, z and one unused word per slot.
fn indirect_args(b: &WgpuBackend) -> CollideResult<wgpu::Buffer> {
    let dev = b.device();
    dev.scoped(
        || "the collider's indirect arguments".into(),
        || {
            dev.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("reap collide indirect args"),
                size: SLOTS * 16,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::INDIRECT,
                mapped_at_creation: false,
            })
        },
    )
    .map_err(wgpu_err)
}

/// A u64 word index of the frame's array as the shaders take it.
fn word(w: u64) -> CollideResult<u32> {
    u32::try_from(w).map_err(|_| CollideError::Settings(format!("word {w} of a frame: too many words")))
}

/// A capacity as the shaders index it (u32).
fn cap32(what: &str, n: u64) -> CollideResult<u32> {
    u32::try_from(n).map_err(|_| {
        CollideError::Settings(format!("{what} of {n} slots: the wgpu engine indexes at most {}", u32::MAX))
    })
}

/// The most bodies: node indices (2n - 1 of them) are u32 and Karras's arithmetic i32.
const MAX_BODIES: u64 = 1 << 30;

/// The GPU engine on wgpu: bodies, hierarchy, candidate and contact lists in
/// device memory, one queue (the backend's).
pub struct WgpuCollide {
    backend: WgpuBackend,
    tuning: CollideTuning,
    /// The bodies and their hierarchy, as the CUDA engine holds them.
    tree: BodyTree<WgpuBackend>,
    candidates: wgpu::Buffer,
    /// Contacts, `CONTACTS_PER_CANDIDATE` slots per candidate slot.
    contacts: wgpu::Buffer,
    /// The lists' size and the last frame's counts.
    lists: Lists,
    acc: wgpu::Buffer,
    /// Each body's contacts left to the Jacobi pass (it splits its mass over them).
    counts: wgpu::Buffer,
    /// The colouring (collide.wgsl bindings 18-22): each contact slot's
    /// colour, each body's pick (two u32) and colours, the coloured
    /// manifolds by colour, and the colour table.
    colour: wgpu::Buffer,
    picks: wgpu::Buffer,
    used: wgpu::Buffer,
    order: wgpu::Buffer,
    colour_table: wgpu::Buffer,
    /// Indirect dispatch arguments, a slot of 16 bytes per `Slot` (collide.wgsl ARGS_*).
    args: wgpu::Buffer,
    /// The stable fused sites' tile counter and states (site.wgsl `site_states`).
    site_states: wgpu::Buffer,
    /// A stable site gave up waiting on this device once: they run separately since.
    site_stalled: bool,
    warm: WarmStart,
    fast: FastSort,
    rec: Recorder,
    pipelines: HashMap<&'static str, wgpu::ComputePipeline>,
}

impl WgpuCollide {
    pub fn new(backend: WgpuBackend, world: World, bodies: &[Body]) -> CollideResult<Self> {
        Self::with_tuning(backend, world, bodies, CollideTuning::from_env()?)
    }

    pub fn with_tuning(
        backend: WgpuBackend,
        world: World,
        bodies: &[Body],
        tuning: CollideTuning,
    ) -> CollideResult<Self> {
        let n = body_count(bodies, MAX_BODIES)?;
        let max_wg = backend.device().limits.max_compute_invocations_per_workgroup;
        if tuning.workgroup == 0 || tuning.workgroup > max_wg {
            return Err(CollideError::Settings(format!(
                "collide workgroup of {} invocations: the adapter runs 1 to {max_wg}",
                tuning.workgroup
            )));
        }
        let lists = Lists::new(n);
        let contacts = lists.contact_capacity();
        let b = &backend;
        let engine = WgpuCollide {
            tree: BodyTree::new(b, world, bodies, MAX_BODIES)?,
            candidates: b.raw_buffer("the candidate list", lists.capacity * 8)?,
            contacts: b.raw_buffer("the contact list", contacts * size_of::<Contact>() as u64)?,
            lists,
            acc: b.raw_buffer("the solver's sums", n * ACC_BYTES)?,
            counts: b.raw_buffer("the contact counts", n * 4)?,
            colour: b.raw_buffer("the contacts' colours", contacts * 4)?,
            picks: b.raw_buffer("the colouring's picks", n * 8)?,
            used: b.raw_buffer("the bodies' colours", n * 4)?,
            order: b.raw_buffer("the colours' manifolds", contacts * 8)?,
            colour_table: b.raw_buffer("the colour table", COLOUR_TABLE)?,
            args: indirect_args(b)?,
            site_states: b.raw_buffer("the stable sites' tile states", 4096)?,
            site_stalled: false,
            warm: WarmStart::new(b, contacts)?,
            fast: FastSort::new(b, n, &tuning.fast_sort)?,
            rec: Recorder::new(b.device()),
            pipelines: HashMap::new(),
            tuning,
            backend,
        };
        Ok(engine)
    }

    /// Gives the backend back (its compiled shaders with it), for the next engine.
    pub fn into_backend(self) -> WgpuBackend {
        self.backend
    }

    /// The bodies as the last frame left them, in the engine's buffer:
    /// for a view drawing on the same device, which copies instead of
    /// reading back.
    pub fn bodies_buffer(&self) -> &wgpu::Buffer {
        self.tree.bodies.raw()
    }

    /// Which clock times the stages (timestamps, or the host clock around device waits).
    pub fn clock_kind(&self) -> timer::Clock {
        self.rec.clock()
    }

    /// The pipeline of a collide.wgsl entry point, compiled on first use.
    fn pipe(&mut self, entry: &'static str) -> CollideResult<wgpu::ComputePipeline> {
        if let Some(p) = self.pipelines.get(entry) {
            return Ok(p.clone());
        }
        let prelude = collide_prelude(self.tuning.exact, self.backend.device().int64_atomics);
        let mut constants = vec![("WG", self.tuning.workgroup as f64)];
        if self.tuning.site_withhold != 0 {
            constants.push(("SITE_WITHHOLD", self.tuning.site_withhold as f64));
        }
        let p = pipeline(&self.backend, &COLLIDE, &prelude, entry, &constants)?;
        self.pipelines.insert(entry, p.clone());
        Ok(p)
    }

    /// Workgroups for one invocation per item of `items`.
    fn groups(&self, items: u64) -> CollideResult<u32> {
        cap32("a dispatch", items.div_ceil(self.tuning.workgroup as u64).max(1))
    }

    /// Records `entry` over `items` invocations with `params` and `binds`.
    fn run(
        &mut self,
        entry: &'static str,
        params: &Params,
        binds: &[(u32, &wgpu::Buffer)],
        items: u64,
    ) -> CollideResult<()> {
        let p = self.pipe(entry)?;
        let groups = self.groups(items)?;
        self.rec.dispatch(&p, params, binds, groups);
        Ok(())
    }

    /// Records `entry` with as many workgroups as the device wrote to `slot`
    /// (a collide_groups_* entry point recorded before it).
    fn run_indirect(
        &mut self,
        entry: &'static str,
        params: &Params,
        binds: &[(u32, &wgpu::Buffer)],
        slot: Slot,
    ) -> CollideResult<()> {
        self.run_slot(entry, params, binds, slot as u64)
    }

    /// [`Self::run_indirect`] from the arguments' slot number `slot` (colour
    /// k's: `Slot::Colours` + k).
    fn run_slot(
        &mut self,
        entry: &'static str,
        params: &Params,
        binds: &[(u32, &wgpu::Buffer)],
        slot: u64,
    ) -> CollideResult<()> {
        let p = self.pipe(entry)?;
        let args = self.args.clone();
        self.rec.dispatch_indirect(&p, params, binds, &args, slot * 16);
        Ok(())
    }

    /// The parameters every dispatch starts from.
    fn params(&self) -> CollideResult<Params> {
        Ok(Params {
            world: self.tree.world,
            n: self.tree.n,
            cap: 0,
            cand_cap: cap32("the candidate list", self.lists.capacity)?,
            contact_cap: cap32("the contact list", self.lists.contact_capacity())?,
            len_in: 0,
            live_in: 0,
            len_out: 0,
            live_out: 0,
            last: 0,
            write_root: 0,
            prev_count: cap32("the previous contacts", self.warm.count)?,
            cand_word: word(words::CANDIDATES)?,
            contact_word: word(words::CONTACTS)?,
            table_cap: cap32("the warm-start table", self.warm.slots)?,
            zero: 0,
            first: 0,
            colour: 0,
            split_only: 0,
            relax: 0,
            pad: 0,
        })
    }

    /// A complete frame's contacts become the previous ones (warm.rs), before the list is rewritten.
    fn keep_last_contacts(&mut self) {
        let count = self.lists.stored_contacts();
        self.warm.keep(&mut self.contacts, count);
    }

    /// Records collide_apply: every body takes the sums.
    fn apply(&mut self, p: &Params, words: &wgpu::Buffer) -> CollideResult<()> {
        let (bodies, acc, counts) = (self.tree.bodies.raw().clone(), self.acc.clone(), self.counts.clone());
        self.run("collide_apply", p, &[(1, &bodies), (11, &acc), (6, words), (12, &counts)], self.tree.n as u64)
    }
}
