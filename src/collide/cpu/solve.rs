//! The CPU engine's solver (`physics::solver`) as a program of steps over
//! [`Ranks`]: one engine runs it alone; a split collider (`collide::split`)
//! runs each step on every rank, and between the steps that change what a
//! ghost's owner alone knows, each ghost takes its owner's value
//! ([`Ranks::share`]). A rank holds every contact of the bodies it owns, so
//! an owned body's sums are whole; a contact between two ranks is computed
//! on both from the same values, so both sides agree bit for bit.

use rayon::prelude::*;

use super::{CpuCollide, gather, previous_contact};
use crate::collide::layout::World;
use crate::collide::physics::{self, Inertia, colour};
use crate::collide::{CollideResult, Substep};

/// What a ghost takes from its owner between two steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shared {
    /// The body: after every step that moves the bodies.
    Bodies,
    /// The colouring round's pick and the colours taken so far.
    Picks,
    /// The contact points left to the Jacobi pass (its mass split).
    Counts,
    /// The contact points that bounce (the restitution pass's split).
    Bouncing,
}

/// The engines the solver runs on in lockstep: one, or the ranks of a split
/// collider held in this process.
pub(crate) trait Ranks {
    /// Runs `f` on every engine.
    fn each(&mut self, f: &mut dyn FnMut(&mut CpuCollide));
    /// Runs `f` on every engine: whether it returned true on any.
    fn any(&mut self, f: &mut dyn FnMut(&mut CpuCollide) -> bool) -> bool {
        let mut any = false;
        self.each(&mut |e| any |= f(e));
        any
    }
    /// Each ghost takes its owner's `what`.
    fn share(&mut self, what: Shared);
}

impl Ranks for CpuCollide {
    fn each(&mut self, f: &mut dyn FnMut(&mut CpuCollide)) {
        f(self)
    }
    fn share(&mut self, _: Shared) {}
}

/// The frame's setup (`Engine::solve`): contacts grouped by body, the
/// colouring, the Jacobi pass's counts, the warm start.
pub(crate) fn setup(r: &mut impl Ranks) -> CollideResult<()> {
    let mut failed = None;
    r.each(&mut |e| {
        if let Err(err) = e.index_contacts() {
            failed = Some(err);
        }
    });
    if let Some(err) = failed {
        return Err(err);
    }
    colour(r);
    r.each(&mut |e| e.count_overflow());
    r.share(Shared::Counts);
    r.each(&mut |e| e.warm_start());
    Ok(())
}

/// Colours the manifolds (`physics::colour`): rounds until every manifold
/// has a colour or the overflow, or `colour::rounds` have run.
pub(crate) fn colour(r: &mut impl Ranks) {
    let mut rounds = 0;
    r.each(&mut |e| rounds = e.colour_begin());
    for _ in 0..rounds {
        r.each(&mut |e| e.colour_pick());
        r.share(Shared::Picks);
        // A round in which no rank took a manifold leaves every rank at the
        // colouring's end: the next would pick and take the same nothing.
        if !r.any(&mut |e| e.colour_take()) {
            break;
        }
    }
    r.each(&mut |e| e.colour_end());
}

/// One substep (`Engine::substep`) over `world` (the frame's).
pub(crate) fn substep(r: &mut impl Ranks, step: Substep, world: &World) {
    let w = step.world(world);
    r.each(&mut |e| e.gravity_and_hold(&w));
    r.share(Shared::Bodies);
    for _ in 0..step.solve_passes(&w) {
        pass(r, &w, false);
    }
    r.each(&mut |e| e.integrate(&w));
    if step.relaxes(&w) {
        pass(r, &w, true);
    }
    if step.last() {
        r.each(&mut |e| e.count_bouncing());
        r.share(Shared::Bouncing);
        for pass in 0..w.bounce_passes.max(1) {
            r.each(&mut |e| e.restitute(&w, pass));
            r.share(Shared::Bodies);
        }
        r.each(&mut |e| e.keep_previous());
    }
}

/// One solver pass (a `relax` one after the move, `physics::contact_impulse`):
/// colour by colour, then the overflow's Jacobi pass.
fn pass(r: &mut impl Ranks, w: &World, relax: bool) {
    for k in 0..w.colours.min(colour::MAX_COLOURS) {
        r.each(&mut |e| e.solve_colour(k as usize, w, relax));
        r.share(Shared::Bodies);
    }
    r.each(&mut |e| e.overflow_pass(w, relax));
    r.share(Shared::Bodies);
}

