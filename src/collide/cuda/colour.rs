//! The colouring on the GPU (`physics::colour`), the twin of the CPU
//! engine's `colour` and `coloured_pass`: the buffers and kernels that colour
//! a frame's contacts in `solve`, and the per-colour launches of a pass.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::{COLLIDE, check_free, launch_err, zero_u32};
use crate::collide::layout::World;
use crate::collide::physics::colour::{MAX_COLOURS, rounds};
use crate::collide::{CollideError, CollideResult};
use crate::compaction::Backend;
use crate::compaction::cuda::{CudaBackend, CudaBuffer};
use crate::cuda_runtime::{Spec, ptr as raw_ptr};

/// u32s of collide.cu's colour table: counts, starts (one more) and cursors
/// per colour, then whether a body picked, per round.
const TABLE: u64 = 3 * (MAX_COLOURS as u64 + 1) + rounds(MAX_COLOURS) as u64;

/// Bytes per body and per contact slot that the colouring adds.
pub(super) const BODY_BYTES: u64 = 8 + 4 + 4;
pub(super) const CONTACT_BYTES: u64 = 4 + 8 + 8;

/// The colouring's buffers and kernels.
pub(super) struct Colouring {
    /// Each contact slot's colour (`colour::OVERFLOW`: the Jacobi pass's).
    pub(super) colour: CudaSlice<u32>,
    /// The coloured manifolds by colour, as pack(first point, end).
    order: CudaSlice<u64>,
    /// A manifold's first point: the manifold by spawn numbers (`physics::colour::named`).
    names: CudaSlice<u64>,
    /// Per body: its pick of a round, its colours as bits, and its points
    /// left to the Jacobi pass (the split).
    pub(super) picks: CudaBuffer<u64>,
    pub(super) used: CudaBuffer<u32>,
    pub(super) split: CudaBuffer<u32>,
    table: CudaBuffer<u32>,
    init: CudaFunction,
    pick: CudaFunction,
    take: CudaFunction,
    finish: CudaFunction,
    scan: CudaFunction,
    place: CudaFunction,
    count_split: CudaFunction,
    solve: CudaFunction,
}

/// What the colouring's kernels read: the frame's bodies, contacts and their
/// ends grouped by body (device addresses), and the launch shapes.
pub(super) struct ColourArgs {
    pub bodies: u64,
    pub n: u32,
    pub contacts: u64,
    pub ends: u64,
    pub first: u64,
    pub counts: u64,
    pub words: u64,
    pub contact_word: u64,
    /// Grid-stride over the contact slots; one thread per body.
    pub over_contacts: LaunchConfig,
    pub over_bodies: LaunchConfig,
}

fn per_contact<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    contacts: u64,
    what: &'static str,
) -> CollideResult<CudaSlice<T>> {
    let len = usize::try_from(contacts.max(1)).map_err(|_| CollideError::Settings(format!("{contacts} contacts")))?;
    stream.alloc_zeros::<T>(len).map_err(launch_err(what))
}

impl Colouring {
    pub(super) fn new(backend: &CudaBackend, n: u64, contacts: u64) -> CollideResult<Self> {
        let stream = backend.stream();
        let f = |name: &str| backend.kernels().function(&COLLIDE, &Spec::default(), name);
        Ok(Colouring {
            colour: per_contact(stream, contacts, "allocating the contacts' colours")?,
            order: per_contact(stream, contacts, "allocating the colours' manifolds")?,
            names: per_contact(stream, contacts, "allocating the manifolds' names")?,
            picks: backend.alloc(n)?,
            used: backend.alloc(n)?,
            split: backend.alloc(n)?,
            table: backend.alloc(TABLE)?,
            init: f("collide_colour_init")?,
            pick: f("collide_colour_pick")?,
            take: f("collide_colour_take")?,
            finish: f("collide_colour_finish")?,
            scan: f("collide_colour_scan")?,
            place: f("collide_colour_order")?,
            count_split: f("collide_split")?,
            solve: f("collide_solve_colour")?,
        })
    }

    /// Sizes the per-body buffers for `n` bodies (a split rank's count
    /// changes every frame): they grow when they hold fewer.
    pub(super) fn fit_bodies(&mut self, backend: &CudaBackend, n: u64, room: u64) -> CollideResult<()> {
        if self.picks.capacity() < n {
            self.picks = backend.alloc(room)?;
            self.used = backend.alloc(room)?;
            self.split = backend.alloc(room)?;
        }
        self.picks.set_len(n)?;
        self.used.set_len(n)?;
        self.split.set_len(n)?;
        Ok(())
    }

