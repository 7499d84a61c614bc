//! One GPU rank of the split collider: its steps at the frame's start and
//! after the broad phase, each a launch of split.cu (or the library's
//! select), and the helpers they share.

use std::ops::Range;

use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};

use super::{Carried, GpuRank, Peer, Picked};
use crate::collide::cuda::{SPLIT, launch_err};
use crate::collide::layout::{Body, Contact, World};
use crate::collide::{CollideError, CollideResult, Engine};
use crate::compaction::cuda::{CudaBackend, CudaBuffer};
use crate::compaction::{Algorithm, Backend, Keep, Report};
use crate::cuda_runtime::{self, Spec};

/// u32s of a body and of a contact: the widths collide_pack moves them in.
pub(super) const BODY_WORDS: u32 = (std::mem::size_of::<Body>() / 4) as u32;
pub(super) const CONTACT_WORDS: u32 = (std::mem::size_of::<Contact>() / 4) as u32;
/// split.cu's SPLIT_MISSING: no body of that spawn number here.
pub(super) const MISSING: u32 = u32::MAX;

/// split.cu's kernels on one GPU.
pub(super) struct Kernels {
    pack: CudaFunction,
    mine: CudaFunction,
    iota: CudaFunction,
    bound_for: CudaFunction,
    reach: CudaFunction,
    halo: CudaFunction,
    name_contacts: CudaFunction,
    place: CudaFunction,
    found: CudaFunction,
    place_contacts: CudaFunction,
    places_of: CudaFunction,
    ids_of: CudaFunction,
    mark: CudaFunction,
    marked_contacts: CudaFunction,
}

impl Kernels {
    pub(super) fn new(b: &CudaBackend) -> CollideResult<Kernels> {
        let f = |name: &str| b.kernels().function(&SPLIT, &Spec::default(), name);
        Ok(Kernels {
            pack: f("collide_pack")?,
            mine: f("collide_mine")?,
            iota: f("collide_iota")?,
            bound_for: f("collide_bound_for")?,
            reach: f("collide_reach")?,
            halo: f("collide_halo")?,
            name_contacts: f("collide_name_contacts")?,
            place: f("collide_where")?,
            found: f("collide_found")?,
            place_contacts: f("collide_place_contacts")?,
            places_of: f("collide_places_of")?,
            ids_of: f("collide_ids_of")?,
            mark: f("collide_mark")?,
            marked_contacts: f("collide_marked_contacts")?,
        })
    }
}

/// A grid-stride launch over `count` items (at least one block).
pub(super) fn over(count: u64) -> LaunchConfig {
    let blocks = count.div_ceil(256).clamp(1, 65_535) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
}

pub(super) fn launched(r: Result<impl Sized, cudarc::driver::DriverError>, name: &'static str) -> CollideResult<()> {
    r.map(drop).map_err(launch_err(name))
}

/// A u32 buffer of zeroes.
pub(super) fn zeroed_u32(b: &CudaBackend, n: u64) -> CollideResult<CudaBuffer<u32>> {
    let out: CudaBuffer<u32> = b.alloc(n.max(1))?;
    // SAFETY: the range is the buffer's, on the backend's stream's device.
    let r = unsafe { cudarc::driver::sys::cuMemsetD32Async(out.ptr(), 0, n.max(1) as usize, b.stream().cu_stream()) };
    r.result().map_err(launch_err("zeroing a table"))?;
    Ok(out)
}

impl Peer {
    pub(super) fn new(b: &CudaBackend) -> CollideResult<Peer> {
        Ok(Peer {
            migrants: b.alloc(1)?,
            contacts: b.alloc(1)?,
            ghosts: b.alloc(1)?,
            migrants_out: b.alloc(1)?,
            contacts_out: b.alloc(1)?,
            ghosts_out: b.alloc(1)?,
        })
    }
}

