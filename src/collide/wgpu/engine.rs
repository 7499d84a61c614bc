//! `Engine` for [`WgpuCollide`]: one method per stage of collide.wgsl, in the
//! order of `src/collide/cuda.rs`, each recording its dispatches with the
//! shader's bindings (binding numbers as collide.wgsl declares them).

use super::record::Recorder;
use super::{Params, Slot, WgpuCollide, cap32, word};
use crate::collide::gpu::Lists;
use crate::collide::layout::{Body, Contact, Node, World};
use crate::collide::physics::colour::{MAX_COLOURS, rounds};
use crate::collide::{CollideError, CollideResult, Engine, FrameEnd, SortMethod, Substep, order};
use crate::compaction::wgpu::{WgpuBackend, WgpuBuffer};
use crate::compaction::{Algorithm, Backend};
use crate::frontier::{self, LevelWords, Step, host};
use crate::replay::FramePath;

// collide.wgsl's bindings.
const BODIES: u32 = 1;
const KEYS: u32 = 2;
const IDS: u32 = 3;
const NODES: u32 = 4;
const PARENT: u32 = 5;
const WORDS: u32 = 6;
const FRONTIER_IN: u32 = 7;
const FRONTIER_OUT: u32 = 8;
const CANDIDATES: u32 = 9;
const CONTACTS: u32 = 10;
const ACC: u32 = 11;
const COUNTS: u32 = 12;
const PREVIOUS: u32 = 13;
const TABLE: u32 = 14;
const BOUNDS: u32 = 15;
const ARGS: u32 = 16;
const SITE_STATES: u32 = 17;
const COLOUR: u32 = 18;
const PICKS: u32 = 19;
const USED: u32 = 20;
const ORDER: u32 = 21;
const COLOUR_TABLE: u32 = 22;
const MOVED: u32 = 23;
const PLACES: u32 = 24;

const CONTACT: u64 = std::mem::size_of::<Contact>() as u64;

impl Engine for WgpuCollide {
    type B = WgpuBackend;
    type Clock = Recorder;

    fn backend(&self) -> &WgpuBackend {
        &self.backend
    }

    fn world(&self) -> &World {
        &self.tree.world
    }

    fn len(&self) -> u32 {
        self.tree.n
    }

    fn new_frontier(&self, capacity: u64) -> CollideResult<frontier::Frontier<WgpuBackend>> {
        cap32("the pair frontier", capacity)?;
        Ok(frontier::Frontier::new(&self.backend, capacity)?)
    }

    fn clock(&mut self) -> &mut Recorder {
        &mut self.rec
    }

    fn begin_frame(&mut self, words: &mut WgpuBuffer<u64>, len: u64, _key: u64) -> CollideResult<Option<FramePath>> {
        // Before the contact list is rewritten: a complete frame's contacts become the previous ones (a
        // redone frame keeps what the last complete one left).
        self.keep_last_contacts();
        if words.capacity() < len {
            *words = self.backend.alloc(len)?;
        }
        words.set_len(len)?;
        self.rec.clear(words.raw());
        // No graphs on wgpu: every frame is recorded from the host.
        Ok(None)
    }

    fn end_frame(&mut self, words: &WgpuBuffer<u64>) -> CollideResult<Option<FrameEnd>> {
        // The frame's two host waits: the words (their copy follows the frame's work), then the stage times.
        self.rec.reclaim(&self.backend);
        self.rec.flush()?;
        let w = self.backend.download(words)?;
        let times = self.rec.finish()?;
        self.lists.frame_ended(&w);
        self.warm.frame_ended(host::ok(&w));
        if w.get(frontier::STATUS as usize).is_some_and(|s| s & frontier::status::STALLED != 0) {
            // A stable site gave up waiting (site.wgsl): the driver redoes the
            // frame, and from now on the pair walk compacts separately.
            self.site_stalled = true;
        }
        Ok(Some((times, w)))
    }

    fn abort_frame(&mut self) {
        self.rec.reclaim(&self.backend);
        self.rec.abort();
    }

    fn before_library(&mut self) -> CollideResult<()> {
        self.rec.lend(&self.backend)
    }

