//! The data both engines share, laid out as `kernels/collide/common.cuh`'s
//! structs of the same names (`#[repr(C)]`, checked sizes).

use bytemuck::{Pod, Zeroable};

pub const SPHERE: u32 = 0;
pub const BOX: u32 = 1;
/// A leaf's `right`: its `left` is a body id.
pub const LEAF: u32 = u32::MAX;

/// A rigid body: position and orientation, linear and angular velocity.
/// Its inertia is not stored: `physics::inv_inertia` derives it from the
/// shape, the half extents and the mass (diagonal in the body's frame).
///
/// The viewer reads `pos`, `shape`, `half` and `rot` at their offsets
/// (`offset_of!`); `rot` is the body-to-world rotation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Body {
    pub pos: [f32; 3],
    /// [`SPHERE`] or [`BOX`].
    pub shape: u32,
    pub vel: [f32; 3],
    /// 0 for an immovable body.
    pub inv_mass: f32,
    /// Sphere: the radius in `half[0]` (all three equal); box: half extents in its own frame.
    pub half: [f32; 3],
    /// The body's number where it was spawned (0..n): engines keep their
    /// bodies in Morton order ([`crate::collide::BodyOrder`]) and hand them
    /// back by this number; a pair's contacts name the lower number first.
    pub id: u32,
    /// Orientation quaternion (x, y, z, w), unit length (renormalised every step).
    pub rot: [f32; 4],
    /// Angular velocity in world space, rad/s.
    pub omega: [f32; 3],
    pub pad2: f32,
}

/// A node of the linear BVH: n - 1 internal nodes (0 is the root), then n
/// leaves at n - 1 + i for the i-th sorted code.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct Node {
    pub min: [f32; 3],
    /// Internal: left child's node index; leaf: the body id.
    pub left: u32,
    pub max: [f32; 3],
    /// Internal: right child's node index; leaf: [`LEAF`].
    pub right: u32,
}

/// A touching point of a pair: `normal` points from body `a` to body `b`
/// (`a`'s [`Body::id`] the lower), or into the wall `b` names (`physics::is_wall`). The narrow phase fills the geometry and the bounce; the solver
/// keeps the impulses it has applied so far this frame in the last fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Contact {
    pub a: u32,
    pub b: u32,
    /// Penetration depth, > 0.
    pub depth: f32,
    /// `dot(b.pos - a.pos, normal)` when found: the solver's position passes
    /// follow the depth as the centres move (linearised). After the frame's
    /// last substep, the bounce impulse given so far (`physics::restitution`).
    pub sep: f32,
    pub normal: [f32; 3],
    /// The normal impulse applied so far this frame (never negative).
    pub lambda: f32,
    /// The contact point in world space.
    pub point: [f32; 3],
    /// The separating normal speed restitution asks for (0 for a resting
    /// contact); negated once the contact has pushed in a substep, which
    /// makes it owe the bounce after the substeps (`physics::restitution`).
    pub bounce: f32,
    /// The friction impulse applied so far this frame (tangential).
    pub friction: [f32; 3],
    /// Which of its pair's points this is (0 to `physics::MAX_POINTS` - 1).
    pub slot: u32,
}

/// The container and the constants of the step, passed to every kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, serde::Serialize)]
pub struct World {
    /// The box that holds every body (and normalises the Morton codes).
    pub min: [f32; 3],
    pub dt: f32,
    pub max: [f32; 3],
    pub restitution: f32,
    pub gravity: [f32; 3],
    /// Coulomb's dynamic coefficient: a sliding contact's friction impulse
    /// is at most this times its normal impulse.
    pub friction: f32,
    /// 1 / (max - min) per axis, computed once so both engines use the same value.
    pub inv_extent: [f32; 3],
    /// Penetration left uncorrected, and the fraction of the rest each solver pass corrects.
    pub slop: f32,
    pub baumgarte: f32,
    /// A rotating drum around the z axis through (drum_x, drum_y): radius 0 for none.
    pub drum_radius: f32,
    pub drum_x: f32,
    pub drum_y: f32,
    /// Angular speed of the drum wall, rad/s (counter-clockwise seen from +z).
    pub drum_omega: f32,
    /// Coulomb's static coefficient: a contact sticks while its friction
    /// impulse needs at most this times its normal impulse.
    pub static_friction: f32,
    /// Approach speeds below this bounce back not at all (resting contacts
    /// would otherwise jitter under gravity).
    pub rest_speed: f32,
    /// How much of each further contact a body's mass is split over: a body
    /// in k contact points counts as `1 + split (k - 1)` in the solver (1 is
    /// Tonge's split, which never overshoots but converges slowly; less
    /// over-relaxes the Jacobi step, while an isolated contact stays exact).
    pub split: f32,
    /// How far a body's surface may be from another's (or a wall) and still
    /// make a contact, besides what the bodies' motion over a frame adds
    /// (`physics::pair_reach` counts it once per body, `physics::reach` for walls): the
    /// solver's substeps reuse the frame's contacts, so a contact that closes
    /// during the frame must already be in the list (a speculative contact).
    pub margin: f32,
    /// Jacobi passes of restitution after a frame's substeps
    /// (`physics::restitution`). One pass with the mass split gives a body in
    /// several bouncing contacts only part of each bounce: the closed elastic
    /// gas (1000 bodies, 600 frames, CPU) loses 16.4 % of its energy with 1
    /// and 2.8 % with 8. The gas takes 8; the other scenes 1: 8 turned the
    /// 1M-body ramp's few spinning boxes (hundreds of rad/s with 1 pass too)
    /// into a cascade after 230 frames (docs/collide/energy-h200).
    pub bounce_passes: u32,
    /// Colours of the contact graph (`physics::colour`, at most
    /// `colour::MAX_COLOURS`): each solver pass goes colour by colour, then
    /// the Jacobi pass takes what did not fit. 0: Jacobi alone.
    pub colours: u32,
    /// How a penetrating contact is pushed out (`physics::contact_impulse`).
    /// 0: a split impulse, moving the centres apart by the depth past the
    /// slop (`baumgarte` of it each pass) without touching the velocities.
    /// Above 0: Box2D v3's soft step, a spring of this stiffness (Hz; at
    /// most an eighth of the substep rate, doubled against immovable bodies)
    /// and damping ratio `physics::SOFT_DAMPING`, acting through the
    /// velocities in the solve passes and taken back by the relax pass.
    pub contact_hertz: f32,
}

const _: () = assert!(std::mem::size_of::<Body>() == 80);
const _: () = assert!(std::mem::size_of::<Node>() == 32);
const _: () = assert!(std::mem::size_of::<Contact>() == 64);
const _: () = assert!(std::mem::size_of::<World>() == 112);

/// `bodies` numbered in their order ([`Body::id`] = 0..n): what an engine
/// takes, whatever numbers they had.
pub fn numbered(bodies: &[Body]) -> Vec<Body> {
    bodies.iter().enumerate().map(|(i, b)| Body { id: i as u32, ..*b }).collect()
}

/// A pair of node (or body) indices in one frontier slot.
pub fn pack(a: u32, b: u32) -> u64 {
    ((a as u64) << 32) | b as u64
}

pub fn unpack(p: u64) -> (u32, u32) {
    ((p >> 32) as u32, p as u32)
}
