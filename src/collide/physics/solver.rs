//! The solver: small steps (Macklin et al. 2019). A frame's contacts are
//! found once, then each of its substeps applies gravity for the substep,
//! re-applies the impulse each contact held in the last substep (warm
//! starting: a resting contact's impulse is that substep's weight, so one
//! pass leaves little to correct), runs its passes and moves the bodies. A
//! pass goes colour by colour (colour.rs: [`coloured_impulse`], each manifold
//! moving its bodies at once), then takes the overflow, the contacts no colour
//! held, by projected Jacobi with each body's mass
//! split over its contact points (Tonge et al. 2012), so that summing every
//! contact's impulse on a body does not overshoot; `World::split` shrinks
//! the split of a body in many contacts, which over-relaxes the step (plain
//! Tonge converges too slowly for a stack) and leaves an isolated contact exact.
//! Each pass a contact sets the normal impulse of its substep (never below
//! zero) and its friction (Coulomb, static then dynamic), and pushes the
//! centres apart along its normal while it is deeper than the slop (a split
//! impulse: positions only, so the correction adds no energy); with soft
//! contacts (`World::contact_hertz`, Box2D v3's soft step) it pushes through
//! the velocities as a stiff spring instead, and a relax pass after the
//! bodies move takes that speed back ([`contact_impulse`]'s `relax`). A contact
//! still apart (a speculative one, `physics::reach`) lets the bodies close
//! its gap within the substep and no further. After the last substep one
//! restitution pass gives the contacts that still touch their bounce. The
//! walls, the floor and the drum are contacts like any other (walls.rs), so
//! they act inside every pass. A body's sums are kept in 64-bit fixed point.

use super::{Inertia, V3, add, cross, dot, point_velocity, scale, sub};
use crate::collide::layout::{Body, Contact, SPHERE, World};

/// Fixed point of the solver's sums: 2^24 steps per unit.
pub const FIXED: f32 = 16777216.0;

pub fn to_fixed(x: f32) -> i64 {
    (x * FIXED) as i64
}

pub fn from_fixed(sum: i64) -> f32 {
    (sum as f32) * (1.0 / FIXED)
}

/// Box2D's damping ratio of a soft contact (`World::contact_hertz`): far
/// past critical, so that a pushed-out body does not overshoot.
pub const SOFT_DAMPING: f32 = 10.0;
/// Box2D's cap on the speed at which a soft contact pushes its bodies apart (m/s).
pub const MAX_PUSH: f32 = 3.0;

/// Box2D's contact stiffness (Hz), `--contacts soft`'s.
pub const SOFT_HERTZ: f32 = 30.0;

/// How penetrating contacts are pushed out (`--contacts`; `World::contact_hertz`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Contacts {
    /// A split impulse: the centres move apart, the velocities do not.
    Split,
    /// Box2D's soft step: a spring of this stiffness, then a relax pass.
    Soft { hertz: f32 },
}

impl Contacts {
    /// What `w` uses.
    pub fn of(w: &World) -> Contacts {
        if w.contact_hertz > 0.0 { Contacts::Soft { hertz: w.contact_hertz } } else { Contacts::Split }
    }

    /// `World::contact_hertz` for this choice.
    pub fn hertz(self) -> f32 {
        match self {
            Contacts::Split => 0.0,
            Contacts::Soft { hertz } => hertz,
        }
    }

    /// The name `--contacts` takes and reports print.
    pub fn name(self) -> String {
        match self {
            Contacts::Split => "split".into(),
            Contacts::Soft { hertz } if hertz == SOFT_HERTZ => "soft".into(),
            Contacts::Soft { hertz } => format!("soft:{hertz}"),
        }
    }
}

