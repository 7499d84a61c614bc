//! STUB: being written.
use crate::compaction::cpu::Phases;
#[derive(Clone, Debug, Default)]
pub struct StencilTuning {}
pub fn select<T: Copy + Send + Sync>(
    _t: &StencilTuning,
    _input: &[T],
    _keep: &(impl Fn(usize) -> bool + Sync),
    _output: &mut [T],
    _ph: &mut Phases,
) -> usize {
    todo!()
}
pub fn partition<T: Copy + Send + Sync>(
    _t: &StencilTuning,
    _input: &[T],
    _keep: &(impl Fn(usize) -> bool + Sync),
    _output: &mut [T],
    _ph: &mut Phases,
) -> usize {
    todo!()
}
