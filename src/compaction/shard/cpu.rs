//! Ranks on the CPU: each rank a `CpuBackend` over its own `Vec`s. In one
//! process the collectives are plain copies between them; where each rank is
//! a process ([`Cluster`]) they are messages over the cluster's sockets. It
//! runs the sharded protocol exactly as the GPUs do (device-resident counts,
//! one all-gather, the prefix added per rank), which is how CI checks it, and
//! the process launcher, without a GPU.

use std::sync::Arc;

use super::{Part, Sharding};
use crate::cluster::Cluster;
use crate::compaction::{Algorithm, Backend, CpuBackend, CpuReport, Element, Lens, Result, ScanElement};

/// What connects CPU ranks.
pub enum CpuComm {
    /// Every rank in this process.
    Local,
    /// This process's one rank of a cluster.
    Processes(Arc<Cluster>),
}

impl Sharding for CpuBackend {
    type Comm = CpuComm;

    fn connect(_: &[Self]) -> Result<CpuComm> {
        Ok(CpuComm::Local)
    }

    fn join(_: &Self, cluster: &Arc<Cluster>) -> Result<CpuComm> {
        Ok(CpuComm::Processes(cluster.clone()))
    }

    fn carrier(comm: &CpuComm) -> String {
        match comm {
            CpuComm::Local => "host memory (CPU ranks)".into(),
            CpuComm::Processes(c) => {
                format!("TCP sockets between {} processes (CPU ranks, rendezvous {})", c.ranks(), c.place().rendezvous)
            }
        }
    }

    fn all_gather_word(comm: &CpuComm, ranks: &[Self], words: &mut [Vec<u64>], src: u64, dst: u64) -> Result<()> {
        let mine: Vec<u64> = words.iter().take(ranks.len()).map(|w| w[src as usize]).collect();
        let sent = match comm {
            CpuComm::Local => mine,
            CpuComm::Processes(c) => {
                let all = c.all_gather(bytemuck::cast_slice(&mine))?;
                all.iter().flat_map(|b| b.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().unwrap()))).collect()
            }
        };
        for w in words.iter_mut().take(ranks.len()) {
            w[dst as usize..dst as usize + sent.len()].copy_from_slice(&sent);
        }
        Ok(())
    }

    fn gather<T: Element>(
        comm: &CpuComm,
        _: &[Self],
        parts: &[Part<'_, Self, T>],
        root: usize,
        dst: Option<&mut Vec<T>>,
    ) -> Result<()> {
        let cluster = match comm {
            CpuComm::Local => {
                let dst = dst.expect("one process holds the root");
                for p in parts {
                    let (s, a, n) = (p.start as usize, p.at as usize, p.len as usize);
                    dst[a..a + n].copy_from_slice(&p.buffer.expect("one process holds every rank")[s..s + n]);
                }
                return Ok(());
            }
            CpuComm::Processes(c) => c,
        };
        // Every process sends its parts (where each goes, then its bytes) to
        // rank 0, which passes them on to the root.
        let mut mine = Vec::new();
        for p in parts {
            if let Some(buffer) = p.buffer {
                let bytes: &[u8] = bytemuck::cast_slice(&buffer[p.start as usize..(p.start + p.len) as usize]);
                mine.extend_from_slice(&p.at.to_le_bytes());
                mine.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
                mine.extend_from_slice(bytes);
            }
        }
        let gathered = cluster.gather(&mine)?;
        let pieces = match (cluster.rank(), root) {
            (_, 0) => gathered,
            // Rank 0 forwards to the root (one broadcast: the other processes drop it).
            _ => {
                let relayed = cluster.broadcast(gathered.map(|g| g.concat()).as_deref())?;
                (cluster.rank() == root).then(|| vec![relayed])
            }
        };
        let (Some(dst), Some(pieces)) = (dst, pieces) else { return Ok(()) };
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(dst.as_mut_slice());
        let total = bytes.len();
        for piece in &pieces {
            let mut rest = piece.as_slice();
            while let Some((head, tail)) = rest.split_first_chunk::<16>() {
                let at = u64::from_le_bytes(head[..8].try_into().unwrap()) as usize * std::mem::size_of::<T>();
                let len = u64::from_le_bytes(head[8..].try_into().unwrap()) as usize;
                let (data, after) = tail.split_at_checked(len).ok_or_else(|| {
                    crate::cluster::ClusterError::Protocol { rank: cluster.rank(), what: "a truncated part".into() }
                })?;
                bytes
                    .get_mut(at..at + len)
                    .ok_or_else(|| crate::cluster::ClusterError::Protocol {
                        rank: cluster.rank(),
                        what: format!("a part past the gathered {total} bytes"),
                    })?
                    .copy_from_slice(data);
                rest = after;
            }
        }
        Ok(())
    }

    fn duplicate<T: Element>(&self, src: &Vec<T>) -> Result<Vec<T>> {
        Ok(src.clone())
    }

    /// The single-pass family, as on CUDA, so that CI runs the carried
    /// protocol (total, all-gather, one scan) on CPU ranks.
    fn takes_carry(&self, algorithm: Algorithm) -> bool {
        matches!(algorithm, Algorithm::Lookback | Algorithm::Chained)
    }

    fn total<S: ScanElement>(&self, input: &Vec<S>, n: u64, words: &mut Vec<u64>, dst: u64) -> Result<()> {
        // As the device does: 64-bit sums of the values, wrapping only where read as S.
        let sum = input[..n as usize].iter().fold(0u64, |a, &x| a.wrapping_add(x.to_u64()));
        words[dst as usize] = words[dst as usize].wrapping_add(sum);
        Ok(())
    }

    fn scan_carried<S: ScanElement>(
        &self,
        algorithm: Algorithm,
        input: &Vec<S>,
        output: &mut Vec<S>,
        lens: Lens<'_, Self>,
        first: u64,
        count: u32,
    ) -> Result<CpuReport> {
        let carry = lens.words[first as usize..(first + count as u64) as usize]
            .iter()
            .fold(S::ZERO, |a, &w| a.add(S::from_u64(w)));
        let n = lens.words[lens.input as usize];
        let report = self.exclusive_scan_counted(algorithm, input, output, lens)?;
        output[..n as usize].iter_mut().for_each(|x| *x = x.add(carry));
        Ok(report)
    }

    fn add_prefix<S: ScanElement>(
        &self,
        data: &mut Vec<S>,
        n: u64,
        words: &Vec<u64>,
        first: u64,
        count: u32,
    ) -> Result<()> {
        let prefix =
            words[first as usize..(first + count as u64) as usize].iter().fold(S::ZERO, |a, &w| a.add(S::from_u64(w)));
        data[..n as usize].iter_mut().for_each(|x| *x = x.add(prefix));
        Ok(())
    }

    fn finish(&self) -> Result<()> {
        Ok(())
    }
}
