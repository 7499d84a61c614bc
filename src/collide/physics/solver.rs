//! The solver and the step: one Jacobi pass's impulses per contact, summed
//! in fixed point, then gravity and integration inside the walls and the drum.

use super::{V3, add, dot, extent, scale, sub};
use crate::collide::layout::{Body, Contact, World};

/// Fixed point of the solver's sums: 2^24 steps per unit.
pub const FIXED: f32 = 16777216.0;

pub fn to_fixed(x: f32) -> i64 {
    (x * FIXED) as i64
}

/// The mean of `count` fixed-point addends.
pub fn from_fixed(sum: i64, count: u32) -> f32 {
    (sum as f32) * (1.0 / FIXED) / count as f32
}

/// One Jacobi pass's change for one contact: velocity of a, of b, and (on the
/// first pass only) position of a, of b.
pub fn contact_response(c: &Contact, a: &Body, b: &Body, w: &World, first: bool) -> [V3; 4] {
    let zero = [0.0; 3];
    let inv = a.inv_mass + b.inv_mass;
    if inv <= 0.0 {
        return [zero; 4];
    }
    let n = c.normal;
    let rel = sub(b.vel, a.vel);
    let vn = dot(rel, n);
    let mut p = zero;
    if vn < 0.0 {
        let j = -(1.0 + w.restitution) * vn / inv;
        p = scale(n, j);
        // Coulomb friction, capped by the normal impulse.
        let t = sub(rel, scale(n, vn));
        let tl2 = dot(t, t);
        if tl2 > 1e-12 {
            let tl = tl2.sqrt();
            let jt = (tl / inv).min(w.friction * j);
            p = add(p, scale(t, -jt / tl));
        }
    }
    let (mut pa, mut pb) = (zero, zero);
    if first {
        let corr = (c.depth - w.slop).max(0.0) * w.baumgarte / inv;
        pa = scale(n, -corr * a.inv_mass);
        pb = scale(n, corr * b.inv_mass);
    }
    [scale(p, -a.inv_mass), scale(p, b.inv_mass), pa, pb]
}

/// Gravity for one step.
pub fn gravity(b: &mut Body, w: &World) {
    if b.inv_mass > 0.0 {
        b.vel = add(b.vel, scale(w.gravity, w.dt));
    }
}

/// Moves a body by its velocity and keeps it inside the walls and the drum.
pub fn integrate(b: &mut Body, w: &World) {
    if b.inv_mass <= 0.0 {
        return;
    }
    b.pos = add(b.pos, scale(b.vel, w.dt));
    let e = extent(b);
    for k in 0..3 {
        let lo = w.min[k] + e[k];
        let hi = w.max[k] - e[k];
        if b.pos[k] < lo {
            b.pos[k] = lo;
            if b.vel[k] < 0.0 {
                b.vel[k] = -b.vel[k] * w.restitution;
            }
        } else if b.pos[k] > hi {
            b.pos[k] = hi;
            if b.vel[k] > 0.0 {
                b.vel[k] = -b.vel[k] * w.restitution;
            }
        }
    }
    if w.drum_radius > 0.0 {
        let dx = b.pos[0] - w.drum_x;
        let dy = b.pos[1] - w.drum_y;
        let d = (dx * dx + dy * dy).sqrt();
        let lim = w.drum_radius - e[0].max(e[1]);
        if d > lim && d > 0.0 {
            let (nx, ny) = (dx / d, dy / d);
            b.pos[0] = w.drum_x + nx * lim;
            b.pos[1] = w.drum_y + ny * lim;
            let mut vr = b.vel[0] * nx + b.vel[1] * ny;
            if vr > 0.0 {
                vr = -vr * w.restitution;
            }
            // The wall drags the body along: its tangential speed moves
            // towards the wall's by the friction coefficient.
            let vt = b.vel[0] * -ny + b.vel[1] * nx;
            let wall = w.drum_omega * w.drum_radius;
            let vt = vt + (wall - vt) * w.friction;
            b.vel[0] = vr * nx + vt * -ny;
            b.vel[1] = vr * ny + vt * nx;
        }
    }
}