    fn codes(&mut self) -> CollideResult<()> {
        let p = self.params()?;
        let (b, k, i) = (self.tree.bodies.raw().clone(), self.tree.keys.raw().clone(), self.tree.ids.raw().clone());
        self.run("collide_codes", &p, &[(BODIES, &b), (KEYS, &k), (IDS, &i)], self.tree.n as u64)
    }

    fn reorder(&mut self) -> CollideResult<()> {
        let p = self.params()?;
        let t = &self.tree;
        let (b, i, m, r) = (t.bodies.raw().clone(), t.ids.raw().clone(), t.moved.raw().clone(), t.places.raw().clone());
        let n = t.n as u64;
        self.run("collide_reorder", &p, &[(BODIES, &b), (IDS, &i), (MOVED, &m), (PLACES, &r)], n)?;
        self.run("collide_reorder_back", &p, &[(BODIES, &b), (MOVED, &m)], n)?;
        if self.warm.count > 0 {
            let previous = self.warm.previous.clone();
            self.run("collide_warm_follow", &p, &[(PREVIOUS, &previous), (PLACES, &r)], self.warm.count)?;
        }
        Ok(())
    }

    fn sort(&mut self, method: SortMethod) -> CollideResult<()> {
        match method {
            SortMethod::Split(a) => {
                // The library's calls record after what waits.
                self.rec.lend(&self.backend)?;
                self.backend.radix_sort(a, &mut self.tree.keys, Some(&mut self.tree.ids))?;
                Ok(())
            }
            SortMethod::Fast => {
                let (k, i) = (self.tree.keys.raw().clone(), self.tree.ids.raw().clone());
                self.fast.run(&self.backend, &mut self.rec, self.tree.n, &k, &i)
            }
        }
    }

    fn build(&mut self) -> CollideResult<()> {
        let p = self.params()?;
        let (k, i, b) = (self.tree.keys.raw().clone(), self.tree.ids.raw().clone(), self.tree.bodies.raw().clone());
        let (nd, pa) = (self.tree.nodes.raw().clone(), self.tree.parent.raw().clone());
        let binds = [(KEYS, &k), (IDS, &i), (BODIES, &b), (NODES, &nd), (PARENT, &pa)];
        self.run("collide_build", &p, &binds, self.tree.n as u64)
    }

    fn refit(&mut self) -> CollideResult<()> {
        if self.tree.n < 2 {
            return Ok(()); // the only node is a leaf
        }
        let p = self.params()?;
        let (nd, pa) = (self.tree.nodes.raw().clone(), self.tree.parent.raw().clone());
        let internal = self.tree.n as u64 - 1;
        self.run("collide_refit_init", &p, &[(BOUNDS, &nd)], internal)?;
        self.run("collide_refit", &p, &[(PARENT, &pa), (BOUNDS, &nd)], self.tree.n as u64)?;
        self.run("collide_refit_finish", &p, &[(BOUNDS, &nd)], internal)
    }

    fn pairs_init(
        &mut self,
        frontier: &mut WgpuBuffer<u64>,
        words: &mut WgpuBuffer<u64>,
        at: LevelWords,
    ) -> CollideResult<()> {
        let p = Params {
            len_out: word(at.len(0))?,
            live_out: word(at.live(0))?,
            write_root: (self.tree.n >= 2) as u32,
            ..self.params()?
        };
        let pipe = self.pipe("collide_pairs_init")?;
        self.rec.dispatch(&pipe, &p, &[(FRONTIER_OUT, frontier.raw()), (WORDS, words.raw())], 1);
        Ok(())
    }

    /// Every single-pass algorithm fuses (compaction/site.wgsl); `lookback`
    /// and `chained` no longer once one of their waits stalled on this device.
    fn fuses(&self, algorithm: Algorithm) -> bool {
        crate::compaction::BackendKind::Wgpu.fuses(algorithm)
            && !(self.site_stalled && matches!(algorithm, Algorithm::Lookback | Algorithm::Chained))
    }

