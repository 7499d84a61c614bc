//! Bodies in Morton order (issue 46, item 1). After the sort, an engine can
//! move its bodies into the order of their sorted codes
//! ([`crate::collide::Engine::reorder`]): bodies near in space are then near
//! in memory, so the solver's reads of a contact's two bodies, and the
//! threads of a warp, touch neighbouring lines instead of the whole array.
//!
//! A body keeps its spawn number in [`Body::id`]; a pair's contacts name the
//! lower number first ([`pair_by_id`]), so that a pair keeps its orientation
//! (normal, manifold points, warm start) however the bodies move in memory.
//! What an engine hands out (bodies, contacts, candidates, nodes) is in spawn
//! numbers: the functions below map the engine's order back.

use std::str::FromStr;

use super::layout::{Body, Contact, LEAF, Node, pack, unpack};
use super::physics::is_wall;
use super::{CollideError, CollideResult};

/// Where an engine keeps its bodies between frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BodyOrder {
    /// In the order of their sorted Morton codes, moved every frame.
    #[default]
    Morton,
    /// Where they were spawned, never moved (the order before issue 46).
    Spawn,
}

impl BodyOrder {
    pub const ALL: [BodyOrder; 2] = [BodyOrder::Morton, BodyOrder::Spawn];

    pub fn name(self) -> &'static str {
        match self {
            BodyOrder::Morton => "morton",
            BodyOrder::Spawn => "spawn",
        }
    }
}

impl FromStr for BodyOrder {
    type Err = CollideError;
    fn from_str(s: &str) -> CollideResult<Self> {
        BodyOrder::ALL.into_iter().find(|o| o.name() == s).ok_or_else(|| {
            CollideError::Settings(format!("--body-order: unknown order `{s}`; use `morton` or `spawn`"))
        })
    }
}

/// The bodies `a` and `b` of a candidate in the order their contacts name
/// them: the lower spawn number first.
pub fn pair_by_id(a: u32, b: u32, bodies: &[Body]) -> (u32, u32) {
    if bodies[b as usize].id < bodies[a as usize].id { (b, a) } else { (a, b) }
}

/// The engine's bodies (`in_engine`, any order) by spawn number.
pub fn bodies_by_id(in_engine: &[Body]) -> Vec<Body> {
    let mut out = vec![Body::default(); in_engine.len()];
    for b in in_engine {
        out[b.id as usize] = *b;
    }
    out
}

/// Contacts naming their bodies by spawn number (a wall stays a wall),
/// sorted by (a, b, slot).
pub fn contacts_by_id(mut contacts: Vec<Contact>, in_engine: &[Body]) -> Vec<Contact> {
    for c in &mut contacts {
        c.a = in_engine[c.a as usize].id;
        if !is_wall(c.b) {
            c.b = in_engine[c.b as usize].id;
        }
    }
    contacts.sort_unstable_by_key(|c| (c.a, c.b, c.slot));
    contacts
}

/// Contacts named by spawn number renamed to the places of `bodies` (a
/// wall stays a wall), sorted by (a, b, slot): a split rank's warm start.
/// A contact whose body is not among them is left out: it cannot be found again.
pub fn contacts_by_place(contacts: &[Contact], bodies: &[Body]) -> Vec<Contact> {
    let place: std::collections::HashMap<u32, u32> = bodies.iter().enumerate().map(|(i, b)| (b.id, i as u32)).collect();
    let mut out: Vec<Contact> = contacts
        .iter()
        .filter_map(|c| {
            let a = *place.get(&c.a)?;
            let b = if is_wall(c.b) { c.b } else { *place.get(&c.b)? };
            Some(Contact { a, b, ..*c })
        })
        .collect();
    out.sort_unstable_by_key(|c| (c.a, c.b, c.slot));
    out
}

/// Candidate pairs `(a << 32) | b` by spawn number, a < b, sorted.
pub fn pairs_by_id(pairs: &[u64], in_engine: &[Body]) -> Vec<u64> {
    let mut out: Vec<u64> = pairs
        .iter()
        .map(|&p| {
            let (a, b) = unpack(p);
            let (a, b) = (in_engine[a as usize].id, in_engine[b as usize].id);
            pack(a.min(b), a.max(b))
        })
        .collect();
    out.sort_unstable();
    out
}

/// The hierarchy with its leaves naming their bodies by spawn number.
pub fn nodes_by_id(mut nodes: Vec<Node>, in_engine: &[Body]) -> Vec<Node> {
    for n in nodes.iter_mut().filter(|n| n.right == LEAF) {
        n.left = in_engine[n.left as usize].id;
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(id: u32, x: f32) -> Body {
        Body { id, pos: [x, 0.0, 0.0], ..Default::default() }
    }

    #[test]
    fn the_engines_order_maps_back_to_spawn_numbers() {
        // Spawn numbers 2, 0, 1 at engine places 0, 1, 2.
        let engine = [body(2, 2.0), body(0, 0.0), body(1, 1.0)];
        let back = bodies_by_id(&engine);
        assert_eq!(back.iter().map(|b| b.pos[0]).collect::<Vec<_>>(), [0.0, 1.0, 2.0]);
        assert_eq!(pair_by_id(0, 1, &engine), (1, 0), "the lower number first");
        assert_eq!(pair_by_id(1, 2, &engine), (1, 2));
        assert_eq!(pairs_by_id(&[pack(0, 1), pack(1, 2)], &engine), [pack(0, 1), pack(0, 2)]);
        let wall = Contact { a: 0, b: u32::MAX, ..Default::default() };
        let pair = Contact { a: 2, b: 0, slot: 1, ..Default::default() };
        let named = contacts_by_id(vec![wall, pair], &engine);
        assert_eq!(named.iter().map(|c| (c.a, c.b, c.slot)).collect::<Vec<_>>(), [(1, 2, 1), (2, u32::MAX, 0)]);
        let leaf = Node { min: [0.0; 3], left: 0, max: [0.0; 3], right: LEAF };
        let inner = Node { right: 4, ..leaf };
        assert_eq!(nodes_by_id(vec![inner, leaf], &engine).iter().map(|n| n.left).collect::<Vec<_>>(), [0, 2]);
        assert!("morton".parse::<BodyOrder>().is_ok() && "hilbert".parse::<BodyOrder>().is_err());
    }
}
