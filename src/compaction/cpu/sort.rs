//! Radix sort by repeated stream split (seed 000 §5.3): one stable split per
//! key bit, zeros first. Key-value pairs travel interleaved, as in the paper.

use crate::compaction::cpu::{CpuBackend, Phases};
use crate::compaction::{Algorithm, Result, SortKey};

/// Sorts `keys` (and `values` with them) with `algorithm`'s partition.
pub fn radix_sort<K: SortKey>(
    backend: &CpuBackend,
    algorithm: Algorithm,
    keys: &mut Vec<K>,
    values: Option<&mut Vec<u32>>,
    ph: &mut Phases,
) -> Result<()> {
    let n = keys.len();
    let mut split_time = std::time::Duration::ZERO;
    match values {
        None => {
            let mut scratch = vec![K::zeroed(); n];
            for bit in 0..K::BITS {
                let src: &Vec<K> = keys;
                let report = backend.compact_by(
                    algorithm,
                    (true, crate::compaction::Rejected::InOrder),
                    src,
                    &|i| !src[i].bit(bit),
                    &mut scratch,
                )?;
                split_time += report.phases.iter().map(|p| p.time).sum();
                std::mem::swap(keys, &mut scratch);
            }
        }
        Some(values) => {
            let mut pairs: Vec<[K; 2]> =
                ph.time("interleave", || keys.iter().zip(values.iter()).map(|(&k, &v)| [k, K::from_u32(v)]).collect());
            let mut scratch = vec![[K::zeroed(); 2]; n];
            for bit in 0..K::BITS {
                let src = &pairs;
                let report = backend.compact_by(
                    algorithm,
                    (true, crate::compaction::Rejected::InOrder),
                    src,
                    &|i| !src[i][0].bit(bit),
                    &mut scratch,
                )?;
                split_time += report.phases.iter().map(|p| p.time).sum();
                std::mem::swap(&mut pairs, &mut scratch);
            }
            ph.time("deinterleave", || {
                for ((k, v), p) in keys.iter_mut().zip(values.iter_mut()).zip(&pairs) {
                    *k = p[0];
                    *v = p[1].low_u32();
                }
            });
        }
    }
    ph.push("split", split_time);
    Ok(())
}
