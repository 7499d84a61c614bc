//! The GPU engine's solver as a program of steps over [`CudaRanks`], the
//! twin of the CPU engine's (`cpu/solve.rs`): one engine runs it alone (its
//! `solve` and `substep`); a split collider on several GPUs
//! (`collide::split::cuda`) enqueues each step on every rank and, after a
//! step that changes what only a ghost's owner knows, an exchange. Every
//! launch is enqueued: the host waits for none of them.

use super::{CudaCollide, GATHER_BEGIN, GATHER_BOUNCES, GATHER_INTEGRATE, GATHER_PASS, grid, launch_err, zero_u32};
use crate::collide::cpu::Shared;
use crate::collide::layout::World;
use crate::collide::words;
use crate::collide::{CollideResult, Substep};
use crate::compaction::Algorithm;
use crate::compaction::Backend;
use crate::cuda_runtime::{self, ptr as raw_ptr};
use cudarc::driver::PushKernelArg;

use super::colour::Colouring;
use super::warm::WarmArgs;

/// The engines the solver's steps are enqueued on: one, or the ranks of a
/// split collider, one GPU each.
pub(crate) trait CudaRanks {
    /// Enqueues `f` on every engine.
    fn each(&mut self, f: &mut dyn FnMut(&mut CudaCollide) -> CollideResult<()>) -> CollideResult<()>;
    /// Enqueues the exchange after which each ghost holds its owner's `what`.
    fn share(&mut self, what: Shared) -> CollideResult<()>;
    /// Whether every colouring round runs (a split's ghosts pick on their owners).
    fn every_round(&self) -> bool;
}

impl CudaRanks for CudaCollide {
    fn each(&mut self, f: &mut dyn FnMut(&mut CudaCollide) -> CollideResult<()>) -> CollideResult<()> {
        f(self)
    }
    fn share(&mut self, _: Shared) -> CollideResult<()> {
        Ok(())
    }
    fn every_round(&self) -> bool {
        false
    }
}

/// The frame's setup (`Engine::solve`): contacts grouped by body, the
/// colouring, each body's split, the warm start.
pub(crate) fn setup(r: &mut impl CudaRanks, world: &World) -> CollideResult<()> {
    r.each(&mut |e| e.index_contacts())?;
    r.each(&mut |e| e.colour_begin())?;
    let every = r.every_round();
    for round in 0..Colouring::rounds(world.colours) {
        r.each(&mut |e| e.colour_pick(round, every))?;
        r.share(Shared::Picks)?;
        r.each(&mut |e| e.colour_take(round, every))?;
    }
    r.each(&mut |e| e.colour_end())?;
    r.share(Shared::Counts)?;
    r.each(&mut |e| e.warm_start())
}

/// One substep (`Engine::substep`) over `world` (the frame's).
pub(crate) fn substep(r: &mut impl CudaRanks, step: Substep, world: &World) -> CollideResult<()> {
    let w = step.world(world);
    if step.index == 0 {
        r.each(&mut |e| e.gather(&w, GATHER_BEGIN))?;
        r.share(Shared::Bodies)?;
    }
    // The solve passes, the move, and with soft contacts the relax pass.
    let (solves, relaxes) = (step.solve_passes(&w), step.relaxes(&w) as u32);
    for pass in 0..solves + relaxes {
        let relax = (pass == solves) as u32;
        for k in 0..w.colours.min(crate::collide::physics::colour::MAX_COLOURS) {
            r.each(&mut |e| e.solve_colour(&w, k, relax))?;
            r.share(Shared::Bodies)?;
        }
        r.each(&mut |e| e.jacobi(&w, relax))?;
        // The last solve pass moves the bodies; the substep's last pass then (but in the frame's last)
        // begins the next substep.
        let mut what = GATHER_PASS;
        if pass + 1 == solves {
            what |= GATHER_INTEGRATE;
        }
        if pass + 1 == solves + relaxes && !step.last() {
            what |= GATHER_BEGIN;
        }
        r.each(&mut |e| e.gather(&w, what))?;
        r.share(Shared::Bodies)?;
    }
    if step.last() {
        // The frame's bounces: the bodies' counts of owing contacts, then per pass each contact's impulse
        // and a gather.
        r.each(&mut |e| e.count_bouncing())?;
        r.share(Shared::Bouncing)?;
        for pass in 0..w.bounce_passes.max(1) {
            r.each(&mut |e| e.restitute(&w, pass))?;
            r.each(&mut |e| e.gather(&w, GATHER_BOUNCES))?;
            r.share(Shared::Bodies)?;
        }
    }
    Ok(())
}

impl CudaCollide {
    /// Each body's contact points counted, their first slots scanned, and
    /// every contact's ends grouped by body.
    fn index_contacts(&mut self) -> CollideResult<()> {
        let wp = self.words;
        // The contact count is on the device: every launch covers the capacity (nothing when there is no contact).
        let contact_word = words::CONTACTS;
        let contact_capacity = self.lists.contact_capacity();
        zero_u32(&self.stream, &self.counts)?;
        let (ctp, cp) = (raw_ptr(&self.contacts), self.counts.ptr());
        let mut l = self.stream.launch_builder(&self.functions.count);
        l.arg(&ctp).arg(&wp).arg(&contact_word).arg(&cp);
        // SAFETY: matches collide_count(const Contact*, const u64*, u64, u32*); with the frame's status clear,
        // narrow wrote words[CONTACTS] <= contact_capacity contacts naming bodies below n; counts hold n.
        unsafe { l.launch(self.strided(contact_capacity)) }.map_err(launch_err("launching collide_count"))?;
        // Each body's first end: the library's scan of the counts (their total, two per contact at most, fits u32).
        self.backend.exclusive_scan(Algorithm::Lookback, &self.counts, &mut self.first)?;
        let bytes = self.tree.n as usize * 4;
        // SAFETY: both ranges hold n u32s, distinct allocations of this stream's context.
        unsafe {
            cuda_runtime::copy_dtod(&self.stream, self.cursor.ptr(), self.first.ptr(), bytes, "copying the first ends")
        }?;
        let (up, ep) = (self.cursor.ptr(), raw_ptr(&self.ends));
        let mut l = self.stream.launch_builder(&self.functions.ends);
        l.arg(&ctp).arg(&wp).arg(&contact_word).arg(&up).arg(&ep);
        // SAFETY: matches collide_ends(const Contact*, const u64*, u64, u32*, u32*); as for collide_count; each
        // body's cursor runs over its counts[i] slots from first[i], inside the 2 * contact_capacity ends.
        unsafe { l.launch(self.strided(contact_capacity)) }.map(drop).map_err(launch_err("launching collide_ends"))
    }

