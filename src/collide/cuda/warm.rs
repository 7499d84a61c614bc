//! Warm starting on the GPU, the twin of the CPU engine's `previous` and its
//! binary search: the last complete frame's contacts after their passes, kept
//! across frames and across a redone one, and the hash table through which
//! `collide_warm` finds each new contact's match (collide.cu says why the
//! result does not depend on the GPU's order of appends).

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::{COLLIDE, check_free, launch_err};
use crate::collide::layout::Contact;
use crate::collide::{CollideError, CollideResult};
use crate::compaction::cuda::CudaBackend;
use crate::cuda_runtime::{self, Spec, ptr as raw_ptr};

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
    /// `count` on the device, set before each frame ([`WarmStart::set_count`]):
    /// the kernels size the table from it, so a recorded frame replays.
    count_word: CudaSlice<u32>,
    clear: CudaFunction,
    build: CudaFunction,
    warm: CudaFunction,
    follow: CudaFunction,
}

/// Where `collide_warm` reads and writes: the frame's contacts and words (device addresses).
pub(super) struct WarmArgs {
    pub contacts: u64,
    pub words: u64,
    pub contact_word: u64,
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
            count_word: alloc_table(stream, 1)?,
            clear: f("collide_warm_clear")?,
            build: f("collide_warm_table")?,
            warm: f("collide_warm")?,
            follow: f("collide_warm_follow")?,
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

    /// A split rank's previous contacts, named by the places of the frame's
    /// bodies as loaded (its reorder renames them): replaces what the last
    /// frame left. The buffer grows to hold them if it must.
    pub(super) fn set_previous(&mut self, backend: &CudaBackend, contacts: &[Contact]) -> CollideResult<()> {
        self.reserve(backend, contacts.len() as u64)?;
        let bytes: &[u8] = bytemuck::cast_slice(contacts);
        if !bytes.is_empty() {
            let mut to = self.previous.slice_mut(..bytes.len());
            backend.stream().memcpy_htod(bytes, &mut to).map_err(launch_err("uploading the previous contacts"))?;
        }
        Ok(())
    }