/// Runs `f` on every rank at once, a host thread each (its GPU's context
/// current there): a rank's selects wait for their counts, and the ranks'
/// waits overlap.
pub(super) fn each_rank<T: Send>(
    ranks: &mut [GpuRank],
    f: impl Fn(usize, &mut GpuRank) -> CollideResult<T> + Sync,
) -> CollideResult<Vec<T>> {
    std::thread::scope(|scope| {
        let f = &f;
        let running: Vec<_> = ranks
            .iter_mut()
            .enumerate()
            .map(|(r, rank)| {
                scope.spawn(move || {
                    rank.engine.bind()?;
                    f(r, rank)
                })
            })
            .collect();
        running
            .into_iter()
            .map(|r| r.join().unwrap_or_else(|_| Err(CollideError::Settings("a rank's thread panicked".into()))))
            .collect()
    })
}

/// Room for `len` items in `buffer`: it grows (with room to spare) when it
/// holds fewer, and keeps its allocation otherwise.
pub(super) fn room<T: crate::compaction::Element>(
    b: &CudaBackend,
    buffer: &mut CudaBuffer<T>,
    len: u64,
) -> CollideResult<()> {
    if buffer.capacity() < len.max(1) {
        *buffer = b.alloc(len.max(1) + len / 8)?;
    }
    Ok(buffer.set_len(len)?)
}

/// The Morton codes of `range` as aligned cubes of cells, 4 u32 each (x, y,
/// z of the first cell, side): the largest aligned block at each step, so a
/// range cut at a coarse cell's boundary is a few dozen cubes.
pub(super) fn blocks(range: Range<u32>) -> Vec<u32> {
    let (mut at, end) = (range.start as u64, (range.end as u64).min(1 << 30));
    let mut out = Vec::new();
    while at < end {
        let mut bits = 0;
        while bits + 3 <= 30 && at % (1 << (bits + 3)) == 0 && at + (1 << (bits + 3)) <= end {
            bits += 3;
        }
        // A block of 2^bits codes that is not a cube (bits not a multiple of 3) is never chosen: each
        // step takes a cube, and the next steps the rest.
        let axis = |shift: u32| {
            let mut v = 0u32;
            for i in 0..10 {
                v |= (((at >> (3 * i + shift)) & 1) as u32) << i;
            }
            v
        };
        out.extend_from_slice(&[axis(2), axis(1), axis(0), 1 << (bits / 3)]);
        at += 1 << bits;
    }
    out
}

impl Carried {
    /// u32s of one record.
    pub(super) fn words(self) -> u32 {
        match self {
            Carried::Migrants | Carried::Ghosts => BODY_WORDS,
            Carried::Contacts => CONTACT_WORDS,
        }
    }
}

impl GpuRank {
    /// Packs `count` records of `what` for rank d (its migrants or ghosts
    /// there from `own` or `now`, their contacts from `named`) into the
    /// buffer that carries them: its address.
    pub(super) fn stage(&mut self, what: Carried, d: usize, count: u32) -> CollideResult<u64> {
        self.engine.bind()?;
        let words = count as u64 * what.words() as u64;
        let GpuRank { engine, peers, own, named, now, .. } = self;
        let peer = &mut peers[d];
        let (field, out) = match what {
            Carried::Migrants => (own.ptr(), &mut peer.migrants_out),
            Carried::Contacts => (named.ptr(), &mut peer.contacts_out),
            Carried::Ghosts => (now.ptr(), &mut peer.ghosts_out),
        };
        room(engine.rank_backend(), out, words)?;
        let src = out.ptr();
        let peer = &self.peers[d];
        let places = match what {
            Carried::Migrants => &peer.migrants,
            Carried::Contacts => &peer.contacts,
            Carried::Ghosts => &peer.ghosts,
        };
        self.pack(field, what.words(), places, count, src)?;
        Ok(src)
    }