impl std::str::FromStr for Contacts {
    type Err = String;
    /// `split`, `soft` (Box2D's 30 Hz) or `soft:HZ`, HZ from 1 to 1000 (a
    /// softer spring lets bodies sink through each other; a stiffer one is
    /// capped at an eighth of the substep rate anyway).
    fn from_str(s: &str) -> Result<Contacts, String> {
        let bad = || format!("`{s}`: expected `split`, `soft` or `soft:HZ` (a stiffness from 1 to 1000, e.g. soft:60)");
        match s.split_once(':') {
            None if s == "split" => Ok(Contacts::Split),
            None if s == "soft" => Ok(Contacts::Soft { hertz: SOFT_HERTZ }),
            Some(("soft", hz)) => match hz.parse::<f32>() {
                Ok(hertz) if (1.0..=1000.0).contains(&hertz) => Ok(Contacts::Soft { hertz }),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }
}

/// A soft contact over one substep (Catto, Solver2D's `b2MakeSoft`): the
/// rate at which it closes its depth (1/s), and how much of the rigid
/// impulse and of its accumulated impulse a solve pass applies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Softness {
    pub bias_rate: f32,
    pub mass_scale: f32,
    pub impulse_scale: f32,
}

/// The softness of a spring of `hertz` and [`SOFT_DAMPING`] over a step `dt`.
pub fn softness(hertz: f32, dt: f32) -> Softness {
    let omega = 6.2831855 * hertz;
    let a1 = 2.0 * SOFT_DAMPING + dt * omega;
    let a2 = dt * omega * a1;
    let a3 = 1.0 / (1.0 + a2);
    Softness { bias_rate: omega / a1, mass_scale: a2 * a3, impulse_scale: a3 }
}

/// The softness of a contact between a and b in a substep of `w`: Box2D's
/// stiffness, at most an eighth of the substep rate (stiffer would ring),
/// doubled when one side cannot move.
pub fn contact_softness(a: &Body, b: &Body, w: &World) -> Softness {
    let mut hertz = w.contact_hertz.min(0.125 / w.dt);
    if a.inv_mass <= 0.0 || b.inv_mass <= 0.0 {
        hertz *= 2.0;
    }
    softness(hertz, w.dt)
}

/// One pass's change from one contact: the impulse on b (a takes its
/// opposite), the angular impulses on a and on b, and the push of b's
/// centre (a takes its opposite), all in mass units.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Impulse {
    pub linear: V3,
    pub angular_a: V3,
    pub angular_b: V3,
    pub push: V3,
}

/// What a body in `k` contact points counts as in the mass split (`World::split`).
fn share(k: u32, w: &World) -> f32 {
    1.0 + w.split * (k as f32 - 1.0)
}

/// The inverse effective mass of a contact along `d`, each body's mass
/// split over its `k` contacts.
#[allow(clippy::too_many_arguments)] // solver.cuh's twin, argument for argument
fn inv_effective(a: &Body, ia: &Inertia, ka: f32, ra: V3, b: &Body, ib: &Inertia, kb: f32, rb: V3, d: V3) -> f32 {
    let ca = cross(ra, d);
    let cb = cross(rb, d);
    ka * (a.inv_mass + dot(ca, ia.mul(ca))) + kb * (b.inv_mass + dot(cb, ib.mul(cb)))
}

