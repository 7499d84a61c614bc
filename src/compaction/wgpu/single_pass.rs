//! Host side of the single-pass shaders: `lookback` (decoupled look-back
//! with Smith, Levien & Owens's fallback, shaders/compaction/lookback.wgsl)
//! and `chained` (shaders/compaction/chained.wgsl), which share
//! shaders/compaction/single_pass.wgsl and differ only in whether a tile
//! publishes its aggregate before its inclusive prefix.

use smart_default::SmartDefault;

use crate::compaction::wgpu::runtime::{CHAINED, LOOKBACK, Variant};
use crate::compaction::wgpu::{Bind, Io, KeepRule, Plan, WgpuBackend};
use crate::compaction::{Error, Rejected, Result};
use crate::wgpu_runtime::Shader;

/// How a tile learns the prefix of the tiles before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chaining {
    /// Wait for the predecessor's inclusive prefix (seed 001 mod. 10.4).
    Chained,
    /// Decoupled look-back (Merrill & Garland 2016).
    Decoupled,
}

impl Chaining {
    fn source(self) -> &'static Shader {
        match self {
            Chaining::Chained => &CHAINED,
            Chaining::Decoupled => &LOOKBACK,
        }
    }
}

/// The single pass's shape and its bounded waits.
#[derive(Clone, Debug, SmartDefault)]
pub struct SinglePassTuning {
    /// Invocations per workgroup (WG).
    #[default(256)]
    pub block: u32,
    /// Bytes each invocation takes per tile (ITEMS = bytes / element size,
    /// at most 32 items and 128 bytes).
    #[default(64)]
    pub bytes: u32,
    /// `lookback`: polls of a silent predecessor before the workgroup reduces it itself.
    #[default(64)]
    pub spin: u32,
    /// `chained`: the same bound; its predecessor publishes only when its
    /// own wait is over, so it is given longer before falling back.
    #[default(4096)]
    pub chained_spin: u32,
    /// Polls in all by one invocation (lavapipe ends loops past 65,535 iterations).
    #[default(16384)]
    pub polls: u32,
    /// Testing: every N-th tile publishes nothing (0: none), forcing the fallback.
    #[default(0)]
    pub withhold: u32,
    /// `lookback`: predecessors each polling invocation reads per poll (1 to
    /// 4), so a subgroup of S looks S x span tiles back per hop.
    #[default(2)]
    pub span: u32,
    /// Debugging, off in timed runs: count the look-back's polls, tiles
    /// walked and fallbacks ([`last_stats`]).
    #[default(false)]
    pub stats: bool,
    /// Testing: tile states of two words even where one would do (what
    /// selects of 2^30 elements or more use).
    #[default(false)]
    pub wide_state: bool,
    /// Select and partition by direct scatter (ranks from registers, no copy
    /// of the tile in workgroup memory) where the adapter has subgroups;
    /// off, the tile is staged in workgroup memory as without them.
    #[default(true)]
    pub direct: bool,
    /// Measuring only: parts of the pass to skip (shaders/compaction/single_pass.wgsl
    /// `PROBE`); any value but 0 gives wrong results.
    #[default(0)]
    pub probe: u32,
}

/// What the look-back of one single-pass call did, summed over its tiles
/// (with [`SinglePassTuning::stats`] on).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LookbackStats {
    /// Polls that found the predecessor waited on still silent.
    pub waits: u64,
    /// Aggregates summed before the prefix that ended the walk (that tile not
    /// counted), and fallbacks' reductions.
    pub walked: u64,
    /// Predecessors the waiting workgroup reduced itself (Decoupled Fallback).
    pub fallbacks: u64,
    /// Tiles that looked back (every tile but the first).
    pub tiles: u64,
}

impl LookbackStats {
    /// Per tile that looked back: (waits, tiles walked, fallbacks).
    pub fn per_tile(&self) -> (f64, f64, f64) {
        let t = self.tiles.max(1) as f64;
        (self.waits as f64 / t, self.walked as f64 / t, self.fallbacks as f64 / t)
    }
}

/// The statistics the last single-pass call on `b` counted (its plan must
/// have run with [`SinglePassTuning::stats`] on; zeros otherwise).
pub fn last_stats(b: &WgpuBackend) -> Result<LookbackStats> {
    let counters = b.cached_scratch(1, "tile counter", COUNTERS_BYTES)?;
    let raw = b.device().read(&counters, 16, 16, "reading the look-back statistics")?;
    let w: &[u32] = bytemuck::cast_slice(&raw);
    Ok(LookbackStats { waits: w[0] as u64, walked: w[1] as u64, fallbacks: w[2] as u64, tiles: w[3] as u64 })
}

