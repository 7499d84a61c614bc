//! [`SplitEngine`] for each engine: how its sums move between ranks (copies
//! between CPU ranks or the cluster's sockets, NCCL between GPUs; wgpu
//! renders alone).

use std::sync::Arc;

use rayon::prelude::*;

use super::{SplitEngine, SumMove};
use crate::cluster::Cluster;
use crate::trace::{TraceError, TraceResult};

/// What connects CPU engines: nothing in one process, the cluster's sockets between processes.
pub enum CpuSplitComm {
    Local,
    Processes(Arc<Cluster>),
}

impl SplitEngine for crate::trace::cpu::CpuEngine {
    type Comm = CpuSplitComm;
    fn connect(_: &[Self]) -> TraceResult<CpuSplitComm> {
        Ok(CpuSplitComm::Local)
    }
    fn join(_: &Self, cluster: &Arc<Cluster>) -> TraceResult<CpuSplitComm> {
        Ok(CpuSplitComm::Processes(cluster.clone()))
    }
    fn carrier(comm: &CpuSplitComm) -> String {
        match comm {
            CpuSplitComm::Local => "host memory (CPU ranks)".into(),
            CpuSplitComm::Processes(c) => format!("TCP sockets between {} processes (CPU ranks)", c.ranks()),
        }
    }
    fn move_sums(comm: &CpuSplitComm, engines: &mut [Self], first: usize, moves: &[SumMove]) -> TraceResult<()> {
        let moves = moves.iter().filter(|m| m.from != m.to && m.count > 0);
        let cluster = match comm {
            CpuSplitComm::Local => {
                for m in moves {
                    let range = m.first as usize..(m.first + m.count) as usize;
                    let part = engines[m.from - first].sums()[range.clone()].to_vec();
                    engines[m.to - first].sums_mut()[range].copy_from_slice(&part);
                }
                return Ok(());
            }
            CpuSplitComm::Processes(c) => c,
        };
        let held_count = engines.len();
        let held = |rank: usize| rank.checked_sub(first).filter(|&i| i < held_count);
        // Each process sends what leaves its ranks: (to, first, count, sums); each keeps what comes to its own.
        let mut mine = Vec::new();
        for m in moves.clone() {
            if let Some(i) = held(m.from) {
                let range = m.first as usize..(m.first + m.count) as usize;
                for word in [m.to as u64, m.first, m.count] {
                    mine.extend_from_slice(&word.to_le_bytes());
                }
                mine.extend_from_slice(bytemuck::cast_slice(&engines[i].sums()[range]));
            }
        }
        let bad = || TraceError::Settings("a rank sent a malformed band of sums".into());
        for theirs in cluster.all_gather(&mine)? {
            let mut rest = theirs.as_slice();
            while let Some((head, tail)) = rest.split_first_chunk::<24>() {
                let word = |i: usize| u64::from_le_bytes(head[i * 8..i * 8 + 8].try_into().unwrap());
                let (to, at, count) = (word(0) as usize, word(1) as usize, word(2) as usize);
                let (data, after) = tail.split_at_checked(count * 16).ok_or_else(bad)?;
                if let Some(i) = held(to) {
                    let sums = engines[i].sums_mut().get_mut(at..at + count).ok_or_else(bad)?;
                    bytemuck::cast_slice_mut::<[f32; 4], u8>(sums).copy_from_slice(data);
                }
                rest = after;
            }
        }
        Ok(())
    }
    fn hold(&mut self, first: u64, count: u64, to_held: bool) -> TraceResult<()> {
        let (sums, held) = self.sums_and_held();
        let range = pixels(first, count, sums.len())?;
        match to_held {
            true => held[range.clone()].copy_from_slice(&sums[range]),
            false => sums[range.clone()].copy_from_slice(&held[range]),
        }
        Ok(())
    }
    fn reduce_samples(
        comm: &CpuSplitComm,
        engines: &mut [Self],
        first: usize,
        count: usize,
        bands: &[(u64, u64)],
    ) -> TraceResult<()> {
        // Every sample of the round, in rank order: this process's, or every process's through the sockets.
        let samples: Vec<Vec<[f32; 4]>> = match comm {
            CpuSplitComm::Local => engines[..count].iter().map(|e| e.sums().to_vec()).collect(),
            CpuSplitComm::Processes(c) => {
                // One engine a process: rank `first`.
                let mine = match first < count {
                    true => bytemuck::cast_slice(engines[0].sums()).to_vec(),
                    false => Vec::new(),
                };
                let all = c.all_gather(&mine)?;
                let bad = |r: usize| TraceError::Settings(format!("rank {r} sent a malformed sample"));
                (0..count)
                    .map(|r| {
                        let bytes = all.get(r).filter(|b| b.len() % 16 == 0).ok_or_else(|| bad(r))?;
                        Ok(bytemuck::pod_collect_to_vec(bytes))
                    })
                    .collect::<TraceResult<_>>()?
            }
        };
        for (i, e) in engines.iter_mut().enumerate() {
            let (at, n) = bands[first + i];
            let (_, held) = e.sums_and_held();
            let range = pixels(at, n, held.len())?;
            for sample in &samples {
                let part = sample.get(range.clone()).ok_or_else(|| {
                    TraceError::Settings(format!("a sample of {} pixels lacks the band {range:?}", sample.len()))
                })?;
                // The four additions of crate::trace::cpu's accumulate, a sample's radiance and its count of 1.
                held[range.clone()].par_iter_mut().zip(part).for_each(|(s, p)| {
                    *s = [s[0] + p[0], s[1] + p[1], s[2] + p[2], s[3] + p[3]];
                });
            }
        }
        Ok(())
    }
}