    fn expand(&mut self, step: Step<'_, WgpuBackend>, fuse: Option<Algorithm>) -> CollideResult<()> {
        let (groups, expand) = match fuse {
            None => ("collide_groups_expand", "collide_expand"),
            Some(Algorithm::Atomic) => ("collide_groups_expand_fused", "collide_expand_atomic"),
            Some(Algorithm::Lookback) => ("collide_groups_expand_fused", "collide_expand_lookback"),
            Some(Algorithm::Chained) => ("collide_groups_expand_fused", "collide_expand_chained"),
            Some(a) => {
                return Err(CollideError::Settings(format!(
                    "`{a}` has no fused site (only lookback, chained and atomic do); use --fusion off"
                )));
            }
        };
        let stable = matches!(fuse, Some(Algorithm::Lookback | Algorithm::Chained));
        let Step { at, input, output, words } = step;
        // Both buffers hold `capacity` slots; the shader reads n from the words.
        let capacity = input.len().min(output.len());
        let p = Params {
            cap: cap32("the pair frontier", capacity)?,
            len_in: word(at.input_len)?,
            live_in: word(at.input_live)?,
            len_out: word(at.output_len)?,
            live_out: word(at.output_live)?,
            last: at.last as u32,
            ..self.params()?
        };
        let (nd, cand, args) = (self.tree.nodes.raw().clone(), self.candidates.clone(), self.args.clone());
        // The level's length is on the device: the dispatch covers it, not the capacity.
        self.run(groups, &p, &[(WORDS, words.raw()), (ARGS, &args)], 1)?;
        let mut binds = vec![
            (NODES, &nd),
            (FRONTIER_IN, input.raw()),
            (FRONTIER_OUT, output.raw()),
            (CANDIDATES, &cand),
            (WORDS, words.raw()),
        ];
        let site;
        if stable {
            // A tile state per WG input pairs and the tile counter, cleared before the walk's level.
            let bytes = 4 * (1 + capacity.div_ceil(self.tuning.workgroup as u64));
            if self.site_states.size() < bytes {
                self.site_states =
                    self.backend.raw_buffer("the stable sites' tile states", bytes.next_power_of_two())?;
            }
            site = self.site_states.clone();
            self.rec.clear(&site);
            binds.push((SITE_STATES, &site));
        }
        self.run_indirect(expand, &p, &binds, Slot::Expand)
    }

    fn candidate_capacity(&self) -> u64 {
        self.lists.capacity
    }

    fn set_candidate_capacity(&mut self, n: u64) -> CollideResult<()> {
        let lists = Lists::resized(n.max(1));
        let (capacity, contacts) = (lists.capacity, lists.contact_capacity());
        cap32("the contact list", contacts)?;
        // The last complete frame's contacts outlive the lists, for its redone successor to warm start from.
        self.keep_last_contacts();
        // Free the old lists before asking for the new ones.
        self.candidates = self.backend.raw_buffer("the candidate list", 8)?;
        self.contacts = self.backend.raw_buffer("the contact list", CONTACT)?;
        self.candidates = self.backend.raw_buffer("the candidate list", capacity * 8)?;
        self.contacts = self.backend.raw_buffer("the contact list", contacts * CONTACT)?;
        self.colour = self.backend.raw_buffer("the contacts' colours", 4)?;
        self.order = self.backend.raw_buffer("the colours' manifolds", 8)?;
        self.colour = self.backend.raw_buffer("the contacts' colours", contacts * 4)?;
        self.order = self.backend.raw_buffer("the colours' manifolds", contacts * 8)?;
        self.lists = lists;
        self.warm.resize(&self.backend, contacts)
    }

    fn narrow(&mut self, words: &mut WgpuBuffer<u64>) -> CollideResult<()> {
        let p = self.params()?;
        let (b, cand, ct) = (self.tree.bodies.raw().clone(), self.candidates.clone(), self.contacts.clone());
        let args = self.args.clone();
        self.run("collide_groups_candidates", &p, &[(WORDS, words.raw()), (ARGS, &args)], 1)?;
        let binds = [(BODIES, &b), (CANDIDATES, &cand), (CONTACTS, &ct), (WORDS, words.raw())];
        self.run_indirect("collide_narrow", &p, &binds, Slot::Candidates)?;
        self.run("collide_walls", &p, &[(BODIES, &b), (CONTACTS, &ct), (WORDS, words.raw())], self.tree.n as u64)
    }

