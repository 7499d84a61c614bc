//! What the two GPU colliders (`cuda.rs`, `wgpu/`) hold alike on the host:
//! the bodies and the hierarchy built over them, in the backend's own
//! buffers, and the counts a frame leaves in its words. Their kernels,
//! shaders and launches stay twins; what both allocated, checked and read
//! back the same way is written here once.

use crate::collide::layout::{Body, Node, World, numbered};
use crate::collide::{CONTACTS_PER_CANDIDATE, CollideError, CollideResult, order, words};
use crate::compaction::Backend;

/// The number of bodies a GPU engine takes: at least one, at most `max`
/// (what the backend's node indices hold).
pub(crate) fn body_count(bodies: &[Body], max: u64) -> CollideResult<u64> {
    let n = bodies.len() as u64;
    if n == 0 {
        return Err(CollideError::Settings("the collision engine needs at least one body".into()));
    }
    if n > max {
        return Err(CollideError::Settings(format!("{n} bodies: this engine's node indices take at most {max}")));
    }
    Ok(n)
}

/// The bodies in their world and the LBVH over them, in buffers of `B`,
/// sized once by the body count.
pub(crate) struct BodyTree<B: Backend> {
    pub world: World,
    pub n: u32,
    pub bodies: B::Buffer<Body>,
    /// The bodies' Morton codes and the ids sorted with them.
    pub keys: B::Buffer<u32>,
    pub ids: B::Buffer<u32>,
    /// `reorder`'s room: the bodies in their new order, and each body's new place.
    pub moved: B::Buffer<Body>,
    pub places: B::Buffer<u32>,
    /// n - 1 internal nodes, then n leaves.
    pub nodes: B::Buffer<Node>,
    /// Every node's parent (the root's: u32::MAX).
    pub parent: B::Buffer<u32>,
}

impl<B: Backend> BodyTree<B> {
    /// Uploads `bodies`, numbered in their order (checked by [`body_count`] against `max`).
    pub fn new(b: &B, world: World, bodies: &[Body], max: u64) -> CollideResult<Self> {
        let n = body_count(bodies, max)?;
        Ok(BodyTree {
            world,
            n: n as u32,
            bodies: b.upload(&numbered(bodies))?,
            keys: b.alloc(n)?,
            ids: b.alloc(n)?,
            moved: b.alloc(n)?,
            places: b.alloc(n)?,
            nodes: b.alloc(2 * n - 1)?,
            parent: b.alloc(2 * n - 1)?,
        })
    }

    /// Replaces the bodies by as many, numbered in their order: every buffer and the tree are sized by that count.
    pub fn set_bodies(&mut self, b: &B, bodies: &[Body]) -> CollideResult<()> {
        if bodies.len() as u64 != self.n as u64 {
            return Err(CollideError::Settings(format!(
                "set_bodies: {} bodies for an engine of {}",
                bodies.len(),
                self.n
            )));
        }
        self.bodies = b.upload(&numbered(bodies))?;
        Ok(())
    }

    /// The bodies as the engine keeps them (Morton order): what the
    /// read-backs of contacts and candidates name their bodies by.
    pub fn in_engine(&self, b: &B) -> CollideResult<Vec<Body>> {
        Ok(b.download(&self.bodies)?)
    }

    /// The bodies by spawn number (`Engine::bodies`).
    pub fn bodies_by_id(&self, b: &B) -> CollideResult<Vec<Body>> {
        Ok(order::bodies_by_id(&self.in_engine(b)?))
    }

    /// The hierarchy, its leaves naming their bodies by spawn number (`Engine::nodes`).
    pub fn nodes_by_id(&self, b: &B) -> CollideResult<Vec<Node>> {
        Ok(order::nodes_by_id(b.download(&self.nodes)?, &self.in_engine(b)?))
    }
}

/// The candidate and contact lists' size, and what the last frame put in
/// them (read from its words once, at its end).
pub(crate) struct Lists {
    /// Candidate slots; the contact list has `CONTACTS_PER_CANDIDATE` per slot.
    pub capacity: u64,
    /// Candidates found, which may pass the capacity.
    pub found: u64,
    /// Contacts found.
    pub contacts: u64,
}

impl Lists {
    /// Candidate (and contact) slots for `n` bodies before any frame asks for more.
    pub fn new(n: u64) -> Self {
        Lists { capacity: (8 * n).max(1024), found: 0, contacts: 0 }
    }

    /// Lists of `capacity` candidate slots, empty: their contents are lost.
    pub fn resized(capacity: u64) -> Self {
        Lists { capacity, found: 0, contacts: 0 }
    }

    /// The contact list's length in contacts.
    pub fn contact_capacity(&self) -> u64 {
        self.capacity * CONTACTS_PER_CANDIDATE
    }

    /// The last frame's candidates in the list: those found, up to the capacity.
    pub fn stored_candidates(&self) -> u64 {
        self.found.min(self.capacity)
    }

    /// The last frame's contacts in the list.
    pub fn stored_contacts(&self) -> u64 {
        self.contacts.min(self.contact_capacity())
    }

    /// Takes the frame's counts from its words `w`.
    pub fn frame_ended(&mut self, w: &[u64]) {
        self.found = w.get(words::CANDIDATES as usize).copied().unwrap_or(0);
        self.contacts = w.get(words::CONTACTS as usize).copied().unwrap_or(0);
    }
}