    fn colour_begin(&mut self) -> CollideResult<()> {
        let at = self.colour_args(self.words)?;
        self.colouring.begin(&self.stream, &at, self.tree.world.colours)
    }

    fn colour_pick(&mut self, round: u32, every: bool) -> CollideResult<()> {
        let at = self.colour_args(self.words)?;
        self.colouring.pick(&self.stream, &at, round, every)
    }

    fn colour_take(&mut self, round: u32, every: bool) -> CollideResult<()> {
        let at = self.colour_args(self.words)?;
        self.colouring.take(&self.stream, &at, self.tree.world.colours, round, every)
    }

    /// The colouring's end and each body's points left to the Jacobi pass.
    fn colour_end(&mut self) -> CollideResult<()> {
        let at = self.colour_args(self.words)?;
        self.colouring.end(&self.stream, &at)
    }

    /// Warm start: each contact takes what it held at the last frame's end.
    fn warm_start(&mut self) -> CollideResult<()> {
        let contact_capacity = self.lists.contact_capacity();
        let at = WarmArgs { contacts: raw_ptr(&self.contacts), words: self.words, contact_word: words::CONTACTS };
        let over = [self.warm.capacity(), self.warm.table_len(), contact_capacity].map(|c| self.strided(c));
        self.warm.enqueue(&self.stream, at, over)
    }

    /// Colour `k` of a pass (collide_solve_colour).
    fn solve_colour(&mut self, w: &World, k: u32, relax: u32) -> CollideResult<()> {
        let at = self.colour_args(self.words)?;
        let over = self.strided(self.lists.contact_capacity());
        self.colouring.solve(&self.stream, &at, w, k, relax, over)
    }

    /// The overflow's Jacobi pass (collide_solve): each contact's response,
    /// which the gather sums.
    fn jacobi(&mut self, w: &World, relax: u32) -> CollideResult<()> {
        let (wp, contact_word) = (self.words, words::CONTACTS);
        let (ctp, bp, rp) = (raw_ptr(&self.contacts), self.tree.bodies.ptr(), raw_ptr(&self.responses));
        let (sp, op) = (self.colouring.split.ptr(), raw_ptr(&self.colouring.colour));
        let mut l = self.stream.launch_builder(&self.functions.solve);
        l.arg(&ctp).arg(&wp).arg(&contact_word).arg(&bp).arg(&sp).arg(w).arg(&rp).arg(&op).arg(&relax);
        // SAFETY: matches collide_solve(Contact*, const u64*, u64, const Body*, const u32*, World, Impulse*,
        // const u32*, u32); as for collide_count; split holds n entries and the colours one per contact slot;
        // each contact is read and written by one thread, its response at its index.
        unsafe { l.launch(self.strided(self.lists.contact_capacity())) }
            .map(drop)
            .map_err(launch_err("launching collide_solve"))
    }

    /// Each body's contacts that owe a bounce (collide_bouncing).
    fn count_bouncing(&mut self) -> CollideResult<()> {
        let (bp, ep, fp, cp, ctp, kp) = (
            self.tree.bodies.ptr(),
            raw_ptr(&self.ends),
            self.first.ptr(),
            self.counts.ptr(),
            raw_ptr(&self.contacts),
            self.bouncing.ptr(),
        );
        let wp = self.words;
        let mut l = self.stream.launch_builder(&self.functions.bouncing);
        l.arg(&bp).arg(&self.tree.n).arg(&ep).arg(&fp).arg(&cp).arg(&ctp).arg(&wp).arg(&kp);
        // SAFETY: matches collide_bouncing(const Body*, u32, const u32*, const u32*, const u32*, const
        // Contact*, const u64*, u32*); as for collide_gather; `bouncing` holds n entries.
        unsafe { l.launch(grid(self.tree.n as u64)?) }.map(drop).map_err(launch_err("launching collide_bouncing"))
    }

    /// One restitution pass's impulses (collide_restitute); the gather follows.
    fn restitute(&mut self, w: &World, pass: u32) -> CollideResult<()> {
        let (wp, contact_word, first) = (self.words, words::CONTACTS, (pass == 0) as u32);
        let (ctp, bp, kp, rp) =
            (raw_ptr(&self.contacts), self.tree.bodies.ptr(), self.bouncing.ptr(), raw_ptr(&self.responses));
        let mut l = self.stream.launch_builder(&self.functions.restitute);
        l.arg(&ctp).arg(&wp).arg(&contact_word).arg(&bp).arg(&kp).arg(w).arg(&first).arg(&rp);
        // SAFETY: matches collide_restitute(Contact*, const u64*, u64, const Body*, const u32*, World, u32,
        // Impulse*); as for collide_solve.
        unsafe { l.launch(self.strided(self.lists.contact_capacity())) }
            .map(drop)
            .map_err(launch_err("launching collide_restitute"))
    }
}