/// One Jacobi pass of contact `c` between a (in `ka` contact points, its
/// inertia `ia`) and b (in `kb`, `ib`), from the velocities and positions before the pass; updates the
/// impulses the contact has applied this substep (`w.dt` is the substep's).
/// A `relax` pass (soft contacts only, after the bodies moved) pushes
/// nothing out: it takes back the speed the solve passes' push gave.
#[allow(clippy::too_many_arguments)] // solver.cuh's twin, argument for argument
pub fn contact_impulse(
    c: &mut Contact,
    a: &Body,
    ia: &Inertia,
    ka: u32,
    b: &Body,
    ib: &Inertia,
    kb: u32,
    w: &World,
    relax: bool,
) -> Impulse {
    let (ka, kb) = (share(ka, w), share(kb, w));
    let n = c.normal;
    let ra = sub(c.point, a.pos);
    let rb = sub(c.point, b.pos);
    let kn = inv_effective(a, ia, ka, ra, b, ib, kb, rb, n);
    if kn <= 0.0 {
        return Impulse::default();
    }
    // The depth now, the centres having moved since the narrow phase.
    let depth = c.depth - (dot(sub(b.pos, a.pos), n) - c.sep);
    // Apart by more than the slop: the bodies may approach until they touch
    // at the substep's end (within the slop the contact counts as touching,
    // so that rounding around zero depth decides nothing). Touching, they
    // stop: the bounce comes once, after the substeps ([`restitution`]).
    let target = if depth < -w.slop { depth / w.dt } else { 0.0 };
    let rel = sub(point_velocity(b, rb), point_velocity(a, ra));
    let vn = dot(rel, n);
    let soft = w.contact_hertz > 0.0;
    let lambda = if soft && !relax && depth >= -w.slop {
        // Box2D's soft step: touching, the contact is a stiff spring that
        // pushes past the slop through the velocities (the relax pass takes
        // that speed back once the bodies have moved).
        let s = contact_softness(a, b, w);
        let target = (s.bias_rate * (depth - w.slop).max(0.0)).min(MAX_PUSH);
        (c.lambda - (s.mass_scale * ((vn - target) / kn) + s.impulse_scale * c.lambda)).max(0.0)
    } else {
        (c.lambda - (vn - target) / kn).max(0.0)
    };
    let dn = lambda - c.lambda;
    c.lambda = lambda;
    if lambda > 0.0 && c.bounce > 0.0 {
        // It pushed this frame: the restitution pass owes it its bounce.
        c.bounce = -c.bounce;
    }
    // Friction against the sliding velocity, capped by the normal impulse.
    let t = sub(rel, scale(n, vn));
    let tl2 = dot(t, t);
    let mut f = c.friction;
    if tl2 > 1e-12 {
        let tl = tl2.sqrt();
        let kt = inv_effective(a, ia, ka, ra, b, ib, kb, rb, scale(t, 1.0 / tl));
        f = sub(f, scale(t, 1.0 / kt));
    }
    let fl2 = dot(f, f);
    let stick = w.static_friction * lambda;
    if fl2 > stick * stick {
        f = scale(f, w.friction * lambda / fl2.sqrt());
    }
    let df = sub(f, c.friction);
    c.friction = f;
    let p = add(scale(n, dn), df);
    // The split impulse: positions only (soft contacts push through the velocities).
    let push = if soft { 0.0 } else { (depth - w.slop).max(0.0) * w.baumgarte / (ka * a.inv_mass + kb * b.inv_mass) };
    Impulse { linear: p, angular_a: scale(cross(ra, p), -1.0), angular_b: cross(rb, p), push: scale(n, push) }
}

/// A body takes the sums of its contacts' impulses of one pass (an
/// immovable one takes nothing).
pub fn apply(b: &mut Body, ib: &Inertia, linear: V3, angular: V3, push: V3) {
    if b.inv_mass <= 0.0 {
        return;
    }
    b.vel = add(b.vel, scale(linear, b.inv_mass));
    b.omega = add(b.omega, ib.mul(angular));
    b.pos = add(b.pos, scale(push, b.inv_mass));
}

/// One coloured pass of contact `c` (`physics::colour`): no other contact
/// of its colour moves a or b, so each takes its whole mass and the impulse
/// at once, and the next point of the manifold sees the bodies as this one
/// left them (Gauss-Seidel). An immovable body takes nothing. The caller
/// takes each body's inertia once for the manifold.
pub fn coloured_impulse(
    c: &mut Contact,
    a: &mut Body,
    ia: &Inertia,
    b: &mut Body,
    ib: &Inertia,
    w: &World,
    relax: bool,
) {
    let r = contact_impulse(c, a, ia, 1, b, ib, 1, w, relax);
    apply(a, ia, scale(r.linear, -1.0), r.angular_a, scale(r.push, -1.0));
    apply(b, ib, r.linear, r.angular_b, r.push);
}

