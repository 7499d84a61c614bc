//! Ranks on CUDA devices: one `CudaBackend` (context and stream) per GPU, the
//! collectives through NCCL ([`crate::cuda_runtime::nccl`]), each enqueued on the
//! ranks' own streams so that nothing waits on the host. A group of one rank
//! needs no NCCL: its all-gather and gather are copies on its stream.

use cudarc::driver::PushKernelArg;

use super::{Group, Part, Sharding};
use crate::compaction::cuda::runtime::{KeepMode, SHARD, Variant, driver_error};
use crate::compaction::cuda::{CudaBackend, CudaBuffer};
use crate::compaction::{Element, Result, ScanElement};
use crate::cuda_runtime::nccl::{self, Comms, DataType};

/// The CUDA devices of one process as ranks.
pub type CudaGroup = Group<CudaBackend>;

impl CudaGroup {
    /// Ranks on devices 0..gpus, refusing more than the machine has.
    pub fn open(gpus: usize) -> Result<Self> {
        let count = crate::cuda_runtime::device_count()?;
        if gpus == 0 || gpus > count {
            return Err(crate::cuda_runtime::Error::Unavailable {
                what: format!("--gpus {gpus} asks for {gpus} GPUs and this machine has {count}"),
                how: "Give --gpus a number from 1 to the count `nvidia-smi -L` lists.",
            }
            .into());
        }
        Group::new((0..gpus).map(CudaBackend::new).collect::<Result<Vec<_>>>()?)
    }
}

fn word_ptr(words: &CudaBuffer<u64>, i: u64) -> u64 {
    words.ptr() + i * 8
}

impl Sharding for CudaBackend {
    /// `None` for a single rank.
    type Comm = Option<Comms>;

    fn connect(ranks: &[Self]) -> Result<Option<Comms>> {
        if ranks.len() < 2 {
            return Ok(None);
        }
        Ok(Some(Comms::new(ranks.iter().map(|b| b.stream().clone()).collect())?))
    }

    fn join(rank: &Self, cluster: &std::sync::Arc<crate::cluster::Cluster>) -> Result<Option<Comms>> {
        if cluster.ranks() < 2 {
            return Ok(None);
        }
        Ok(Some(Comms::join(rank.stream().clone(), cluster)?))
    }

    fn carrier(comm: &Option<Comms>) -> String {
        match comm {
            Some(_) => nccl::carrier(),
            None => "one GPU (no collectives)".into(),
        }
    }

    fn all_gather_word(
        comm: &Option<Comms>,
        ranks: &[Self],
        words: &mut [CudaBuffer<u64>],
        src: u64,
        dst: u64,
    ) -> Result<()> {
        match comm {
            Some(c) => {
                let send: Vec<u64> = words.iter().map(|w| word_ptr(w, src)).collect();
                let recv: Vec<u64> = words.iter().map(|w| word_ptr(w, dst)).collect();
                Ok(c.all_gather(&send, &recv, 1, DataType::U64)?)
            }
            None => copy(&ranks[0], word_ptr(&words[0], dst), word_ptr(&words[0], src), 8),
        }
    }

    fn gather<T: Element>(
        comm: &Option<Comms>,
        ranks: &[Self],
        parts: &[Part<'_, Self, T>],
        root: usize,
        dst: Option<&mut CudaBuffer<T>>,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>() as u64;
        // Where another process holds an end, its address is that process's to give (0 here).
        let dst = dst.map_or(0, |d| d.ptr());
        let moves: Vec<nccl::Move> = parts
            .iter()
            .map(|p| nccl::Move {
                from: p.rank,
                src: p.buffer.map_or(0, |b| b.ptr()) + p.start * size,
                to: root,
                dst: dst + p.at * size,
                bytes: p.len * size,
            })
            .collect();
        match comm {
            Some(c) => Ok(c.exchange(&moves)?),
            None => moves.iter().filter(|m| m.bytes > 0).try_for_each(|m| copy(&ranks[0], m.dst, m.src, m.bytes)),
        }
    }

    fn duplicate<T: Element>(&self, src: &CudaBuffer<T>) -> Result<CudaBuffer<T>> {
        use crate::compaction::Backend;
        let dst = self.alloc::<T>(src.len())?;
        if src.len() > 0 {
            copy(self, dst.ptr(), src.ptr(), src.len() * std::mem::size_of::<T>() as u64)?;
        }
        Ok(dst)
    }

    fn takes_carry(&self, algorithm: crate::compaction::Algorithm) -> bool {
        CudaBackend::scan_takes_carry(algorithm)
    }

    fn total<S: ScanElement>(
        &self,
        input: &CudaBuffer<S>,
        n: u64,
        words: &mut CudaBuffer<u64>,
        dst: u64,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let v = Variant::new(std::mem::size_of::<S>(), KeepMode::Flags);
        let f = self.kernels().function(&SHARD, &v, "shard_total")?;
        let (ptr, total) = (input.ptr(), word_ptr(words, dst));
        let mut l = self.stream().launch_builder(&f);
        l.arg(&ptr).arg(&n).arg(&total);
        // SAFETY: matches `shard_total(const Elem*, u64, u64*)`; the input holds n values, the word is the
        // caller's and zeroed.
        unsafe { l.launch(self.grid_stride(n, 256, 8)) }.map(drop).map_err(driver_error("launching shard_total"))
    }

    fn scan_carried<S: ScanElement>(
        &self,
        algorithm: crate::compaction::Algorithm,
        input: &CudaBuffer<S>,
        output: &mut CudaBuffer<S>,
        lens: crate::compaction::Lens<'_, Self>,
        first: u64,
        count: u32,
    ) -> Result<crate::compaction::cuda::CudaReport> {
        let carry = crate::compaction::cuda::single_pass::Carry { words: word_ptr(lens.words, first), count };
        self.scan_with_carry(algorithm, input, output, lens, carry)
    }

    fn add_prefix<S: ScanElement>(
        &self,
        data: &mut CudaBuffer<S>,
        n: u64,
        words: &CudaBuffer<u64>,
        first: u64,
        count: u32,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let v = Variant::new(std::mem::size_of::<S>(), KeepMode::Flags);
        let f = self.kernels().function(&SHARD, &v, "shard_add_prefix")?;
        let (ptr, totals) = (data.ptr(), word_ptr(words, first));
        let mut l = self.stream().launch_builder(&f);
        l.arg(&ptr).arg(&n).arg(&totals).arg(&count);
        // SAFETY: matches `shard_add_prefix(Elem*, u64, const u64*, u32)`; data holds n elements, the
        // words `count` from `first`.
        unsafe { l.launch(self.grid_stride(n, 256, 8)) }.map(drop).map_err(driver_error("launching shard_add_prefix"))
    }

    fn finish(&self) -> Result<()> {
        self.synchronize()
    }
}

/// A device-to-device copy on the rank's stream.
fn copy(b: &CudaBackend, dst: u64, src: u64, bytes: u64) -> Result<()> {
    b.stream().context().bind_to_thread().map_err(driver_error("binding a context"))?;
    // SAFETY: both ranges lie in buffers of this device that the caller owns.
    let r = unsafe { cudarc::driver::sys::cuMemcpyDtoDAsync_v2(dst, src, bytes as usize, b.stream().cu_stream()) };
    r.result().map_err(driver_error("copying on one rank"))
}