    /// The library's select over the first `n` of `flags`, into the list
    /// `which` names: how many it kept.
    pub(super) fn select(&mut self, n: u32, which: Picked) -> CollideResult<u32> {
        self.iota_for(n)?;
        let GpuRank { engine, iota, flags, kept, found, peers, .. } = self;
        let out = match which {
            Picked::Kept => kept,
            Picked::Found => found,
            Picked::Migrants(d) => &mut peers[d].migrants,
            Picked::Contacts(d) => &mut peers[d].contacts,
            Picked::Ghosts(d) => &mut peers[d].ghosts,
        };
        let b = engine.rank_backend();
        room(b, out, n as u64)?;
        if n == 0 {
            return Ok(0);
        }
        flags.set_len(n as u64)?;
        let report = b.select(Algorithm::Lookback, iota, Keep::Flags(flags), out)?;
        Ok(report.count()? as u32)
    }

    /// `iota` holds 0..n at least (grown by collide_iota).
    pub(super) fn iota_for(&mut self, n: u32) -> CollideResult<()> {
        if self.iota.capacity() < n as u64 {
            let room = n as u64 + n as u64 / 8 + 1;
            self.iota = self.engine.rank_backend().alloc(room)?;
            let (p, count) = (self.iota.ptr(), room as u32);
            let mut l = self.engine.stream().launch_builder(&self.k.iota);
            l.arg(&p).arg(&count);
            // SAFETY: matches collide_iota(u32*, u32); the buffer holds `room` u32s.
            launched(unsafe { l.launch(over(room)) }, "launching collide_iota")?;
        }
        Ok(self.iota.set_len(n as u64)?)
    }

    /// `flags` has room for `n` (its contents unspecified).
    pub(super) fn flags_for(&mut self, n: u32) -> CollideResult<u64> {
        if self.flags.capacity() < n as u64 {
            self.flags = self.engine.rank_backend().alloc(n as u64 + n as u64 / 8 + 1)?;
        }
        self.flags.set_len(n as u64)?;
        Ok(self.flags.ptr())
    }

    pub(super) fn stream(&self) -> &std::sync::Arc<CudaStream> {
        self.engine.stream()
    }

    /// Enqueues collide_pack: the `width`-u32 items of `field` at `places` into `records`.
    pub(super) fn pack(
        &self,
        field: u64,
        width: u32,
        places: &CudaBuffer<u32>,
        count: u32,
        records: u64,
    ) -> CollideResult<()> {
        if count == 0 {
            return Ok(());
        }
        let (pp, zero) = (places.ptr(), 0u32);
        let mut l = self.stream().launch_builder(&self.k.pack);
        l.arg(&field).arg(&width).arg(&pp).arg(&count).arg(&records).arg(&width).arg(&zero);
        // SAFETY: matches collide_pack(const u32*, u32, const u32*, u32, u32*, u32, u32); `places` holds `count`
        // places of items in `field`, and `records` room for `count` items.
        launched(unsafe { l.launch(over(count as u64 * width as u64)) }, "launching collide_pack")
    }

    /// The bodies it owned after the last frame (collide_mine's flags), in
    /// the engine's order, into `own`: how many.
    pub(super) fn keep(&mut self) -> CollideResult<u32> {
        if !self.active {
            return Ok(0);
        }
        let n = self.engine.len();
        self.flags_for(n)?;
        // SAFETY: `mine` and `flags` hold at least n bytes on this device.
        unsafe {
            let (stream, to, from) = (self.stream(), self.flags.ptr(), self.mine.ptr());
            cuda_runtime::copy_dtod(stream, to, from, n as usize, "copying flags")
        }?;
        let count = self.select(n, Picked::Kept)?;
        room(self.engine.rank_backend(), &mut self.own, count as u64)?;
        self.pack(self.engine.bodies_ptr(), BODY_WORDS, &self.kept, count, self.own.ptr())?;
        Ok(count)
    }

