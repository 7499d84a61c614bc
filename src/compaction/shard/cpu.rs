//! Ranks on the CPU: each rank a `CpuBackend` over its own `Vec`s, the
//! collectives plain copies between them. It runs the sharded protocol
//! exactly as the GPUs do (device-resident counts, one all-gather, the
//! prefix added per rank), which is how CI checks it without a GPU.

use super::{Part, Sharding};
use crate::compaction::{CpuBackend, Element, Result, ScanElement};

impl Sharding for CpuBackend {
    type Comm = ();

    fn connect(_: &[Self]) -> Result<()> {
        Ok(())
    }

    fn carrier(_: &()) -> String {
        "host memory (CPU ranks)".into()
    }

    fn all_gather_word(_: &(), ranks: &[Self], words: &mut [Vec<u64>], src: u64, dst: u64) -> Result<()> {
        let sent: Vec<u64> = words.iter().map(|w| w[src as usize]).collect();
        for w in words.iter_mut().take(ranks.len()) {
            w[dst as usize..dst as usize + sent.len()].copy_from_slice(&sent);
        }
        Ok(())
    }

    fn gather<T: Element>(
        _: &(),
        _: &[Self],
        parts: &[Part<'_, Self, T>],
        _root: usize,
        dst: &mut Vec<T>,
    ) -> Result<()> {
        for p in parts {
            let (s, a, n) = (p.start as usize, p.at as usize, p.len as usize);
            dst[a..a + n].copy_from_slice(&p.buffer[s..s + n]);
        }
        Ok(())
    }

    fn duplicate<T: Element>(&self, src: &Vec<T>) -> Result<Vec<T>> {
        Ok(src.clone())
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
