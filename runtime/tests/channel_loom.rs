//! Loom model checks of the array channel's phase protocol (`runtime/src/channel.rs`).
//!
//! Run with `scripts/loom.sh` (`RUSTFLAGS="--cfg loom"`, release, `LOOM_MAX_PREEMPTIONS=2`). Each
//! model is a small bound (capacity 1–4, 2–3 threads per phase) where loom explores every
//! interleaving and every weak-memory outcome the orderings allow, and its `UnsafeCell` flags any
//! two unordered accesses to a slot. Phases are separated by `join`, the host's quiescent point.
#![cfg(loom)]

use gpu_cilk_runtime::channel::Channel;
use loom::sync::Arc;
use loom::thread;

/// Runs `f(i)` for `i in 0..n` concurrently, `f(0)` on the calling thread and the rest on `n - 1`
/// loom threads (loom allows 5 threads per execution, main included, over its whole life), and
/// joins them: the end of the phase. Returns the results in `i` order.
fn phase<R: Send + 'static>(n: usize, f: impl Fn(usize) -> R + Send + Sync + 'static) -> Vec<R> {
    let f = Arc::new(f);
    let handles: Vec<_> = (1..n)
        .map(|i| {
            let f = f.clone();
            thread::spawn(move || f(i))
        })
        .collect();
    let mut out = vec![f(0)];
    out.extend(handles.into_iter().map(|h| h.join().unwrap()));
    out
}

/// Each producer enqueues `per` values `id * 10 + k`; returns the values that got a slot.
fn produce(ch: &Arc<Channel<u32>>, producers: usize, per: usize, base: u32) -> Vec<u32> {
    let ch = ch.clone();
    phase(producers, move |id| {
        let mut ok = Vec::new();
        for k in 0..per {
            let v = base + (id * 10 + k) as u32;
            if let Some(t) = ch.talloc() {
                ch.enq(t, v);
                ok.push(v);
            }
        }
        ok
    })
    .concat()
}

/// Each consumer deqs until `None`; returns everything taken.
fn consume(ch: &Arc<Channel<u32>>, consumers: usize) -> Vec<u32> {
    let ch = ch.clone();
    phase(consumers, move |_| std::iter::from_fn(|| ch.deq().expect("protocol kept")).collect::<Vec<_>>()).concat()
}

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v
}

/// 2 producers then 2 consumers, capacity 2, 3 offers: exactly two succeed, one gets `None`, and
/// every accepted element comes out exactly once.
#[test]
fn producers_then_consumers_exactly_once() {
    loom::model(|| {
        let ch = Arc::new(Channel::<u32>::new(2));
        let produced = {
            let ch = ch.clone();
            phase(2, move |id| {
                let mut ok = Vec::new();
                for k in 0..(1 + id) {
                    let v = (id * 10 + k) as u32;
                    if let Some(t) = ch.talloc() {
                        ch.enq(t, v);
                        ok.push(v);
                    }
                }
                ok
            })
            .concat()
        };
        assert_eq!(produced.len(), 2, "capacity 2: exactly two of three offers fit");
        assert_eq!(ch.occupancy(), 2);
        assert!(ch.talloc().is_none());
        let consumed = consume(&ch, 2);
        assert_eq!(sorted(consumed), sorted(produced));
        assert_eq!(ch.occupancy(), 0);
        assert!(ch.is_empty());
    });
}

/// Two producer/consumer rounds on capacity 2: the second round's tickets 2 and 3 reuse slots 0
/// and 1 (the next lap), and the previous lap's reads happen-before the new writes.
#[test]
fn wraparound_across_two_phases() {
    loom::model(|| {
        let ch = Arc::new(Channel::<u32>::new(2));
        for round in 0..2u32 {
            let produced = produce(&ch, 2, 1, round * 100);
            assert_eq!(produced.len(), 2);
            let consumed = consume(&ch, 2);
            assert_eq!(sorted(consumed), sorted(produced), "round {round}");
        }
        // No hole: the next ticket is exactly 4.
        let t = ch.talloc().expect("room");
        assert_eq!(t.index(), 4);
        ch.enq(t, 0);
    });
}

/// Concurrent `talloc_n(3)` on capacity 4: the grants are disjoint runs that cover exactly the
/// four slots (one full, one partial or both partial), and the undo leaves no hole.
#[test]
fn talloc_n_partial_grants() {
    loom::model(|| {
        let ch = Arc::new(Channel::<u32>::new(4));
        let grants = {
            let ch = ch.clone();
            phase(2, move |_| {
                let (first, got) = ch.talloc_n(3)?;
                for k in 0..got {
                    ch.enq(ch.ticket(&first, k), first.index() as u32 + k as u32);
                }
                Some((first.index(), got))
            })
        };
        let mut runs: Vec<(usize, usize)> = grants.into_iter().flatten().collect();
        runs.sort_unstable();
        let covered: Vec<usize> = runs.iter().flat_map(|&(f, n)| f..f + n).collect();
        assert_eq!(covered, vec![0, 1, 2, 3], "grants {runs:?}");
        assert!(ch.talloc_n(1).is_none());
        let all: Vec<u32> = std::iter::from_fn(|| ch.deq().unwrap()).collect();
        assert_eq!(all, vec![0, 1, 2, 3], "ticket order, every slot written once");
        let (first, got) = ch.talloc_n(4).expect("room again");
        assert_eq!((first.index(), got), (4, 4), "no hole after the undo");
        for k in 0..got {
            ch.enq(ch.ticket(&first, k), 0);
        }
    });
}

