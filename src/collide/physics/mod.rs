//! The arithmetic of the collision pipeline, one function per step, as plain
//! f32 operations in a fixed order. `kernels/collide/common.cuh` repeats each
//! function under the same name, expression for expression, and NVRTC
//! compiles it with `--fmad=false`: IEEE add, multiply, divide and sqrt round
//! the same on both sides, so one state gives bit-identical contacts and
//! steps on the CPU and the GPU.
//!
//! The solver sums impulses in 64-bit fixed point: integer addition is
//! associative, so the order in which threads add (atomics on the GPU) does
//! not change the result.
//!
//! One file per job: broad.rs (Morton codes, the Karras tree, box overlap),
//! narrow.rs (the exact contact tests of spheres), manifold.rs (box against
//! box: separating axes and face clipping), solver.rs (the contact and wall
//! impulses, summed in fixed point), colour.rs (the colouring of the contact
//! graph the solver's passes go by), walls.rs (the walls, the floor and the
//! drum as contacts), motion.rs (gravity, integration,
//! inertia); the vector helpers and a body's box are here.

mod broad;
pub mod colour;
mod manifold;
mod motion;
mod narrow;
mod solver;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod tests_solver;
mod walls;

pub use broad::{delta, expand_bits, karras_node, morton, overlap, union};
pub use manifold::{MAX_POINTS, box_box};
pub use motion::{Inertia, gravity, integrate, inv_inertia, point_velocity};
pub use narrow::collide;
pub use solver::{
    Contacts, FIXED, Impulse, MAX_PUSH, SOFT_DAMPING, SOFT_HERTZ, Softness, apply, bounces, coloured_impulse,
    contact_impulse, contact_softness, from_fixed, hold, restitution, softness, to_fixed, warm_start,
};
pub use walls::{MAX_WALL_POINTS, WALL, is_wall, other_side, wall_body, wall_contacts};

use crate::collide::layout::{Body, SPHERE, World};

pub type V3 = [f32; 3];

pub fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
pub fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
pub fn scale(a: V3, s: f32) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}
pub fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
pub fn cross(a: V3, b: V3) -> V3 {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// A box's local axes in world space (the columns of its rotation matrix).
pub fn axes(q: [f32; 4]) -> [V3; 3] {
    let [x, y, z, w] = q;
    let (xx, yy, zz) = (x * x, y * y, z * z);
    let (xy, xz, yz) = (x * y, x * z, y * z);
    let (wx, wy, wz) = (w * x, w * y, w * z);
    [
        [1.0 - 2.0 * (yy + zz), 2.0 * (xy + wz), 2.0 * (xz - wy)],
        [2.0 * (xy - wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz + wx)],
        [2.0 * (xz + wy), 2.0 * (yz - wx), 1.0 - 2.0 * (xx + yy)],
    ]
}

/// Half the size of a body's axis-aligned box.
pub fn extent(b: &Body) -> V3 {
    if b.shape == SPHERE {
        return [b.half[0], b.half[0], b.half[0]];
    }
    let u = axes(b.rot);
    let h = b.half;
    let e = |k: usize| u[0][k].abs() * h[0] + u[1][k].abs() * h[1] + u[2][k].abs() * h[2];
    [e(0), e(1), e(2)]
}

/// How fast a body's surface can move in a frame besides its centre's
/// velocity: what gravity adds over the frame, and for a box how fast its
/// corners turn (m/s).
pub fn extra_speed(b: &Body, w: &World) -> f32 {
    let mut speed = dot(w.gravity, w.gravity).sqrt() * w.dt;
    if b.shape != SPHERE {
        speed += dot(b.omega, b.omega).sqrt() * dot(b.half, b.half).sqrt();
    }
    speed
}

/// How far from a body's surface its wall points are looked for: the
/// world's margin plus how far the surface can move in a frame (walls stand
/// still; the drum's turns along itself). The substeps reuse the frame's
/// contacts, so every surface the body can reach before the next narrow
/// phase must already be a (speculative) contact.
pub fn reach(b: &Body, w: &World) -> f32 {
    w.margin + (dot(b.vel, b.vel).sqrt() + extra_speed(b, w)) * w.dt
}

/// How far apart two bodies' surfaces may be and still make a (speculative)
/// contact (issue 46 item 4): both margins, plus how far the surfaces can
/// close in a frame: the faster of the centres' relative speed and each
/// centre's own (a body ahead may stop dead within the frame, leaving the
/// one behind to close at its full speed), and each body's [`extra_speed`].
/// Two bodies moving together reach half as far ahead as the sum of their
/// speeds did; the relative speed alone let the 1M ramp's stopping heap
/// pass into itself (docs/collide/reach-h200).
pub fn pair_reach(a: &Body, b: &Body, w: &World) -> f32 {
    let dv = sub(a.vel, b.vel);
    let closing = dot(dv, dv).sqrt().max(dot(a.vel, a.vel).sqrt()).max(dot(b.vel, b.vel).sqrt());
    2.0 * w.margin + (closing + extra_speed(a, w) + extra_speed(b, w)) * w.dt
}

/// A body's swept box (a leaf's bounds): its box where it is and where its
/// velocity takes it by the frame's end, grown by the margin and its
/// [`extra_speed`] over the frame. Whatever the body can touch within the
/// frame overlaps it; a fast body's box grows along its path, not all
/// around (issue 46 item 4).
pub fn aabb(b: &Body, w: &World) -> (V3, V3) {
    let r = w.margin + extra_speed(b, w) * w.dt;
    let e = add(extent(b), [r, r, r]);
    let end = add(b.pos, scale(b.vel, w.dt));
    let (lo, hi) = (std::array::from_fn(|k| b.pos[k].min(end[k])), std::array::from_fn(|k| b.pos[k].max(end[k])));
    (sub(lo, e), add(hi, e))
}
