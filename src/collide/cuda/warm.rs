//! Warm starting on the GPU, the twin of the CPU engine's `previous` and its
//! binary search: the last complete frame's contacts after their passes, kept
//! across frames and across a redone one, and the hash table through which
//! `collide_warm` finds each new contact's match (collide.cu says why the
//! result does not depend on the GPU's order of appends).

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::{COLLIDE, check_free, launch_err};
use crate::collide::layout::{Contact, World};
use crate::collide::{CollideError, CollideResult};
use crate::compaction::cuda::CudaBackend;
use crate::gpu::{self, Spec, ptr as raw_ptr};

/// Table slots for `contacts` keys: a power of two, at least twice as many,
/// so that the probes stay short.
fn table_slots(contacts: u64) -> u64 {
    (2 * contacts).max(1).next_power_of_two()
}

/// Bytes of the previous contacts and the table for a contact list of `contacts`.
pub(super) fn bytes(contacts: u64) -> u64 {
    contacts * std::mem::size_of::<Contact>() as u64 + table_slots(contacts) * 4
}

/// The device buffers and kernels of warm starting.
pub(super) struct WarmStart {
    /// The last complete frame's contacts after its passes, `count` of them;
    /// never shorter than the contact list, for which it is swapped.
    previous: CudaSlice<u8>,
    count: u64,
    /// Whether the contact list holds a complete frame's contacts (its words
    /// said so): the next `keep` makes them the previous ones.
    pending: bool,
    /// `collide_warm_table`'s slots: a contact's index + 1, 0 when free.
    table: CudaSlice<u32>,
    build: CudaFunction,
    warm: CudaFunction,
}

/// Where `collide_warm` reads and adds: the frame's contacts, words and
/// bodies, and the solver's sums (device addresses).
pub(super) struct WarmArgs<'a> {
    pub contacts: u64,
    pub words: u64,
    pub contact_word: u64,
    pub bodies: u64,
    pub world: &'a World,
    pub acc: u64,
}

impl WarmStart {
    /// No previous contacts, room for a contact list of `contacts`.
    pub(super) fn new(backend: &CudaBackend, contacts: u64) -> CollideResult<Self> {
        let stream = backend.stream();
        let f = |name: &str| backend.kernels().function(&COLLIDE, &Spec::default(), name);
        Ok(WarmStart {
            previous: backend.zeroed(contacts * std::mem::size_of::<Contact>() as u64)?,
            count: 0,
            pending: false,
            table: alloc_table(stream, table_slots(contacts))?,
            build: f("collide_warm_table")?,
            warm: f("collide_warm")?,
        })
    }

    /// Called by `end_frame`: whether the frame just read back completed (a
    /// redone frame's contacts are not kept).
    pub(super) fn frame_ended(&mut self, complete: bool) {
        self.pending = complete;
    }

    /// Before the contact list is rewritten or replaced: a complete frame's
    /// `count` contacts become the previous ones (the two buffers swap).
    pub(super) fn keep(&mut self, contacts: &mut CudaSlice<u8>, count: u64) {
        if std::mem::take(&mut self.pending) {
            std::mem::swap(&mut self.previous, contacts);
            self.count = count;
        }
    }

    /// New bodies: the last frame's impulses are not theirs.
    pub(super) fn clear(&mut self) {
        self.count = 0;
        self.pending = false;
    }

    /// Follows a new contact list of `contacts` (after `keep`): the previous
    /// contacts move to a buffer at least as long, and the table grows.
    pub(super) fn resize(&mut self, backend: &CudaBackend, contacts: u64) -> CollideResult<()> {
        let stream = backend.stream();
        let size = std::mem::size_of::<Contact>() as u64;
        let (kept, len) = (self.count * size, contacts.max(self.count) * size);
        if self.previous.len() as u64 != len.max(1) {
            check_free(stream, "the previous frame's contacts", len)?;
            let grown = backend.zeroed(len)?;
            let (to, from) = (raw_ptr(&grown), raw_ptr(&self.previous));
            // SAFETY: both ranges hold `kept` bytes (the old buffer held `count` contacts, the new one at least
            // as many) and are distinct allocations of this stream's context.
            unsafe { gpu::copy_dtod(stream, to, from, kept as usize, "keeping the last frame's contacts") }?;
            self.previous = grown;
        }
        let slots = table_slots(contacts.max(self.count));
        if self.table.len() as u64 != slots {
            self.table = alloc_table(stream, 1)?; // free the old one first
            check_free(stream, "the warm-start table", slots * 4)?;
            self.table = alloc_table(stream, slots)?;
        }
        Ok(())
    }

    /// Enqueues warm starting's two kernels: the previous contacts into the
    /// table (its used slots zeroed first), then `collide_warm` over the
    /// frame's contacts. `over_previous` and `over_contacts` are grid-stride
    /// launches over the two counts' capacities.
    pub(super) fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        at: WarmArgs<'_>,
        over_previous: LaunchConfig,
        over_contacts: LaunchConfig,
    ) -> CollideResult<()> {
        let slots = table_slots(self.count);
        // `resize` made the table at least this long (a power of two, below 2^32 slots for any list that fits).
        let mask = u32::try_from(slots - 1)
            .map_err(|_| CollideError::Settings(format!("{} contacts: too many to warm start", self.count)))?;
        let mut used = self.table.try_slice_mut(..slots as usize).ok_or_else(|| {
            CollideError::Settings(format!("{} previous contacts outgrew the warm-start table", self.count))
        })?;
        stream.memset_zeros(&mut used).map_err(launch_err("clearing the warm-start table"))?;
        let (pp, tp) = (raw_ptr(&self.previous), raw_ptr(&self.table));
        let mut l = stream.launch_builder(&self.build);
        l.arg(&pp).arg(&self.count).arg(&tp).arg(&mask).arg(&at.words);
        // SAFETY: matches collide_warm_table(const Contact*, u64, u32*, u32, const u64*); `previous` holds `count`
        // contacts and the table mask + 1 > count slots, so every insert finds a free slot.
        unsafe { l.launch(over_previous) }.map_err(launch_err("launching collide_warm_table"))?;
        let mut l = stream.launch_builder(&self.warm);
        l.arg(&at.contacts).arg(&at.words).arg(&at.contact_word).arg(&pp).arg(&tp).arg(&mask);
        l.arg(&at.bodies).arg(at.world).arg(&at.acc);
        // SAFETY: matches collide_warm(Contact*, const u64*, u64, const Contact*, const u32*, u32, const Body*,
        // World, Acc*); as for collide_solve, and every table entry names one of the `count` previous contacts.
        unsafe { l.launch(over_contacts) }.map(drop).map_err(launch_err("launching collide_warm"))
    }

    /// Previous contacts kept, for the launch over them.
    pub(super) fn count(&self) -> u64 {
        self.count
    }
}

fn alloc_table(stream: &Arc<CudaStream>, slots: u64) -> CollideResult<CudaSlice<u32>> {
    let slots = usize::try_from(slots).map_err(|_| CollideError::Settings(format!("{slots} table slots")))?;
    stream.alloc_zeros::<u32>(slots).map_err(launch_err("allocating the warm-start table"))
}