    fn solve(&mut self, words: &WgpuBuffer<u64>) -> CollideResult<()> {
        let p = self.params()?;
        let w = words.raw();
        let (ct, counts) = (self.contacts.clone(), self.counts.clone());
        let (prev, table) = (self.warm.previous.clone(), self.warm.table.clone());
        let args = self.args.clone();
        // The contact count is on the device: every solver dispatch covers it (nothing when there is no
        // contact); the substeps reuse these arguments.
        self.run("collide_groups_contacts", &p, &[(WORDS, w), (ARGS, &args)], 1)?;
        self.colour(&p, w)?;
        // Each movable body's points left to the Jacobi pass.
        self.rec.clear(&counts);
        let (b, colour) = (self.tree.bodies.raw().clone(), self.colour.clone());
        let binds = [(CONTACTS, &ct), (WORDS, w), (COUNTS, &counts), (COLOUR, &colour), (BODIES, &b)];
        self.run_indirect("collide_count", &p, &binds, Slot::Contacts)?;
        // Warm start: each contact takes what it held at the last frame's end (the first substep applies it).
        // The previous contacts' count is the host's: the table's used slots and the inserts are sized by it.
        self.run("collide_warm_clear", &p, &[(TABLE, &table)], self.warm.used_slots())?;
        self.run("collide_warm_table", &p, &[(PREVIOUS, &prev), (TABLE, &table), (WORDS, w)], self.warm.count)?;
        let binds = [(CONTACTS, &ct), (WORDS, w), (PREVIOUS, &prev), (TABLE, &table)];
        self.run_indirect("collide_warm", &p, &binds, Slot::Contacts)
    }

    fn substep(&mut self, step: Substep, words: &WgpuBuffer<u64>) -> CollideResult<()> {
        // The host's substep world (its dt), as every engine steps by it.
        let p = Params { world: step.world(&self.tree.world), ..self.params()? };
        let w = words.raw();
        let (b, ct, counts, acc) =
            (self.tree.bodies.raw().clone(), self.contacts.clone(), self.counts.clone(), self.acc.clone());
        let n = self.tree.n as u64;
        self.run("collide_gravity", &p, &[(BODIES, &b), (WORDS, w)], n)?;
        // The impulses the contacts held, then the passes, each summed and applied as a pass is.
        self.rec.clear(&acc);
        self.run_indirect(
            "collide_hold",
            &p,
            &[(CONTACTS, &ct), (WORDS, w), (BODIES, &b), (ACC, &acc)],
            Slot::Contacts,
        )?;
        self.apply(&p, w)?;
        // The solve passes, the move, and with soft contacts the relax pass.
        for _ in 0..step.solve_passes(&p.world) {
            self.pass(&p, w, false)?;
        }
        self.run("collide_integrate", &p, &[(BODIES, &b), (WORDS, w)], n)?;
        if step.relaxes(&p.world) {
            self.pass(&p, w, true)?;
        }
        if step.last() {
            // The frame's bounces: the owing contacts counted per body (in `counts`, done with the split),
            // then per pass each one's impulse summed and applied.
            self.rec.clear(&counts);
            self.run_indirect(
                "collide_bouncing",
                &p,
                &[(CONTACTS, &ct), (WORDS, w), (COUNTS, &counts)],
                Slot::Contacts,
            )?;
            for pass in 0..p.world.bounce_passes.max(1) {
                self.rec.clear(&acc);
                let first = Params { first: (pass == 0) as u32, ..p };
                let binds = [(CONTACTS, &ct), (WORDS, w), (BODIES, &b), (COUNTS, &counts), (ACC, &acc)];
                self.run_indirect("collide_restitute", &first, &binds, Slot::Contacts)?;
                self.apply(&p, w)?;
            }
        }
        Ok(())
    }

    fn bodies(&self) -> CollideResult<Vec<Body>> {
        self.tree.bodies_by_id(&self.backend)
    }

    fn set_bodies(&mut self, bodies: &[Body]) -> CollideResult<()> {
        self.tree.set_bodies(&self.backend, bodies)?;
        // New bodies: the last frame's impulses are not theirs.
        self.warm.clear();
        Ok(())
    }

    fn candidate_pairs(&self) -> CollideResult<Vec<u64>> {
        let count = self.lists.stored_candidates();
        if count == 0 {
            return Ok(Vec::new());
        }
        let raw = self
            .backend
            .device()
            .read(&self.candidates, 0, count * 8, "reading candidates")
            .map_err(super::wgpu_err)?;
        let pairs: Vec<u64> = bytemuck::pod_collect_to_vec(&raw);
        Ok(order::pairs_by_id(&pairs, &self.tree.in_engine(&self.backend)?))
    }

