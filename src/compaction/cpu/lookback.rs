//! STUB: being written.
use crate::compaction::ScanElement;
use crate::compaction::cpu::Phases;
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chaining {
    Chained,
    Decoupled,
}
#[derive(Clone, Debug, Default)]
pub struct SinglePassTuning {}
pub fn select<T: Copy + Send + Sync>(
    _c: Chaining,
    _t: &SinglePassTuning,
    _input: &[T],
    _keep: &(impl Fn(usize) -> bool + Sync),
    _output: &mut [T],
    _ph: &mut Phases,
) -> usize {
    todo!()
}
pub fn partition<T: Copy + Send + Sync>(
    _c: Chaining,
    _t: &SinglePassTuning,
    _input: &[T],
    _keep: &(impl Fn(usize) -> bool + Sync),
    _output: &mut [T],
    _ph: &mut Phases,
) -> usize {
    todo!()
}
pub fn scan<S: ScanElement>(
    _c: Chaining,
    _t: &SinglePassTuning,
    _input: &[S],
    _output: &mut [S],
    _ph: &mut Phases,
) -> S {
    todo!()
}