    /// Follows a new contact list of `contacts` slots.
    pub(super) fn resize(&mut self, stream: &Arc<CudaStream>, contacts: u64) -> CollideResult<()> {
        // Free the old buffers before asking for the new ones.
        self.colour = per_contact(stream, 1, "shrinking the contacts' colours")?;
        self.order = per_contact(stream, 1, "shrinking the colours' manifolds")?;
        self.names = per_contact(stream, 1, "shrinking the manifolds' names")?;
        check_free(stream, "the contacts' colours", contacts * CONTACT_BYTES)?;
        self.colour = per_contact(stream, contacts, "allocating the contacts' colours")?;
        self.order = per_contact(stream, contacts, "allocating the colours' manifolds")?;
        self.names = per_contact(stream, contacts, "allocating the manifolds' names")?;
        Ok(())
    }

    /// The buffers a frame's launches name, for its key.
    pub(super) fn addresses(&self) -> [u64; 3] {
        [raw_ptr(&self.colour), raw_ptr(&self.order), raw_ptr(&self.names)]
    }

    /// Enqueues the colouring's start (`physics::colour`) with `colours`
    /// colours (none: every contact to the Jacobi pass). Its rounds follow
    /// ([`Self::pick`], [`Self::take`]: `colour::rounds(colours)` of them,
    /// none without colours), then [`Self::end`].
    pub(super) fn begin(&self, stream: &Arc<CudaStream>, at: &ColourArgs, colours: u32) -> CollideResult<()> {
        let (cp, np) = (raw_ptr(&self.colour), raw_ptr(&self.names));
        let colours = colours.min(MAX_COLOURS);
        zero_u32(stream, &self.table)?;
        zero_u32(stream, &self.used)?;
        let mut l = stream.launch_builder(&self.init);
        l.arg(&at.contacts).arg(&at.words).arg(&at.contact_word).arg(&colours).arg(&cp).arg(&at.bodies).arg(&np);
        // SAFETY: matches collide_colour_init(const Contact*, const u64*, u64, u32, u32*, const Body*, u64*); with
        // the frame's status clear, narrow wrote words[CONTACTS] contacts naming bodies below n, at most the slots
        // `colour` and `names` hold.
        unsafe { l.launch(at.over_contacts) }.map(drop).map_err(launch_err("launching collide_colour_init"))
    }

    /// Rounds of the colouring with `colours` colours.
    pub(super) fn rounds(colours: u32) -> u32 {
        let colours = colours.min(MAX_COLOURS);
        if colours == 0 { 0 } else { rounds(colours) }
    }

    /// A round's first step: each movable body picks. `every_round`: the
    /// round runs even when no body here picked in the last (a split rank's
    /// ghosts pick on their owners).
    pub(super) fn pick(
        &self,
        stream: &Arc<CudaStream>,
        at: &ColourArgs,
        round: u32,
        every_round: bool,
    ) -> CollideResult<()> {
        let (cp, tp, kp, np) = (raw_ptr(&self.colour), self.table.ptr(), self.picks.ptr(), raw_ptr(&self.names));
        let every = every_round as u32;
        let mut l = stream.launch_builder(&self.pick);
        l.arg(&at.bodies).arg(&at.n).arg(&at.ends).arg(&at.first).arg(&at.counts).arg(&np);
        l.arg(&cp).arg(&at.words).arg(&kp).arg(&tp).arg(&round).arg(&every);
        // SAFETY: matches collide_colour_pick(const Body*, u32, const u32*, const u32*, const u32*, const u64*,
        // const u32*, const u64*, u64*, u32*, u32, u32); bodies, first, counts and picks hold n entries, and each
        // body's run of ends names contacts below the frame's count (collide_ends), whose first points' names
        // collide_colour_init wrote; the table holds TABLE u32s, a flag for each round.
        unsafe { l.launch(at.over_bodies) }.map(drop).map_err(launch_err("launching collide_colour_pick"))
    }