impl CpuCollide {
    /// A movable body's contact points left to the Jacobi pass, with bodies
    /// and walls: its mass is split over them (as collide_split counts).
    fn count_overflow(&mut self) {
        let (ends, ends_of, colour, bodies) = (&self.ends, &self.ends_of, &self.colour, &self.bodies);
        self.counts.par_iter_mut().enumerate().for_each(|(i, k)| {
            if bodies[i].inv_mass <= 0.0 {
                *k = 0;
                return;
            }
            let range = if i == 0 { 0 } else { ends_of[i - 1] as usize }..ends_of[i] as usize;
            *k = ends[range].iter().filter(|&&e| colour[(e >> 1) as usize] == colour::OVERFLOW).count() as u32;
        });
        self.overflow = colour.par_iter().filter(|&&c| c == colour::OVERFLOW).count();
    }

    /// Warm start (collide_warm): each contact takes what it held at the last frame's end.
    fn warm_start(&mut self) {
        let previous = &self.previous;
        self.contacts.par_iter_mut().for_each(|c| {
            if let Some(p) = previous_contact(previous, c) {
                physics::warm_start(c, p);
            }
        });
    }

    /// Gravity, then the impulses the contacts held (collide_hold and the gather).
    fn gravity_and_hold(&mut self, w: &World) {
        self.bodies.par_iter_mut().for_each(|b| physics::gravity(b, w));
        let bodies = &self.bodies;
        self.contacts
            .par_iter()
            .map(|c| {
                let a = &bodies[c.a as usize];
                if physics::is_wall(c.b) {
                    return physics::hold(c, a, &physics::wall_body(c.b, c.point, w));
                }
                physics::hold(c, a, &bodies[c.b as usize])
            })
            .collect_into_vec(&mut self.responses);
        gather(&mut self.bodies, &self.ends, &self.ends_of, &self.responses, None);
    }

    fn integrate(&mut self, w: &World) {
        self.bodies.par_iter_mut().for_each(|b| physics::integrate(b, w));
    }

    /// The overflow's Jacobi pass, with each body's mass split over its points.
    fn overflow_pass(&mut self, w: &World, relax: bool) {
        if self.overflow == 0 {
            return;
        }
        let (bodies, counts, colour) = (&self.bodies, &self.counts, &self.colour);
        let count = |i: u32| counts[i as usize];
        self.contacts
            .par_iter_mut()
            .zip(colour)
            .map(|(c, &colour)| {
                if colour != colour::OVERFLOW {
                    return physics::Impulse::default(); // the gather does not read it
                }
                let a = &bodies[c.a as usize];
                let (wall, b) = physics::other_side(c, bodies, w);
                let kb = if wall { 1 } else { count(c.b) };
                physics::contact_impulse(c, a, &Inertia::of(a), count(c.a), &b, &Inertia::of(&b), kb, w, relax)
            })
            .collect_into_vec(&mut self.responses);
        let overflow = Some((&self.colour[..], &self.counts[..]));
        gather(&mut self.bodies, &self.ends, &self.ends_of, &self.responses, overflow);
    }

    /// Each body's contact points that bounce (collide_bouncing): the
    /// restitution pass splits its mass over them.
    fn count_bouncing(&mut self) {
        let (ends, ends_of, contacts) = (&self.ends, &self.ends_of, &self.contacts);
        self.bouncing.par_iter_mut().enumerate().for_each(|(i, k)| {
            let range = if i == 0 { 0 } else { ends_of[i - 1] as usize }..ends_of[i] as usize;
            *k = ends[range].iter().filter(|&&e| physics::bounces(&contacts[(e >> 1) as usize])).count() as u32;
        });
    }

    /// One pass of the frame's bounces (collide_restitute and a gather).
    fn restitute(&mut self, w: &World, pass: u32) {
        let (bodies, bouncing) = (&self.bodies, &self.bouncing);
        let count = |i: u32| bouncing[i as usize];
        self.contacts
            .par_iter_mut()
            .map(|c| {
                let a = &bodies[c.a as usize];
                let (wall, b) = physics::other_side(c, bodies, w);
                let kb = if wall { 1 } else { count(c.b) };
                let (ia, ib) = (Inertia::of(a), Inertia::of(&b));
                physics::restitution(c, pass == 0, a, &ia, count(c.a), &b, &ib, kb)
            })
            .collect_into_vec(&mut self.responses);
        gather(&mut self.bodies, &self.ends, &self.ends_of, &self.responses, None);
    }

    /// The frame's contacts after its passes, sorted for the next frame's warm start.
    fn keep_previous(&mut self) {
        self.previous.clone_from(&self.contacts);
        self.previous.par_sort_unstable_by_key(|c| (c.a, c.b, c.slot));
    }
}
