//! Graph colouring of the contacts (issue 46, item 3): the solver's passes
//! go colour by colour, and within a colour no movable body is in two
//! manifolds, so each manifold updates its bodies directly (Gauss-Seidel
//! between colours, no mass split, no atomics). A contact graph too dense for
//! `World::colours` leaves the rest in the overflow, which the Jacobi pass
//! with the split solves as before.
//!
//! A manifold is a pair's points, or all of a body's wall points (walls never
//! move, so those points share only the body); the narrow phase appends each
//! together, so a manifold is a run of the contact list. Immovable bodies
//! (walls, the ramp) are never written and constrain nothing.
//!
//! The colouring is Jones and Plassmann's, in rounds: each movable body picks
//! its highest-ranked manifold not yet coloured (the rank is a hash of the
//! pair's spawn numbers, so the order has no spatial drift; `outranks_at`
//! breaks ties); a manifold that both its bodies picked takes the lowest
//! colour neither body has yet. Every step depends on the set of contacts
//! and the bodies' spawn numbers, not on their order in the list or in
//! memory, so the colours are the same on every backend and run, and in
//! Morton order as in spawn order (`crate::collide::BodyOrder`).
//! kernels/collide/colour.cuh and shaders/collide/colour.wgsl repeat it.

use super::is_wall;
use crate::collide::layout::{Body, Contact};

/// `Contact::b` of a body's manifold of wall points.
pub const WALLS: u32 = super::WALL;
/// A contact left to the Jacobi pass (after colouring).
pub const OVERFLOW: u32 = u32::MAX;
/// During colouring: a manifold's first point, not yet coloured.
pub const UNCOLOURED: u32 = u32::MAX - 1;
/// During colouring: a later point of a manifold not yet coloured.
pub const FOLLOWER: u32 = u32::MAX - 2;
/// The most colours: a body's colours are the bits of a u32.
pub const MAX_COLOURS: u32 = 24;
/// A body that picked no manifold this round.
pub const NO_PICK: u64 = u64::MAX;

/// The manifold of contact `c`, as (a, b) with every wall `WALLS`.
pub fn manifold(c: &Contact) -> (u32, u32) {
    (c.a, if is_wall(c.b) { WALLS } else { c.b })
}

/// Whether a manifold's side `body` (a body id or `WALLS`) never moves: it
/// constrains no colour.
pub fn is_wall_or_immovable(body: u32, bodies: &[Body]) -> bool {
    is_wall(body) || bodies[body as usize].inv_mass <= 0.0
}

/// Manifold `m` (engine places) named by its bodies' spawn numbers
/// ([`Body::id`]; `WALLS` stays): what ranks it.
pub fn named(m: (u32, u32), bodies: &[Body]) -> (u32, u32) {
    (bodies[m.0 as usize].id, if m.1 == WALLS { WALLS } else { bodies[m.1 as usize].id })
}

/// A manifold packed for a body's pick.
pub fn pick(m: (u32, u32)) -> u64 {
    ((m.0 as u64) << 32) | m.1 as u64
}

/// Whether contact `i` starts its manifold's run.
pub fn starts_run(contacts: &[Contact], i: usize) -> bool {
    i == 0 || manifold(&contacts[i - 1]) != manifold(&contacts[i])
}

/// A manifold's rank: a hash of its pair (spawn numbers, [`named`]), which spreads the colouring's
/// order over the scene (ranking by id would colour along the spawn order,
/// one chain at a time).
pub fn rank(m: (u32, u32)) -> u32 {
    let mut h = m.0.wrapping_mul(0x9e37_79b1) ^ m.1.wrapping_mul(0x85eb_ca77).wrapping_add(0x27d4_eb2f);
    h ^= h >> 16;
    h = h.wrapping_mul(0x7feb_352d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846c_a68b);
    h ^ (h >> 16)
}

/// The side of manifold `m` that is not `body`.
pub fn other(m: (u32, u32), body: u32) -> u32 {
    if m.0 == body { m.1 } else { m.0 }
}

/// Whether manifold `x` ranks above `y` at `body`, a side of both (all
/// named by spawn numbers, [`named`]): by rank,
/// ties broken by the other side, which is unique among a body's manifolds.
/// (Orders that differ between bodies still always leave a winner: of the
/// top-ranked manifolds, the one between the highest body and its highest
/// neighbour among them is both its bodies' pick. The wgpu engine takes the
/// pick with two atomic maxima: the rank, then the other side.)
pub fn outranks_at(body: u32, x: (u32, u32), y: (u32, u32)) -> bool {
    (rank(x), other(x, body)) > (rank(y), other(y, body))
}

/// The lowest colour in neither body's `used` bits, or `OVERFLOW` when the
/// first `colours` are all taken.
pub fn first_free(used: u32, colours: u32) -> u32 {
    let c = (!used).trailing_zeros();
    if c < colours { c } else { OVERFLOW }
}

/// Rounds of the colouring for `colours` colours: each round colours at
/// least the highest-ranked manifold left, in practice a large share; what
/// is left after these goes to the overflow.
pub const fn rounds(colours: u32) -> u32 {
    2 * colours
}
