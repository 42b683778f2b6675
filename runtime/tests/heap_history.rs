//! Randomized history checks of the batched heap's Rust twin (`runtime/src/heap/`): many threads
//! (more than this machine's cores, so the scheduler preempts them mid-operation) insert and
//! delete concurrently; every operation is stamped before and after from one global counter and
//! the whole history goes through the checker of `gpu_cilk_test_support::heap_history` (multiset preserved,
//! nothing lost or duplicated, batches sorted and full unless the heap had no node, and no delete
//! returns a key larger than one that was in the heap during its whole execution). The heap's
//! quiescent invariants are checked after every run.
//!
//! Workloads cover tiny and large node sizes (k = 1, 2, 4, 64, 256), full and partial batches,
//! random, ascending, descending and equal priorities, mixed insert/delete traffic and the
//! insert-everything-then-delete-everything pattern of the benchmark. Run the summaries with
//! `cargo test -p gpu-cilk-runtime --test heap_history -- --nocapture`.

use gpu_cilk_runtime::heap::{Heap, HeapKey};
use gpu_cilk_test_support::heap_history::{self as history, check, Op, OpKind};
use gpu_cilk_test_support::splitmix::Rng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

type Key = HeapKey<u32, u64>;

#[derive(Clone, Copy, Debug)]
enum Dist {
    /// Uniform random priorities.
    Random,
    /// Priorities increasing over time (each insert larger than everything before it).
    Ascending,
    /// Priorities decreasing over time.
    Descending,
    /// One priority for every key (the payload orders them).
    Equal,
}

#[derive(Clone, Copy, Debug)]
enum Batches {
    Full,
    Partial,
    Mixed,
}

#[derive(Clone, Copy, Debug)]
struct Workload {
    threads: usize,
    k: usize,
    ops: usize,
    /// Percent of operations that insert (mixed traffic).
    insert_pct: u64,
    batches: Batches,
    dist: Dist,
    /// Every thread inserts `ops` batches, a barrier, then deletes until the heap is empty.
    phased: bool,
}

fn run(w: Workload, seed: u64) -> history::Summary {
    let k = w.k;
    let max_keys = w.threads * w.ops * k;
    let heap = Arc::new(Heap::<Key>::new(k, max_keys / k + w.threads + 2));
    let clock = Arc::new(AtomicU64::new(1));
    let order = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(w.threads));
    let stamp = |c: &AtomicU64| c.fetch_add(1, Ordering::SeqCst);
    let workers: Vec<_> = (0..w.threads)
        .map(|t| {
            let (heap, clock, order, barrier) = (heap.clone(), clock.clone(), order.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(seed ^ (t as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F));
                let mut log = Vec::new();
                let mut seq = 0u64;
                let mut out = Vec::new();
                let mut insert = |rng: &mut Rng, log: &mut Vec<Op<Key>>| {
                    let len = match w.batches {
                        Batches::Full => k,
                        Batches::Partial => 1 + rng.below(k.max(2) as u64 - 1) as usize,
                        Batches::Mixed => {
                            if rng.below(2) == 0 {
                                k
                            } else {
                                1 + rng.below(k as u64) as usize
                            }
                        }
                    }
                    .min(k);
                    let keys: Vec<Key> = (0..len)
                        .map(|_| {
                            seq += 1;
                            let prio = match w.dist {
                                Dist::Random => rng.next() as u32,
                                Dist::Ascending => order.fetch_add(1, Ordering::Relaxed) as u32,
                                Dist::Descending => u32::MAX - order.fetch_add(1, Ordering::Relaxed) as u32,
                                Dist::Equal => 7,
                            };
                            HeapKey { prio, payload: ((t as u64) << 40) | seq }
                        })
                        .collect();
                    let start = stamp(&clock);
                    heap.insert(&keys).unwrap();
                    let end = stamp(&clock);
                    log.push(Op { kind: OpKind::Insert, start, end, keys, who: t as u32 });
                };
                let mut delete = |log: &mut Vec<Op<Key>>| -> usize {
                    let start = stamp(&clock);
                    let n = heap.delete_min(&mut out);
                    let end = stamp(&clock);
                    log.push(Op { kind: OpKind::Delete, start, end, keys: out.clone(), who: t as u32 });
                    n
                };
                if w.phased {
                    for _ in 0..w.ops {
                        insert(&mut rng, &mut log);
                    }
                    barrier.wait();
                    while delete(&mut log) > 0 {}
                } else {
                    for _ in 0..w.ops {
                        if rng.below(100) < w.insert_pct {
                            insert(&mut rng, &mut log);
                        } else {
                            delete(&mut log);
                        }
                    }
                }
                log
            })
        })
        .collect();
    let mut ops: Vec<Op<Key>> = workers.into_iter().flat_map(|h| h.join().expect("worker panicked")).collect();
    heap.check().unwrap_or_else(|e| panic!("{w:?}: quiescent invariants after the run: {e}"));
    // Drain what is left, recorded like any other delete.
    let mut out = Vec::new();
    loop {
        let start = stamp(&clock);
        let n = heap.delete_min(&mut out);
        let end = stamp(&clock);
        ops.push(Op { kind: OpKind::Delete, start, end, keys: out.clone(), who: u32::MAX });
        if n == 0 {
            break;
        }
    }
    heap.check().unwrap_or_else(|e| panic!("{w:?}: quiescent invariants after the drain: {e}"));
    assert!(heap.is_empty());
    let summary = check(&ops, k).unwrap_or_else(|e| panic!("{w:?} (seed {seed:#x}): {e}"));
    println!("{w:?}: {summary}");
    summary
}

