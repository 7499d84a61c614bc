//! STUB: being written.
use crate::compaction::ScanElement;
use crate::compaction::cpu::Phases;
#[derive(Clone, Debug, Default)]
pub struct SenguptaTuning {}
pub fn select<T: Copy + Send + Sync>(
    _t: &SenguptaTuning,
    _input: &[T],
    _keep: &(impl Fn(usize) -> bool + Sync),
    _output: &mut [T],
    _ph: &mut Phases,
) -> usize {
    todo!()
}
pub fn partition<T: Copy + Send + Sync>(
    _t: &SenguptaTuning,
    _input: &[T],
    _keep: &(impl Fn(usize) -> bool + Sync),
    _output: &mut [T],
    _ph: &mut Phases,
) -> usize {
    todo!()
}
pub fn scan<S: ScanElement>(_t: &SenguptaTuning, _input: &[S], _output: &mut [S], _ph: &mut Phases) -> S {
    todo!()
}