    /// Its last frame's contacts (after the solver), named by spawn number, into `named`: how many.
    pub(super) fn name_contacts(&mut self) -> CollideResult<u32> {
        let count = if self.active { self.engine.contact_count() as u32 } else { 0 };
        room(self.engine.rank_backend(), &mut self.named, count as u64)?;
        if count > 0 {
            let (cp, bp, op) = (self.engine.contacts_ptr(), self.engine.bodies_ptr(), self.named.ptr());
            let mut l = self.stream().launch_builder(&self.k.name_contacts);
            l.arg(&cp).arg(&count).arg(&bp).arg(&op);
            // SAFETY: matches collide_name_contacts(const Contact*, u32, const Body*, Contact*); the engine's list
            // holds `count` contacts naming its bodies, and `named` room for them.
            launched(unsafe { l.launch(over(count as u64)) }, "launching collide_name_contacts")?;
        }
        Ok(count)
    }

    /// Flags the `count` bodies of `own` whose codes lie in rank d's range.
    pub(super) fn bound_for(&mut self, count: u32, w: &World, d: u32) -> CollideResult<()> {
        let fp = self.flags_for(count)?;
        if count == 0 {
            return Ok(());
        }
        let (bp, cp) = (self.own.ptr(), self.cuts.ptr());
        let mut l = self.stream().launch_builder(&self.k.bound_for);
        l.arg(&bp).arg(&count).arg(w).arg(&cp).arg(&d).arg(&fp);
        // SAFETY: matches collide_bound_for(const Body*, u32, World, const u32*, u32, u8*); `own` holds `count`,
        // the cuts ranks + 1 (d < ranks), the flags `count`.
        launched(unsafe { l.launch(over(count as u64)) }, "launching collide_bound_for")
    }

    /// Marks (or with 0 unmarks) its `count` migrants to rank d in the mark table.
    pub(super) fn mark(&self, d: usize, count: u32, value: u32) -> CollideResult<()> {
        if count == 0 {
            return Ok(());
        }
        let (bp, pp, mp) = (self.own.ptr(), self.peers[d].migrants.ptr(), self.mark.ptr());
        let mut l = self.stream().launch_builder(&self.k.mark);
        l.arg(&bp).arg(&pp).arg(&count).arg(&value).arg(&mp);
        // SAFETY: matches collide_mark(const Body*, const u32*, u32, u32, u32*); the places name bodies of `own`,
        // whose spawn numbers index the table (a slot per body of the scene).
        launched(unsafe { l.launch(over(count as u64)) }, "launching collide_mark")
    }

    /// Flags the `count` contacts of `named` that name a body marked `value`.
    pub(super) fn marked_contacts(&mut self, count: u32, value: u32) -> CollideResult<()> {
        let fp = self.flags_for(count)?;
        if count == 0 {
            return Ok(());
        }
        let (cp, mp) = (self.named.ptr(), self.mark.ptr());
        let mut l = self.stream().launch_builder(&self.k.marked_contacts);
        l.arg(&cp).arg(&count).arg(&mp).arg(&value).arg(&fp);
        // SAFETY: matches collide_marked_contacts(const Contact*, u32, const u32*, u32, u8*); the contacts name
        // bodies (or walls) by spawn number, which index the table.
        launched(unsafe { l.launch(over(count as u64)) }, "launching collide_marked_contacts")
    }

    /// The largest reach of a box past its body's centre among the first `count` bodies of `now`.
    pub(super) fn reach(&mut self, count: u32, w: &World) -> CollideResult<f32> {
        if count == 0 {
            return Ok(0.0);
        }
        // SAFETY: the word is this one-u32 allocation, on this stream's device.
        let r = unsafe { cudarc::driver::sys::cuMemsetD32Async(self.most.ptr(), 0, 1, self.stream().cu_stream()) };
        r.result().map_err(launch_err("zeroing a word"))?;
        let (bp, mp) = (self.now.ptr(), self.most.ptr());
        let mut l = self.stream().launch_builder(&self.k.reach);
        l.arg(&bp).arg(&count).arg(w).arg(&mp);
        // SAFETY: matches collide_reach(const Body*, u32, World, u32*); `now` holds `count`, `most` one u32.
        launched(unsafe { l.launch(over(count as u64)) }, "launching collide_reach")?;
        Ok(f32::from_bits(self.engine.rank_backend().download(&self.most)?[0]))
    }

