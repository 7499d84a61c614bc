//! The library's WGSL sources and how each is specialised: element type and
//! keep rule by a text prelude (WGSL has no preprocessor and overrides cannot
//! change types), tuning numbers by `override` constants. The wgpu runtime
//! itself (adapter, pipeline cache, stage timer) lives in [`crate::wgpu_runtime`].

use std::sync::Arc;

use crate::compaction::KeepMode;
use crate::wgpu_runtime::{Shader, wgsl_source};

pub const COMMON: Shader = wgsl_source!("compaction/common.wgsl");
pub const ATOMIC: Shader = wgsl_source!("compaction/atomic.wgsl", headers: &[COMMON]);
pub const HORN: Shader = wgsl_source!("compaction/horn.wgsl", headers: &[COMMON]);
pub const SENGUPTA: Shader = wgsl_source!("compaction/sengupta.wgsl", headers: &[COMMON, HORN]);
pub const BLELLOCH: Shader = wgsl_source!("compaction/blelloch.wgsl", headers: &[COMMON, HORN]);
pub const ROGER: Shader = wgsl_source!("compaction/roger.wgsl", headers: &[COMMON]);
pub const REDZONE: Shader = wgsl_source!("compaction/redzone.wgsl", headers: &[COMMON]);
pub const SORT: Shader = wgsl_source!("compaction/sort.wgsl", headers: &[COMMON]);
pub const BILLETER: Shader = wgsl_source!("compaction/billeter.wgsl", headers: &[COMMON]);
/// Fused compaction sites (`atomic`, `lookback`, `chained`), included by the
/// workloads' producers, which declare the `words` it tallies in and the
/// stable sites' `site_states` (kernels/compaction/site.cuh's twin).
pub const SITE: Shader = wgsl_source!("compaction/site.wgsl");
/// How a stable site ranks a tile and walks back, a prelude of the producer's
/// module: through subgroups where the device has them, else one invocation.
pub const SITE_SUBGROUP: Shader = wgsl_source!("compaction/site_subgroup.wgsl");
pub const SITE_LANE: Shader = wgsl_source!("compaction/site_lane.wgsl");
/// The tile machinery `lookback` and `chained` share.
pub const SINGLE_PASS: Shader = wgsl_source!("compaction/single_pass.wgsl", headers: &[COMMON]);
/// Direct scatter from registers, over the same tile machinery.
pub const SINGLE_PASS_DIRECT: Shader = wgsl_source!("compaction/single_pass_direct.wgsl", headers: &[SINGLE_PASS]);
pub const LOOKBACK: Shader = wgsl_source!("compaction/lookback.wgsl", headers: &[SINGLE_PASS, SINGLE_PASS_DIRECT]);
pub const CHAINED: Shader = wgsl_source!("compaction/chained.wgsl", headers: &[SINGLE_PASS, SINGLE_PASS_DIRECT]);

/// Every library shader, for the validate-everything test (each is
/// specialised by element size, keep rule and workgroup helpers).
pub const SOURCES: &[Shader] = &[ATOMIC, LOOKBACK, CHAINED, ROGER, REDZONE, SORT, HORN, SENGUPTA, BLELLOCH, BILLETER];

/// Workgroup-wide scans and reductions through workgroup memory (any adapter)
/// or through subgroup operations (adapters with `SUBGROUP`): the prelude
/// carries one of the two, so every shader calls the same functions.
const WORKGROUP: &str = include_str!("../../../shaders/compaction/workgroup.wgsl");
const WORKGROUP_SUBGROUP: &str = include_str!("../../../shaders/compaction/workgroup_subgroup.wgsl");
const ELEM4: &str = include_str!("../../../shaders/compaction/elem4.wgsl");
const ELEM8: &str = include_str!("../../../shaders/compaction/elem8.wgsl");
const ELEM16: &str = include_str!("../../../shaders/compaction/elem16.wgsl");
const ELEM32: &str = include_str!("../../../shaders/compaction/elem32.wgsl");

/// Keeps elements whose first 32-bit word is below the u64 `p[0]`: the
/// predicate the verify suite and the benchmarks run (the CUDA `WORD_BELOW`'s twin).
pub const WORD_BELOW: &str =
    "fn reap_predicate(x: Elem, p: vec4<u32>) -> bool { return p.y != 0u || elem_word(x, 0u) < p.x; }";

/// Stands in where the keep rule is not a predicate, so every module declares it.
const NO_PREDICATE: &str = "fn reap_predicate(x: Elem, p: vec4<u32>) -> bool { return true; }";

/// One specialisation of the library's shaders.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    pub elem_bytes: u32,
    pub keep: KeepMode,
    /// With `KeepMode::Predicate`: the user's `reap_predicate`.
    pub predicate: Option<Arc<str>>,
    /// Whether the workgroup helpers use subgroup operations.
    pub subgroups: bool,
    prelude: Arc<str>,
}

impl Variant {
    pub fn new(elem_bytes: usize, keep: KeepMode, predicate: Option<Arc<str>>, subgroups: bool) -> Self {
        let elem = match elem_bytes {
            4 => ELEM4,
            8 => ELEM8,
            16 => ELEM16,
            _ => ELEM32,
        };
        let pred = match (keep, &predicate) {
            (KeepMode::Predicate, Some(p)) => p.as_ref(),
            _ => NO_PREDICATE,
        };
        let workgroup = if subgroups { WORKGROUP_SUBGROUP } else { WORKGROUP };
        let prelude = format!(
            "const ELEM_BYTES: u32 = {elem_bytes}u;\nconst KEEP: u32 = {}u;\n{elem}\n{pred}\n{workgroup}\n",
            keep as u32
        );
        Variant { elem_bytes: elem_bytes as u32, keep, predicate, subgroups, prelude: prelude.into() }
    }

    pub fn prelude(&self) -> &Arc<str> {
        &self.prelude
    }
}

/// One dispatch's parameters (shaders/compaction/common.wgsl `Params`; keep
/// the two in sync). Each sits at its own 256-byte offset of a call's
/// uniform buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub cap: u32,
    pub len_word: u32,
    pub count_word: u32,
    pub split: u32,
    pub a: u32,
    pub b: u32,
    pub c: u32,
    pub d: u32,
    pub sentinel: [u32; 8],
    pub pred: [u32; 4],
    pub e: u32,
    pub f: u32,
    pub g: u32,
    pub h: u32,
}

/// `Params::len_word` of a call whose length is its capacity.
pub const NO_WORD: u32 = u32::MAX;

/// Bytes between two dispatches' parameters (the largest uniform offset alignment).
pub const PARAMS_STRIDE: u64 = 256;