    /// A round's second step: the manifolds both bodies picked take a colour.
    pub(super) fn take(
        &self,
        stream: &Arc<CudaStream>,
        at: &ColourArgs,
        colours: u32,
        round: u32,
        every_round: bool,
    ) -> CollideResult<()> {
        let (cp, tp, up, kp, np) =
            (raw_ptr(&self.colour), self.table.ptr(), self.used.ptr(), self.picks.ptr(), raw_ptr(&self.names));
        let (colours, every) = (colours.min(MAX_COLOURS), every_round as u32);
        let mut l = stream.launch_builder(&self.take);
        l.arg(&at.contacts).arg(&at.words).arg(&at.contact_word).arg(&at.bodies).arg(&np).arg(&kp);
        l.arg(&colours).arg(&cp).arg(&up).arg(&tp).arg(&round).arg(&every);
        // SAFETY: matches collide_colour_take(const Contact*, const u64*, u64, const Body*, const u64*, const u64*,
        // u32, u32*, u32*, const u32*, u32, u32); as for collide_colour_init; contacts name bodies below n (picks
        // and used hold n); the table as for collide_colour_pick.
        unsafe { l.launch(at.over_contacts) }.map(drop).map_err(launch_err("launching collide_colour_take"))
    }

    /// The colouring's end: what no round coloured goes to the overflow, the
    /// coloured manifolds are listed by colour, and each body counts its
    /// points left to the Jacobi pass (its split).
    pub(super) fn end(&self, stream: &Arc<CudaStream>, at: &ColourArgs) -> CollideResult<()> {
        let (cp, tp, sp) = (raw_ptr(&self.colour), self.table.ptr(), self.split.ptr());
        let mut l = stream.launch_builder(&self.finish);
        l.arg(&at.contacts).arg(&at.words).arg(&at.contact_word).arg(&cp).arg(&tp);
        // SAFETY: matches collide_colour_finish(const Contact*, const u64*, u64, u32*, u32*); as for
        // collide_colour_init; colours below MAX_COLOURS index the table's counts.
        unsafe { l.launch(at.over_contacts) }.map_err(launch_err("launching collide_colour_finish"))?;
        let mut l = stream.launch_builder(&self.scan);
        l.arg(&tp);
        let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: matches collide_colour_scan(u32*); the table holds TABLE u32s.
        unsafe { l.launch(one) }.map_err(launch_err("launching collide_colour_scan"))?;
        let op = raw_ptr(&self.order);
        let mut l = stream.launch_builder(&self.place);
        l.arg(&at.contacts).arg(&at.words).arg(&at.contact_word).arg(&cp).arg(&tp).arg(&op);
        // SAFETY: matches collide_colour_order(const Contact*, const u64*, u64, const u32*, u32*, u64*); the
        // cursors place each coloured manifold once, below the frame's contact count (the slots `order` holds).
        unsafe { l.launch(at.over_contacts) }.map_err(launch_err("launching collide_colour_order"))?;
        let mut l = stream.launch_builder(&self.count_split);
        l.arg(&at.bodies).arg(&at.n).arg(&at.ends).arg(&at.first).arg(&at.counts).arg(&cp).arg(&at.words).arg(&sp);
        // SAFETY: matches collide_split(const Body*, u32, const u32*, const u32*, const u32*, const u32*, const
        // u64*, u32*); as for collide_colour_pick; split holds n entries.
        unsafe { l.launch(at.over_bodies) }.map(drop).map_err(launch_err("launching collide_split"))
    }

    /// Enqueues colour `k` of a coloured pass (a relax pass with `relax`
    /// 1): each of its manifolds' points move its bodies (`over` a
    /// grid-stride launch over the contact slots).
    pub(super) fn solve(
        &self,
        stream: &Arc<CudaStream>,
        at: &ColourArgs,
        w: &World,
        k: u32,
        relax: u32,
        over: LaunchConfig,
    ) -> CollideResult<()> {
        let (op, tp) = (raw_ptr(&self.order), self.table.ptr());
        let mut l = stream.launch_builder(&self.solve);
        l.arg(&at.contacts).arg(&at.words).arg(&at.bodies).arg(&op).arg(&tp).arg(&k).arg(w).arg(&relax);
        // SAFETY: matches collide_solve_colour(Contact*, const u64*, Body*, const u64*, const u32*, u32, World,
        // u32); colour k's part of `order` (collide_colour_order) names runs of the frame's contacts whose movable
        // bodies no other run of the colour names: each thread reads and writes its own.
        unsafe { l.launch(over) }.map(drop).map_err(launch_err("launching collide_solve_colour"))
    }
}
