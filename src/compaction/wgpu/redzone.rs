//! Host side of shaders/compaction/redzone.wgsl: `redzone-block` (seed 004
//! Alg. 1) and `redzone-grid` (Alg. 2 with the load balancer of Alg. 3), Bontes
//! & Gain's O(k) in-place, unstable removal by an index list. The CUDA twin is
//! `src/compaction/cuda/redzone.rs`, the CPU twin `src/compaction/cpu/redzone.rs`.
//!
//! Phases, timed under the paper's names (§4):
//! - `mark red zone`: set the bits of a zeroed bitmap, one per red-zone slot,
//!   that the removal list names (Alg. 1 lines 3-4).
//! - `fill holes`: Table 1's four cases per item; direct moves at once, orphans
//!   to the front of each workgroup's batch (lines 5-15).
//! - `process orphans`: pair the orphans (lines 16-17; Alg. 2 lines 16-22).
//!
//! One pass per phase: a pass boundary is the global synchronisation Alg. 2
//! needs between phases (§4.4), and it needs no co-residency of workgroups.
//! `redzone-block` runs every phase as one workgroup of `block_threads`
//! invocations (its local syncs become pass boundaries too); `redzone-grid`
//! spreads phase 2 over |P| workgroups, scans their orphan counts in a
//! one-workgroup dispatch (line 17, which the paper has every block redo) and
//! pairs orphans with one Alg. 3 search per orphan and list.
//!
//! k stays on the device in `select` (the mark pass counts the rejected
//! elements): every pass reads it from a device word and dispatches are sized
//! from an upper bound (the capacity); nothing is read back mid-call. `remove`
//! knows k on the host and passes it as a parameter. Destination orphans R'
//! cannot live in place in `remove`'s list (the caller lends it), so they go
//! to an O(k) scratch list; `select` owns its list and reuses it in place.

use smart_default::SmartDefault;

use crate::compaction::wgpu::runtime::{NO_WORD, Params, REDZONE, Variant};
use crate::compaction::wgpu::{Bind, Io, KeepRule, Plan, WgpuBackend, groups_for};
use crate::compaction::{Algorithm, Error, KeepMode, Result};

/// Redzone's tuning (`WG`, `ITEMS` in redzone.wgsl).
#[derive(Clone, Debug, SmartDefault)]
pub struct RedzoneTuning {
    /// Invocations of Alg. 1's single workgroup (up to the adapter's limit).
    // Alg. 1 as in the paper's Fig. 5: one block of 1024 threads.
    #[default(1024)]
    pub block_threads: u32,
    /// Invocations per workgroup of Alg. 2.
    #[default(256)]
    pub grid_threads: u32,
    /// Items each invocation classifies per step of `fill holes` (1 to 16); a
    /// workgroup advances `threads * items` items between two workgroup scans.
    #[default(4)]
    pub items: u32,
    /// Alg. 2's workgroups |P| in `fill holes` at most (fewer when k is
    /// small): about the CUDA twin's 8 per SM on an H100.
    #[default(1024)]
    pub grid_blocks: u32,
}

/// Invocations per workgroup of select's mark and copy.
const SELECT_WG: u32 = 256;
/// `RZ_MAX_ITEMS` in redzone.wgsl: the size of an invocation's item arrays.
const MAX_ITEMS: u32 = 16;

/// One Redzone run's buffers and sizes.
struct Job {
    /// The data (n elements), compacted in place: `dst` of every pass.
    data: ::wgpu::Buffer,
    /// The words holding the count (and a counted select's length).
    words: ::wgpu::Buffer,
    /// The parameters every pass starts from: cap, len_word, count_word, and
    /// e = k or NO_WORD (then k is in `meta`), g = 1 where R' overwrites R.
    base: Params,
    /// R, u64 indices.
    list: ::wgpu::Buffer,
    /// R' where it cannot overwrite R.
    r_out: Option<::wgpu::Buffer>,
    /// k, or an upper bound of it: sizes the dispatches and the bitmap.
    k_bound: u32,
}

/// In-place removal of the `k` listed indices from the `len` elements of
/// `data`; the count (elements left) goes to the u64 word `count`.
#[allow(clippy::too_many_arguments)]
pub fn remove(
    b: &WgpuBackend,
    algorithm: Algorithm,
    v: &Variant,
    data: &::wgpu::Buffer,
    len: u64,
    removal: &::wgpu::Buffer,
    k: u64,
    count: &::wgpu::Buffer,
    plan: &mut Plan,
) -> Result<()> {
    if len == 0 {
        return Ok(()); // k = 0 too; the count was made zeroed
    }
    let k = k.min(len) as u32;
    let job = Job {
        data: data.clone(),
        words: count.clone(),
        base: Params { cap: len as u32, len_word: NO_WORD, count_word: 0, e: k, g: 0, ..Default::default() },
        list: removal.clone(),
        r_out: Some(b.raw_buffer("Redzone's destination orphans", k as u64 * 4)?),
        k_bound: k,
    };
    run(b, algorithm, v, &job, plan, None)
}

