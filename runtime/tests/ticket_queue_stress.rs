//! Stress tests of the fetch-and-add ticket queue (`runtime/src/ticket_queue.rs`) on real threads:
//! 8–16 threads, capacities 1, 2, 8 and 1024, the blocking and non-waiting interfaces alone and
//! mixed, across the counters' wrap at `u64::MAX`. Every test checks exactly-once delivery with a
//! bitmap and per-producer FIFO order (each consumer sees each producer's items with increasing
//! sequence numbers); the close test checks that `close` wakes every blocked thread; the status
//! test checks that the non-waiting answers and the status interface are exact at quiescent
//! points. Sized to finish in a few seconds in debug on two cores.

use gpu_cilk_runtime::ticket_queue::{TicketQueue, TryDequeueError, TryEnqueueError};
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

const CAPACITIES: [usize; 4] = [1, 2, 8, 1024];

/// Item `seq` of producer `pid`.
fn item(pid: usize, seq: usize) -> u64 {
    ((pid as u64) << 32) | seq as u64
}

/// How producers and consumers talk to the queue.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Blocking,
    NonWaiting,
    /// Even-numbered threads blocking, odd ones non-waiting.
    Mixed,
}

impl Mode {
    fn blocking(self, id: usize) -> bool {
        match self {
            Mode::Blocking => true,
            Mode::NonWaiting => false,
            Mode::Mixed => id % 2 == 0,
        }
    }
}

fn put(q: &TicketQueue<u64>, v: u64, blocking: bool) {
    if blocking {
        q.enqueue(v).unwrap();
        return;
    }
    let mut v = v;
    loop {
        match q.try_enqueue(v) {
            Ok(()) => return,
            Err(TryEnqueueError::Closed(_)) => panic!("closed"),
            Err(e) => {
                v = e.into_inner();
                thread::yield_now();
            }
        }
    }
}

fn take(q: &TicketQueue<u64>, blocking: bool) -> u64 {
    if blocking {
        return q.dequeue().unwrap();
    }
    loop {
        match q.try_dequeue() {
            Ok(v) => return v,
            Err(TryDequeueError::Closed) => panic!("closed"),
            Err(TryDequeueError::Empty | TryDequeueError::Busy) => thread::yield_now(),
        }
    }
}

/// Checks one consumer's sequence for per-producer FIFO order and marks the bitmap.
fn check_and_mark(got: &[u64], producers: usize, per: usize, seen: &mut [bool]) {
    let mut last = vec![None::<usize>; producers];
    for &v in got {
        let (pid, seq) = ((v >> 32) as usize, (v & 0xffff_ffff) as usize);
        assert!(pid < producers && seq < per, "value {v:#x} was never enqueued");
        if let Some(prev) = last[pid] {
            assert!(seq > prev, "producer {pid}: seq {seq} after {prev} (FIFO per producer broken)");
        }
        last[pid] = Some(seq);
        let idx = pid * per + seq;
        assert!(!seen[idx], "producer {pid} seq {seq} delivered twice");
        seen[idx] = true;
    }
}

/// `producers` threads enqueue `per` items each, `consumers` threads dequeue
/// `producers * per / consumers` each; exactly once, per-producer FIFO, quiescent-empty at the end.
fn run_pc(q: TicketQueue<u64>, producers: usize, consumers: usize, per: usize, mode: Mode) {
    let total = producers * per;
    assert_eq!(total % consumers, 0);
    let q = Arc::new(q);
    let start = Arc::new(Barrier::new(producers + consumers));
    let ps: Vec<_> = (0..producers)
        .map(|pid| {
            let (q, start) = (q.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                for seq in 0..per {
                    put(&q, item(pid, seq), mode.blocking(pid));
                }
            })
        })
        .collect();
    let cs: Vec<_> = (0..consumers)
        .map(|cid| {
            let (q, start) = (q.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                (0..total / consumers).map(|_| take(&q, mode.blocking(cid + 1))).collect::<Vec<u64>>()
            })
        })
        .collect();
    for p in ps {
        p.join().unwrap();
    }
    let mut seen = vec![false; total];
    for c in cs {
        check_and_mark(&c.join().unwrap(), producers, per, &mut seen);
    }
    assert!(seen.iter().all(|&s| s), "an item was lost");
    let st = q.status();
    assert_eq!((st.distance, st.len(), st.waiting_producers(), st.waiting_consumers()), (0, 0, 0, 0), "{st:?}");
    assert_eq!(q.try_dequeue(), Err(TryDequeueError::Empty));
}