fn mixed(k: usize, ops: usize, batches: Batches, dist: Dist) -> Workload {
    Workload { threads: 8, k, ops, insert_pct: 55, batches, dist, phased: false }
}

#[test]
fn tiny_nodes_mixed_traffic_all_distributions() {
    for (i, dist) in [Dist::Random, Dist::Ascending, Dist::Descending, Dist::Equal].into_iter().enumerate() {
        for (j, k) in [1usize, 2, 4].into_iter().enumerate() {
            let s = run(mixed(k, 1500, Batches::Mixed, dist), 0x5eed_0000 + (i * 8 + j) as u64);
            assert!(s.deletes_with_present_keys > 0, "the order check never applied");
        }
    }
}

#[test]
fn tiny_nodes_full_and_partial_batches() {
    for (i, batches) in [Batches::Full, Batches::Partial].into_iter().enumerate() {
        for k in [2usize, 4] {
            run(mixed(k, 1500, batches, Dist::Random), 0xbeef + i as u64 * 17 + k as u64);
        }
    }
}

#[test]
fn large_nodes_mixed_traffic() {
    for (i, dist) in [Dist::Random, Dist::Ascending, Dist::Descending, Dist::Equal].into_iter().enumerate() {
        run(mixed(64, 300, Batches::Mixed, dist), 0xfeed + i as u64);
    }
    run(mixed(256, 120, Batches::Mixed, Dist::Random), 0xfade);
    run(mixed(256, 120, Batches::Partial, Dist::Descending), 0xface);
}

#[test]
fn insert_everything_then_delete_everything() {
    for (i, (k, ops)) in [(1usize, 800usize), (4, 600), (64, 60), (256, 24)].into_iter().enumerate() {
        for (j, dist) in [Dist::Random, Dist::Ascending, Dist::Descending].into_iter().enumerate() {
            let w = Workload { threads: 8, k, ops, insert_pct: 100, batches: Batches::Full, dist, phased: true };
            run(w, 0xc0ffee + (i * 4 + j) as u64);
        }
    }
    let w = Workload {
        threads: 8,
        k: 16,
        ops: 200,
        insert_pct: 100,
        batches: Batches::Mixed,
        dist: Dist::Random,
        phased: true,
    };
    run(w, 0xd00d);
}

#[test]
fn insert_heavy_and_delete_heavy() {
    for (i, pct) in [85u64, 25].into_iter().enumerate() {
        let w = Workload { insert_pct: pct, ..mixed(4, 2000, Batches::Mixed, Dist::Random) };
        run(w, 0x1234 + i as u64);
        let w = Workload { insert_pct: pct, ..mixed(32, 400, Batches::Full, Dist::Random) };
        run(w, 0x4321 + i as u64);
    }
}
