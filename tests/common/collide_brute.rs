//! The collider's reference broad phase, shared by the CPU (tests/collide.rs)
//! and GPU (tests/cuda/collide.rs) suites: what every engine's pair walk must find.

use reap::collide::layout::{Body, LEAF, Node, World, pack};
use reap::collide::physics;

/// Every leaf pair whose boxes (grown by the bodies' reach in `world`)
/// overlap, by testing all n² / 2 of them.
pub fn brute_force(world: &World, bodies: &[Body]) -> Vec<u64> {
    let leaves: Vec<Node> = bodies
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let (min, max) = physics::aabb(b, world);
            Node { min, left: i as u32, max, right: LEAF }
        })
        .collect();
    let mut pairs = Vec::new();
    for i in 0..leaves.len() {
        for j in i + 1..leaves.len() {
            if physics::overlap(&leaves[i], &leaves[j]) {
                pairs.push(pack(i as u32, j as u32));
            }
        }
    }
    pairs
}
