//! Moving spilled elements back into channels after a levelized launch: every channel that
//! overflowed is grown (`gc_regrow` copies its live tickets into a ring big enough for them and all
//! the records), then `gc_unspill` reserves a slot for each record and copies it in, and
//! `gc_spill_reset` clears the pool and the overflow flags. Owns that sequence only; when to call it
//! is the scheduler loop's decision.

use super::{Channel, LevelsRun, THREADS};
use crate::backend::cuda::abi::{GcRegrow, GcSpillReset, GcUnspill};
use crate::backend::cuda::module::LaunchDims;
use crate::error::Result;

impl LevelsRun<'_> {
    /// Moves the `bytes` of spilled records of one launch into their channels at `level`.
    /// Returns the number of channels grown.
    pub(super) fn unspill(&mut self, level: usize, bytes: u64) -> Result<u64> {
        let records = bytes / self.state.spill_stride;
        let queues = self.queues();
        let mut grown = 0;
        for q in 0..queues {
            let i = level * queues + q;
            let c = self.state.host_ctl[super::FIRST_CHANNEL_CTL + i];
            if c.overflow == 0 {
                continue;
            }
            let live = c.reserved - c.freed;
            let old_cap = self.state.channels[i].capacity;
            let cap = (live + records).next_power_of_two().max(2 * old_cap);
            let words = self.element_size(q) / 8;
            let new = self.dev.alloc_zeroed::<u8>((cap * words * 8) as usize)?;
            if let Some(old) = &self.state.channels[i].buf {
                let p = GcRegrow {
                    old_data: old.ptr().addr(),
                    new_data: new.ptr().addr(),
                    old_mask: old_cap - 1,
                    new_mask: cap - 1,
                    first: c.freed,
                    count: live,
                    words,
                };
                // SAFETY: `gc_regrow` reads tickets [first, first + count) of the old ring (its
                // live range, within its capacity) and writes them into the new ring of `cap >=
                // count` slots of the same element size; both buffers live until the kernel ends
                // (frees are ordered after it on the stream).
                let k = unsafe { self.program.kernel::<GcRegrow>("gc_regrow")? };
                k.launch(LaunchDims::cover((live * words).max(1) as usize, THREADS), &p)?;
            }
            self.state.channels[i] = Channel { capacity: cap, buf: Some(new) };
            self.state.table_dirty = true;
            grown += 1;
        }
        self.upload_table()?;
        let p = GcUnspill {
            table: self.state.table.ptr().addr(),
            nq: queues as u32,
            pad: 0,
            spill: self.state.spill.ptr().addr(),
            stride: self.state.spill_stride,
            records,
            sizes: self.state.queue_sizes.ptr().addr(),
            fault: self.state.ctl.ptr().addr(),
        };
        // SAFETY: `gc_unspill` reads `records` records of `stride` bytes from the pool (all
        // written by the finished launch) and copies each into a reserved slot of its channel,
        // whose element size `sizes[q]` it copies; reservations are checked against capacity.
        let k = unsafe { self.program.kernel::<GcUnspill>("gc_unspill")? };
        k.launch(LaunchDims::cover(records.max(1) as usize, THREADS), &p)?;
        let r = GcSpillReset {
            table: self.state.table.ptr().addr(),
            nq: queues as u32,
            level: level as u32,
            spill_used: self.state.ctl.ptr().offset(1).addr(),
        };
        // SAFETY: `gc_spill_reset` clears the overflow flags of the `queues` channels of `level`
        // (all in the table) and the pool counter; one block of at least `queues` threads.
        let k = unsafe { self.program.kernel::<GcSpillReset>("gc_spill_reset")? };
        k.launch(LaunchDims::cover(queues, queues.next_power_of_two().clamp(32, 1024) as u32), &r)?;
        self.refresh()?;
        Ok(grown)
    }
}
