//! The split collider's frame's start: from the host (the first frame, a
//! rebalance), or on the GPUs, where migrants, their contacts and ghosts
//! move between ranks by NCCL and the host reads counts only.

use std::time::Instant;

use super::rank::{BODY_WORDS, blocks, each_rank, room};
use super::{Carried, CudaSplit, Picked};
use crate::collide::CollideResult;
use crate::collide::split::{Holding, held_bodies, migrate};
use crate::compaction::Backend;
use crate::cuda_runtime;
use crate::cuda_runtime::nccl::Move;

impl CudaSplit {
    /// Loads every rank from bodies and contacts on the host (the first
    /// frame, or a rebalance): ownership and halo as the CPU ranks find
    /// them. Returns how many bodies changed rank.
    pub(super) fn load_from_host(&mut self, mut holds: Vec<Holding>) -> CollideResult<u64> {
        let w = self.world;
        let migrated = migrate(&mut holds.iter_mut().collect::<Vec<_>>(), &w);
        let held = held_bodies(&holds.iter().collect::<Vec<_>>(), &w);
        let n = self.bodies as usize;
        let mut owner = vec![u32::MAX; n];
        for (r, h) in holds.iter().enumerate() {
            h.owned.iter().for_each(|b| owner[b.id as usize] = r as u32);
        }
        self.ranges = holds.iter().map(|h| h.range.clone()).collect();
        let ranks = self.ranks.len();
        // ids[to][owner]: the ghosts `to` takes from each owner, in the order it holds them.
        let ids: Vec<Vec<Vec<u32>>> = held
            .iter()
            .enumerate()
            .map(|(to, bodies)| {
                let mut from = vec![Vec::new(); ranks];
                for b in bodies.iter().filter(|b| owner[b.id as usize] != to as u32) {
                    from[owner[b.id as usize] as usize].push(b.id);
                }
                from
            })
            .collect();
        self.set_ranges()?;
        for (r, (rank, (h, held))) in self.ranks.iter_mut().zip(holds.iter().zip(&held)).enumerate() {
            rank.engine.bind()?;
            rank.active = !h.owned.is_empty();
            rank.owned = h.owned.len() as u32;
            let sent: Vec<(usize, &[u32])> = (0..ranks).map(|to| (to, ids[to][r].as_slice())).collect();
            let taken: Vec<(usize, &[u32])> = (0..ranks).map(|o| (o, ids[r][o].as_slice())).collect();
            rank.set_ids(&sent, &taken)?;
            if rank.active {
                rank.engine.load(held, h.range.clone(), &h.previous)?;
            }
        }
        Ok(migrated)
    }

    /// Uploads the ranges: each rank's cuts, and every other rank's range as cubes of cells.
    fn set_ranges(&mut self) -> CollideResult<()> {
        let cuts: Vec<u32> = self.ranges.iter().map(|r| r.start).chain([u32::MAX]).collect();
        let cubes: Vec<Vec<u32>> = self.ranges.iter().map(|r| blocks(r.clone())).collect();
        for (r, rank) in self.ranks.iter_mut().enumerate() {
            rank.engine.bind()?;
            let b = rank.engine.rank_backend();
            rank.cuts = b.upload(&cuts)?;
            rank.blocks = Vec::new();
            for (t, c) in cubes.iter().enumerate() {
                let c: &[u32] = if t == r || c.is_empty() { &[0, 0, 0, 0] } else { c };
                rank.blocks.push((b.upload(c)?, if t == r { 0 } else { c.len() as u32 / 4 }));
            }
        }
        Ok(())
    }

