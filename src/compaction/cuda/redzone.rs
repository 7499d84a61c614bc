//! Host side of kernels/compaction/redzone.cu: `redzone-block` (seed 004
//! Alg. 1) and `redzone-grid` (Alg. 2 with the load balancer of Alg. 3), Bontes
//! & Gain's O(k) in-place, unstable removal by an index list. The CPU twin,
//! with the same phases and buffers, is `src/compaction/cpu/redzone.rs`.
//!
//! Phases, timed under the paper's names (§4):
//! - `mark red zone`: zero a bitmap of one bit per red-zone slot, then set the
//!   bits the removal list names (Alg. 1 lines 3-4).
//! - `fill holes`: Table 1's four cases per item; direct moves at once, orphans
//!   to the front of each block's batch (lines 5-15).
//! - `process orphans`: pair the orphans (lines 16-17; Alg. 2 lines 16-22).
//!
//! One launch per phase, not a cooperative launch: a kernel boundary is the
//! global synchronisation Alg. 2 needs between phases (§4.4), it needs no
//! co-residency limit on the grid, and it lets each phase be timed with events.
//! `redzone-block` runs every phase as one block of `block_threads` threads, as
//! the paper's Fig. 5 does (its local syncs become launch boundaries too);
//! `redzone-grid` fills the GPU, scans the per-block orphan counts in a
//! one-block launch (line 17, which the paper has every block redo) and
//! pairs orphans with one Alg. 3 search per orphan and list.
//!
//! k stays on the device: in `select` the mark pass counts the rejected
//! elements, so every kernel reads k from a device word and grids are sized
//! from an upper bound (n, or a counted call's capacity, whose n is on the
//! device too); nothing is read back mid-call. `remove` knows k on the host
//! and passes it by value.
//!
//! Destination orphans R' cannot live in place in `remove`'s list (the caller
//! lends it read-only), so they go to an O(k) scratch list; `select` owns its
//! list and reuses it in place, as the paper does.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use smart_default::SmartDefault;

use crate::compaction::cuda::mark;
use crate::compaction::cuda::runtime::{KeepMode, REDZONE, Stages, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, Extent, Io, KeepArgs, raw_ptr};
use crate::compaction::{Algorithm, Error, Result};

/// Redzone's tuning (`REAP_RZ_BLOCK`, `REAP_RZ_ITEMS` in redzone.cu).
#[derive(Clone, Debug, SmartDefault)]
pub struct RedzoneTuning {
    /// Threads of Alg. 1's single block (at most 1024).
    // Alg. 1 as in the paper's Fig. 5: one block of 1024 threads.
    #[default(1024)]
    pub block_threads: u32,
    /// Threads per block of Alg. 2.
    #[default(256)]
    pub grid_threads: u32,
    /// Items each thread classifies per step of `fill holes`; a block advances
    /// `threads * items` items between two block-wide scans.
    #[default(4)]
    pub items: u32,
    /// Alg. 2's blocks |P| per SM in `fill holes` (fewer when k is small).
    #[default(8)]
    pub grid_blocks_per_sm: u32,
}

/// One Redzone run's device addresses.
struct Job {
    data: u64,
    /// The data's length (on the device for a counted select).
    ext: Extent,
    removal: u64,
    /// The device word holding k, or 0 when k is `k_bound` itself (remove).
    k_ptr: u64,
    /// k, or an upper bound of it: sizes the grids and the scratch.
    k_bound: u64,
    /// k u64 for the destination orphans R' (may be `removal`).
    r_out: u64,
    count: u64,
}

