//! STUB: being written.
use crate::compaction::cpu::Phases;
#[derive(Clone, Debug, Default)]
pub struct AtomicTuning {}
pub fn select<T: Copy + Send + Sync>(
    _t: &AtomicTuning,
    _input: &[T],
    _keep: &(impl Fn(usize) -> bool + Sync),
    _output: &mut [T],
    _ph: &mut Phases,
) -> usize {
    todo!()
}