    fn contact_list(&self) -> CollideResult<Vec<Contact>> {
        let count = self.lists.stored_contacts();
        if count == 0 {
            return Ok(Vec::new());
        }
        let raw = self
            .backend
            .device()
            .read(&self.contacts, 0, count * CONTACT, "reading contacts")
            .map_err(super::wgpu_err)?;
        let contacts: Vec<Contact> = bytemuck::pod_collect_to_vec(&raw);
        Ok(order::contacts_by_id(contacts, &self.tree.in_engine(&self.backend)?))
    }

    fn nodes(&self) -> CollideResult<Vec<Node>> {
        self.tree.nodes_by_id(&self.backend)
    }
}

impl WgpuCollide {
    /// One solver pass (a `relax` one after the move, solver.wgsl `contact_impulse`): colour by colour
    /// (collide_solve_colour), then the overflow's Jacobi pass, summed and applied.
    fn pass(&mut self, p: &Params, w: &wgpu::Buffer, relax: bool) -> CollideResult<()> {
        let p = Params { relax: relax as u32, ..*p };
        let (b, ct, counts, acc) =
            (self.tree.bodies.raw().clone(), self.contacts.clone(), self.counts.clone(), self.acc.clone());
        let (colour, order, table) = (self.colour.clone(), self.order.clone(), self.colour_table.clone());
        for k in 0..p.world.colours.min(MAX_COLOURS) {
            let at = Params { colour: k, ..p };
            let binds = [(CONTACTS, &ct), (WORDS, w), (BODIES, &b), (ORDER, &order), (COLOUR_TABLE, &table)];
            self.run_slot("collide_solve_colour", &at, &binds, Slot::Colours as u64 + k as u64)?;
        }
        self.rec.clear(&acc);
        let binds = [(CONTACTS, &ct), (WORDS, w), (BODIES, &b), (COUNTS, &counts), (ACC, &acc), (COLOUR, &colour)];
        self.run_indirect("collide_solve", &p, &binds, Slot::Contacts)?;
        self.apply(&Params { split_only: 1, ..p }, w)
    }

    /// Records the colouring of the frame's contacts (`physics::colour`;
    /// the CPU engine's `colour`), over the dispatch arguments of the contacts.
    fn colour(&mut self, p: &Params, w: &wgpu::Buffer) -> CollideResult<()> {
        let colours = p.world.colours.min(MAX_COLOURS);
        let p = Params { colour: colours, ..*p };
        let (ct, b, colour) = (self.contacts.clone(), self.tree.bodies.raw().clone(), self.colour.clone());
        let (picks, used, order) = (self.picks.clone(), self.used.clone(), self.order.clone());
        let (table, args) = (self.colour_table.clone(), self.args.clone());
        self.rec.clear(&table);
        self.rec.clear(&used);
        self.run_indirect(
            "collide_colour_init",
            &p,
            &[(CONTACTS, &ct), (WORDS, w), (COLOUR, &colour)],
            Slot::Contacts,
        )?;
        for _ in 0..if colours == 0 { 0 } else { rounds(colours) } {
            self.rec.clear(&picks);
            let binds = [(CONTACTS, &ct), (WORDS, w), (COLOUR, &colour), (BODIES, &b), (PICKS, &picks)];
            for first in [1, 0] {
                self.run_indirect("collide_colour_pick", &Params { first, ..p }, &binds, Slot::Contacts)?;
            }
            let binds = [(CONTACTS, &ct), (WORDS, w), (COLOUR, &colour), (BODIES, &b), (PICKS, &picks), (USED, &used)];
            self.run_indirect("collide_colour_take", &p, &binds, Slot::Contacts)?;
        }
        let binds = [(CONTACTS, &ct), (WORDS, w), (COLOUR, &colour), (COLOUR_TABLE, &table)];
        self.run_indirect("collide_colour_finish", &p, &binds, Slot::Contacts)?;
        self.run("collide_colour_scan", &p, &[(COLOUR_TABLE, &table), (ARGS, &args)], 1)?;
        let binds = [(CONTACTS, &ct), (WORDS, w), (COLOUR, &colour), (COLOUR_TABLE, &table), (ORDER, &order)];
        self.run_indirect("collide_colour_order", &p, &binds, Slot::Contacts)
    }
}