/// Removes data[removal[..k]] in place (n elements); writes n - k to *count (device u64, zeroed).
#[allow(clippy::too_many_arguments)]
pub fn remove(
    b: &CudaBackend,
    alg: Algorithm,
    v: &Variant,
    data: u64,
    n: u64,
    removal: u64,
    k: u64,
    count: u64,
    st: &mut Stages,
) -> Result<()> {
    if n == 0 {
        return Ok(()); // k = 0 too; the count was allocated zeroed
    }
    let r_out = b.scratch(bytes_of_u64s(k)?)?;
    let job = Job { data, ext: Extent::host(n), removal, k_ptr: 0, k_bound: k.min(n), r_out: raw_ptr(&r_out), count };
    run(b, alg, v, &job, st)?;
    drop(r_out); // freed in stream order, after the kernels
    Ok(())
}

/// Select through Redzone: mark the rejected indices, copy, remove in place.
pub fn select(b: &CudaBackend, alg: Algorithm, v: &Variant, keep: KeepArgs, io: Io, st: &mut Stages) -> Result<()> {
    let k_word = b.zeroed(8)?;
    let list = b.scratch(bytes_of_u64s(io.ext.cap)?)?;
    let (k_ptr, list_ptr) = (raw_ptr(&k_word), raw_ptr(&list));
    mark::rejected(b, v, keep, io.ext, io.input, list_ptr, k_ptr, st)?;
    mark::copy(b, v, io.ext, io.input, io.output, st)?;
    let job = Job {
        data: io.output,
        ext: io.ext,
        removal: list_ptr,
        k_ptr,
        k_bound: io.ext.cap,
        // In place: redzone_fill writes R' only over list entries it has read.
        r_out: list_ptr,
        count: io.count,
    };
    run(b, alg, v, &job, st)?;
    drop((k_word, list));
    Ok(())
}

fn bytes_of_u64s(len: u64) -> Result<u64> {
    len.checked_mul(8).ok_or_else(|| Error::Backend(format!("a list of {len} indices does not fit in memory")))
}

fn config(blocks: u64, threads: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
}

/// Blocks for a grid-stride kernel over `items` items: enough to fill the GPU, no more.
fn stride_blocks(b: &CudaBackend, items: u64, threads: u32) -> u64 {
    items.div_ceil(threads as u64).clamp(1, b.info.sms as u64 * 16)
}

