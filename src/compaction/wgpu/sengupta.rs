//! Host side of shaders/compaction/sengupta.wgsl: the work-efficient,
//! step-efficient hybrid scan of seed 002 §2.4 under Horn's compaction, as
//! 002 §4 runs it. The CUDA twin is `src/compaction/cuda/sengupta.rs`.
//!
//! Mark; reduce (002 Algorithm 3), one dispatch per level, each level kept,
//! until at most the degree of parallelism partial sums remain ("reduce");
//! Horn's scan over those, horn.wgsl's passes ("horn scan"); the down-sweep
//! (002 Algorithm 4), one dispatch per level back to an inclusive scan of all
//! n ("down-sweep"); then Horn's gather by dichotomic search (seed 003 §II,
//! horn.wgsl). The scan is O(n) work, the gather still O(n log n).

use smart_default::SmartDefault;

use crate::compaction::Result;
use crate::compaction::wgpu::horn::{self, Source};
use crate::compaction::wgpu::runtime::{NO_WORD, Params, SENGUPTA, Variant};
use crate::compaction::wgpu::{Bind, Io, KeepRule, Plan, WgpuBackend, groups_for};

/// Tuning of `sengupta` (WG in sengupta.wgsl and, for its Horn passes and
/// gather, in horn.wgsl).
#[derive(Clone, Debug, SmartDefault)]
pub struct SenguptaTuning {
    /// The reduce stops once at most this many partial sums remain; Horn's
    /// scan runs over them. 002 §4 found compaction fastest after about 10
    /// reduce steps at 2^20 elements, i.e. at 1024 partial sums; the default
    /// keeps that pass structure, the same as the CUDA and CPU twins'.
    /// Values below 1 count as 1 (reduce all the way, as Blelloch).
    #[default(1024)]
    pub degree_of_parallelism: u64,
    /// Invocations per workgroup (WG).
    #[default(256)]
    pub block: u32,
}

/// Exclusive scan, total to the count word: the hybrid scan of the input
/// shifted right by one slot, written straight into the output.
pub fn scan(b: &WgpuBackend, v: &Variant, io: &Io, plan: &mut Plan) -> Result<()> {
    horn::check_scan(v)?;
    let x = Source { buffer: &io.input, shifted: true };
    hybrid_scan(b, v, io, x, &io.output, true, plan)
}

/// Select, or with `split` partition: kept elements first, then the
/// rejected ones, both in input order.
pub fn compact(b: &WgpuBackend, rule: &KeepRule, io: &Io, split: bool, plan: &mut Plan) -> Result<()> {
    let block = b.tuning.sengupta.block.clamp(32, 1024);
    let words = io.cap as u64 * 4;
    let (flags, sums) = (b.raw_buffer("sengupta's flags", words)?, b.raw_buffer("sengupta's sums", words)?);
    horn::mark(b, block, rule, io, &flags, plan)?;
    let x = Source { buffer: &flags, shifted: false };
    hybrid_scan(b, &horn::count_variant(b), io, x, &sums, false, plan)?;
    plan.stage("dichotomic search");
    horn::gather(b, block, &horn::move_variant(b, rule), io, &sums, split, plan)
}

