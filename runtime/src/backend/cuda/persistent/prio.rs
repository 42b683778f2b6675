//! The host side of the persistent scheduler's ready heap (`kernels/include/gpu_cilk/
//! ready_heap.cuh`), made only for programs with priority spawns (`spawn!(f(..), priority =
//! key)`): it sizes and allocates the batched heap (`heap.cuh`, nodes of [`PRIO_K`] keys), the
//! item slots its keys name, the three ticket queues around it (free slots, the inbox of spawned
//! keys, the ready queue of slots taken out best first) and their counters, resets them before
//! every run, and fills the `prio_*` fields of the kernel's parameter.
//!
//! Owns: that memory and its reset. Must not own: what the device does with it (the server
//! blocks, `gc_spawn_prio`, the warps' take), the launch (the parent module).

use super::super::abi::{prio_ctr, GcHeap, GcPSched, PRIO_K, PRIO_KEY_BYTES};
use super::super::target::Target;
use super::ring::{bytes, Ring};
use crate::config::Config;
use crate::error::Result;

/// The ready heap of one persistent program's state.
pub(crate) struct PrioState<D: Target> {
    heap: D::Buffer<GcHeap>,
    nodes: D::Buffer<u8>,
    states: D::Buffer<u64>,
    pbuf: D::Buffer<u8>,
    capacity: u64,
    items: D::Buffer<u8>,
    slots: u64,
    free: Ring<D>,
    inbox: Ring<D>,
    ready: Ring<D>,
    stage: D::Buffer<u8>,
    /// `prio_ctr::WORDS` words, each on its own 128-byte line (16 words apart).
    counters: D::Buffer<u64>,
    servers: u32,
    window: u32,
    reserve: u32,
}

impl<D: Target> PrioState<D> {
    /// The ready heap for a grid of `blocks` blocks and items of `item_bytes`, or `None` when the
    /// grid has a single block (nothing would be left to run tasks: priority spawns are then
    /// plain spawns, as in the levels scheduler).
    pub(crate) fn new(dev: &D, blocks: u32, item_bytes: u64, config: &Config) -> Result<Option<Self>> {
        let servers = (config.device_priority_servers as u32).min(blocks.saturating_sub(1));
        if servers == 0 {
            return Ok(None);
        }
        let slots = config.device_priority_slots as u64;
        let ring = slots.next_power_of_two();
        // Every key in the heap owns a slot, so it never holds more than slots / K full nodes (a
        // node a top-down insert allocated counts with its K keys on their way); 2 to spare.
        let capacity = slots / PRIO_K + 2;
        let node_slots = GcHeap::slots(capacity);
        Ok(Some(PrioState {
            heap: dev.alloc_zeroed::<GcHeap>(1)?,
            nodes: dev.alloc_zeroed::<u8>(bytes(node_slots * PRIO_K, PRIO_KEY_BYTES)?)?,
            states: dev.alloc_zeroed::<u64>(node_slots as usize)?,
            pbuf: dev.alloc_zeroed::<u8>(bytes(PRIO_K, PRIO_KEY_BYTES)?)?,
            capacity,
            items: dev.alloc_zeroed::<u8>(bytes(slots, item_bytes)?)?,
            slots,
            free: Ring::new(dev, ring, 4)?,
            inbox: Ring::new(dev, ring, PRIO_KEY_BYTES)?,
            ready: Ring::new(dev, ring, 4)?,
            stage: dev.alloc_zeroed::<u8>(bytes(u64::from(servers) * 2 * PRIO_K, PRIO_KEY_BYTES)?)?,
            counters: dev.alloc_zeroed::<u64>(16 * prio_ctr::WORDS)?,
            servers,
            window: config.device_priority_window.min(u32::MAX as usize) as u32,
            reserve: config.device_priority_reserve.min(u32::MAX as usize) as u32,
        }))
    }

    /// Empties the heap and the queues and zeroes the counters (slots keep their bytes: a slot
    /// is written before its key is published).
    pub(crate) fn reset(&mut self, dev: &D) -> Result<()> {
        dev.zero(&mut self.states)?;
        dev.zero(&mut self.counters)?;
        let h = GcHeap::empty(D::addr(&self.nodes), D::addr(&self.states), D::addr(&self.pbuf), PRIO_K, self.capacity);
        dev.copy_htod(&[h], &mut self.heap)?;
        self.free.reset(dev)?;
        self.inbox.reset(dev)?;
        self.ready.reset(dev)
    }

    /// Fills the kernel parameter's `prio_*` fields.
    pub(crate) fn fill(&self, p: &mut GcPSched) {
        p.prio_heap = D::addr(&self.heap);
        p.prio_items = D::addr(&self.items);
        p.prio_free = self.free.addr();
        p.prio_inbox = self.inbox.addr();
        p.prio_ready = self.ready.addr();
        p.prio_stage = D::addr(&self.stage);
        p.prio_counters = D::addr(&self.counters);
        p.prio_slots = self.slots;
        p.prio_servers = self.servers;
        p.prio_window = self.window;
        p.prio_reserve = self.reserve;
    }
}
