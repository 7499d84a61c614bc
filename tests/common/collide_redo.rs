//! The collider's redone frames, one test body per property for every
//! engine (tests/collide.rs runs them on the CPU, tests/cuda.rs on a GPU):
//! a frame that ran short of levels, frontier slots or candidate slots is
//! redone from its start and finds what the normal frame finds; one whose
//! frontier would pass `--max-frontier` is refused and moves no body.

use reap::collide::{
    Body, CollideError, CollideSettings, Compaction, Contact, Engine, FrameStats, Frontier, SortMethod, frame,
};
use reap::compaction::Algorithm;

fn bits<T: bytemuck::Pod>(v: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// One frame from `state`: its stats, candidates, contacts and the bodies it left.
fn run<E: Engine>(
    e: &mut E,
    s: &CollideSettings,
    f: &mut Frontier<E>,
    state: &[Body],
) -> (FrameStats, Vec<u64>, Vec<Contact>, Vec<Body>) {
    e.set_bodies(state).expect("set_bodies");
    let st = frame(e, s, f, 0).unwrap_or_else(|err| panic!("{}: {err}", s.compact_pairs.name()));
    (st, e.candidate_pairs().expect("candidates"), e.contact_list().expect("contacts"), e.bodies().expect("bodies"))
}

/// A bound of two levels, a frontier of eight slots and a candidate list of
/// one slot each make the frame run more than once, and it ends as the
/// normal frame does: same candidates, contacts, level sizes and motion.
pub fn short_frames_are_redone_and_find_the_same<E: Engine>(e: &mut E, s: &CollideSettings, state: &[Body]) {
    let what = s.compact_pairs.name();
    let mut f = Frontier::new(e).expect("frontier");
    run(e, s, &mut f, state); // warm: the bound and the capacity follow this state
    let (want, want_cands, want_contacts, want_after) = run(e, s, &mut f, state);
    assert_eq!(f.attempts(), 1, "{what}: a warm frame ran more than once");
    assert!(want.contacts > 0, "{what}: the state has no contact, nothing to redo");
    type Shorten<E> = fn(&mut E, &mut Frontier<E>);
    let cases: [(&str, Shorten<E>); 3] = [
        ("a bound of two levels", |_, f| f.set_bound(2)),
        ("a frontier of eight slots", |e, f| f.set_capacity(e, 8).expect("a small frontier")),
        ("a candidate list of one slot", |e, _| e.set_candidate_capacity(1).expect("a small list")),
    ];
    for (case, shorten) in cases {
        shorten(e, &mut f);
        let (got, cands, contacts, after) = run(e, s, &mut f, state);
        assert!(f.attempts() > 1, "{what}, {case}: the frame was not redone");
        assert!(cands == want_cands, "{what}, {case}: other candidates");
        assert!(bits(&contacts) == bits(&want_contacts), "{what}, {case}: other contacts");
        assert!(bits(&after) == bits(&want_after), "{what}, {case}: the bodies moved differently");
        assert_eq!((got.candidates, got.contacts), (want.candidates, want.contacts), "{what}, {case}: counts");
        assert_eq!(got.live, want.live, "{what}, {case}: live pairs per level");
        assert_eq!(got.frontier, want.frontier, "{what}, {case}: frontier sizes");
        assert_eq!(got.pairs_tested, want.pairs_tested, "{what}, {case}: pairs tested");
    }
}

/// A frontier that would pass `max_frontier` is the clear error, the
/// frontier never grew past the limit, and no body moved.
pub fn an_overflowing_frontier_is_refused_and_moves_no_body<E: Engine>(e: &mut E, state: &[Body]) {
    let sites = [
        (Compaction::None, 64),
        (Compaction::With(Algorithm::Lookback), 4),
        // Fused on every backend: a level's kept total past the limit.
        (Compaction::With(Algorithm::Atomic), 4),
    ];
    for (compact_pairs, max_frontier) in sites {
        let s = CollideSettings {
            compact_pairs,
            sort: SortMethod::Fast,
            substeps: 2,
            iterations: 2,
            max_frontier,
            max_candidates: reap::collide::DEFAULT_MAX_CANDIDATES,
            fusion: Default::default(),
            order: Default::default(),
        };
        let what = compact_pairs.name();
        e.set_bodies(state).expect("set_bodies");
        let mut f = Frontier::new(e).expect("frontier");
        match frame(e, &s, &mut f, 0) {
            Err(CollideError::FrontierTooLarge { items, level, .. }) => {
                assert!(items > max_frontier, "{what}: {items} slots needed, the limit is {max_frontier}");
                assert!(level > 0, "{what}: level 0 holds one pair");
            }
            other => panic!("{what}: a frontier limit of {max_frontier} slots gave {:?}", other.map(|st| st.live)),
        }
        assert!(f.capacity() <= max_frontier, "{what}: the frontier grew to {} slots", f.capacity());
        let after = e.bodies().expect("bodies");
        assert!(bits(&after) == bits(state), "{what}: a refused frame moved the bodies");
    }
}
