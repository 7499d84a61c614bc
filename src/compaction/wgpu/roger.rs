//! Host side of shaders/compaction/roger.wgsl (being written).

use crate::compaction::wgpu::backend::KeepRule;
use crate::compaction::wgpu::runtime::Variant;
use crate::compaction::wgpu::{Io, Plan, WgpuBackend};
use crate::compaction::{Error, Result};

pub fn compact(b: &WgpuBackend, rule: &KeepRule, io: &Io, split: bool, plan: &mut Plan) -> Result<()> {
    let _ = (b, rule, io, split, plan);
    Err(Error::Backend("roger: not yet in WGSL".into()))
}

pub fn scan(b: &WgpuBackend, v: &Variant, io: &Io, plan: &mut Plan) -> Result<()> {
    let _ = (b, v, io, plan);
    Err(Error::Backend("roger: not yet in WGSL".into()))
}
