//! Loom model checks of the fetch-and-add ticket queue (`runtime/src/ticket_queue.rs`).
//!
//! Run with `scripts/loom.sh` (`RUSTFLAGS="--cfg loom"`, release, `LOOM_MAX_PREEMPTIONS=2`). Each
//! model is a small bound (capacity 2, 2–3 threads) where loom explores every interleaving and
//! every weak-memory outcome the orderings allow, and its `UnsafeCell` flags any two unordered
//! accesses to a slot. Blocking calls spin with `loom::thread::yield_now`, so a lost wake-up or a
//! lost ticket shows up as a model that never finishes (loom reports the deadlock).
#![cfg(loom)]

use gpu_cilk_runtime::ticket_queue::{TicketQueue, TryDequeueError, TryEnqueueError};
use loom::sync::Arc;
use loom::thread;

fn drain(q: &TicketQueue<u32>) -> Vec<u32> {
    std::iter::from_fn(|| q.try_dequeue().ok()).collect()
}

/// One producer pushes three values through two slots (the third waits for a lap) while the
/// other thread dequeues them: FIFO, exactly once, and the slot is handed across laps safely.
#[test]
fn blocking_spsc_wraps_a_lap_in_order() {
    loom::model(|| {
        let q = Arc::new(TicketQueue::new(2));
        let p = {
            let q = q.clone();
            thread::spawn(move || {
                for v in 1..=3u32 {
                    q.enqueue(v).unwrap();
                }
            })
        };
        let got: Vec<u32> = (0..3).map(|_| q.dequeue().unwrap()).collect();
        p.join().unwrap();
        assert_eq!(got, vec![1, 2, 3]);
        assert!(q.is_empty());
        assert_eq!(q.status().distance, 0);
    });
}

/// Two blocking producers and a blocking consumer that arrives before, between or after them:
/// every value comes out exactly once, and the consumer may wait on an empty slot.
#[test]
fn blocking_two_producers_one_consumer_exactly_once() {
    loom::model(|| {
        let q = Arc::new(TicketQueue::new(2));
        let ps: Vec<_> = (0..2u32)
            .map(|id| {
                let q = q.clone();
                thread::spawn(move || q.enqueue(10 + id).unwrap())
            })
            .collect();
        let mut got = vec![q.dequeue().unwrap(), q.dequeue().unwrap()];
        for p in ps {
            p.join().unwrap();
        }
        got.sort_unstable();
        assert_eq!(got, vec![10, 11]);
        let st = q.status();
        assert_eq!((st.distance, st.waiting_producers(), st.waiting_consumers()), (0, 0, 0));
    });
}

/// Non-waiting producer against a non-waiting consumer: no ticket is ever lost (whatever was
/// accepted is dequeued or still there, in order), `Full` never appears below capacity, and
/// `Empty` is answered only when nothing had been accepted yet.
#[test]
fn non_waiting_never_loses_a_ticket() {
    loom::model(|| {
        let q = Arc::new(TicketQueue::new(2));
        let p = {
            let q = q.clone();
            thread::spawn(move || {
                let mut ok = Vec::new();
                for v in 1..=2u32 {
                    match q.try_enqueue(v) {
                        Ok(()) => ok.push(v),
                        Err(TryEnqueueError::Busy(_)) => {}
                        Err(e) => panic!("try_enqueue({v}) below capacity: {e:?}"),
                    }
                }
                ok
            })
        };
        let mut taken = Vec::new();
        for _ in 0..2 {
            match q.try_dequeue() {
                Ok(v) => taken.push(v),
                Err(TryDequeueError::Empty | TryDequeueError::Busy) => {}
                Err(TryDequeueError::Closed) => panic!("not closed"),
            }
        }
        let accepted = p.join().unwrap();
        taken.extend(drain(&q));
        assert_eq!(taken, accepted, "every accepted value exactly once, in order");
        // Quiescent: statuses exact.
        assert!(q.is_empty());
        assert_eq!(q.try_dequeue(), Err(TryDequeueError::Empty));
    });
}

/// Blocking and non-waiting calls mixed across the counters' wrap at `u64::MAX`: a blocking
/// producer fills and refills the two slots while the consumer mixes `try_dequeue` and `dequeue`.
#[test]
fn mixed_interfaces_across_the_wrap() {
    loom::model(|| {
        let q = Arc::new(TicketQueue::with_initial_ticket(2, u64::MAX - 1));
        let p = {
            let q = q.clone();
            thread::spawn(move || {
                for v in 1..=3u32 {
                    q.enqueue(v).unwrap();
                }
            })
        };
        let mut got = Vec::new();
        if let Ok(v) = q.try_dequeue() {
            got.push(v);
        }
        while got.len() < 3 {
            got.push(q.dequeue().unwrap());
        }
        p.join().unwrap();
        assert_eq!(got, vec![1, 2, 3]);
        let st = q.status();
        assert_eq!(st.head, 1, "wrapped: u64::MAX - 1 + 3");
        assert_eq!(st.distance, 0);
    });
}

/// `close` wakes a consumer blocked on an empty queue and races a producer: the consumer gets
/// the producer's value or `Closed`, never hangs, and an accepted value it did not get is still
/// in the queue (dropped with it).
#[test]
fn close_wakes_blocked_consumer() {
    loom::model(|| {
        let q = Arc::new(TicketQueue::new(2));
        let c = {
            let q = q.clone();
            thread::spawn(move || q.dequeue())
        };
        let p = {
            let q = q.clone();
            thread::spawn(move || q.enqueue(7u32).is_ok())
        };
        q.close();
        let got = c.join().unwrap();
        let accepted = p.join().unwrap();
        match got {
            Ok(v) => assert!(accepted && v == 7),
            Err(_) => {
                // Nothing more can be taken after close; the status still counts what was accepted.
                assert_eq!(q.try_dequeue(), Err(TryDequeueError::Closed));
            }
        }
        assert!(q.is_closed());
    });
}

/// Counted interface: a producer publishes a batch of two while two consumers each take what is
/// published (never waiting on an empty queue): every value comes out exactly once, a take never
/// returns more than was published, and nothing is left claimable afterwards.
#[test]
fn counted_batch_and_racing_takers_exactly_once() {
    loom::model(|| {
        let q = Arc::new(TicketQueue::new(2));
        let p = {
            let q = q.clone();
            thread::spawn(move || q.push_batch(vec![1u32, 2]))
        };
        let c = {
            let q = q.clone();
            thread::spawn(move || q.take(2))
        };
        let mut got = q.take(1);
        p.join().unwrap();
        got.extend(c.join().unwrap());
        // What the racing takes missed is still claimable, exactly once.
        got.extend(q.take(2));
        got.sort_unstable();
        assert_eq!(got, vec![1, 2]);
        assert_eq!(q.published(), 0);
        assert!(q.take(1).is_empty());
    });
}

/// Counted interface across a lap: two producers each push one value into a one-slot queue
/// after the consumer freed it; the consumer takes whenever something is published.
#[test]
fn counted_laps_hand_over_the_slot() {
    loom::model(|| {
        let q = Arc::new(TicketQueue::new(1));
        q.push_batch(vec![7u32]);
        let p = {
            let q = q.clone();
            thread::spawn(move || q.push_batch(vec![8u32]))
        };
        let mut got = Vec::new();
        while got.len() < 2 {
            got.extend(q.take(1));
            thread::yield_now();
        }
        p.join().unwrap();
        assert_eq!(got, vec![7, 8]);
    });
}
