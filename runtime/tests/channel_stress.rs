//! Stress tests of the array channel (`runtime/src/channel.rs`) on real threads: many threads,
//! tiny capacities, thousands of producer/consumer phases separated by barriers (the scheduler's
//! quiescent points), so the ring wraps hundreds of times. Checked every phase: the grant count is
//! exactly what fits, producers that found the channel full got `None` (and are counted), partial
//! drains take exactly what they ask; checked over the run: every element is delivered exactly
//! once (a bitmap), intact (a checksum), and in ticket order per consumer (claims are FIFO).
//!
//! Sized to finish in a few seconds in debug on 2 cores; `CHANNEL_STRESS_SCALE=10` runs longer.
#![cfg(not(loom))]

use gpu_cilk_runtime::channel::Channel;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

fn scale() -> usize {
    std::env::var("CHANNEL_STRESS_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1)
}

/// A reusable barrier that a panicking participant breaks: the others panic too instead of
/// waiting forever, so a failed check fails the test rather than hanging it.
struct Barrier {
    n: usize,
    state: Mutex<(usize, u64, bool)>, // (arrived, generation, broken)
    cv: Condvar,
}

/// `wait`'s answer: one waiter per generation is the leader.
struct Waited(bool);
impl Waited {
    fn is_leader(&self) -> bool {
        self.0
    }
}

impl Barrier {
    fn new(n: usize) -> Self {
        Barrier { n, state: Mutex::new((0, 0, false)), cv: Condvar::new() }
    }
    fn wait(&self) -> Waited {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        assert!(!st.2, "another thread failed");
        st.0 += 1;
        if st.0 == self.n {
            st.0 = 0;
            st.1 += 1;
            self.cv.notify_all();
            return Waited(true);
        }
        let generation = st.1;
        while st.1 == generation && !st.2 {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        assert!(!st.2, "another thread failed");
        Waited(false)
    }
    /// Breaks the barrier when dropped during a panic (hold one per participating thread).
    fn guard(&self) -> BreakOnPanic<'_> {
        BreakOnPanic(self)
    }
}

struct BreakOnPanic<'a>(&'a Barrier);
impl Drop for BreakOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.state.lock().unwrap_or_else(|e| e.into_inner()).2 = true;
            self.0.cv.notify_all();
        }
    }
}

/// A small deterministic generator (xorshift64*), one per thread.
struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// A channel element: a dense id for the bitmap, the ticket it was enqueued under (FIFO check),
/// and a checksum that a torn or stale read would break.
#[derive(Clone, Copy, Debug)]
struct Elem {
    id: u64,
    ticket: u64,
    check: u64,
}

fn checksum(id: u64, ticket: u64) -> u64 {
    (id ^ 0xA5A5_5A5A_DEAD_BEEF).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ticket.rotate_left(17)
}

/// Exactly-once bookkeeping shared by the threads.
struct Ledger {
    bits: Vec<AtomicU64>,
    next_id: AtomicU64,
}