    /// Flags the first `count` bodies of `now` whose boxes grown by `reach` meet rank t's range.
    pub(super) fn halo(&mut self, count: u32, w: &World, reach: f32, t: usize) -> CollideResult<()> {
        let fp = self.flags_for(count)?;
        if count == 0 {
            return Ok(());
        }
        let (bp, cp, cubes) = (self.now.ptr(), self.blocks[t].0.ptr(), self.blocks[t].1);
        let mut l = self.stream().launch_builder(&self.k.halo);
        l.arg(&bp).arg(&count).arg(w).arg(&reach).arg(&cp).arg(&cubes).arg(&fp);
        // SAFETY: matches collide_halo(const Body*, u32, World, float, const uint4*, u32, u8*); the cubes' buffer
        // holds `cubes` uint4s (at least one), the flags `count`.
        launched(unsafe { l.launch(over(count as u64)) }, "launching collide_halo")
    }

    /// Sets the ghosts' spawn numbers from the host: `sent[t]` those it
    /// sends rank t, `taken[o]` those it takes from owner o, in order.
    pub(super) fn set_ids(&mut self, sent: &[(usize, &[u32])], taken: &[(usize, &[u32])]) -> CollideResult<()> {
        let (sends, ids) = parts(sent);
        let (recvs, rids) = parts(taken);
        let b = self.engine.rank_backend();
        self.sent_ids = b.upload(if ids.is_empty() { &[0] } else { &ids })?;
        self.recv_ids = b.upload(if rids.is_empty() { &[0] } else { &rids })?;
        self.sends = sends;
        self.recvs = recvs;
        Ok(())
    }

    /// Sets the ghosts' spawn numbers on the device: `sends` as (rank,
    /// bodies, count, places) of the bodies it sends each rank, `takes` as
    /// (owner, first body, count) of the ghosts it took from each.
    pub(super) fn ids_from_device(
        &mut self,
        sends: &[(usize, u64, u32, u64)],
        takes: &[(usize, u64, u32)],
    ) -> CollideResult<()> {
        let b = self.engine.rank_backend();
        let total = |c: u32, acc: u64| acc + c as u64;
        self.sent_ids = b.alloc(sends.iter().fold(0, |a, s| total(s.2, a)).max(1))?;
        self.recv_ids = b.alloc(takes.iter().fold(0, |a, s| total(s.2, a)).max(1))?;
        self.sends.clear();
        self.recvs.clear();
        let mut at = 0u32;
        for &(t, bodies, count, places) in sends.iter().filter(|s| s.2 > 0) {
            self.ids_of(bodies, places, count, self.sent_ids.ptr() + at as u64 * 4)?;
            self.sends.push((t, at..at + count));
            at += count;
        }
        let mut at = 0u32;
        for &(o, bodies, count) in takes.iter().filter(|s| s.2 > 0) {
            self.ids_of(bodies, 0, count, self.recv_ids.ptr() + at as u64 * 4)?;
            self.recvs.push((o, at..at + count));
            at += count;
        }
        Ok(())
    }

    /// Enqueues collide_ids_of: the spawn numbers of `count` bodies (at `places`, or the first ones when 0).
    pub(super) fn ids_of(&self, bodies: u64, places: u64, count: u32, ids: u64) -> CollideResult<()> {
        let mut l = self.stream().launch_builder(&self.k.ids_of);
        l.arg(&bodies).arg(&places).arg(&count).arg(&ids);
        // SAFETY: matches collide_ids_of(const Body*, const u32*, u32, u32*); the places (or the first `count`)
        // name bodies of the buffer, and `ids` has room for `count`.
        launched(unsafe { l.launch(over(count as u64)) }, "launching collide_ids_of")
    }

