//! The CPU engine's colouring and coloured passes (`physics::colour`; the
//! twins of collide.cu's collide_colour_* and collide_solve_colour).

use rayon::prelude::*;

use super::CpuCollide;
use crate::collide::layout::{Body, World};
use crate::collide::physics::{self, Inertia};
use crate::compaction::cpu::Scatter;

impl CpuCollide {
    fn colours(&self) -> u32 {
        self.world.colours.min(physics::colour::MAX_COLOURS)
    }

    /// Starts colouring the manifolds (`physics::colour`; collide_colour_pick
    /// and collide_colour_take on the GPU): every manifold uncoloured. The
    /// rounds follow ([`Self::colour_pick`], [`Self::colour_take`]) until
    /// every manifold has a colour or the overflow, or the rounds returned
    /// have run; then [`Self::colour_end`].
    pub(super) fn colour_begin(&mut self) -> u32 {
        use physics::colour::{self as col, FOLLOWER, UNCOLOURED};
        let colours = self.colours();
        let contacts = &self.contacts;
        self.colour.clear();
        self.colour.par_extend(
            (0..contacts.len())
                .into_par_iter()
                .map(|i| if col::starts_run(contacts, i) { UNCOLOURED } else { FOLLOWER }),
        );
        self.used.par_iter_mut().for_each(|u| *u = 0);
        if colours == 0 { 0 } else { col::rounds(colours) }
    }

    /// A round's first half: each movable body picks its highest-ranked
    /// manifold still uncoloured.
    pub(super) fn colour_pick(&mut self) {
        use physics::colour::{self as col, NO_PICK, UNCOLOURED};
        let contacts = &self.contacts;
        let (bodies, ends, ends_of, colour) = (&self.bodies, &self.ends, &self.ends_of, &self.colour);
        self.picks.par_iter_mut().enumerate().for_each(|(i, pick)| {
            *pick = NO_PICK;
            if bodies[i].inv_mass <= 0.0 {
                return;
            }
            let range = if i == 0 { 0 } else { ends_of[i - 1] as usize }..ends_of[i] as usize;
            // A manifold by its name (spawn numbers): ranked and picked by it.
            let mut best: Option<(u32, u32)> = None;
            for &e in &ends[range] {
                let c = (e >> 1) as usize;
                if colour[c] == UNCOLOURED {
                    let name = col::named(col::manifold(&contacts[c]), bodies);
                    if best.is_none_or(|b| col::outranks_at(bodies[i].id, name, b)) {
                        best = Some(name);
                    }
                }
            }
            *pick = best.map_or(NO_PICK, col::pick);
        });
    }

    /// A round's second half: whether a manifold took a colour.
    pub(super) fn colour_take(&mut self) -> bool {
        use physics::colour::{self as col, OVERFLOW, UNCOLOURED};
        let (colours, contacts, bodies, colour) = (self.colours(), &self.contacts, &self.bodies, &self.colour);
        // A manifold both its movable bodies picked takes the lowest colour
        // neither has: winners share no movable body, so each reads and
        // then sets only its own bodies' bits.
        let (picks, used) = (&self.picks, &self.used);
        let picked = |body: u32, m: (u32, u32)| {
            col::is_wall_or_immovable(body, bodies) || picks[body as usize] == col::pick(col::named(m, bodies))
        };
        let taken: Vec<(usize, u32)> = colour
            .par_iter()
            .enumerate()
            .filter(|&(_, &c)| c == UNCOLOURED)
            .filter_map(|(i, _)| {
                let m = col::manifold(&contacts[i]);
                if !(picked(m.0, m) && picked(m.1, m)) {
                    return None;
                }
                let bits = |body: u32| if col::is_wall_or_immovable(body, bodies) { 0 } else { used[body as usize] };
                Some((i, col::first_free(bits(m.0) | bits(m.1), colours)))
            })
            .collect();
        if taken.is_empty() {
            return false; // every manifold has its colour
        }

        for &(head, k) in &taken {
            let m = col::manifold(&contacts[head]);
            let mut end = head + 1;
            while end < contacts.len() && !col::starts_run(contacts, end) {
                end += 1;
            }
            self.colour[head..end].fill(k);
            if k != OVERFLOW {
                for body in [m.0, m.1] {
                    if !col::is_wall_or_immovable(body, bodies) {
                        self.used[body as usize] |= 1 << k;
                    }
                }
            }
        }
        true
    }

    /// The colouring's end: what has no colour goes to the overflow, and
    /// the coloured manifolds are listed by colour.
    pub(super) fn colour_end(&mut self) {
        use physics::colour::{self as col, FOLLOWER, OVERFLOW};
        let (colours, contacts) = (self.colours(), &self.contacts);
        self.colour.par_iter_mut().filter(|c| **c >= FOLLOWER).for_each(|c| *c = OVERFLOW);
        // The coloured manifolds by colour, each as its run of points.
        let colour = &self.colour;
        self.manifolds.clear();
        self.manifolds.par_extend((0..contacts.len()).into_par_iter().filter_map(|i| {
            if colour[i] == OVERFLOW || !col::starts_run(contacts, i) {
                return None;
            }
            let mut end = i + 1;
            while end < contacts.len() && !col::starts_run(contacts, end) {
                end += 1;
            }
            Some((colour[i], i as u32, end as u32))
        }));
        self.manifolds.par_sort_unstable();
        let manifolds = &self.manifolds;
        self.colour_starts = (0..=colours).map(|k| manifolds.partition_point(|m| m.0 < k)).collect();
    }

    /// Colour `k` of a pass (collide_solve_colour): each manifold's points
    /// in order move its bodies directly.
    pub(super) fn solve_colour(&mut self, k: usize, w: &World, relax: bool) {
        let bodies = Scatter::new(&mut self.bodies);
        let contacts = Scatter::new(&mut self.contacts);
        let of_colour = &self.manifolds[self.colour_starts[k]..self.colour_starts[k + 1]];
        of_colour.par_iter().for_each(|&(_, from, to)| {
            // SAFETY: no movable body is in two manifolds of one colour, a
            // manifold's points are its own run, and an immovable body
            // (read by many) is never written; the phase ends with the colour.
            unsafe {
                let first = contacts.read(from as usize);
                let mut a = bodies.read(first.a as usize);
                let wall = physics::is_wall(first.b);
                let mut b = if wall { Body::default() } else { bodies.read(first.b as usize) };
                // Nothing in a pass turns a body: its inertia holds for every point.
                let (ia, mut ib) = (Inertia::of(&a), Inertia::of(&b));
                for i in from as usize..to as usize {
                    let mut c = contacts.read(i);
                    if wall {
                        b = physics::wall_body(c.b, c.point, w);
                        ib = Inertia::of(&b);
                    }
                    physics::coloured_impulse(&mut c, &mut a, &ia, &mut b, &ib, w, relax);
                    contacts.write(i, c);
                }
                if a.inv_mass > 0.0 {
                    bodies.write(first.a as usize, a);
                }
                if !wall && b.inv_mass > 0.0 {
                    bodies.write(first.b as usize, b);
                }
            }
        });
    }
}