/// Items per producer for a capacity: small capacities hand every item through a convoy of
/// yielding threads on an oversubscribed host, so they move fewer.
fn per_producer(cap: usize) -> usize {
    if cap <= 2 {
        3000
    } else {
        12000
    }
}

#[test]
fn blocking_exactly_once_and_fifo_per_producer() {
    for cap in CAPACITIES {
        let t = Instant::now();
        run_pc(TicketQueue::new(cap), 4, 4, per_producer(cap), Mode::Blocking);
        run_pc(TicketQueue::new(cap), 8, 8, per_producer(cap) / 2, Mode::Blocking);
        eprintln!("blocking cap {cap}: {:?}", t.elapsed());
    }
}

#[test]
fn non_waiting_exactly_once_and_fifo_per_producer() {
    for cap in CAPACITIES {
        let t = Instant::now();
        run_pc(TicketQueue::new(cap), 6, 2, per_producer(cap), Mode::NonWaiting);
        run_pc(TicketQueue::new(cap), 4, 12, per_producer(cap) * 3 / 2, Mode::NonWaiting);
        eprintln!("non-waiting cap {cap}: {:?}", t.elapsed());
    }
}

#[test]
fn mixed_interfaces_exactly_once_across_the_wrap() {
    for cap in CAPACITIES {
        // Start just below the wrap so the run crosses it.
        let start = u64::MAX - (cap as u64) - 100;
        run_pc(TicketQueue::with_initial_ticket(cap, start), 8, 8, per_producer(cap) / 2, Mode::Mixed);
    }
}

/// The paper's matched pattern: every thread enqueues then dequeues; whatever comes out is some
/// thread's item, exactly once, and each thread's items reach any one consumer in order.
#[test]
fn matched_enqueue_dequeue_exactly_once() {
    for cap in CAPACITIES {
        for (threads, mode) in [(16, Mode::Blocking), (12, Mode::Mixed)] {
            let per = per_producer(cap) / 2;
            let q = Arc::new(TicketQueue::with_initial_ticket(cap, u64::MAX - 37));
            let hs: Vec<_> = (0..threads)
                .map(|id| {
                    let q = q.clone();
                    thread::spawn(move || {
                        let b = mode.blocking(id);
                        (0..per)
                            .map(|seq| {
                                put(&q, item(id, seq), b);
                                take(&q, b)
                            })
                            .collect::<Vec<u64>>()
                    })
                })
                .collect();
            let mut seen = vec![false; threads * per];
            for h in hs {
                check_and_mark(&h.join().unwrap(), threads, per, &mut seen);
            }
            assert!(seen.iter().all(|&s| s), "cap {cap}: an item was lost");
            assert!(q.is_empty());
        }
    }
}