    /// Enqueues the place table of the engine's bodies (a slot per spawn number).
    pub(super) fn place_table(&self) -> CollideResult<()> {
        let (n, pp, bp) = (self.engine.len(), self.place.ptr(), self.engine.bodies_ptr());
        // SAFETY: the table holds a u32 per body of the scene, on this stream's device.
        let r = unsafe {
            cudarc::driver::sys::cuMemsetD32Async(pp, MISSING, self.place.len() as usize, self.stream().cu_stream())
        };
        r.result().map_err(launch_err("clearing the place table"))?;
        let mut l = self.stream().launch_builder(&self.k.place);
        l.arg(&bp).arg(&n).arg(&pp);
        // SAFETY: matches collide_where(const Body*, u32, u32*); the engine holds n bodies whose spawn numbers
        // index the table.
        launched(unsafe { l.launch(over(n as u64)) }, "launching collide_where")
    }

    /// The previous contacts of the bodies loaded (the first `count` of
    /// `taken`): those whose bodies are both here, named by their places as
    /// loaded, into the engine's warm start.
    pub(super) fn load_contacts(&mut self, count: u32) -> CollideResult<()> {
        self.place_table()?;
        let fp = self.flags_for(count)?;
        if count > 0 {
            let (cp, pp) = (self.taken.ptr(), self.place.ptr());
            let mut l = self.stream().launch_builder(&self.k.found);
            l.arg(&cp).arg(&count).arg(&pp).arg(&fp);
            // SAFETY: matches collide_found(const Contact*, u32, const u32*, u8*); the contacts name bodies by spawn
            // number, which index the table; the flags hold `count`.
            launched(unsafe { l.launch(over(count as u64)) }, "launching collide_found")?;
        }
        let found = self.select(count, Picked::Found)?;
        let slot = self.engine.previous_slot(found as u64)?;
        if found > 0 {
            let (cp, kp, pp) = (self.taken.ptr(), self.found.ptr(), self.place.ptr());
            let mut l = self.stream().launch_builder(&self.k.place_contacts);
            l.arg(&cp).arg(&kp).arg(&found).arg(&pp).arg(&slot);
            // SAFETY: matches collide_place_contacts(const Contact*, const u32*, u32, const u32*, Contact*);
            // `found` indices of contacts whose bodies are in the table, and the slot room for them.
            launched(unsafe { l.launch(over(found as u64)) }, "launching collide_place_contacts")?;
        }
        Ok(())
    }

    /// Room for the next frame's start, from this frame's `n` bodies and
    /// `contacts` (each buffer still grows when it must): the first frame
    /// on the GPUs then allocates nothing, as no later one does.
    pub(super) fn reserve(&mut self, n: u32, contacts: u32) -> CollideResult<()> {
        self.flags_for(n.max(contacts))?;
        self.iota_for(n.max(contacts))?;
        let GpuRank { engine, own, now, named, taken, kept, found, peers, .. } = self;
        let b = engine.rank_backend();
        let (n, c) = (n as u64, contacts as u64);
        room(b, own, n)?;
        room(b, now, n)?;
        room(b, named, c)?;
        room(b, taken, c)?;
        room(b, kept, n)?;
        room(b, found, c)?;
        for peer in peers {
            room(b, &mut peer.migrants, n)?;
            room(b, &mut peer.contacts, c)?;
            room(b, &mut peer.ghosts, n)?;
        }
        Ok(())
    }

