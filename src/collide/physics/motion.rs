//! Gravity, inertia and the step: positions and orientations from the
//! velocities, kept inside the walls and the drum.

use super::{V3, add, axes, cross, dot, extent, scale};
use crate::collide::layout::{Body, SPHERE, World};

/// The diagonal of a body's inverse inertia in its own frame (uniform
/// density; 0 for an immovable body).
pub fn inv_inertia(b: &Body) -> V3 {
    if b.shape == SPHERE {
        let i = 2.5 * b.inv_mass / (b.half[0] * b.half[0]);
        return [i, i, i];
    }
    let (x, y, z) = (b.half[0] * b.half[0], b.half[1] * b.half[1], b.half[2] * b.half[2]);
    [3.0 * b.inv_mass / (y + z), 3.0 * b.inv_mass / (x + z), 3.0 * b.inv_mass / (x + y)]
}

/// A body's inverse inertia in the world: its axes and the diagonal in its
/// own frame. Nothing in a pass turns a body, so the solver takes it once for
/// all the points of a manifold, or of a contact (the same bits as taking it
/// for each product).
#[derive(Clone, Copy, Debug)]
pub struct Inertia {
    axes: [V3; 3],
    diag: V3,
}

impl Inertia {
    pub fn of(b: &Body) -> Self {
        Self { diag: inv_inertia(b), axes: axes(b.rot) }
    }

    /// The world-space inverse inertia times `v`: R diag(inv_inertia) Rᵀ v.
    pub fn mul(&self, v: V3) -> V3 {
        let (u, d) = (&self.axes, self.diag);
        let l = [dot(v, u[0]) * d[0], dot(v, u[1]) * d[1], dot(v, u[2]) * d[2]];
        add(add(scale(u[0], l[0]), scale(u[1], l[1])), scale(u[2], l[2]))
    }
}

/// The velocity of the body's point at `r` from its centre.
pub fn point_velocity(b: &Body, r: V3) -> V3 {
    add(b.vel, cross(b.omega, r))
}

/// Gravity for one step.
pub fn gravity(b: &mut Body, w: &World) {
    if b.inv_mass > 0.0 {
        b.vel = add(b.vel, scale(w.gravity, w.dt));
    }
}

/// Moves and turns a body by its velocities (the quaternion renormalised)
/// and puts it back inside the walls and the drum. Only positions change
/// here: the solver's wall contacts own the velocities.
pub fn integrate(b: &mut Body, w: &World) {
    if b.inv_mass <= 0.0 {
        return;
    }
    b.pos = add(b.pos, scale(b.vel, w.dt));
    // q += dt/2 (ω, 0) q.
    let [x, y, z, s] = b.rot;
    let o = scale(b.omega, 0.5 * w.dt);
    let q = [
        x + (o[0] * s + (o[1] * z - o[2] * y)),
        y + (o[1] * s + (o[2] * x - o[0] * z)),
        z + (o[2] * s + (o[0] * y - o[1] * x)),
        s - (o[0] * x + o[1] * y + o[2] * z),
    ];
    let len = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    b.rot = [q[0] / len, q[1] / len, q[2] / len, q[3] / len];
    let e = extent(b);
    for k in 0..3 {
        let lo = w.min[k] + e[k];
        let hi = w.max[k] - e[k];
        if b.pos[k] < lo {
            b.pos[k] = lo;
        } else if b.pos[k] > hi {
            b.pos[k] = hi;
        }
    }
    if w.drum_radius > 0.0 {
        let dx = b.pos[0] - w.drum_x;
        let dy = b.pos[1] - w.drum_y;
        let d = (dx * dx + dy * dy).sqrt();
        let lim = w.drum_radius - e[0].max(e[1]);
        if d > lim && d > 0.0 {
            b.pos[0] = w.drum_x + dx / d * lim;
            b.pos[1] = w.drum_y + dy / d * lim;
        }
    }
}
