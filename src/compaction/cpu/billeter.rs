//! STUB: being written.
use crate::compaction::cpu::Phases;
use crate::compaction::{Billeter, ScanElement};
#[derive(Clone, Debug, Default)]
pub struct BilleterTuning {}
pub fn select<T: Copy + Send + Sync>(
    _v: Billeter,
    _t: &BilleterTuning,
    _input: &[T],
    _keep: &(impl Fn(usize) -> bool + Sync),
    _output: &mut [T],
    _ph: &mut Phases,
) -> usize {
    todo!()
}
pub fn partition<T: Copy + Send + Sync>(
    _v: Billeter,
    _t: &BilleterTuning,
    _input: &[T],
    _keep: &(impl Fn(usize) -> bool + Sync),
    _output: &mut [T],
    _ph: &mut Phases,
) -> usize {
    todo!()
}
pub fn scan<S: ScanElement>(_t: &BilleterTuning, _input: &[S], _output: &mut [S], _ph: &mut Phases) -> S {
    todo!()
}
