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
}

impl SinglePassTuning {
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
    /// Items per invocation that run on this adapter: the tuning's, halved
    /// until the tile fits the adapter's workgroup memory.
    pub(super) fn fitted_items(&self, b: &WgpuBackend, elem_bytes: u32) -> Result<u32> {
        let bad = |why: String| Err(Error::Tuning { algorithm: "lookback", why });
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
        ]
    }
}

/// The buffers of one single pass: its tile states (cleared) and counters.
fn scratch(b: &WgpuBackend, tiles: u32, chunks: u32, plan: &mut Plan) -> Result<Bind> {
    let state = b.cached_scratch(0, "tile states", tiles as u64 * chunks as u64 * 4)?;
    let counters = b.cached_scratch(1, "tile counter", 16)?;
    plan.clear(&state, 0, Some(tiles as u64 * chunks as u64 * 4)).clear(&counters, 0, Some(16));
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
    let items = t.fitted_items(b, es)?;
    let tiles = io.cap.div_ceil(t.block * items);
    let consts = t.constants(c, es, items, 2);
    let first = if layout == Some(Rejected::InOrder) { "count" } else { "single-pass" };
    plan.stage(first);
    let scratch = scratch(b, tiles, 2, plan)?;
    let bind = Bind { state: scratch.state, aux: scratch.aux, ..rule.bind(io) };
    let mut params = rule.params(io.params());
    params.split = match layout {
        None => 0,
        Some(Rejected::InOrder) => 1,
        Some(Rejected::Reversed) => 2,
    };
    let entry = match layout {
        None => "sp_select",
        Some(Rejected::InOrder) => {
            let p = b.pipeline(c.source(), &rule.variant, "sp_count", &consts)?;
            plan.dispatch(p, params, bind.clone(), tiles);
            plan.stage("single-pass");
            "sp_partition"
        }
        Some(Rejected::Reversed) => "sp_partition",
    };
    let p = b.pipeline(c.source(), &rule.variant, entry, &consts)?;
    plan.dispatch(p, params, bind, tiles);
    Ok(())
}

/// Exclusive scan of u32 or u64 values in one pass.
pub fn scan(b: &WgpuBackend, c: Chaining, v: &Variant, io: &Io, plan: &mut Plan) -> Result<()> {
    let t = &b.tuning.single_pass;
    let es = v.elem_bytes;
    let items = t.fitted_items(b, es)?;
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
