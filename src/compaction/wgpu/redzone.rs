//! Host side of shaders/compaction/redzone.wgsl (being written).

use crate::compaction::wgpu::backend::KeepRule;
use crate::compaction::wgpu::runtime::Variant;
use crate::compaction::wgpu::{Plan, WgpuBackend, Io};
use crate::compaction::{Algorithm, Error, Result};

pub fn select(b: &WgpuBackend, algorithm: Algorithm, rule: &KeepRule, io: &Io, plan: &mut Plan) -> Result<()> {
    let _ = (b, algorithm, rule, io, plan);
    Err(Error::Backend("redzone: not yet in WGSL".into()))
}

/// In-place removal of the `k` listed indices from the `len` elements of
/// `data`; the count (elements left) goes to the u64 word `count`.
#[allow(clippy::too_many_arguments)]
pub fn remove(
    b: &WgpuBackend,
    algorithm: Algorithm,
    v: &Variant,
    data: &::wgpu::Buffer,
    len: u64,
    removal: &::wgpu::Buffer,
    k: u64,
    count: &::wgpu::Buffer,
    plan: &mut Plan,
) -> Result<()> {
    let _ = (b, algorithm, v, data, len, removal, k, count, plan);
    Err(Error::Backend("redzone: not yet in WGSL".into()))
}
