//! What a call records before it runs: the buffers a dispatch binds, the
//! call's buffers and keep rule as the algorithms receive them, and the
//! [`Plan`] of named stages that [`super::WgpuBackend::run`] submits.

use crate::compaction::wgpu::runtime::{Params, Variant};

/// The buffers one dispatch binds (shaders/compaction/common.wgsl): `src`
/// and `flags` read-only, the rest read-write. A missing one is bound to a
/// dummy; one buffer must not appear twice where either is written.
/// Equal binds share one bind group within a call.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Bind {
    pub src: Option<::wgpu::Buffer>,
    pub dst: Option<::wgpu::Buffer>,
    pub flags: Option<::wgpu::Buffer>,
    pub words: Option<::wgpu::Buffer>,
    pub state: Option<::wgpu::Buffer>,
    pub aux: Option<::wgpu::Buffer>,
    pub aux2: Option<::wgpu::Buffer>,
}

pub(crate) enum Step {
    Stage(&'static str),
    Clear { buffer: ::wgpu::Buffer, offset: u64, size: Option<u64> },
    Copy { from: ::wgpu::Buffer, from_offset: u64, to: ::wgpu::Buffer, to_offset: u64, size: u64 },
    Dispatch { pipeline: ::wgpu::ComputePipeline, params: Params, bind: Bind, groups: u32 },
}

/// A call's work before it runs: named stages, each a compute pass of
/// dispatches. Clears and copies run before their stage's pass (wgpu forbids
/// them inside one); work that must follow a dispatch starts a new stage.
#[derive(Default)]
pub struct Plan {
    pub(crate) steps: Vec<Step>,
}

impl Plan {
    pub fn stage(&mut self, name: &'static str) -> &mut Self {
        self.steps.push(Step::Stage(name));
        self
    }
    /// Zeroes `size` bytes (the rest of the buffer with `None`) from `offset`.
    pub fn clear(&mut self, buffer: &::wgpu::Buffer, offset: u64, size: Option<u64>) -> &mut Self {
        self.steps.push(Step::Clear { buffer: buffer.clone(), offset, size });
        self
    }
    pub fn copy(&mut self, from: &::wgpu::Buffer, from_offset: u64, to: &::wgpu::Buffer, to_offset: u64, size: u64) {
        if size > 0 {
            let (from, to) = (from.clone(), to.clone());
            self.steps.push(Step::Copy { from, from_offset, to, to_offset, size });
        }
    }
    /// `groups` workgroups of `pipeline` (spread over x and y past 65,535;
    /// shaders index them with `group_index`).
    pub fn dispatch(
        &mut self,
        pipeline: ::wgpu::ComputePipeline,
        params: Params,
        bind: Bind,
        groups: u32,
    ) -> &mut Self {
        if groups > 0 {
            self.steps.push(Step::Dispatch { pipeline, params, bind, groups });
        }
        self
    }
}

/// What one call reads and writes, as the algorithms receive it: a counted
/// call reads its length from `words[len_word]`; every call writes its count
/// to `words[count_word]` (u32 word indices: a u64 word w is 2w).
#[derive(Clone)]
pub struct Io {
    pub cap: u32,
    pub len_word: u32,
    pub count_word: u32,
    pub input: ::wgpu::Buffer,
    pub output: ::wgpu::Buffer,
    pub words: ::wgpu::Buffer,
}

impl Io {
    /// The parameters every dispatch of the call starts from.
    pub fn params(&self) -> Params {
        Params { cap: self.cap, len_word: self.len_word, count_word: self.count_word, ..Default::default() }
    }
    /// The buffers every dispatch of the call binds.
    pub fn bind(&self) -> Bind {
        Bind {
            src: Some(self.input.clone()),
            dst: Some(self.output.clone()),
            words: Some(self.words.clone()),
            ..Default::default()
        }
    }
}

/// The keep rule's specialisation and the parameters it adds to every dispatch.
pub struct KeepRule {
    pub variant: Variant,
    pub flags: Option<::wgpu::Buffer>,
    pub(crate) sentinel: [u32; 8],
    pub(crate) pred: [u32; 4],
}

impl KeepRule {
    /// `base` with the keep rule's numbers filled in. A radix-sort split's
    /// bit goes to `a` (common.wgsl's keep()): dispatches that call keep()
    /// leave `a` to the rule.
    pub fn params(&self, base: Params) -> Params {
        Params { sentinel: self.sentinel, pred: self.pred, ..base }
    }
    /// `io`'s bindings plus the flags.
    pub fn bind(&self, io: &Io) -> Bind {
        Bind { flags: self.flags.clone(), ..io.bind() }
    }
}
