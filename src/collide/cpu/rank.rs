//! The CPU engine as one rank of a split collider (`collide::split`): it
//! takes a new set of bodies each frame (those it owns, then ghosts), hands
//! out what its ghosts' owners need, and takes their values in.

use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use super::{CpuCollide, Shared};
use crate::collide::layout::{Body, Contact, LEAF, Node, World, unpack};
use crate::collide::physics::{self, colour::NO_PICK};
use crate::collide::{CollideResult, order};

/// What a rank keeps of a frame ([`CpuCollide::kept`]), summed over ranks.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Kept {
    pub candidates: u64,
    pub crossing_candidates: u64,
    pub contacts: u64,
    pub crossing_contacts: u64,
}

impl std::ops::AddAssign for Kept {
    fn add_assign(&mut self, o: Kept) {
        self.candidates += o.candidates;
        self.crossing_candidates += o.crossing_candidates;
        self.contacts += o.contacts;
        self.crossing_contacts += o.crossing_contacts;
    }
}

/// Values of [`Shared`] for a list of bodies, in its order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Values {
    Bodies(Vec<Body>),
    /// Each body's pick and colours so far.
    Picks(Vec<(u64, u32)>),
    /// Counts of contact points (overflow or bouncing).
    Counts(Vec<u32>),
}

impl CpuCollide {
    /// An engine for a rank: it holds nothing until [`CpuCollide::load`].
    pub(crate) fn rank(world: World) -> CollideResult<CpuCollide> {
        let mut e = CpuCollide::new(world, &[Body::default()])?;
        e.lockstep = true;
        Ok(e)
    }

    /// The frame's bodies (at least one): those whose Morton codes lie in
    /// `owned`, then their ghosts, each keeping its spawn number; `previous`
    /// holds last frame's contacts of the bodies owned (named by spawn
    /// number, any order): the warm start finds them.
    pub(crate) fn load(&mut self, bodies: Vec<Body>, owned: Range<u32>, previous: &[Contact]) {
        let n = bodies.len();
        debug_assert!(n > 0, "a rank without bodies sits the frame out");
        // Every buffer below is written by its stage before it is read.
        self.keys.resize(n, 0);
        self.ids.resize(n, 0);
        self.boxes.resize(n, ([0.0; 3], [0.0; 3]));
        self.places.resize(n, 0);
        self.nodes.resize(2 * n - 1, Node { min: [0.0; 3], left: 0, max: [0.0; 3], right: LEAF });
        self.parents.resize_with(2 * n - 1, || AtomicU32::new(u32::MAX));
        self.arrivals.resize_with(n - 1, Default::default);
        self.bounds.resize_with(n - 1, Default::default);
        self.ends_of.resize(n, 0);
        self.counts.resize(n, 0);
        self.picks.resize(n, NO_PICK);
        self.used.resize(n, 0);
        self.bouncing.resize(n, 0);
        self.ghost.resize(n, false);
        self.previous = order::contacts_by_place(previous, &bodies);
        self.bodies = bodies;
        self.owned = owned;
        self.contacts.clear();
    }

    /// The bodies in the engine's order (owned and ghosts).
    pub(crate) fn held(&self) -> &[Body] {
        &self.bodies
    }

    /// The candidates and contacts this rank keeps (those of its own
    /// bodies), and of them those that join one of its bodies to a ghost:
    /// the rank that owns the ghost keeps them too.
    pub(crate) fn kept(&self) -> Kept {
        let ghost = |i: u32| self.ghost[i as usize];
        let (mut candidates, mut crossing_candidates) = (0, 0);
        for p in &self.candidates[..self.stored()] {
            let (a, b) = unpack(p.load(Relaxed));
            let ghosts = ghost(a) as u64 + ghost(b) as u64;
            candidates += (ghosts < 2) as u64;
            crossing_candidates += (ghosts == 1) as u64;
        }
        let crossing_contacts =
            self.contacts.iter().filter(|c| !physics::is_wall(c.b) && ghost(c.a) != ghost(c.b)).count() as u64;
        Kept { candidates, crossing_candidates, contacts: self.contacts.len() as u64, crossing_contacts }
    }

    /// Whether the body at `place` is a ghost (after the frame's `codes`).
    pub(crate) fn is_ghost(&self, place: usize) -> bool {
        self.ghost[place]
    }

    /// The frame's contacts after its passes, named by spawn number: what
    /// the next frame's warm start reads.
    pub(crate) fn previous_by_id(&self) -> Vec<Contact> {
        order::contacts_by_id(self.previous.clone(), &self.bodies)
    }

    /// `what` of the bodies at `places`.
    pub(crate) fn values(&self, what: Shared, places: &[u32]) -> Values {
        let at = places.iter().map(|&p| p as usize);
        match what {
            Shared::Bodies => Values::Bodies(at.map(|p| self.bodies[p]).collect()),
            Shared::Picks => Values::Picks(at.map(|p| (self.picks[p], self.used[p])).collect()),
            Shared::Counts => Values::Counts(at.map(|p| self.counts[p]).collect()),
            Shared::Bouncing => Values::Counts(at.map(|p| self.bouncing[p]).collect()),
        }
    }

    /// Sets `what` of the bodies at `places` (a ghost takes its owner's).
    pub(crate) fn take(&mut self, what: Shared, places: &[u32], values: &Values) {
        let at = places.iter().map(|&p| p as usize);
        match (what, values) {
            (Shared::Bodies, Values::Bodies(v)) => at.zip(v).for_each(|(p, b)| self.bodies[p] = *b),
            (Shared::Picks, Values::Picks(v)) => at.zip(v).for_each(|(p, &(pick, used))| {
                self.picks[p] = pick;
                self.used[p] = used;
            }),
            (Shared::Counts, Values::Counts(v)) => at.zip(v).for_each(|(p, &k)| self.counts[p] = k),
            (Shared::Bouncing, Values::Counts(v)) => at.zip(v).for_each(|(p, &k)| self.bouncing[p] = k),
            (what, _) => debug_assert!(false, "values of another kind than {what:?}"),
        }
    }
}
