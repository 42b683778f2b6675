//! The spin-then-yield wait of the Rust models of device algorithms (`heap`, `ticket_queue`):
//! one step per call, spinning a few times and then yielding, because on an oversubscribed host
//! the thread waited for must run. Owns that policy only; under loom every step yields, so a
//! model can progress.

/// Spin-then-yield wait, one step per [`Backoff::snooze`].
#[cfg_attr(loom, allow(dead_code))] // loom always yields: no spin count
pub(crate) struct Backoff(u32);

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff(0)
    }

    #[inline]
    pub(crate) fn snooze(&mut self) {
        #[cfg(loom)]
        loom::thread::yield_now();
        #[cfg(not(loom))]
        {
            if self.0 < 64 {
                std::hint::spin_loop();
                self.0 += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}