fn run(b: &CudaBackend, alg: Algorithm, v: &Variant, job: &Job, st: &mut Stages) -> Result<()> {
    let t = &b.tuning.redzone;
    let grid = match alg {
        Algorithm::RedzoneBlock => false,
        Algorithm::RedzoneGrid => true,
        other => return Err(Error::NotOnBackend { algorithm: other.name(), backend: "cuda" }),
    };
    let threads = (if grid { t.grid_threads } else { t.block_threads }).clamp(32, 1024) / 32 * 32;
    let items = t.items.clamp(1, 64);
    // The kernels never look at the keep rule: one module per element size.
    let v = Variant::new(v.elem_bytes as usize, KeepMode::Flags)
        .with(&[("REAP_RZ_BLOCK", threads), ("REAP_RZ_ITEMS", items)]);
    let f_mark = b.kernels().function(&REDZONE, &v, "redzone_mark")?;
    let f_fill = b.kernels().function(&REDZONE, &v, "redzone_fill")?;
    // Phase 3's kernels too, so that no compile lands inside a timed stage.
    let (f_pair, f_scan) = if grid {
        (
            b.kernels().function(&REDZONE, &v, "redzone_grid_orphans")?,
            Some(b.kernels().function(&REDZONE, &v, "redzone_grid_scan")?),
        )
    } else {
        (b.kernels().function(&REDZONE, &v, "redzone_block_orphans")?, None)
    };
    // |P|: Alg. 1 has one block; Alg. 2 enough for every item to get a thread, at most a few per SM.
    let blocks = if grid {
        let per_block = threads as u64 * items as u64;
        job.k_bound.div_ceil(per_block).clamp(1, (b.info.sms * t.grid_blocks_per_sm.max(1)) as u64)
    } else {
        1
    };
    let blocks_u32 = blocks as u32;
    let Job { data, ext, removal, k_ptr, k_bound, r_out, count } = *job;

    let marks = st.run("mark red zone", || {
        // One bit per red-zone slot, zeroed in stream order before the kernel.
        let marks = b.zeroed(k_bound.div_ceil(32) * 4)?;
        let m = raw_ptr(&marks);
        let mut l = b.stream().launch_builder(&f_mark);
        l.arg(&ext).arg(&removal).arg(&k_ptr).arg(&k_bound).arg(&m).arg(&count);
        let cfg = config(if grid { stride_blocks(b, k_bound, threads) } else { 1 }, threads);
        // SAFETY: matches `redzone_mark(Extent, const u64*, const u64*, u64, u32*, u64*)`; removal holds
        // k <= k_bound u64 (k_ptr is null or one u64), marks ceil(k_bound / 32) zeroed u32, count one u64.
        unsafe { l.launch(cfg) }.map_err(driver_error("launching redzone_mark"))?;
        Ok(marks)
    })?;

    // Per-block orphan counts j_p, then k_p, each with a slot for the total.
    let counts = b.scratch((blocks + 1) * 2 * 8)?;
    let jc = raw_ptr(&counts);
    let kc = jc + (blocks + 1) * 8;
    let m = raw_ptr(&marks);
    st.run("fill holes", || {
        let mut l = b.stream().launch_builder(&f_fill);
        l.arg(&ext).arg(&data).arg(&removal).arg(&k_ptr).arg(&k_bound).arg(&m).arg(&r_out).arg(&jc).arg(&kc);
        // SAFETY: matches `redzone_fill(Extent, Elem*, const u64*, const u64*, u64, const u32*, u64*, u64*,
        // u64*)` launched with REAP_RZ_BLOCK threads; data holds n elements, removal and r_out k <= k_bound
        // u64, and the counts blocks + 1 u64 each; the kernel writes the first `blocks` of each.
        unsafe { l.launch(config(blocks, threads)) }.map(drop).map_err(driver_error("launching redzone_fill"))
    })?;

    st.run("process orphans", || {
        let Some(f_scan) = &f_scan else {
            let mut l = b.stream().launch_builder(&f_pair);
            l.arg(&ext).arg(&data).arg(&k_ptr).arg(&k_bound).arg(&r_out).arg(&jc).arg(&kc);
            // SAFETY: matches `redzone_block_orphans(Extent, Elem*, const u64*, u64, const u64*, const u64*,
            // const u64*)`; jc and kc hold the one block's counts, written by redzone_fill.
            return unsafe { l.launch(config(1, threads)) }
                .map(drop)
                .map_err(driver_error("launching redzone_block_orphans"));
        };
        let mut l = b.stream().launch_builder(f_scan);
        l.arg(&jc).arg(&kc).arg(&blocks_u32);
        // SAFETY: matches `redzone_grid_scan(u64*, u64*, u32)` launched with REAP_RZ_BLOCK threads; jc and
        // kc hold blocks + 1 u64 each, the first `blocks` written by redzone_fill.
        unsafe { l.launch(config(1, threads)) }.map_err(driver_error("launching redzone_grid_scan"))?;
        // At most k / 2 pairs (Lemma 4.2: each pair holds a source and a destination orphan).
        let mut l = b.stream().launch_builder(&f_pair);
        l.arg(&ext).arg(&data).arg(&k_ptr).arg(&k_bound).arg(&r_out).arg(&jc).arg(&kc).arg(&blocks_u32);
        // SAFETY: matches `redzone_grid_orphans(Extent, Elem*, const u64*, u64, const u64*, const u64*,
        // const u64*, u32)`; J and K are the scanned counts with their totals at index `blocks`.
        unsafe { l.launch(config(stride_blocks(b, k_bound.div_ceil(2), threads), threads)) }
            .map(drop)
            .map_err(driver_error("launching redzone_grid_orphans"))
    })?;
    drop((marks, counts)); // freed in stream order, after the kernels
    Ok(())
}