/// Waits until `cond` holds (the blocked threads have taken their tickets), for at most 10 s.
fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn close_wakes_blocked_threads() {
    for cap in CAPACITIES {
        // Consumers blocked on an empty queue.
        let q = Arc::new(TicketQueue::<u64>::new(cap));
        let woke = Arc::new(AtomicUsize::new(0));
        let cs: Vec<_> = (0..8)
            .map(|_| {
                let (q, woke) = (q.clone(), woke.clone());
                thread::spawn(move || {
                    let r = q.dequeue();
                    woke.fetch_add(1, Ordering::SeqCst);
                    r
                })
            })
            .collect();
        wait_for("8 waiting consumers", || q.waiting_consumers() == 8);
        let st = q.status();
        assert_eq!((st.distance, st.len(), st.is_empty()), (-8, 0, true));
        assert_eq!(woke.load(Ordering::SeqCst), 0, "a consumer returned from an empty queue");
        assert!(q.close());
        for c in cs {
            assert!(c.join().unwrap().is_err(), "consumer got an item from an empty queue");
        }

        // Producers blocked on a full queue.
        let q = Arc::new(TicketQueue::<u64>::new(cap));
        for i in 0..cap as u64 {
            q.try_enqueue(i).unwrap();
        }
        assert!(matches!(q.try_enqueue(0), Err(TryEnqueueError::Full(0))));
        let ps: Vec<_> = (0..8u64)
            .map(|i| {
                let q = q.clone();
                thread::spawn(move || q.enqueue(1000 + i).map_err(|e| e.0))
            })
            .collect();
        wait_for("8 waiting producers", || q.waiting_producers() == 8);
        assert_eq!(q.len(), cap);
        assert!(q.is_full());
        q.close();
        let mut returned: Vec<u64> = ps.into_iter().map(|p| p.join().unwrap().unwrap_err()).collect();
        returned.sort_unstable();
        assert_eq!(returned, (1000..1008).collect::<Vec<_>>(), "every blocked producer got its value back");
        assert!(matches!(q.try_enqueue(5), Err(TryEnqueueError::Closed(5))));
        assert_eq!(q.try_dequeue(), Err(TryDequeueError::Closed));
    }
}

/// Random phases of concurrent non-waiting and blocking calls that can never have to wait
/// (never more enqueues than free slots, never more dequeues than elements), separated by joins:
/// at each quiescent point the status is exact and so are `Full`/`Empty`.
#[test]
fn statuses_exact_at_quiescent_points() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x71c4e7);
    for cap in [2usize, 8, 1024] {
        let q = Arc::new(TicketQueue::<u64>::with_initial_ticket(cap, u64::MAX - 3 * cap as u64));
        let mut model = std::collections::VecDeque::new();
        let mut next = 0u64;
        for _phase in 0..300 {
            let threads = rng.gen_range(2..=8usize);
            let enqueue = rng.gen_bool(0.5);
            let room = if enqueue { cap - model.len() } else { model.len() };
            let n = rng.gen_range(0..=room);
            // Split n calls over the threads; each blocking or not at random.
            let per: Vec<usize> = (0..threads).map(|i| n / threads + usize::from(i < n % threads)).collect();
            let hs: Vec<_> = per
                .iter()
                .enumerate()
                .map(|(i, &k)| {
                    let q = q.clone();
                    let blocking = rng.gen_bool(0.5);
                    let base = next + 1_000_000 * i as u64;
                    thread::spawn(move || {
                        let mut out = Vec::new();
                        for j in 0..k {
                            if enqueue {
                                put(&q, base + j as u64, blocking);
                                out.push(base + j as u64);
                            } else {
                                out.push(take(&q, blocking));
                            }
                        }
                        out
                    })
                })
                .collect();
            let results: Vec<Vec<u64>> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            if enqueue {
                // Concurrent producers: order among them is the queue's; read it back below.
                next += 10_000_000;
                let mut all: Vec<u64> = results.concat();
                all.sort_unstable();
                // Re-learn the order: rotate the queue once through a single thread.
                let mut fresh: Vec<u64> = (0..model.len() + all.len()).map(|_| q.try_dequeue().unwrap()).collect();
                for v in &fresh {
                    q.try_enqueue(*v).unwrap();
                }
                let old: Vec<u64> = fresh.drain(..model.len()).collect();
                assert_eq!(old, model.iter().copied().collect::<Vec<_>>(), "earlier elements first");
                let mut new_sorted = fresh.clone();
                new_sorted.sort_unstable();
                assert_eq!(new_sorted, all, "every enqueued element exactly once");
                model.extend(fresh);
            } else {
                let mut taken: Vec<u64> = results.concat();
                taken.sort_unstable();
                let mut expect: Vec<u64> = model.drain(..n).collect();
                expect.sort_unstable();
                assert_eq!(taken, expect, "dequeued the n oldest elements");
            }
            // Quiescent point: exact statuses.
            let st = q.status();
            assert_eq!(st.len(), model.len(), "{st:?}");
            assert_eq!(st.distance, model.len() as i64);
            assert_eq!((st.waiting_producers(), st.waiting_consumers()), (0, 0));
            assert_eq!(q.is_full(), model.len() == cap);
            assert_eq!(q.is_empty(), model.is_empty());
            match q.try_enqueue(u64::MAX) {
                Ok(()) => {
                    assert!(model.len() < cap);
                    model.push_back(u64::MAX);
                }
                Err(e) => assert!(matches!(e, TryEnqueueError::Full(_)) && model.len() == cap, "{e:?}"),
            }
            match q.try_dequeue() {
                Ok(v) => assert_eq!(Some(v), model.pop_front()),
                Err(e) => assert!(e == TryDequeueError::Empty && model.is_empty(), "{e:?}"),
            }
        }
    }
}