impl Ledger {
    fn new(max: usize) -> Self {
        Ledger { bits: (0..max.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(), next_id: AtomicU64::new(0) }
    }
    fn fresh_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
    fn deliver(&self, e: &Elem) {
        assert_eq!(e.check, checksum(e.id, e.ticket), "torn or stale element {e:?}");
        let prev = self.bits[(e.id / 64) as usize].fetch_or(1 << (e.id % 64), Ordering::Relaxed);
        assert_eq!(prev & (1 << (e.id % 64)), 0, "element {} delivered twice", e.id);
    }
    fn assert_all_delivered(&self) {
        let n = self.next_id.load(Ordering::Relaxed);
        for id in 0..n {
            let word = self.bits[(id / 64) as usize].load(Ordering::Relaxed);
            assert_ne!(word & (1 << (id % 64)), 0, "element {id} never delivered");
        }
    }
}

/// Per-phase tallies, checked and reset by the barrier leader.
#[derive(Default)]
struct Tally {
    requested: AtomicUsize,
    granted: AtomicUsize,
    nones: AtomicUsize,
    calls: AtomicUsize,
    consumed: AtomicUsize,
}

impl Tally {
    fn reset(&self) {
        for c in [&self.requested, &self.granted, &self.nones, &self.calls, &self.consumed] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// `threads` threads run `phases` rounds of (produce | barrier | consume | barrier) on one
/// channel of `capacity`, with all the checks of the module docs. Returns (granted, nones).
fn run_phases(capacity: usize, threads: usize, phases: usize, seed: u64) -> (usize, usize) {
    let ch = Channel::<Elem>::new(capacity);
    let cap = ch.capacity();
    assert!(cap >= capacity && cap.is_power_of_two());
    let ledger = Ledger::new(phases * cap + cap);
    let tally = Tally::default();
    let barrier = Barrier::new(threads);
    let totals = Mutex::new((0usize, 0usize));
    // Free slots and waiting elements at the start of the phase: the leader's expectations.
    let free_at_start = AtomicUsize::new(cap);
    let len_at_start = AtomicUsize::new(0);

    std::thread::scope(|s| {
        for tid in 0..threads {
            let (ch, ledger, tally, barrier, totals) = (&ch, &ledger, &tally, &barrier, &totals);
            let (free_at_start, len_at_start) = (&free_at_start, &len_at_start);
            s.spawn(move || {
                let _guard = barrier.guard();
                let mut rng = Rng::new(seed ^ (tid as u64 + 1) << 32);
                let mut last_ticket: Option<u64> = None;
                for phase in 0..phases {
                    // Phase kinds, the same on every thread: odd phases reserve one at a time
                    // (so `None`s are exactly the refused offers), even ones in runs of 1..=4.
                    let single = phase % 2 == 1;
                    let offers = 1 + (phase * 7 + tid) % 3; // 1..=3 calls per producer
                    for _ in 0..offers {
                        let want = if single { 1 } else { 1 + rng.below(4) as usize };
                        tally.requested.fetch_add(want, Ordering::Relaxed);
                        tally.calls.fetch_add(1, Ordering::Relaxed);
                        let grant = if single { ch.talloc().map(|t| (t, 1)) } else { ch.talloc_n(want) };
                        let Some((first, got)) = grant else {
                            tally.nones.fetch_add(1, Ordering::Relaxed);
                            continue;
                        };
                        assert!((1..=want).contains(&got));
                        tally.granted.fetch_add(got, Ordering::Relaxed);
                        // Enqueue the run back to front now and then: order within a run is free.
                        let order: Vec<usize> =
                            if rng.below(2) == 0 { (0..got).collect() } else { (0..got).rev().collect() };
                        let tickets: Vec<_> = (0..got).map(|k| ch.ticket(&first, k)).collect();
                        drop(first);
                        let mut tickets: Vec<_> = tickets.into_iter().map(Some).collect();
                        for k in order {
                            let t = tickets[k].take().unwrap();
                            let id = ledger.fresh_id();
                            let ticket = t.index() as u64;
                            ch.enq(t, Elem { id, ticket, check: checksum(id, ticket) });
                        }
                    }
                    if barrier.wait().is_leader() {
                        let requested = tally.requested.load(Ordering::Relaxed);
                        let granted = tally.granted.load(Ordering::Relaxed);
                        let free = free_at_start.load(Ordering::Relaxed);
                        assert_eq!(granted, requested.min(free), "phase {phase}: grants must fill exactly what fits");
                        if single {
                            let calls = tally.calls.load(Ordering::Relaxed);
                            assert_eq!(tally.nones.load(Ordering::Relaxed), calls - granted, "phase {phase}");
                        }
                        assert_eq!(ch.occupancy(), cap - free + granted);
                        assert_eq!(ch.len(), len_at_start.load(Ordering::Relaxed) + granted);
                        len_at_start.store(ch.len(), Ordering::Relaxed);
                        let mut t = totals.lock().unwrap();
                        t.0 += granted;
                        t.1 += tally.nones.load(Ordering::Relaxed);
                    }
                    barrier.wait();

                    // Consumer phase: drain all on every third phase, otherwise at most `quota`
                    // per consumer (the scheduler's chunked dispatch), leaving the rest queued.
                    let quota = if phase % 3 == 0 { usize::MAX } else { phase % 4 };
                    let mut taken = 0;
                    while taken < quota {
                        match ch.deq().expect("phase protocol kept") {
                            Some(e) => {
                                ledger.deliver(&e);
                                if let Some(prev) = last_ticket {
                                    assert!(e.ticket > prev, "claims are FIFO: {} after {prev}", e.ticket);
                                }
                                last_ticket = Some(e.ticket);
                                taken += 1;
                            }
                            None => break,
                        }
                    }
                    tally.consumed.fetch_add(taken, Ordering::Relaxed);
                    if barrier.wait().is_leader() {
                        let waiting = len_at_start.load(Ordering::Relaxed);
                        let expect = waiting.min(quota.saturating_mul(threads));
                        assert_eq!(tally.consumed.load(Ordering::Relaxed), expect, "phase {phase}: exact drain");
                        assert_eq!(ch.len(), waiting - expect);
                        assert_eq!(ch.occupancy(), waiting - expect, "every taken slot freed");
                        len_at_start.store(ch.len(), Ordering::Relaxed);
                        free_at_start.store(cap - ch.occupancy(), Ordering::Relaxed);
                        tally.reset();
                    }
                    barrier.wait();
                }
            });
        }
    });

    // Final drain on this thread.
    while let Some(e) = ch.deq().unwrap() {
        ledger.deliver(&e);
    }
    assert_eq!(ch.occupancy(), 0);
    ledger.assert_all_delivered();
    let (granted, nones) = *totals.lock().unwrap();
    assert_eq!(granted as u64, ledger.next_id.load(Ordering::Relaxed));
    assert!(granted > cap * 4, "the ring wrapped several times ({granted} elements through {cap} slots)");
    (granted, nones)
}

#[test]
fn stress_capacity_1_eight_threads() {
    let (_, nones) = run_phases(1, 8, 3000 * scale(), 1);
    assert!(nones > 0, "a 1-slot channel must refuse producers");
}

#[test]
fn stress_capacity_2_sixteen_threads() {
    let (_, nones) = run_phases(2, 16, 2000 * scale(), 2);
    assert!(nones > 0);
}

#[test]
fn stress_capacity_3_rounds_to_4() {
    assert_eq!(Channel::<u8>::new(3).capacity(), 4);
    let (_, nones) = run_phases(3, 8, 3000 * scale(), 3);
    assert!(nones > 0);
}

#[test]
fn stress_capacity_64_eight_threads() {
    // 8 producers ask up to 8 × 3 × 4 = 96 per phase: sometimes it fits, sometimes not.
    run_phases(64, 8, 3000 * scale(), 4);
}

/// Producers hammer a full channel: `None` is answered without reserving, and exactly
/// `capacity` offers succeed per phase, whatever the contention.
#[test]
fn producers_get_none_when_full() {
    let threads = 8;
    let cap = 4;
    let ch = Channel::<u64>::new(cap);
    let barrier = Barrier::new(threads);
    let (ok, none) = (AtomicUsize::new(0), AtomicUsize::new(0));
    for round in 0..200 * scale() {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    let _guard = barrier.guard();
                    barrier.wait();
                    for _ in 0..4 {
                        match ch.talloc() {
                            Some(t) => {
                                ch.enq(t, round as u64);
                                ok.fetch_add(1, Ordering::Relaxed);
                            }
                            None => {
                                none.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(ok.swap(0, Ordering::Relaxed), cap, "round {round}");
        assert_eq!(none.swap(0, Ordering::Relaxed), threads * 4 - cap, "round {round}");
        let drained: Vec<u64> = std::iter::from_fn(|| ch.deq().unwrap()).collect();
        assert_eq!(drained, vec![round as u64; cap]);
    }
}

/// The parent-frame pattern: producers publish frames, a "children" phase writes results into
/// them through `slot_ptr` (after `enq`, before `deq`), and consumers see every result.
#[test]
fn slot_ptr_writes_are_visible_to_the_consumer() {
    #[derive(Debug)]
    struct Frame {
        id: usize,
        results: [u64; 3],
    }
    let threads = 8;
    let ch = Channel::<Frame>::new(16);
    let barrier = Barrier::new(threads);
    for round in 0..100 * scale() {
        let slots: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new()); // (slot address, id)
        let seen = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for tid in 0..threads {
                let (ch, barrier, slots, seen) = (&ch, &barrier, &slots, &seen);
                s.spawn(move || {
                    let _guard = barrier.guard();
                    // Producers: 2 frames each (16 slots, 8 threads).
                    for k in 0..2 {
                        let t = ch.talloc().expect("16 slots for 16 frames");
                        let id = round * 1000 + tid * 2 + k;
                        let addr = ch.slot_ptr(&t) as usize;
                        ch.enq(t, Frame { id, results: [0; 3] });
                        slots.lock().unwrap().push((addr, id));
                    }
                    barrier.wait();
                    // Children: three per frame, spread over the threads, each writes its result.
                    let work = slots.lock().unwrap().clone();
                    for (n, &(addr, id)) in work.iter().enumerate() {
                        for child in 0..3 {
                            if (n * 3 + child) % threads == tid {
                                let frame = addr as *mut Frame;
                                // SAFETY: the frame was published in the previous phase and is not
                                // taken before the next barrier; each (frame, child) result is
                                // written by exactly one thread, and the barrier orders the write
                                // before the consumer's deq.
                                unsafe { (*frame).results[child] = (id * 10 + child) as u64 };
                            }
                        }
                    }
                    barrier.wait();
                    // Consumers.
                    while let Some(f) = ch.deq().unwrap() {
                        for child in 0..3 {
                            assert_eq!(f.results[child], (f.id * 10 + child) as u64, "frame {f:?}");
                        }
                        seen.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(seen.load(Ordering::Relaxed), 16);
    }
}

/// One producer and one consumer at the same time, enqueueing in ticket order (runs from
/// `talloc_n` included): the counters support this SPSC overlap, so everything arrives in order.
#[test]
fn overlapping_spsc_in_order() {
    let n = 20_000 * scale() as u64;
    let ch = Channel::<u64>::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut next = 0;
            let mut rng = Rng::new(7);
            let mut idle = 0u64;
            while next < n {
                let want = (1 + rng.below(3)).min(n - next) as usize;
                if let Some((first, got)) = ch.talloc_n(want) {
                    for k in 0..got {
                        ch.enq(ch.ticket(&first, k), next);
                        next += 1;
                    }
                    idle = 0;
                } else {
                    idle += 1;
                    assert!(idle < 10_000_000, "producer starved at {next}: slots never freed");
                    std::thread::yield_now();
                }
            }
        });
        let mut expect = 0;
        let mut idle = 0u64;
        while expect < n {
            match ch.deq().expect("SPSC with in-order enq") {
                Some(v) => {
                    assert_eq!(v, expect);
                    expect += 1;
                    idle = 0;
                }
                None => {
                    idle += 1;
                    assert!(idle < 10_000_000, "consumer starved at {expect}: lost elements");
                    std::thread::yield_now();
                }
            }
        }
    });
    assert!(ch.is_empty());
}

/// The protocol broken on purpose: producers and consumers at once, many of each. The channel
/// may refuse (panic in `talloc`/`enq`, `Err` from `deq`) but never lets two threads into one
/// slot: no element is delivered twice or torn, whatever the interleaving.
#[test]
fn overlapping_phases_never_deliver_twice_or_torn() {
    let threads = 8;
    let ch = Channel::<Elem>::new(4);
    let ledger = Ledger::new(threads * 2000);
    let stop = AtomicBool::new(false);
    let (errors, panics) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        for tid in 0..threads {
            let (ch, ledger, stop, errors, panics) = (&ch, &ledger, &stop, &errors, &panics);
            s.spawn(move || {
                for _ in 0..2000 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if tid % 2 == 0 {
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            if let Some(t) = ch.talloc() {
                                let id = ledger.fresh_id();
                                let ticket = t.index() as u64;
                                ch.enq(t, Elem { id, ticket, check: checksum(id, ticket) });
                            }
                        }));
                        if r.is_err() {
                            panics.fetch_add(1, Ordering::Relaxed);
                            stop.store(true, Ordering::Relaxed); // the channel is poisoned now
                        }
                    } else {
                        match ch.deq() {
                            Ok(Some(e)) => ledger.deliver(&e),
                            Ok(None) => std::thread::yield_now(),
                            Err(_) => {
                                errors.fetch_add(1, Ordering::Relaxed);
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                }
            });
        }
    });
    // Whatever happened, what was delivered was delivered once and intact (checked in `deliver`);
    // a clean run (no violation observed) must also have lost nothing.
    if errors.load(Ordering::Relaxed) == 0 && panics.load(Ordering::Relaxed) == 0 {
        while let Some(e) = ch.deq().unwrap() {
            ledger.deliver(&e);
        }
        ledger.assert_all_delivered();
    }
}

/// Elements left in a channel at drop are dropped exactly once, also after concurrent phases.
#[test]
fn drop_releases_leftovers_after_concurrent_phases() {
    let token = std::sync::Arc::new(());
    let ch = Channel::<std::sync::Arc<()>>::new(64);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..8 {
                    let t = ch.talloc().unwrap();
                    ch.enq(t, token.clone());
                }
            });
        }
    });
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..5 {
                    drop(ch.deq().unwrap().unwrap());
                }
            });
        }
    });
    assert_eq!(std::sync::Arc::strong_count(&token), 1 + 64 - 20);
    drop(ch);
    assert_eq!(std::sync::Arc::strong_count(&token), 1);
}
