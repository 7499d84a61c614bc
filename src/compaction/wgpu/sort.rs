//! Radix sort by repeated split (being written).

use crate::compaction::wgpu::{Plan, WgpuBackend, WgpuBuffer};
use crate::compaction::{Algorithm, Error, Result, SortKey};

pub fn radix_sort<K: SortKey>(
    b: &WgpuBackend,
    algorithm: Algorithm,
    keys: &mut WgpuBuffer<K>,
    values: Option<&mut WgpuBuffer<u32>>,
    plan: &mut Plan,
) -> Result<()> {
    let _ = (b, algorithm, keys, values, plan);
    Err(Error::Backend("sort: not yet in WGSL".into()))
}