/// Pixels `[first, first + count)` of an image of `len`, as a range to index with.
fn pixels(first: u64, count: u64, len: usize) -> TraceResult<std::ops::Range<usize>> {
    crate::trace::Shard { base: first, count }.check(len as u64)?;
    Ok(first as usize..(first + count) as usize)
}

#[cfg(feature = "cuda")]
impl SplitEngine for crate::trace::cuda::CudaEngine {
    /// `None` for one engine.
    type Comm = Option<crate::cuda_runtime::nccl::Comms>;
    fn connect(engines: &[Self]) -> TraceResult<Self::Comm> {
        if engines.len() < 2 {
            return Ok(None);
        }
        let streams = engines.iter().map(|e| e.stream().clone()).collect();
        Ok(Some(crate::cuda_runtime::nccl::Comms::new(streams).map_err(crate::compaction::Error::from)?))
    }
    fn join(engine: &Self, cluster: &Arc<Cluster>) -> TraceResult<Self::Comm> {
        if cluster.ranks() < 2 {
            return Ok(None);
        }
        let comms = crate::cuda_runtime::nccl::Comms::join(engine.stream().clone(), cluster);
        Ok(Some(comms.map_err(crate::compaction::Error::from)?))
    }
    fn carrier(comm: &Self::Comm) -> String {
        match comm {
            Some(_) => crate::cuda_runtime::nccl::carrier(),
            None => "one GPU (no collectives)".into(),
        }
    }
    fn move_sums(comm: &Self::Comm, engines: &mut [Self], first: usize, moves: &[SumMove]) -> TraceResult<()> {
        const PIXEL: u64 = 16; // an RGBA f32 sum
        // Another process gives the address of a rank it holds (0 here).
        let sums = |rank: usize| rank.checked_sub(first).and_then(|i| engines.get(i)).map_or(0, |e| e.sums_ptr());
        let raw: Vec<crate::cuda_runtime::nccl::Move> = moves
            .iter()
            .filter(|m| m.from != m.to && m.count > 0)
            .map(|m| crate::cuda_runtime::nccl::Move {
                from: m.from,
                src: sums(m.from) + m.first * PIXEL,
                to: m.to,
                dst: sums(m.to) + m.first * PIXEL,
                bytes: m.count * PIXEL,
            })
            .collect();
        if raw.is_empty() {
            return Ok(());
        }
        let comm = comm.as_ref().ok_or_else(|| TraceError::Settings("moving sums needs two engines".into()))?;
        comm.exchange(&raw).map_err(crate::compaction::Error::from)?;
        Ok(())
    }
    fn hold(&mut self, first: u64, count: u64, to_held: bool) -> TraceResult<()> {
        crate::trace::cuda::CudaEngine::hold(self, first, count, to_held)
    }
    fn reduce_samples(
        comm: &Self::Comm,
        engines: &mut [Self],
        first: usize,
        count: usize,
        bands: &[(u64, u64)],
    ) -> TraceResult<()> {
        const PIXEL: u64 = 16; // an RGBA f32 sum
        let held_count = engines.len();
        let local = |rank: usize| rank.checked_sub(first).filter(|&i| i < held_count);
        let senders = |owner: usize| (0..count).filter(move |&r| r != owner);
        // Each rank's room takes the others' samples of its band, one after another in rank order.
        let mut room = vec![0u64; bands.len()];
        for (owner, &(_, n)) in bands.iter().enumerate() {
            if let Some(i) = local(owner) {
                room[owner] = engines[i].sample_room(senders(owner).count() as u64 * n)?;
            }
        }
        let sums = |rank: usize| local(rank).map_or(0, |i| engines[i].sums_ptr());
        let mut moves = Vec::new();
        for (owner, &(at, n)) in bands.iter().enumerate() {
            for (slot, r) in senders(owner).enumerate() {
                moves.push(crate::cuda_runtime::nccl::Move {
                    from: r,
                    src: sums(r) + at * PIXEL,
                    to: owner,
                    dst: room[owner] + slot as u64 * n * PIXEL,
                    bytes: n * PIXEL,
                });
            }
        }
        if !moves.is_empty() {
            let comm = comm.as_ref().ok_or_else(|| TraceError::Settings("moving samples needs two engines".into()))?;
            comm.exchange(&moves).map_err(crate::compaction::Error::from)?;
        }
        // Each rank adds, in rank order, its own sample of its band from its sums and the others' from its room.
        for (owner, &(at, n)) in bands.iter().enumerate() {
            let Some(i) = local(owner) else { continue };
            let own = engines[i].sums_ptr() + at * PIXEL;
            for r in 0..count {
                let part = match r.cmp(&owner) {
                    std::cmp::Ordering::Equal => own,
                    // Slots skip the owner's own rank.
                    std::cmp::Ordering::Less => room[owner] + r as u64 * n * PIXEL,
                    std::cmp::Ordering::Greater => room[owner] + (r - 1) as u64 * n * PIXEL,
                };
                engines[i].add_to_held(at, part, n)?;
            }
        }
        engines.iter().try_for_each(|e| e.finish())
    }
}