    /// The frame's start on the GPUs (the module's steps 1 and 2): migrants
    /// and their contacts to their new ranks, ghosts to the ranks whose
    /// ranges their boxes reach, every engine loaded. Returns how many
    /// bodies changed rank, or `None` when a rank would hold more than
    /// [`crate::collide::split::REBALANCE`] times its share (nothing has moved then).
    pub(super) fn hand_over(&mut self) -> CollideResult<Option<u64>> {
        let ranks = self.ranks.len();
        let w = self.world;
        let mut clock = Instant::now();
        let mut lap = |parts: &mut Vec<(String, f64)>, name: &str| {
            parts.push((name.to_string(), clock.elapsed().as_secs_f64() * 1e3));
            clock = Instant::now();
        };
        // What each rank kept of the last frame (its bodies, its contacts by spawn number), and where
        // each of those bodies goes: moves[r][d] bodies from r to d.
        let sorted = each_rank(&mut self.ranks, |_, rank| {
            let (own, named) = (rank.keep()?, rank.name_contacts()?);
            let mut to = Vec::new();
            for d in 0..ranks {
                rank.bound_for(own, &w, d as u32)?;
                to.push(rank.select(own, Picked::Migrants(d))?);
            }
            Ok((own, named, to))
        })?;
        let named: Vec<u32> = sorted.iter().map(|s| s.1).collect();
        let moves: Vec<Vec<u32>> = sorted.into_iter().map(|s| s.2).collect();
        lap(&mut self.parts, "keep and sort out");
        let held: Vec<u64> = (0..ranks).map(|d| moves.iter().map(|m| m[d] as u64).sum()).collect();
        let most = self.bodies as f64 / ranks as f64 * crate::collide::split::REBALANCE;
        if held.iter().any(|&h| h as f64 > most) {
            return Ok(None);
        }
        let crossing = || (0..ranks).flat_map(|r| (0..ranks).filter(move |&d| d != r).map(move |d| (r, d)));
        let migrated: u64 = crossing().map(|(r, d)| moves[r][d] as u64).sum();

        // Each rank's bodies now: those it kept, then those it takes from each rank in order.
        for (d, rank) in self.ranks.iter_mut().enumerate() {
            rank.engine.bind()?;
            room(rank.engine.rank_backend(), &mut rank.now, held[d])?;
            rank.pack(rank.own.ptr(), BODY_WORDS, &rank.peers[d].migrants, moves[d][d], rank.now.ptr())?;
        }
        let now: Vec<u64> = self.ranks.iter().map(|r| r.now.ptr()).collect();
        let kept: Vec<u64> = (0..ranks).map(|d| moves[d][d] as u64).collect();
        self.carry(Carried::Migrants, &moves, &now, kept)?;

        // The migrants' contacts, from the ranks they left (a contact between two ranks comes from both).
        let mut contacts = vec![vec![0u32; ranks]; ranks];
        for (r, d) in crossing().filter(|&(r, d)| moves[r][d] > 0) {
            let rank = &mut self.ranks[r];
            rank.engine.bind()?;
            let value = d as u32 + 1;
            rank.mark(d, moves[r][d], value)?;
            rank.marked_contacts(named[r], value)?;
            contacts[r][d] = rank.select(named[r], Picked::Contacts(d))?;
            rank.mark(d, moves[r][d], 0)?;
        }
        let mut taken = named.clone();
        for (d, rank) in self.ranks.iter_mut().enumerate() {
            let total = named[d] + (0..ranks).map(|r| contacts[r][d]).sum::<u32>();
            rank.engine.bind()?;
            room(rank.engine.rank_backend(), &mut rank.taken, total as u64)?;
            let bytes = named[d] as usize * 64;
            // SAFETY: both hold at least `named[d]` contacts on this rank's device.
            unsafe {
                let (to, from) = (rank.taken.ptr(), rank.named.ptr());
                cuda_runtime::copy_dtod(rank.engine.stream(), to, from, bytes, "keeping contacts")
            }?;
        }
        let into: Vec<u64> = self.ranks.iter().map(|r| r.taken.ptr()).collect();
        self.carry(Carried::Contacts, &contacts, &into, named.iter().map(|&c| c as u64).collect())?;
        for (d, total) in taken.iter_mut().enumerate() {
            *total += (0..ranks).map(|r| contacts[r][d]).sum::<u32>();
        }
        lap(&mut self.parts, "migrate");

        // The halo: each rank's bodies whose grown boxes reach another rank's range.
        let reaches = each_rank(&mut self.ranks, |r, rank| rank.reach(held[r] as u32, &w))?;
        // A margin for the rounding of the grown box's bounds.
        let reach = reaches.into_iter().fold(0.0f32, f32::max) * 1.001 + 1e-6;
        let ghosts = each_rank(&mut self.ranks, |r, rank| {
            let mut to = vec![0u32; ranks];
            for t in (0..ranks).filter(|&t| t != r && held[t] > 0) {
                rank.halo(held[r] as u32, &w, reach, t)?;
                to[t] = rank.select(held[r] as u32, Picked::Ghosts(t))?;
            }
            Ok(to)
        })?;
        lap(&mut self.parts, "halo");

        // Every engine loaded: its bodies, then its ghosts by owner.
        let mut clock = Instant::now();
        let mut lap = |parts: &mut Vec<(String, f64)>, name: &str| {
            parts.push((name.to_string(), clock.elapsed().as_secs_f64() * 1e3));
            clock = Instant::now();
        };
        let mut bodies_at = vec![0u64; ranks];
        for (t, rank) in self.ranks.iter_mut().enumerate() {
            rank.engine.bind()?;
            let n = held[t] + (0..ranks).map(|r| ghosts[r][t] as u64).sum::<u64>();
            rank.active = held[t] > 0;
            rank.owned = held[t] as u32;
            if !rank.active {
                continue;
            }
            bodies_at[t] = rank.engine.prepare(n, self.ranges[t].clone())?;
            // SAFETY: both hold at least held[t] bodies on this rank's device.
            unsafe {
                let (stream, from) = (rank.engine.stream(), rank.now.ptr());
                cuda_runtime::copy_dtod(stream, bodies_at[t], from, held[t] as usize * 80, "loading bodies")
            }?;
        }
        self.carry(Carried::Ghosts, &ghosts, &bodies_at, held.clone())?;
        lap(&mut self.parts, "load: bodies and ghosts");
        // The ghosts' spawn numbers on both sides, in one order: what the exchanges' lists are made of.
        for (r, rank) in self.ranks.iter_mut().enumerate() {
            rank.engine.bind()?;
            let sends: Vec<(usize, u64, u32, u64)> = (0..ranks)
                .filter(|&t| t != r)
                .map(|t| (t, rank.now.ptr(), ghosts[r][t], rank.peers[t].ghosts.ptr()))
                .collect();
            let mut at = held[r];
            let mut takes = Vec::new();
            for o in (0..ranks).filter(|&o| o != r) {
                takes.push((o, bodies_at[r] + at * 80, ghosts[o][r]));
                at += ghosts[o][r] as u64;
            }
            rank.ids_from_device(&sends, &takes)?;
        }
        lap(&mut self.parts, "load: ghost lists");
        // Each rank's previous contacts, named by its bodies' places as loaded.
        each_rank(&mut self.ranks, |t, rank| if rank.active { rank.load_contacts(taken[t]) } else { Ok(()) })?;
        lap(&mut self.parts, "load: contacts");
        Ok(Some(migrated))
    }

