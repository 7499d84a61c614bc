//! Radix sort by repeated split (seed 000 §5.3) on wgpu: one stable
//! partition per key bit with the chosen algorithm, zeros first, ping-ponging
//! between two buffers. Key-value pairs travel interleaved
//! (shaders/compaction/sort.wgsl). The CUDA twin is `src/compaction/cuda/sort.rs`.

use crate::compaction::wgpu::runtime::{NO_WORD, Params, SORT};
use crate::compaction::wgpu::{Bind, Io, Plan, Step, WgpuBackend, WgpuBuffer, groups_for};
use crate::compaction::{Algorithm, KeepMode, Rejected, Result, SortKey};
use crate::wgpu_runtime::Timing;

/// Invocations per workgroup of interleave and deinterleave.
const WG: u32 = 256;

pub fn radix_sort<K: SortKey>(
    b: &WgpuBackend,
    algorithm: Algorithm,
    keys: &mut WgpuBuffer<K>,
    values: Option<&mut WgpuBuffer<u32>>,
) -> Result<Vec<Timing>> {
    let n = keys.len();
    if n == 0 {
        return Ok(vec![b.run(Plan::default())?]);
    }
    let key_bytes = std::mem::size_of::<K>() as u64;
    let elem_bytes = if values.is_some() { 2 * key_bytes } else { key_bytes };
    let bytes = n * elem_bytes;
    let (mut a, mut c) = (b.raw_buffer("the sort's elements", bytes)?, b.raw_buffer("the sort's elements", bytes)?);
    let count = b.raw_buffer("a split's count", 8)?;
    let values = values.map(|v| v.raw().clone());
    let mut plan = Plan::default();
    carry(b, Way::In, (n as u32, key_bytes, elem_bytes), keys.raw(), values.as_ref(), &a, &mut plan)?;
    // One submission per split: each split's scratch is freed before the
    // next one allocates its own (a sort of 2^24 pairs would otherwise hold
    // every split's at once). The splits' stages all run under one name,
    // "split", as on CUDA; each keeps its pass, so the order of their
    // dispatches, clears and copies holds.
    let mut timings = Vec::new();
    for bit in 0..K::BITS {
        let mut splits = Plan::default();
        let rule = b.bit_rule(elem_bytes as usize, bit);
        let io = Io {
            cap: n as u32,
            len_word: NO_WORD,
            count_word: 0,
            input: a.clone(),
            output: c.clone(),
            words: count.clone(),
        };
        b.compact_raw(algorithm, (true, Rejected::InOrder), &rule, &io, &mut splits)?;
        std::mem::swap(&mut a, &mut c);
        plan.steps.extend(splits.steps.into_iter().map(|s| match s {
            Step::Stage(_) => Step::Stage("split"),
            other => other,
        }));
        if bit + 1 < K::BITS {
            timings.push(b.run(std::mem::take(&mut plan))?);
        }
    }
    carry(b, Way::Out, (n as u32, key_bytes, elem_bytes), keys.raw(), values.as_ref(), &a, &mut plan)?;
    timings.push(b.run(plan)?);
    Ok(timings)
}

/// Which way the keys (and values) travel: into the sort's scratch or back out.
#[derive(Clone, Copy)]
enum Way {
    In,
    Out,
}

/// Stage "interleave" / "deinterleave" with values, else "copy": moves the n
/// keys (and values) between the caller's buffers and `scratch` (n elements
/// of `elem_bytes`). A dispatch rather than a buffer copy, so that the
/// stage is timed like the others.
fn carry(
    b: &WgpuBackend,
    way: Way,
    (n, key_bytes, elem_bytes): (u32, u64, u64),
    keys: &::wgpu::Buffer,
    values: Option<&::wgpu::Buffer>,
    scratch: &::wgpu::Buffer,
    plan: &mut Plan,
) -> Result<()> {
    let v = b.variant(elem_bytes as usize, KeepMode::Flags, None);
    let (entry, bind) = match way {
        Way::In => ("interleave", Bind { dst: Some(scratch.clone()), ..Default::default() }),
        Way::Out => ("deinterleave", Bind { src: Some(scratch.clone()), ..Default::default() }),
    };
    let stage = if values.is_some() { entry } else { "copy" };
    let bind = Bind { state: Some(keys.clone()), aux: values.cloned(), ..bind };
    let p = b.pipeline(&SORT, &v, entry, &[("WG", WG)])?;
    let params = Params {
        cap: n,
        len_word: NO_WORD,
        b: (key_bytes / 4) as u32,
        c: values.is_some() as u32,
        ..Default::default()
    };
    plan.stage(stage).dispatch(p, params, bind, groups_for(n, WG));
    Ok(())
}
