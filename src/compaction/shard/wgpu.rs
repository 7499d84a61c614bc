//! The wgpu backend as ranks: one adapter, one rank. wgpu has no
//! collectives between devices (no NCCL, no peer copies), so a group of
//! several wgpu ranks is refused with what to use instead; a single rank
//! runs the sharded protocol with buffer copies on its own queue, so the
//! workloads and the sharded benchmark take one code path on every backend.

use super::{Part, Sharding};
use crate::compaction::wgpu::{Plan, WgpuBackend, WgpuBuffer};
use crate::compaction::{Backend, Element, Error, Result, ScanElement};

/// wgpu's copies move whole 4-byte words.
fn aligned(what: &'static str, bytes: u64) -> Result<u64> {
    if bytes % ::wgpu::COPY_BUFFER_ALIGNMENT != 0 {
        return Err(Error::Backend(format!(
            "{what}: {bytes} bytes is not a whole number of 4-byte words, which wgpu's buffer copies need"
        )));
    }
    Ok(bytes)
}

impl Sharding for WgpuBackend {
    type Comm = ();

    fn connect(ranks: &[Self]) -> Result<()> {
        if ranks.len() > 1 {
            return Err(Error::Backend(format!(
                "{} wgpu ranks: wgpu has no collectives between adapters; run one rank (--gpus 1), or use \
                 --backend cuda for several GPUs (NCCL) or --backend cpu to run the protocol on CPU ranks",
                ranks.len()
            )));
        }
        Ok(())
    }

    fn join(_: &Self, cluster: &std::sync::Arc<crate::cluster::Cluster>) -> Result<()> {
        Err(Error::Backend(format!(
            "rank {} of {} processes on wgpu: wgpu has no collectives between adapters or processes; use --backend \
             cuda (NCCL) or --backend cpu for ranks as processes",
            cluster.rank(),
            cluster.ranks()
        )))
    }

    fn carrier(_: &()) -> String {
        "one wgpu adapter (no collectives)".into()
    }

    fn all_gather_word(_: &(), ranks: &[Self], words: &mut [WgpuBuffer<u64>], src: u64, dst: u64) -> Result<()> {
        let (Some(b), Some(w)) = (ranks.first(), words.first()) else { return Ok(()) };
        // wgpu refuses a copy within one buffer: through a word of scratch.
        let tmp = b.raw_buffer("an all-gathered word", 8)?;
        let mut plan = Plan::default();
        plan.stage("all-gather");
        plan.copy(w.raw(), src * 8, &tmp, 0, 8);
        plan.copy(&tmp, 0, w.raw(), dst * 8, 8);
        b.run(plan)?;
        Ok(())
    }

    fn gather<T: Element>(
        _: &(),
        ranks: &[Self],
        parts: &[Part<'_, Self, T>],
        root: usize,
        dst: Option<&mut WgpuBuffer<T>>,
    ) -> Result<()> {
        let (b, Some(dst)) = (&ranks[root], dst) else { return Ok(()) };
        let size = std::mem::size_of::<T>() as u64;
        let mut plan = Plan::default();
        plan.stage("gather");
        for p in parts.iter().filter(|p| p.len > 0) {
            let bytes = aligned("a gathered part", p.len * size)?;
            let Some(buffer) = p.buffer else { continue };
            plan.copy(buffer.raw(), p.start * size, dst.raw(), p.at * size, bytes);
        }
        b.run(plan)?;
        Ok(())
    }

    fn duplicate<T: Element>(&self, src: &WgpuBuffer<T>) -> Result<WgpuBuffer<T>> {
        let copy = self.alloc::<T>(src.len())?;
        let bytes = src.len() * std::mem::size_of::<T>() as u64;
        if bytes > 0 {
            let mut plan = Plan::default();
            plan.stage("duplicate");
            plan.copy(src.raw(), 0, copy.raw(), 0, aligned("a duplicated buffer", bytes)?);
            self.run(plan)?;
        }
        Ok(copy)
    }

    fn add_prefix<S: ScanElement>(
        &self,
        _data: &mut WgpuBuffer<S>,
        n: u64,
        words: &WgpuBuffer<u64>,
        first: u64,
        count: u32,
    ) -> Result<()> {
        // One rank has no ranks before it: the prefix is empty, the scan already global.
        if count == 0 || n == 0 {
            return Ok(());
        }
        Err(Error::Backend(format!(
            "a prefix of {count} ranks' totals (words {first}.. of {} words) on a single wgpu rank: wgpu groups \
             hold one rank",
            words.len()
        )))
    }

    fn finish(&self) -> Result<()> {
        self.synchronize()
    }
}