/// Select through Redzone: list the rejected indices, copy, remove in place.
pub fn select(b: &WgpuBackend, algorithm: Algorithm, rule: &KeepRule, io: &Io, plan: &mut Plan) -> Result<()> {
    let list = b.raw_buffer("Redzone's rejected indices", io.cap as u64 * 8)?;
    let job = Job {
        data: io.output.clone(),
        words: io.words.clone(),
        // In place: redzone_fill writes R' only over list entries it has read.
        base: Params { e: NO_WORD, g: 1, ..io.params() },
        list,
        r_out: None,
        k_bound: io.cap,
    };
    let v = b.variant(rule.variant.elem_bytes as usize, KeepMode::Flags, None);
    run(b, algorithm, &v, &job, plan, Some((rule, io)))
}

/// Records the phases; with `select`, first the rejected list and the copy.
fn run(
    b: &WgpuBackend,
    algorithm: Algorithm,
    v: &Variant,
    job: &Job,
    plan: &mut Plan,
    select: Option<(&KeepRule, &Io)>,
) -> Result<()> {
    let t = &b.tuning.redzone;
    let grid = match algorithm {
        Algorithm::RedzoneBlock => false,
        Algorithm::RedzoneGrid => true,
        other => return Err(Error::NotOnBackend { algorithm: other.name(), backend: "wgpu" }),
    };
    let limits = &b.device().limits;
    let limit = limits.max_compute_invocations_per_workgroup.min(limits.max_compute_workgroup_size_x);
    // Whole subgroups (the workgroup scan assumes them), within the adapter's limit.
    let unit = if v.subgroups { b.device().subgroup_sizes.1.max(32) } else { 32 };
    let threads = (if grid { t.grid_threads } else { t.block_threads }).clamp(unit, limit.max(unit)) / unit * unit;
    let items = t.items.clamp(1, MAX_ITEMS);
    // |P|: Alg. 1 has one workgroup; Alg. 2 enough for every item to get an invocation, at most grid_blocks.
    let blocks = if grid { job.k_bound.div_ceil(threads * items).clamp(1, t.grid_blocks.max(1)) } else { 1 };
    let consts = [("WG", threads), ("ITEMS", items)];
    let p = |entry| b.pipeline(&REDZONE, v, entry, &consts);
    let (mark, fill) = (p("redzone_mark")?, p("redzone_fill")?);
    let (pair, scan) = if grid {
        (p("redzone_grid_orphans")?, Some(p("redzone_grid_scan")?))
    } else {
        (p("redzone_block_orphans")?, None)
    };
    // k, then J and K (|P| + 1 each), then one bit per red-zone slot.
    let meta_words = 3 + 2 * blocks as u64 + (job.k_bound as u64).div_ceil(32);
    let meta = b.raw_buffer("Redzone's counts and red-zone bitmap", meta_words * 4)?;
    let bind = Bind {
        dst: Some(job.data.clone()),
        words: Some(job.words.clone()),
        state: Some(job.list.clone()),
        aux: job.r_out.clone(),
        aux2: Some(meta.clone()),
        ..Default::default()
    };
    let base = Params { f: blocks, ..job.base };
    let first = if select.is_some() { "mark" } else { "mark red zone" };
    plan.stage(first).clear(&meta, 0, None);

    if let Some((rule, io)) = select {
        let wg = [("WG", SELECT_WG)];
        let listing = b.pipeline(&REDZONE, &rule.variant, "redzone_mark_rejected", &wg)?;
        let copy = b.pipeline(&REDZONE, v, "redzone_copy", &wg)?;
        // The mark reads the input through the keep rule; the output is untouched.
        let marking = Bind { src: Some(io.input.clone()), flags: rule.flags.clone(), ..bind.clone() };
        plan.dispatch(listing, rule.params(base), marking, groups_for(io.cap, SELECT_WG));
        let copying = Bind { src: Some(io.input.clone()), ..bind.clone() };
        plan.stage("copy").dispatch(copy, base, copying, groups_for(io.cap, SELECT_WG));
        plan.stage("mark red zone");
    }
    let stride_groups = if grid { job.k_bound.div_ceil(threads).max(1) } else { 1 };
    plan.dispatch(mark, base, bind.clone(), stride_groups);
    plan.stage("fill holes").dispatch(fill, base, bind.clone(), blocks);
    plan.stage("process orphans");
    match scan {
        None => {
            plan.dispatch(pair, base, bind, 1);
        }
        Some(scan) => {
            plan.dispatch(scan, base, bind.clone(), 1);
            // At most k / 2 pairs (Lemma 4.2: each pair holds a source and a destination orphan).
            plan.dispatch(pair, base, bind, job.k_bound.div_ceil(2).div_ceil(threads).max(1));
        }
    }
    Ok(())
}
