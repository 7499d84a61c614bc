//! STUB: being written.
use crate::compaction::Result;
use crate::compaction::cuda::runtime::{Stages, Variant};
use crate::compaction::cuda::{CudaBackend, Io, KeepArgs};
#[derive(Clone, Debug, Default)]
pub struct SenguptaTuning {}
pub fn select(_b: &CudaBackend, _v: &Variant, _keep: KeepArgs, _io: Io, _st: &mut Stages) -> Result<()> {
    todo!()
}
pub fn partition(_b: &CudaBackend, _v: &Variant, _keep: KeepArgs, _io: Io, _st: &mut Stages) -> Result<()> {
    todo!()
}
pub fn scan(_b: &CudaBackend, _v: &Variant, _io: Io, _st: &mut Stages) -> Result<()> {
    todo!()
}
