//! STUB: being written.
use crate::compaction::Algorithm;
use crate::compaction::cpu::Phases;
#[derive(Clone, Debug, Default)]
pub struct RedzoneTuning {}
/// Removes data[removal[..]] in place; returns the survivors' count (n - k).
pub fn remove<T: Copy + Send + Sync>(
    _algorithm: Algorithm,
    _t: &RedzoneTuning,
    _data: &mut [T],
    _removal: &[u64],
    _ph: &mut Phases,
) -> usize {
    todo!()
}