/// Counted interface, as the persistent device scheduler uses it (the global item pool and the
/// frame free ring): producers push random-sized batches, consumers take whatever is published,
/// never waiting on an empty queue. Producers keep the queue within its capacity the way the device
/// does: they push only while the published count plus their own batch leaves room. Exactly once,
/// for tiny and large capacities and across the counters' wrap.
#[test]
fn counted_batches_exactly_once() {
    for &(cap, start) in &[(2usize, 0u64), (8, u64::MAX - 20), (1024, 0)] {
        let producers = 6usize;
        let consumers = 6usize;
        let per = 3000usize;
        let q = Arc::new(TicketQueue::<u64>::with_initial_ticket(cap, start));
        // Items pushed and not yet taken, kept at or below the capacity (the device keeps
        // `tail - head + slack <= capacity`; here a counter plays that role).
        let in_flight = Arc::new(AtomicUsize::new(0));
        let taken = Arc::new(AtomicUsize::new(0));
        let total = producers * per;
        let mut hs = Vec::new();
        for pid in 0..producers {
            let (q, in_flight) = (q.clone(), in_flight.clone());
            hs.push(thread::spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(pid as u64);
                let mut seq = 0;
                while seq < per {
                    let n = rng.gen_range(1..=cap.min(4)).min(per - seq);
                    let cur = in_flight.load(Ordering::SeqCst);
                    if cur + n > cap
                        || in_flight.compare_exchange(cur, cur + n, Ordering::SeqCst, Ordering::SeqCst).is_err()
                    {
                        thread::yield_now();
                        continue;
                    }
                    q.push_batch((seq..seq + n).map(|s| item(pid, s)).collect());
                    seq += n;
                }
            }));
        }
        let mut cs = Vec::new();
        for cid in 0..consumers {
            let (q, in_flight, taken) = (q.clone(), in_flight.clone(), taken.clone());
            cs.push(thread::spawn(move || {
                let mut got = Vec::new();
                let deadline = Instant::now() + Duration::from_secs(60);
                while taken.load(Ordering::SeqCst) < total {
                    let batch = q.take(1 + cid % 4);
                    if batch.is_empty() {
                        assert!(Instant::now() < deadline, "counted takes stalled");
                        thread::yield_now();
                        continue;
                    }
                    taken.fetch_add(batch.len(), Ordering::SeqCst);
                    in_flight.fetch_sub(batch.len(), Ordering::SeqCst);
                    got.extend(batch);
                }
                got
            }));
        }
        for h in hs {
            h.join().unwrap();
        }
        let mut seen = vec![false; total];
        for c in cs {
            // Each consumer sees each producer's items in order (ticket order).
            check_and_mark(&c.join().unwrap(), producers, per, &mut seen);
        }
        assert!(seen.iter().all(|&s| s), "cap {cap}: an item was lost");
        assert_eq!(q.published(), 0);
        assert!(q.is_empty(), "cap {cap}: {:?}", q.status());
    }
}