/// The counters buffer: the tile counter, a partition's kept total, the statistics.
const COUNTERS_BYTES: u64 = 32;

/// Items an invocation keeps in registers for direct scatter
/// (shaders/compaction/single_pass_direct.wgsl `DIRECT_MAX`).
const DIRECT_MAX: u32 = 16;

/// Tile states of one word (value << 2 | flag) hold counts below 2^30.
const ONE_WORD_LIMIT: u32 = 1 << 30;

impl SinglePassTuning {
    /// The defaults for an adapter: with subgroups (direct scatter) and 512
    /// invocations a workgroup, 512 invocations of 128 bytes (at most 16
    /// items: tiles of 8192 4-byte or 4096 16-byte elements). On an H200
    /// through Vulkan that halves `lookback`'s time against 256 x 64 for
    /// 4-byte elements and more than halves it for 16-byte ones
    /// (docs/bench/wgpu-hop-h200). The staged path (scans, adapters without
    /// subgroups) fits its tiles to the workgroup memory from these.
    pub fn for_adapter(limits: &::wgpu::Limits, subgroups: bool) -> Self {
        let mut t = SinglePassTuning::default();
        if subgroups && limits.max_compute_invocations_per_workgroup >= 512 {
            (t.block, t.bytes) = (512, 128);
        }
        t
    }

    /// Items per invocation for `elem_bytes`-byte elements, as the tuning asks
    /// (at most 32: the kept mask's bits).
    pub fn items(&self, elem_bytes: u32) -> u32 {
        (self.bytes.min(128) / elem_bytes).clamp(1, 32)
    }
    /// Workgroup memory a tile of `items` items takes: the tile and its
    /// compacted copy (one padding slot per 128 bytes each), plus the scans' arrays.
    fn workgroup_bytes(&self, elem_bytes: u32, items: u32) -> u32 {
        let tile = self.block * items;
        2 * (tile + tile / (128 / elem_bytes)) * elem_bytes + self.block * (8 + 8 + 4) + 64
    }
    /// Elements a select's tile holds on `b` for `elem_bytes`-byte elements:
    /// the direct tile where the adapter has subgroups and the tuning asks for
    /// it, else the staged one fitted to workgroup memory.
    pub fn select_tile(&self, b: &WgpuBackend, elem_bytes: u32) -> Result<u64> {
        let items = self.fitted_items(b, elem_bytes, self.direct && b.subgroups)?;
        Ok(self.block as u64 * items as u64)
    }
    /// Items per invocation that run on this adapter: the tuning's, halved
    /// until the tile fits the adapter's workgroup memory.
    pub(super) fn fitted_items(&self, b: &WgpuBackend, elem_bytes: u32, direct: bool) -> Result<u32> {
        let bad = |why: String| Err(Error::Tuning { algorithm: "lookback", why });
        if !(1..=4).contains(&self.span) {
            return bad(format!("span {} is not 1 to 4 predecessors a poll", self.span));
        }
        if self.block == 0 || !self.block.is_power_of_two() || self.block > 1024 {
            return bad(format!("block {} is not a power of two up to 1024", self.block));
        }
        let limits = &b.device().limits;
        if self.block > limits.max_compute_invocations_per_workgroup {
            return bad(format!(
                "block {}: the adapter runs at most {} invocations a workgroup",
                self.block, limits.max_compute_invocations_per_workgroup
            ));
        }
        if direct {
            // Direct scatter holds no tile in workgroup memory: a row count
            // per SIMD group and row (DC_LEN words), the scans' words, the
            // statistics' few.
            let items = self.items(elem_bytes).min(DIRECT_MAX);
            let bytes = items * self.block + self.block * (8 + 8 + 4) + 64;
            if bytes > limits.max_compute_workgroup_storage_size {
                return bad(format!(
                    "a direct tile of {} x {items} items needs {bytes} bytes of workgroup memory; the adapter \
                     has {}: lower lookback.block",
                    self.block, limits.max_compute_workgroup_storage_size
                ));
            }
            return Ok(items);
        }
        let mut items = self.items(elem_bytes);
        while items > 1 && self.workgroup_bytes(elem_bytes, items) > limits.max_compute_workgroup_storage_size {
            items /= 2;
        }
        let bytes = self.workgroup_bytes(elem_bytes, items);
        if bytes > limits.max_compute_workgroup_storage_size {
            return bad(format!(
                "a tile of {} x {items} {elem_bytes}-byte items needs {bytes} bytes of workgroup memory; the \
                 adapter has {}: lower lookback.block",
                self.block, limits.max_compute_workgroup_storage_size
            ));
        }
        Ok(items)
    }
    fn constants(&self, c: Chaining, elem_bytes: u32, items: u32, chunks: u32) -> Vec<(&'static str, u32)> {
        let spin = if c == Chaining::Chained { self.chained_spin } else { self.spin };
        vec![
            ("WG", self.block),
            ("ITEMS", items),
            ("MAX_SPIN", spin),
            ("MAX_POLLS", self.polls),
            ("WITHHOLD", self.withhold),
            ("CHUNKS", chunks),
            ("PAD_SHIFT", (128 / elem_bytes).trailing_zeros()),
            ("LB_SPAN", self.span),
            ("STATS", self.stats as u32),
            ("PROBE", self.probe),
        ]
    }
}

