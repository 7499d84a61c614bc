//! STUB: being written.
use crate::compaction::Algorithm;
use crate::compaction::Result;
use crate::compaction::cuda::runtime::{Stages, Variant};
use crate::compaction::cuda::{CudaBackend, Io, KeepArgs};
#[derive(Clone, Debug, Default)]
pub struct RedzoneTuning {}
/// Removes data[removal[..k]] in place (n elements); writes n - k to *count.
#[allow(clippy::too_many_arguments)]
pub fn remove(
    _b: &CudaBackend,
    _alg: Algorithm,
    _v: &Variant,
    _data: u64,
    _n: u64,
    _removal: u64,
    _k: u64,
    _count: u64,
    _st: &mut Stages,
) -> Result<()> {
    todo!()
}
/// Select through Redzone: mark the rejected indices, copy, remove in place.
pub fn select(
    _b: &CudaBackend,
    _alg: Algorithm,
    _v: &Variant,
    _keep: KeepArgs,
    _io: Io,
    _st: &mut Stages,
) -> Result<()> {
    todo!()
}