    /// After the broad and narrow phase: which bodies it owns, and the
    /// exchanges' lists (the ghosts' places on both sides).
    pub(super) fn index(&mut self, w: &World) -> CollideResult<()> {
        let n = self.engine.len() as u64;
        if self.mine.capacity() < n {
            self.mine = self.engine.rank_backend().alloc(n + n / 8 + 1)?;
        }
        self.mine.set_len(n)?;
        let (bp, mp, (lo, hi)) = (self.engine.bodies_ptr(), self.mine.ptr(), self.engine.owned_range());
        let count = n as u32;
        let mut l = self.stream().launch_builder(&self.k.mine);
        l.arg(&bp).arg(&count).arg(w).arg(&lo).arg(&hi).arg(&mp);
        // SAFETY: matches collide_mine(const Body*, u32, World, u32, u32, u8*); both hold n.
        launched(unsafe { l.launch(over(n)) }, "launching collide_mine")?;
        self.place_table()?;
        let b = self.engine.rank_backend();
        let (s, r) = (self.sends.last().map_or(0, |p| p.1.end), self.recvs.last().map_or(0, |p| p.1.end));
        self.send = b.alloc(s.max(1) as u64)?;
        self.recv = b.alloc(r.max(1) as u64)?;
        for (ids, places, count) in [(&self.sent_ids, &self.send, s), (&self.recv_ids, &self.recv, r)] {
            if count == 0 {
                continue;
            }
            let (tp, ip, pp) = (self.place.ptr(), ids.ptr(), places.ptr());
            let mut l = self.stream().launch_builder(&self.k.places_of);
            l.arg(&tp).arg(&ip).arg(&count).arg(&pp);
            // SAFETY: matches collide_places_of(const u32*, const u32*, u32, u32*); every id is a body of this
            // engine, whose place the table holds; `places` has room for `count`.
            launched(unsafe { l.launch(over(count as u64)) }, "launching collide_places_of")?;
        }
        let words = s.max(r).max(1) as u64 * BODY_WORDS as u64;
        if self.out.len() < words {
            self.out = b.alloc(words)?;
            self.into = b.alloc(2 * words)?;
        }
        Ok(())
    }
}

/// Lists by peer, concatenated: each peer's part, and the whole.
pub(super) fn parts(lists: &[(usize, &[u32])]) -> (Vec<(usize, Range<u32>)>, Vec<u32>) {
    let (mut parts, mut all) = (Vec::new(), Vec::new());
    for &(peer, list) in lists.iter().filter(|l| !l.1.is_empty()) {
        parts.push((peer, all.len() as u32..(all.len() + list.len()) as u32));
        all.extend_from_slice(list);
    }
    (parts, all)
}

#[cfg(test)]
mod tests {
    use super::blocks;

    /// A code's cell (x, y, z): the inverse of physics::morton's interleave.
    pub(super) fn cell(code: u32) -> [u32; 3] {
        let axis = |shift: u32| (0..10).fold(0, |v, i| v | (((code >> (3 * i + shift)) & 1) << i));
        [axis(2), axis(1), axis(0)]
    }

    /// The cubes of a range hold exactly its codes: each code inside lies
    /// in one cube, and none outside lies in any.
    #[test]
    pub(super) fn a_ranges_cubes_hold_exactly_its_codes() {
        let ranges =
            [0..1 << 30, 4096..4096 + 8 * 512, 12_345..98_765, 1_000_000..1_000_001, (1 << 29) - 70_000..1 << 29];
        for range in ranges {
            let cubes = blocks(range.clone());
            assert!(cubes.len() / 4 <= 7 * 2 * 10, "{range:?}: {} cubes", cubes.len() / 4);
            let lo = range.start.saturating_sub(5000);
            let hi = range.end.saturating_add(5000).min(1 << 30);
            // The whole space is too many codes to walk: its ends and a stride through it.
            let step = ((hi - lo) / 200_000).max(1);
            for code in (lo..hi).step_by(step as usize).chain([range.start, range.end.saturating_sub(1)]) {
                let [x, y, z] = cell(code);
                let inside = cubes.chunks(4).filter(|c| {
                    x >= c[0] && x < c[0] + c[3] && y >= c[1] && y < c[1] + c[3] && z >= c[2] && z < c[2] + c[3]
                });
                assert_eq!(inside.count(), range.contains(&code) as usize, "{range:?}: code {code}");
            }
        }
    }
}