/// The buffers of one single pass: its tile states (cleared) and counters.
fn scratch(b: &WgpuBackend, tiles: u32, chunks: u32, plan: &mut Plan) -> Result<Bind> {
    let state = b.cached_scratch(0, "tile states", tiles as u64 * chunks as u64 * 4)?;
    let counters = b.cached_scratch(1, "tile counter", COUNTERS_BYTES)?;
    plan.clear(&state, 0, Some(tiles as u64 * chunks as u64 * 4)).clear(&counters, 0, Some(COUNTERS_BYTES));
    Ok(Bind { state: Some(state), aux: Some(counters), ..Default::default() })
}

/// Select, or with a `split` layout partition: kept elements first, then the
/// rejected ones, in input order (a count pass first: the kept total places
/// them) or reversed from the end (`Rejected::Reversed`: no count pass).
pub fn compact(
    b: &WgpuBackend,
    c: Chaining,
    rule: &KeepRule,
    io: &Io,
    layout: Option<Rejected>,
    plan: &mut Plan,
) -> Result<()> {
    let t = &b.tuning.single_pass;
    let es = rule.variant.elem_bytes;
    // Direct scatter keeps ITEMS elements in registers (at most DIRECT_MAX)
    // and needs no workgroup memory for the tile.
    let direct = t.direct && rule.variant.subgroups;
    let items = t.fitted_items(b, es, direct)?;
    let tiles = io.cap.div_ceil(t.block * items);
    // One word a tile state where the counts fit in 30 bits: a poll is then one load a tile.
    let chunks = if io.cap < ONE_WORD_LIMIT && !t.wide_state { 1 } else { 2 };
    let mut consts = t.constants(c, es, items, chunks);
    // A row count per SIMD group and row: SIMD groups have 4 lanes or more.
    consts.push(("DC_LEN", (items * t.block / 4).max(1)));
    let first = if layout == Some(Rejected::InOrder) { "count" } else { "single-pass" };
    plan.stage(first);
    let scratch = scratch(b, tiles, chunks, plan)?;
    let bind = Bind { state: scratch.state, aux: scratch.aux, ..rule.bind(io) };
    let mut params = rule.params(io.params());
    params.split = match layout {
        None => 0,
        Some(Rejected::InOrder) => 1,
        Some(Rejected::Reversed) => 2,
    };
    let entry = match (layout, direct) {
        (None, false) => "sp_select",
        (None, true) => "sp_select_direct",
        (Some(Rejected::InOrder), _) => {
            let p = b.pipeline(c.source(), &rule.variant, "sp_count", &consts)?;
            plan.dispatch(p, params, bind.clone(), tiles);
            plan.stage("single-pass");
            if direct { "sp_partition_direct" } else { "sp_partition" }
        }
        (Some(Rejected::Reversed), false) => "sp_partition",
        (Some(Rejected::Reversed), true) => "sp_partition_direct",
    };
    let p = b.pipeline(c.source(), &rule.variant, entry, &consts)?;
    plan.dispatch(p, params, bind, tiles);
    Ok(())
}

/// Exclusive scan of u32 or u64 values in one pass.
pub fn scan(b: &WgpuBackend, c: Chaining, v: &Variant, io: &Io, plan: &mut Plan) -> Result<()> {
    let t = &b.tuning.single_pass;
    let es = v.elem_bytes;
    let items = t.fitted_items(b, es, false)?;
    let tiles = io.cap.div_ceil(t.block * items);
    // 16-bit chunks of a 32- or 64-bit value.
    let chunks = es / 2;
    plan.stage("single-pass");
    let scratch = scratch(b, tiles, chunks, plan)?;
    let bind = Bind { state: scratch.state, aux: scratch.aux, ..io.bind() };
    let p = b.pipeline(c.source(), v, "sp_scan", &t.constants(c, es, items, chunks))?;
    plan.dispatch(p, io.params(), bind, tiles);
    Ok(())
}