/// Records the hybrid scan (002 §2.4): the inclusive scan of `x` (n values,
/// capacity > 0) into `out` (n sums), as the paper's three stages. With
/// `total`, `x` is shifted and the exclusive scan's total goes to the count
/// word too.
///
/// Levels, scratch and dispatches are sized from the capacity; the shaders
/// skip the levels a counted call's n does not need. The last level n needs
/// lands in `top`, and Horn's scan runs over it, or over x itself when n
/// needs no level: with a host length the host knows which and records that
/// one; counted, it records both, and `sengupta_plan` gives each its length
/// on the device (0 for the one n does not use).
fn hybrid_scan(
    b: &WgpuBackend,
    sv: &Variant,
    io: &Io,
    x: Source<'_>,
    out: &::wgpu::Buffer,
    total: bool,
    plan: &mut Plan,
) -> Result<()> {
    let t = &b.tuning.sengupta;
    let block = t.block.clamp(32, 1024);
    let bytes = sv.elem_bytes as u64;
    // n <= cap < 2^32: a larger degree of parallelism means no level at all.
    let (p, cap) = (t.degree_of_parallelism.clamp(1, u32::MAX as u64) as u32, io.cap);
    // lens[d] is the length of the paper's a_{d+1} (for the capacity):
    // a_d[i] = a_{d-1}[2i] + a_{d-1}[2i + 1]; offsets[d] where it starts in `partial`.
    let (mut lens, mut offsets) = (Vec::new(), Vec::new());
    let (mut len, mut at) = (cap, 0u32);
    while len > p {
        len = len.div_ceil(2);
        lens.push(len);
        offsets.push(at);
        at += len;
    }
    // What Horn's scan covers: x itself (at most p values), or `top` (the
    // last level, at most p values and at most the first level's length).
    let direct = cap.min(p);
    let top = lens.first().map_or(0, |&l| l.min(p));
    let partial = b.raw_buffer("sengupta's levels", at as u64 * bytes)?;
    let top_in = b.raw_buffer("sengupta's top level", top as u64 * bytes)?;
    let top_scan = b.raw_buffer("sengupta's scanned top level", top as u64 * bytes)?;
    let tmp = b.raw_buffer("horn's second buffer", direct as u64 * bytes)?;
    // Which Horn scans run, over what (an Io for each: its capacity and length word).
    let counted = io.len_word != NO_WORD && !lens.is_empty();
    let plan_words = if counted { Some(b.raw_buffer("sengupta's plan", 16)?) } else { None };
    let (direct_io, top_io) = match (&plan_words, lens.last()) {
        (Some(w), _) => {
            let on = |cap, len_word| Io { cap, len_word, words: w.clone(), ..io.clone() };
            (Some(on(direct, 0)), Some(on(top, 2)))
        }
        // A host length needing no level, or a counted capacity that never does.
        (None, None) => (Some(io.clone()), None),
        (None, Some(&last)) => (None, Some(Io { cap: last, len_word: NO_WORD, ..io.clone() })),
    };
    // Every level's parameters: d, p, the shift of x, where level d - 1 and level d start.
    let level = |d: usize| Params {
        a: d as u32,
        b: p,
        c: x.shifted as u32,
        d: if d == 0 { 0 } else { offsets[d - 1] },
        e: offsets[d],
        ..io.params()
    };
    let bind = |top: &::wgpu::Buffer| Bind {
        src: Some(x.buffer.clone()),
        dst: Some(out.clone()),
        words: Some(io.words.clone()),
        state: Some(partial.clone()),
        aux: Some(top.clone()),
        ..Default::default()
    };

    plan.stage("reduce");
    if let Some(w) = &plan_words {
        let f = b.pipeline(&SENGUPTA, sv, "sengupta_plan", &[("WG", block)])?;
        let bind = Bind { words: Some(io.words.clone()), aux2: Some(w.clone()), ..Default::default() };
        plan.dispatch(f, Params { b: p, ..io.params() }, bind, 1);
    }
    let reduce = b.pipeline(&SENGUPTA, sv, "sengupta_reduce", &[("WG", block)])?;
    for (d, &len) in lens.iter().enumerate() {
        // Level d + 1 reads level d (x itself for d = 0) and writes itself, or `top` when it is n's last.
        plan.dispatch(reduce.clone(), level(d), bind(&top_in), groups_for(len, block));
    }

    plan.stage("horn scan");
    if let Some(e) = &direct_io {
        horn::hillis_steele(b, block, sv, e, x, out, &tmp, plan)?;
    }
    if let Some(e) = &top_io {
        horn::hillis_steele(b, block, sv, e, Source { buffer: &top_in, shifted: false }, &top_scan, &tmp, plan)?;
    }

    plan.stage("down-sweep");
    let down = b.pipeline(&SENGUPTA, sv, "sengupta_down_sweep", &[("WG", block)])?;
    // From the top down, level d (0 is x itself) reads the scanned level d + 1.
    for d in (0..lens.len()).rev() {
        let len = if d == 0 { cap } else { lens[d - 1] };
        plan.dispatch(down.clone(), level(d), bind(&top_scan), groups_for(len, block));
    }
    if total {
        horn::total(b, block, sv, io, plan)?;
    }
    Ok(())
}