    /// Room for `count` previous contacts that the caller writes on the
    /// device (a split rank's, named by the places of its bodies as loaded):
    /// their address. They replace what the last frame left.
    pub(super) fn reserve(&mut self, backend: &CudaBackend, count: u64) -> CollideResult<u64> {
        let stream = backend.stream();
        let bytes = count * std::mem::size_of::<Contact>() as u64;
        if (self.previous.len() as u64) < bytes {
            // With room to spare: the count wavers from frame to frame.
            let room = bytes + bytes / 4;
            self.previous = backend.zeroed(1)?; // free the old one first
            check_free(stream, "the previous frame's contacts", room)?;
            self.previous = backend.zeroed(room)?;
        }
        let slots = table_slots(count);
        if (self.table.len() as u64) < slots {
            self.table = alloc_table(stream, 1)?;
            check_free(stream, "the warm-start table", slots * 4)?;
            self.table = alloc_table(stream, slots)?;
        }
        self.count = count;
        self.pending = false;
        Ok(raw_ptr(&self.previous))
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
            unsafe { cuda_runtime::copy_dtod(stream, to, from, kept as usize, "keeping the last frame's contacts") }?;
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

    /// Before a frame, outside any graph: the previous contacts' count into
    /// the device word the kernels read (a memset: no host memory, no wait).
    pub(super) fn set_count(&self, stream: &CudaStream) -> CollideResult<()> {
        // `resize` keeps the count below the table's slots, which a u32 indexes.
        let count = u32::try_from(self.count)
            .map_err(|_| CollideError::Settings(format!("{} contacts: too many to warm start", self.count)))?;
        // SAFETY: the word is this one-u32 allocation, written in stream order.
        let r =
            unsafe { cudarc::driver::sys::cuMemsetD32Async(raw_ptr(&self.count_word), count, 1, stream.cu_stream()) };
        r.result().map_err(launch_err("setting the warm-start count"))
    }

    /// Enqueues warm starting's kernels: the table's used slots cleared, the
    /// previous contacts into it, then `collide_warm` over the frame's
    /// contacts. Every count comes from the device (`set_count`, the frame's
    /// words); `over_previous`, `over_table` and `over_contacts` are
    /// grid-stride launches over their capacities.
    pub(super) fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        at: WarmArgs,
        [over_previous, over_table, over_contacts]: [LaunchConfig; 3],
    ) -> CollideResult<()> {
        let (pp, tp, cw) = (raw_ptr(&self.previous), raw_ptr(&self.table), raw_ptr(&self.count_word));
        let mut l = stream.launch_builder(&self.clear);
        l.arg(&tp).arg(&cw);
        // SAFETY: matches collide_warm_clear(u32*, const u32*); `resize` made the table at least
        // table_slots(count) long, the slots the kernel clears.
        unsafe { l.launch(over_table) }.map_err(launch_err("launching collide_warm_clear"))?;
        let mut l = stream.launch_builder(&self.build);
        l.arg(&pp).arg(&cw).arg(&tp).arg(&at.words);
        // SAFETY: matches collide_warm_table(const Contact*, const u32*, u32*, const u64*); `previous` holds the
        // `count` contacts and the table more than `count` slots, so every insert finds a free slot.
        unsafe { l.launch(over_previous) }.map_err(launch_err("launching collide_warm_table"))?;
        let mut l = stream.launch_builder(&self.warm);
        l.arg(&at.contacts).arg(&at.words).arg(&at.contact_word).arg(&pp).arg(&tp).arg(&cw);
        // SAFETY: matches collide_warm(Contact*, const u64*, u64, const Contact*, const u32*, const u32*); each
        // of the frame's contacts is one thread's, and every table entry names one of the `count` previous
        // contacts.
        unsafe { l.launch(over_contacts) }.map(drop).map_err(launch_err("launching collide_warm"))
    }

    /// Enqueues collide_warm_follow (the bodies moved into Morton order): the
    /// previous contacts name their bodies' new places, `places` (n u32, a
    /// device address); `over_previous` is a grid-stride launch over the
    /// buffer's capacity (the count is the device word).
    pub(super) fn follow(
        &self,
        stream: &Arc<CudaStream>,
        places: u64,
        over_previous: LaunchConfig,
    ) -> CollideResult<()> {
        let (pp, cw) = (raw_ptr(&self.previous), raw_ptr(&self.count_word));
        let mut l = stream.launch_builder(&self.follow);
        l.arg(&pp).arg(&cw).arg(&places);
        // SAFETY: matches collide_warm_follow(Contact*, const u32*, const u32*); `previous` holds the `count`
        // contacts, each naming bodies (or a wall) below n, and `places` holds n entries.
        unsafe { l.launch(over_previous) }.map(drop).map_err(launch_err("launching collide_warm_follow"))
    }

    /// Contacts the previous buffer holds (the launch over them reads the count from the device).
    pub(super) fn capacity(&self) -> u64 {
        self.previous.len() as u64 / std::mem::size_of::<Contact>() as u64
    }

    /// The buffers a frame's launches name, for its key.
    pub(super) fn addresses(&self) -> [u64; 3] {
        [raw_ptr(&self.previous), raw_ptr(&self.table), self.table.len() as u64]
    }

    /// Slots of the table.
    pub(super) fn table_len(&self) -> u64 {
        self.table.len() as u64
    }
}

fn alloc_table(stream: &Arc<CudaStream>, slots: u64) -> CollideResult<CudaSlice<u32>> {
    let slots = usize::try_from(slots).map_err(|_| CollideError::Settings(format!("{slots} table slots")))?;
    stream.alloc_zeros::<u32>(slots).map_err(launch_err("allocating the warm-start table"))
}
