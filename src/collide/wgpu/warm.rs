//! Warm starting on wgpu, the twin of `src/collide/cuda/warm.rs`: the last
//! complete frame's contacts after their passes, kept across frames and
//! across a redone one, and the hash table through which `collide_warm`
//! finds each new contact's match (shaders/collide/warm.wgsl says why the
//! result does not depend on the GPU's order of appends). The count of the
//! previous contacts travels in each dispatch's parameters.

use crate::collide::CollideResult;
use crate::collide::layout::Contact;
use crate::compaction::wgpu::WgpuBackend;

const CONTACT: u64 = std::mem::size_of::<Contact>() as u64;

/// Table slots for `contacts` keys: a power of two, at least twice as many,
/// so that the probes stay short.
fn table_slots(contacts: u64) -> u64 {
    (2 * contacts).max(1).next_power_of_two()
}

pub(super) struct WarmStart {
    /// The last complete frame's contacts after its passes, `count` of them;
    /// never shorter than the contact list, for which it is swapped.
    pub(super) previous: wgpu::Buffer,
    pub(super) count: u64,
    /// Whether the contact list holds a complete frame's contacts: the next
    /// `keep` makes them the previous ones.
    pending: bool,
    /// `collide_warm_table`'s slots: a contact's index + 1, 0 when free.
    pub(super) table: wgpu::Buffer,
    pub(super) slots: u64,
}

impl WarmStart {
    pub(super) fn new(b: &WgpuBackend, contacts: u64) -> CollideResult<Self> {
        let slots = table_slots(contacts);
        Ok(WarmStart {
            previous: b.raw_buffer("the previous frame's contacts", contacts * CONTACT)?,
            count: 0,
            pending: false,
            table: b.raw_buffer("the warm-start table", slots * 4)?,
            slots,
        })
    }

    /// Whether the frame just read back completed (a redone frame's contacts are not kept).
    pub(super) fn frame_ended(&mut self, complete: bool) {
        self.pending = complete;
    }

    /// Before the contact list is rewritten or replaced: a complete frame's
    /// `count` contacts become the previous ones (the two buffers swap).
    pub(super) fn keep(&mut self, contacts: &mut wgpu::Buffer, count: u64) {
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
    /// contacts move to a buffer at least as long (a copy in queue order),
    /// and the table grows.
    pub(super) fn resize(&mut self, b: &WgpuBackend, contacts: u64) -> CollideResult<()> {
        let len = contacts.max(self.count) * CONTACT;
        if self.previous.size() != len.max(64).next_multiple_of(4) {
            let grown = b.raw_buffer("the previous frame's contacts", len)?;
            let kept = self.count * CONTACT;
            if kept > 0 {
                let dev = b.device();
                let mut enc = dev.device.create_command_encoder(&Default::default());
                enc.copy_buffer_to_buffer(&self.previous, 0, &grown, 0, kept);
                dev.queue.submit([enc.finish()]);
            }
            self.previous = grown;
        }
        let slots = table_slots(contacts.max(self.count));
        if slots != self.slots {
            self.table = b.raw_buffer("the warm-start table", slots * 4)?;
            self.slots = slots;
        }
        Ok(())
    }

    /// The table's slots the previous contacts use (collide_warm_clear clears those).
    pub(super) fn used_slots(&self) -> u64 {
        table_slots(self.count).min(self.slots)
    }
}