/// One wgpu engine renders alone: wgpu has no collectives to carry sums
/// between devices, so a split of several engines is refused up front and
/// `move_sums` never has work (a single band never moves).
#[cfg(feature = "wgpu")]
impl SplitEngine for crate::trace::wgpu::WgpuEngine {
    type Comm = ();
    fn connect(engines: &[Self]) -> TraceResult<()> {
        if engines.len() > 1 {
            return Err(TraceError::Settings(format!(
                "--gpus > 1 needs CUDA (NCCL moves the bands' sums between GPUs); the wgpu backend renders on one \
                 adapter: use --gpus 1, or --backend cuda for {} GPUs",
                engines.len()
            )));
        }
        Ok(())
    }
    fn join(_: &Self, cluster: &Arc<Cluster>) -> TraceResult<()> {
        Err(TraceError::Settings(format!(
            "rank {} of {} processes on wgpu: wgpu has no collectives between processes; use --backend cuda",
            cluster.rank(),
            cluster.ranks()
        )))
    }
    fn carrier(_: &()) -> String {
        "one wgpu adapter (no collectives)".into()
    }
    fn hold(&mut self, first: u64, count: u64, _: bool) -> TraceResult<()> {
        Err(TraceError::Settings(format!(
            "holding pixels {first}..{}: a split by samples needs CUDA or CPU ranks; the wgpu backend renders with \
             one engine",
            first + count
        )))
    }
    fn reduce_samples(_: &(), _: &mut [Self], _: usize, _: usize, _: &[(u64, u64)]) -> TraceResult<()> {
        Err(TraceError::Settings(
            "a split by samples needs CUDA or CPU ranks; the wgpu backend renders with one engine".into(),
        ))
    }
    fn move_sums(_: &(), _: &mut [Self], _: usize, moves: &[SumMove]) -> TraceResult<()> {
        match moves.iter().find(|m| m.from != m.to && m.count > 0) {
            Some(m) => Err(TraceError::Settings(format!(
                "moving {} pixels' sums from engine {} to {}: the wgpu backend renders with one engine",
                m.count, m.from, m.to
            ))),
            None => Ok(()),
        }
    }
}
