//! One collision frame from a given state, and how two engines' results are
//! compared: shared by the CUDA and wgpu suites (tests/cuda/collide.rs,
//! tests/collide_wgpu.rs), which check each GPU engine against the CPU's.

use reap::collide::layout::{Body, Contact, Node};
use reap::collide::{CollideSettings, Compaction, Engine, FrameStats, Frontier, SortMethod, frame};

/// The GPU suites' settings: two substeps of two passes, so that both of
/// the solver's loops run; the frontier bounded by `max_frontier`.
pub fn settings(compact_pairs: Compaction, sort: SortMethod, max_frontier: u64) -> CollideSettings {
    CollideSettings {
        compact_pairs,
        sort,
        substeps: 2,
        iterations: 2,
        max_frontier,
        max_candidates: reap::collide::DEFAULT_MAX_CANDIDATES,
        fusion: Default::default(),
        order: Default::default(),
    }
}

pub fn bits<T: bytemuck::Pod>(v: &[T]) -> &[u32] {
    bytemuck::cast_slice(v)
}

/// The first record (body or contact) whose bits differ, both sides shown.
pub fn first_difference<T: bytemuck::Pod + std::fmt::Debug>(a: &[T], b: &[T]) -> String {
    let differs = |(x, y): (&T, &T)| bytemuck::bytes_of(x) != bytemuck::bytes_of(y);
    match a.iter().zip(b).position(differs) {
        Some(i) => format!("record {i}: {:?} vs {:?}", a[i], b[i]),
        None => format!("{} vs {} records", a.len(), b.len()),
    }
}

/// One frame from `state`: what it found and where it left the bodies.
pub struct Outcome {
    pub stats: FrameStats,
    pub candidates: Vec<u64>,
    pub contacts: Vec<Contact>,
    pub nodes: Vec<Node>,
    pub after: Vec<Body>,
}

pub fn one_frame<E: Engine>(e: &mut E, s: &CollideSettings, state: &[Body]) -> Outcome {
    e.set_bodies(state).expect("set_bodies");
    let mut f = Frontier::new(e).expect("frontier");
    let stats =
        frame(e, s, &mut f, 0).unwrap_or_else(|err| panic!("{} {}: {err}", s.compact_pairs.name(), s.sort.name()));
    Outcome {
        stats,
        candidates: e.candidate_pairs().expect("candidates"),
        contacts: e.contact_list().expect("contacts"),
        nodes: e.nodes().expect("nodes"),
        after: e.bodies().expect("bodies"),
    }
}