/// A full channel (capacity 2, one slot left) raced by 3 producers: exactly one wins, the others
/// get `None`, and the counter is left exactly at the limit (next lap starts at ticket 2).
#[test]
fn full_channel_returns_none_without_holes() {
    loom::model(|| {
        let ch = Arc::new(Channel::<u32>::new(2));
        let t = ch.talloc().unwrap();
        ch.enq(t, 99);
        let produced = produce(&ch, 3, 1, 0);
        assert_eq!(produced.len(), 1, "one slot left, three producers");
        let consumed = consume(&ch, 2);
        let mut expect = produced;
        expect.push(99);
        assert_eq!(sorted(consumed), sorted(expect));
        let t = ch.talloc().unwrap();
        assert_eq!(t.index(), 2, "no hole left by the failed reservations");
        ch.enq(t, 0);
    });
}

/// Consumers racing on an almost empty channel (capacity 4, one element, 3 consumers): exactly
/// one gets it, the others `None`, and the claim undo leaves no hole for the next phase.
#[test]
fn empty_channel_claim_undo_without_holes() {
    loom::model(|| {
        let ch = Arc::new(Channel::<u32>::new(4));
        let t = ch.talloc().unwrap();
        ch.enq(t, 7);
        let consumed = consume(&ch, 3);
        assert_eq!(consumed, vec![7]);
        let t = ch.talloc().unwrap();
        ch.enq(t, 8);
        assert_eq!(ch.deq().unwrap(), Some(8), "the claim counter is exactly at ticket 1");
        assert_eq!(ch.deq().unwrap(), None);
    });
}

/// Drop of a channel holding elements (an `Arc` per element) in a model: every element dropped
/// exactly once, none taken twice.
#[test]
fn drop_after_partial_consumption() {
    loom::model(|| {
        let token = Arc::new(());
        let ch = Arc::new(Channel::<Arc<()>>::new(2));
        {
            let (ch, token) = (ch.clone(), token.clone());
            phase(2, move |_| {
                let t = ch.talloc().unwrap();
                ch.enq(t, token.clone());
            });
        }
        {
            let ch = ch.clone();
            phase(1, move |_| drop(ch.deq().unwrap()));
        }
        assert_eq!(Arc::strong_count(&token), 2);
        drop(ch);
        assert_eq!(Arc::strong_count(&token), 1);
    });
}

/// One producer and one consumer running *at the same time* (the phase contract relaxed to SPSC
/// with in-order `enq`, which the counters also support), capacity 1 so the second element reuses
/// the first one's slot: here no join orders the accesses, so this model is what checks the
/// Release/Acquire pairs (a weakened ordering makes loom report a race on the slot).
#[test]
fn overlapping_spsc_orders_slot_accesses() {
    loom::model(|| {
        let ch = Arc::new(Channel::<u32>::new(1));
        let producer = {
            let ch = ch.clone();
            thread::spawn(move || {
                let mut sent = Vec::new();
                for v in 1..=2u32 {
                    if let Some(t) = ch.talloc() {
                        ch.enq(t, v);
                        sent.push(v);
                    }
                }
                sent
            })
        };
        let mut got = Vec::new();
        for _ in 0..2 {
            if let Some(v) = ch.deq().expect("SPSC with in-order enq never reports a violation") {
                got.push(v);
            }
        }
        let sent = producer.join().unwrap();
        got.extend(std::iter::from_fn(|| ch.deq().unwrap()));
        assert_eq!(got, sent, "FIFO, exactly once");
    });
}

/// The largest model: 3 producers each `talloc_n(2)` on capacity 4 (6 asked, 4 granted: some
/// grant is partial or refused), then 2 consumers drain it, then a second lap is reserved whole.
#[test]
fn three_producers_talloc_n_then_two_consumers() {
    loom::model(|| {
        let ch = Arc::new(Channel::<u32>::new(4));
        let produced = {
            let ch = ch.clone();
            phase(3, move |id| {
                let mut ok = Vec::new();
                if let Some((first, got)) = ch.talloc_n(2) {
                    for k in 0..got {
                        let v = (id * 10 + k) as u32;
                        ch.enq(ch.ticket(&first, k), v);
                        ok.push(v);
                    }
                }
                ok
            })
            .concat()
        };
        assert_eq!(produced.len(), 4);
        let consumed = consume(&ch, 2);
        assert_eq!(sorted(consumed), sorted(produced));
        let (first, got) = ch.talloc_n(4).expect("room");
        assert_eq!((first.index(), got), (4, 4), "second lap starts exactly at ticket 4");
        for k in 0..got {
            ch.enq(ch.ticket(&first, k), 0);
        }
    });
}