    /// Everything on the host: each rank's bodies and contacts by spawn
    /// number (a rebalance loads them again).
    pub(super) fn gather(&mut self) -> CollideResult<Vec<Holding>> {
        let mut holds = Vec::new();
        for (r, rank) in self.ranks.iter_mut().enumerate() {
            rank.engine.bind()?;
            let (count, c) = (rank.keep()?, rank.name_contacts()?);
            let b = rank.engine.rank_backend();
            let mut owned = b.download(&rank.own)?;
            owned.truncate(count as usize);
            let mut previous = b.download(&rank.named)?;
            previous.truncate(c as usize);
            holds.push(Holding { owned, previous, range: self.ranges[r].clone() });
        }
        Ok(holds)
    }

    /// Carries `what` between the ranks: `counts[r][d]` records from rank r
    /// (at its list of places for d) to rank d's buffer `into[d]`, after
    /// `first[d]` records, senders in rank order; one NCCL group.
    fn carry(&mut self, what: Carried, counts: &[Vec<u32>], into: &[u64], mut first: Vec<u64>) -> CollideResult<()> {
        let ranks = self.ranks.len();
        let record = 4 * what.words() as u64;
        let mut moves = Vec::new();
        for r in 0..ranks {
            for d in (0..ranks).filter(|&d| d != r && counts[r][d] > 0) {
                let count = counts[r][d];
                let src = self.ranks[r].stage(what, d, count)?;
                moves.push(Move {
                    from: r,
                    src,
                    to: d,
                    dst: into[d] + first[d] * record,
                    bytes: count as u64 * record,
                });
                first[d] += count as u64;
            }
        }
        self.exchange(&moves)
    }
}
