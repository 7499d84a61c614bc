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
    fn add_sums(comm: &CpuSplitComm, engines: &mut [Self], first: usize, from: usize) -> TraceResult<()> {
        let held = |rank: usize| rank.checked_sub(first).filter(|&i| i < engines.len());
        let part: Vec<[f32; 4]> = match comm {
            CpuSplitComm::Local => engines[from - first].sums().to_vec(),
            CpuSplitComm::Processes(c) => {
                let mine = held(from).map_or(Vec::new(), |i| bytemuck::cast_slice(engines[i].sums()).to_vec());
                let Some(all) = c.gather(&mine)? else { return Ok(()) };
                let bytes = all.get(from).filter(|b| b.len() % 16 == 0);
                let bad = || TraceError::Settings(format!("rank {from} sent a malformed sample"));
                bytemuck::pod_collect_to_vec(bytes.ok_or_else(bad)?)
            }
        };
        let Some(zero) = held(0) else { return Ok(()) };
        let sums = engines[zero].sums_mut();
        if part.len() != sums.len() {
            return Err(TraceError::Settings(format!(
                "rank {from}'s sample has {} pixels and rank 0's image {}",
                part.len(),
                sums.len()
            )));
        }
        // The four additions of crate::trace::cpu's accumulate, a sample's radiance and its count of 1.
        sums.par_iter_mut().zip(&part).for_each(|(s, p)| *s = [s[0] + p[0], s[1] + p[1], s[2] + p[2], s[3] + p[3]]);
        Ok(())
    }
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
    fn add_sums(comm: &Self::Comm, engines: &mut [Self], first: usize, from: usize) -> TraceResult<()> {
        use crate::trace::Engine;
        let comm = comm.as_ref().ok_or_else(|| TraceError::Settings("adding a sample needs two engines".into()))?;
        let bytes = engines.first().map_or(0, |e| e.image_pixels()) * 16;
        let src = from.checked_sub(first).and_then(|i| engines.get(i)).map_or(0, |e| e.sums_ptr());
        // Rank 0's sample buffer, where this process holds rank 0 (0 elsewhere: never read).
        let dst = match first {
            0 => engines[0].sample_part()?,
            _ => 0,
        };
        let m = crate::cuda_runtime::nccl::Move { from, src, to: 0, dst, bytes };
        comm.exchange(&[m]).map_err(crate::compaction::Error::from)?;
        if first == 0 {
            engines[0].add_sample_part()?;
        }
        Ok(())
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
    fn add_sums(_: &(), _: &mut [Self], _: usize, from: usize) -> TraceResult<()> {
        Err(TraceError::Settings(format!("adding engine {from}'s sample: the wgpu backend renders with one engine")))
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
