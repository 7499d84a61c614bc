//! Phase 3 of Billeter's compaction (`move`, seed 000 Listing 4): compactSIMD
//! per lane group, by a prefix sum over the lane flags (Listing 5) or by the
//! ballot word phase 1 stored (Listing 6), then the output mode that writes
//! the group: scattered, staged, buffered (Listing 7) or selective (§4.2).

use rayon::prelude::*;

use super::{BilleterTuning, Layout, MAX_LANES, hillis_steele};
use crate::compaction::OutputMode;
use crate::compaction::cpu::{KeepIndex, Scatter};

/// One lane group after compactSIMD: which lanes are valid, and for each lane
/// how many valid lanes precede it (its target lane s' when valid).
pub(super) trait Group {
    fn valid(&self, s: usize) -> bool;
    fn below(&self, s: usize) -> usize;
    fn num_valid(&self) -> usize;
}

/// Listing 5: validity flags and their prefix sum.
pub(super) struct PrefixGroup {
    flags: [u32; MAX_LANES],
    /// Inclusive prefix sum of `flags`.
    sums: [u32; MAX_LANES],
    lanes: usize,
}

impl PrefixGroup {
    pub(super) fn new(l: &Layout, g: usize, keep: &impl KeepIndex) -> Self {
        let i = g * l.lanes;
        let mut flags = [0u32; MAX_LANES];
        for (s, f) in flags[..l.width(g)].iter_mut().enumerate() {
            *f = keep(i + s) as u32;
        }
        let mut sums = flags;
        hillis_steele(&mut sums[..l.lanes], |a, b| a + b);
        PrefixGroup { flags, sums, lanes: l.lanes }
    }
}

impl Group for PrefixGroup {
    fn valid(&self, s: usize) -> bool {
        self.flags[s] != 0
    }
    fn below(&self, s: usize) -> usize {
        (self.sums[s] - self.flags[s]) as usize
    }
    fn num_valid(&self) -> usize {
        self.sums[self.lanes - 1] as usize
    }
}

/// Listing 6: the group's ballot word, stored by phase 1 and broadcast here.
pub(super) struct PopcGroup(pub(super) u64);

impl Group for PopcGroup {
    fn valid(&self, s: usize) -> bool {
        self.0 >> s & 1 != 0
    }
    fn below(&self, s: usize) -> usize {
        // s < 64, so the shift cannot overflow.
        (self.0 & ((1u64 << s) - 1)).count_ones() as usize
    }
    fn num_valid(&self) -> usize {
        self.0.count_ones() as usize
    }
}

/// Phase 3's shared inputs.
pub(super) struct Move<'a, T> {
    pub(super) l: &'a Layout,
    pub(super) t: &'a BilleterTuning,
    pub(super) mode: OutputMode,
    pub(super) input: &'a [T],
    pub(super) out: Scatter<T>,
    pub(super) offsets: &'a [usize],
    pub(super) counts: &'a [usize],
    pub(super) kept: usize,
    pub(super) split: bool,
}

impl<T: Copy + Send + Sync> Move<'_, T> {
    /// Listing 4 on every processor. Processor p owns output slots
    /// `[offsets[p], offsets[p] + counts[p])` for its kept elements and, in a
    /// split, `[kept + start_p - offsets[p], ...)` for its rejected ones (the
    /// rejected elements before its range). Both come from the exclusive scan
    /// of phase 2, so no two processors, nor the two streams, share a slot.
    pub(super) fn run<G: Group>(&self, group: impl Fn(usize) -> G + Sync) {
        let l = self.l;
        (0..l.procs).into_par_iter().for_each(|p| {
            let groups = l.groups(p);
            let range = l.elements(groups.clone());
            let len = range.len();
            let fill = self.input[range.start];
            let kept_at = self.offsets[p];
            let mut kept = Writer::new(self.mode, self.t, kept_at, self.counts[p], len, fill, l.lanes);
            let mut rejected = self.split.then(|| {
                let at = self.kept + range.start - kept_at;
                Writer::new(self.mode, self.t, at, len - self.counts[p], len, fill, l.lanes)
            });
            for g in groups {
                let i = g * l.lanes;
                let a = &self.input[i..i + l.width(g)];
                let grp = group(g);
                kept.put::<true, G>(self.out, a, &grp);
                if let Some(r) = &mut rejected {
                    r.put::<false, G>(self.out, a, &grp);
                }
            }
            kept.finish(self.out);
            if let Some(r) = &mut rejected {
                r.finish(self.out);
            }
        });
    }
}