/// Restitution, after a frame's substeps (as Box2D's soft step applies it),
/// in `World::bounce_passes` Jacobi passes: a contact that still touches and whose
/// narrow phase saw an approach to bounce from is given the impulse that
/// makes its normal speed the bounce. The impulse it has given so far this
/// frame is kept in `c.sep` (the substeps, its only readers, are done; the
/// `first` pass starts it at 0), and its total never goes below zero: a pass
/// may take back what an earlier one overshot, but never pulls. The
/// substeps stopped the contact; bouncing inside them would re-apply the
/// bounce with every held impulse and pump energy. Each body's mass is split
/// over all its contacts that [`bounces`] says bounce (Tonge's split, not
/// `World::split`'s over-relaxed one: repeated passes must not overshoot).
#[allow(clippy::too_many_arguments)] // solver.cuh's twin, argument for argument
pub fn restitution(
    c: &mut Contact,
    first: bool,
    a: &Body,
    ia: &Inertia,
    ka: u32,
    b: &Body,
    ib: &Inertia,
    kb: u32,
) -> Impulse {
    if !bounces(c) {
        return Impulse::default();
    }
    let given = if first { 0.0 } else { c.sep };
    c.sep = given;
    let (ka, kb) = (ka as f32, kb as f32);
    let n = c.normal;
    let ra = bounce_arm(a, c.point, n);
    let rb = bounce_arm(b, c.point, scale(n, -1.0));
    let kn = inv_effective(a, ia, ka, ra, b, ib, kb, rb, n);
    if kn <= 0.0 {
        return Impulse::default();
    }
    let vn = dot(sub(point_velocity(b, rb), point_velocity(a, ra)), n);
    let total = (given - (vn + c.bounce) / kn).max(0.0);
    c.sep = total;
    let p = scale(n, total - given);
    Impulse { linear: p, angular_a: scale(cross(ra, p), -1.0), angular_b: cross(rb, p), push: [0.0; 3] }
}

/// The lever arm of body `b` in the restitution pass, at contact point
/// `point` whose normal leaves `b` along `out`: a movable sphere's is its
/// surface point along the normal, where it touches however the centres
/// moved in the substeps, so a bounce spins no sphere (the narrow phase's
/// point, off that line by then, turned part of each bounce into spin and
/// the closed elastic gas lost 1.7 % of its energy in 400 frames instead
/// of 0.5 %: docs/collide/energy-h200); any other body's is the point.
pub fn bounce_arm(b: &Body, point: V3, out: V3) -> V3 {
    if b.shape == SPHERE && b.inv_mass > 0.0 { scale(out, b.half[0]) } else { sub(point, b.pos) }
}

/// Whether contact `c` takes part in the restitution pass: its narrow phase
/// saw an approach to bounce from, and it pushed in a substep (which turned
/// its bounce negative), as Box2D asks of a contact's largest impulse.
pub fn bounces(c: &Contact) -> bool {
    c.bounce < 0.0
}

/// Warm starting: contact `c` takes the impulses `p`, the same contact (a,
/// b, slot) of the last frame, held in that frame's last substep (friction
/// loses its part along the new normal); the first substep applies them
/// ([`hold`]). Finding `p` is the engine's: a binary search on the CPU, a
/// hash table on the GPU (the same contact either way, keys being unique).
pub fn warm_start(c: &mut Contact, p: &Contact) {
    let n = c.normal;
    c.lambda = p.lambda;
    c.friction = sub(p.friction, scale(n, dot(p.friction, n)));
}

/// The impulse contact `c` held in the last substep, which a substep
/// applies again before its passes.
pub fn hold(c: &Contact, a: &Body, b: &Body) -> Impulse {
    let n = c.normal;
    let ra = sub(c.point, a.pos);
    let rb = sub(c.point, b.pos);
    let j = add(scale(n, c.lambda), c.friction);
    Impulse { linear: j, angular_a: scale(cross(ra, j), -1.0), angular_b: cross(rb, j), push: [0.0; 3] }
}
