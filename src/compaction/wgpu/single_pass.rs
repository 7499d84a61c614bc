//! Host side of the single-pass shaders (being written).

use crate::compaction::wgpu::backend::KeepRule;
use crate::compaction::wgpu::runtime::Variant;
use crate::compaction::wgpu::{Io, Plan, WgpuBackend};
use crate::compaction::{Error, Rejected, Result};

/// How a tile learns the prefix of the tiles before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chaining {
    /// Wait for the predecessor's inclusive prefix (seed 001 mod. 10.4).
    Chained,
    /// Decoupled look-back (Merrill & Garland 2016) with Smith, Levien &
    /// Owens's fallback.
    Decoupled,
}

pub fn compact(
    b: &WgpuBackend,
    chaining: Chaining,
    rule: &KeepRule,
    io: &Io,
    layout: Option<Rejected>,
    plan: &mut Plan,
) -> Result<()> {
    let _ = (b, chaining, rule, io, layout, plan);
    Err(Error::Backend("single pass: not yet in WGSL".into()))
}

pub fn scan(b: &WgpuBackend, chaining: Chaining, v: &Variant, io: &Io, plan: &mut Plan) -> Result<()> {
    let _ = (b, chaining, v, io, plan);
    Err(Error::Backend("single pass: not yet in WGSL".into()))
}