/// The batched API the cpu backend's workers use: 2 producers each `talloc_n(3)` + one `enq_n`
/// (one `published` add per run) on capacity 4, then 2 consumers each `deq_n(3)` (one `claimed`
/// add per claim, one `freed` add when the claim drops): grants and claims are disjoint runs, every
/// published element comes out exactly once, the claim undo leaves no hole, and the done counts
/// end exact (a second lap is reserved whole from ticket 4).
#[test]
fn batched_enq_n_then_deq_n_exactly_once() {
    loom::model(|| {
        let ch = Arc::new(Channel::<u32>::new(4));
        let produced = {
            let ch = ch.clone();
            phase(2, move |id| match ch.talloc_n(3) {
                Some((first, got)) => {
                    let vals: Vec<u32> = (0..got).map(|k| (id * 10 + k) as u32).collect();
                    ch.enq_n(first, got, |k| vals[k]);
                    vals
                }
                None => Vec::new(),
            })
            .concat()
        };
        assert_eq!(produced.len(), 4, "capacity 4: exactly four of six asked are granted");
        assert_eq!((ch.len(), ch.occupancy()), (4, 4));
        let consumed = {
            let ch = ch.clone();
            phase(2, move |_| match ch.deq_n(3) {
                Some(claim) => claim.map(|r| r.expect("protocol kept")).collect::<Vec<_>>(),
                None => Vec::new(),
            })
            .concat()
        };
        assert_eq!(sorted(consumed), sorted(produced));
        assert_eq!((ch.len(), ch.occupancy()), (0, 0), "done counts exact after the batched adds");
        assert!(ch.deq_n(1).is_none());
        let (first, got) = ch.talloc_n(4).expect("room");
        assert_eq!((first.index(), got), (4, 4), "second lap starts exactly at ticket 4");
        ch.enq_n(first, got, |_| 0);
    });
}

/// One producer publishing runs with `enq_n` while one consumer claims with `deq_n` *at the same
/// time* (SPSC, as in `overlapping_spsc_orders_slot_accesses`), capacity 1 so the second run
/// reuses the first one's slot: no join orders the accesses, so this checks that the batched done
/// counts (the `published` add after the run, the `freed` add when the claim drops) still carry
/// the Release/Acquire chains that order the slot's write, read and rewrite.
#[test]
fn overlapping_spsc_enq_n_deq_n_orders_slot_accesses() {
    loom::model(|| {
        let ch = Arc::new(Channel::<u32>::new(1));
        let producer = {
            let ch = ch.clone();
            thread::spawn(move || {
                for v in [7u32, 8] {
                    let (first, got) = loop {
                        if let Some(g) = ch.talloc_n(1) {
                            break g;
                        }
                        thread::yield_now();
                    };
                    ch.enq_n(first, got, |_| v);
                }
            })
        };
        let mut got = Vec::new();
        while got.len() < 2 {
            match ch.deq_n(2) {
                Some(claim) => got.extend(claim.map(|r| r.expect("in-order SPSC keeps the protocol"))),
                None => thread::yield_now(),
            }
        }
        producer.join().unwrap();
        assert_eq!(got, vec![7, 8]);
    });
}

/// A claim dropped before it is exhausted takes and drops the rest (no hole), racing another
/// consumer's claim: every element (an `Arc`) is dropped exactly once and the slots are free for
/// the next lap.
#[test]
fn dropped_claim_takes_the_rest() {
    loom::model(|| {
        let token = Arc::new(());
        let ch = Arc::new(Channel::<Arc<()>>::new(4));
        let (first, got) = ch.talloc_n(4).expect("room");
        let t = token.clone();
        ch.enq_n(first, got, |_| t.clone());
        drop(t);
        let kept = {
            let ch = ch.clone();
            phase(2, move |id| match ch.deq_n(2) {
                // Consumer 0 looks at one element and drops the claim; consumer 1 takes all.
                Some(mut claim) if id == 0 => claim.next().map(|r| r.expect("protocol kept")).into_iter().count(),
                Some(claim) => claim.map(|r| r.expect("protocol kept")).collect::<Vec<_>>().len(),
                None => 0,
            })
        };
        assert_eq!(kept.iter().sum::<usize>(), 3, "one yielded + two by the other claim");
        assert_eq!(Arc::strong_count(&token), 1, "every element dropped exactly once");
        assert_eq!((ch.len(), ch.occupancy()), (0, 0));
        let (first, got) = ch.talloc_n(4).expect("the dropped claim's slots are free again");
        assert_eq!((first.index(), got), (4, 4));
        ch.enq_n(first, got, |_| token.clone());
    });
}