/// Writes one processor's stream (kept or rejected) from `j` onwards. Every
/// slot it writes lies in that stream's slice of the output (see `Move::run`).
enum Writer<T> {
    /// Each lane writes straight to its global slot (§4.2).
    Scattered { j: usize },
    /// Compacted into `stage`, then its numValid elements copied out (§4.2).
    Staged { j: usize, stage: Vec<T> },
    /// Listing 7: unbuffered writes until `j` is a multiple of S, then only
    /// whole S-element writes at aligned `j`, the tail flushed at the end.
    Buffered { j: usize, buffered: usize, buffer: Vec<T>, aligning: bool },
}

impl<T: Copy> Writer<T> {
    /// `count` is the stream's length, `len` the processor's range length.
    fn new(mode: OutputMode, t: &BilleterTuning, j: usize, count: usize, len: usize, fill: T, lanes: usize) -> Self {
        match mode {
            OutputMode::Scattered => Writer::Scattered { j },
            OutputMode::Staged => Writer::Staged { j, stage: vec![fill; lanes] },
            OutputMode::Buffered => Writer::Buffered { j, buffered: 0, buffer: vec![fill; lanes], aligning: true },
            OutputMode::Selective => {
                if count as f64 >= t.staged_ratio * len as f64 {
                    Writer::Staged { j, stage: vec![fill; lanes] }
                } else {
                    Writer::Scattered { j }
                }
            }
        }
    }

    /// One group of lanes `a`; `KEPT` picks the valid lanes, else the rejected.
    fn put<const KEPT: bool, G: Group>(&mut self, out: Scatter<T>, a: &[T], grp: &G) {
        let member = |s: usize| grp.valid(s) == KEPT;
        let dest = |s: usize| if KEPT { grp.below(s) } else { s - grp.below(s) };
        let num = if KEPT { grp.num_valid() } else { a.len() - grp.num_valid() };
        match self {
            Writer::Scattered { j } => {
                for (s, &e) in a.iter().enumerate() {
                    if member(s) {
                        // SAFETY: j + s' is in this stream's slice (Move::run).
                        unsafe { out.write(*j + dest(s), e) }
                    }
                }
                *j += num;
            }
            Writer::Staged { j, stage } => {
                for (s, &e) in a.iter().enumerate() {
                    if member(s) {
                        stage[dest(s)] = e;
                    }
                }
                for (k, &e) in stage[..num].iter().enumerate() {
                    // SAFETY: j + k, k < numValid, is in this stream's slice.
                    unsafe { out.write(*j + k, e) }
                }
                *j += num;
            }
            Writer::Buffered { j, buffered, buffer, aligning } => {
                let lanes = buffer.len();
                if *aligning {
                    // alignOutput: the first `need` elements go straight out,
                    // the rest of the group starts the buffer.
                    let need = j.next_multiple_of(lanes) - *j;
                    if need > 0 {
                        for (s, &e) in a.iter().enumerate() {
                            if member(s) {
                                let d = dest(s);
                                if d < need {
                                    // SAFETY: j + d < j + numValid, in this stream's slice.
                                    unsafe { out.write(*j + d, e) }
                                } else {
                                    buffer[d - need] = e;
                                }
                            }
                        }
                        if num >= need {
                            *j += need;
                            *buffered = num - need;
                            *aligning = false;
                        } else {
                            *j += num;
                        }
                        return;
                    }
                    *aligning = false;
                }
                // Listing 7 lines 8-16. Line 11 reads `>`; it must be `>=`, or
                // a buffer filled exactly to S would be dropped by line 16.
                for (s, &e) in a.iter().enumerate() {
                    if member(s) && dest(s) + *buffered < lanes {
                        buffer[dest(s) + *buffered] = e;
                    }
                }
                if num + *buffered >= lanes {
                    debug_assert_eq!(*j % lanes, 0, "buffered flush must be aligned");
                    for (s, &e) in buffer.iter().enumerate() {
                        // SAFETY: a full buffer holds S elements of this stream,
                        // so [j, j + S) is in its slice.
                        unsafe { out.write(*j + s, e) }
                    }
                    *j += lanes;
                }
                for (s, &e) in a.iter().enumerate() {
                    if member(s) && dest(s) + *buffered >= lanes {
                        buffer[dest(s) + *buffered - lanes] = e;
                    }
                }
                *buffered = (*buffered + num) % lanes;
            }
        }
    }

    /// Listing 7 lines 17-19: the partial buffer left at the end.
    fn finish(&mut self, out: Scatter<T>) {
        if let Writer::Buffered { j, buffered, buffer, .. } = self {
            for (s, &e) in buffer[..*buffered].iter().enumerate() {
                // SAFETY: the buffered tail is the last elements of this stream.
                unsafe { out.write(*j + s, e) }
            }
        }
    }
}
