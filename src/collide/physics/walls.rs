//! The walls, the floor and the drum as contacts: every point of a body
//! (a box's corners, a sphere's nearest point) within its reach of one
//! becomes a contact against an immovable body at that point, so the solver
//! treats it as it treats a contact between bodies (inside every pass, with
//! its own normal and friction impulses).

use super::narrow::contact;
use super::{V3, add, axes, reach, scale};
use crate::collide::layout::{Body, Contact, SPHERE, World};

/// `Contact::b` of a wall point: `WALL - k` for the plane k (2 axis + side:
/// 0 the low x wall, 1 the high one, 2 the floor, ...), `WALL - 6` the drum.
pub const WALL: u32 = u32::MAX;
/// The most wall points of one body (a box in a corner of the world).
pub const MAX_WALL_POINTS: usize = 8;

/// Whether `Contact::b` names a wall rather than a body.
pub fn is_wall(b: u32) -> bool {
    b >= WALL - 6
}

/// The immovable body that wall `id` puts at `point`: at rest, or moving
/// with the drum's wall (counter-clockwise about z).
pub fn wall_body(id: u32, point: V3, w: &World) -> Body {
    let mut b = Body { pos: point, half: [1.0; 3], rot: [0.0, 0.0, 0.0, 1.0], ..Body::default() };
    if id == WALL - 6 {
        let px = point[0] - w.drum_x;
        let py = point[1] - w.drum_y;
        b.vel = [-py * w.drum_omega, px * w.drum_omega, 0.0];
    }
    b
}

/// Contact `c`'s other side: whether it is a wall, and the wall's stand-in
/// ([`wall_body`]) or the body.
pub fn other_side(c: &Contact, bodies: &[Body], w: &World) -> (bool, Body) {
    if is_wall(c.b) { (true, wall_body(c.b, c.point, w)) } else { (false, bodies[c.b as usize]) }
}

/// A box's corner `c` (bit k of `c` picks the sign along axis k), or a
/// sphere's point furthest along `out`, from the centre.
fn corner(b: &Body, u: &[V3; 3], c: u32, out: V3) -> V3 {
    if b.shape == SPHERE {
        return scale(out, b.half[0]);
    }
    let s = |k: u32| if (c >> k) & 1 == 1 { b.half[k as usize] } else { -b.half[k as usize] };
    add(add(scale(u[0], s(0)), scale(u[1], s(1))), scale(u[2], s(2)))
}

/// Body `ia`'s wall points in `out[..count]` (the first `MAX_WALL_POINTS` in
/// a fixed order), each with its normal into the wall.
pub fn wall_contacts(ia: u32, a: &Body, w: &World) -> ([Contact; MAX_WALL_POINTS], usize) {
    let mut out = [Contact::default(); MAX_WALL_POINTS];
    let mut count = 0;
    if a.inv_mass <= 0.0 {
        return (out, 0);
    }
    let u = axes(a.rot);
    let near = reach(a, w);
    let points = if a.shape == SPHERE { 1 } else { 8 };
    for k in 0..3 {
        for side in 0..2 {
            // The wall's normal, pointing out of the world.
            let mut n = [0.0; 3];
            n[k] = if side == 0 { -1.0 } else { 1.0 };
            let id = WALL - (2 * k + side) as u32;
            let first = count;
            for c in 0..points {
                let r = corner(a, &u, c, n);
                let at = a.pos[k] + r[k];
                let gap = if side == 0 { at - w.min[k] } else { w.max[k] - at };
                if gap < near && count < MAX_WALL_POINTS {
                    let p = add(a.pos, r);
                    let slot = (count - first) as u32;
                    out[count] = contact(ia, a, id, &wall_body(id, p, w), w, n, -gap, p, slot);
                    count += 1;
                }
            }
        }
    }
    if w.drum_radius > 0.0 {
        let dx = a.pos[0] - w.drum_x;
        let dy = a.pos[1] - w.drum_y;
        let d = (dx * dx + dy * dy).sqrt();
        let out_dir = if d > 0.0 { [dx / d, dy / d, 0.0] } else { [1.0, 0.0, 0.0] };
        let first = count;
        for c in 0..points {
            let r = corner(a, &u, c, out_dir);
            let px = a.pos[0] + r[0] - w.drum_x;
            let py = a.pos[1] + r[1] - w.drum_y;
            let rho = (px * px + py * py).sqrt();
            if rho > 0.0 && w.drum_radius - rho < near && count < MAX_WALL_POINTS {
                let p = add(a.pos, r);
                let n = [px / rho, py / rho, 0.0];
                let (id, slot) = (WALL - 6, (count - first) as u32);
                out[count] = contact(ia, a, id, &wall_body(id, p, w), w, n, rho - w.drum_radius, p, slot);
                count += 1;
            }
        }
    }
    (out, count)
}
