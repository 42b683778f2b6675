//! Loom model checks of the batched heap's Rust twin (`runtime/src/heap/`).
//!
//! Run with `scripts/loom.sh` (`RUSTFLAGS="--cfg loom"`, release, `LOOM_MAX_PREEMPTIONS=2`). Each
//! model is a small bound (k = 1 or 2 keys per node, a prefilled heap, two threads racing a few operations) where
//! loom explores every interleaving and every weak-memory outcome the orderings allow; its
//! `UnsafeCell` flags any node access not ordered by the node's lock. Every model records a
//! history (stamps from one atomic counter before and after each operation) and runs the
//! history checker of `gpu_cilk_test_support::heap_history` on it, then drains the heap and checks the
//! quiescent invariants. Spins yield to loom, so a lost wake-up or a livelock shows up as a model
//! that never finishes.
#![cfg(loom)]

use gpu_cilk_runtime::heap::Heap;
use gpu_cilk_test_support::heap_history::{check, Op, OpKind};
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

/// One thread's script.
#[derive(Clone)]
enum Step {
    Insert(Vec<u32>),
    Delete,
}

/// Fills a heap of `k`-key nodes with `prefill` (sequentially, in the model's thread), runs the
/// scripts concurrently, one thread each (the first on the model's own thread), then drains,
/// checks the quiescent invariants and the history.
fn model(k: usize, capacity: usize, prefill: Vec<Vec<u32>>, scripts: Vec<Vec<Step>>) {
    let mut builder = loom::model::Builder::new();
    // Spins (lock waits, an insert waiting for the tagged batch above it) yield to loom, but a
    // schedule that keeps a waiter spinning still costs a branch per round.
    builder.max_branches = 20_000;
    builder.check(move || {
        let heap = Arc::new(Heap::<u32>::new(k, capacity));
        let clock = Arc::new(AtomicU64::new(1));
        let run = |heap: &Heap<u32>, clock: &AtomicU64, who: u32, script: &[Step]| -> Vec<Op<u32>> {
            let mut log = Vec::new();
            let mut out = Vec::new();
            for step in script {
                let start = clock.fetch_add(1, Ordering::SeqCst);
                let (kind, keys) = match step {
                    Step::Insert(keys) => {
                        heap.insert(keys).unwrap();
                        (OpKind::Insert, keys.clone())
                    }
                    Step::Delete => {
                        heap.delete_min(&mut out);
                        (OpKind::Delete, out.clone())
                    }
                };
                let end = clock.fetch_add(1, Ordering::SeqCst);
                log.push(Op { kind, start, end, keys, who });
            }
            log
        };
        let fill: Vec<Step> = prefill.iter().map(|b| Step::Insert(b.clone())).collect();
        let mut ops = run(&heap, &clock, 0, &fill);
        let mut scripts = scripts.clone();
        let mine = scripts.remove(0);
        let handles: Vec<_> = scripts
            .into_iter()
            .enumerate()
            .map(|(i, script)| {
                let (heap, clock) = (heap.clone(), clock.clone());
                thread::spawn(move || run(&heap, &clock, i as u32 + 2, &script))
            })
            .collect();
        ops.extend(run(&heap, &clock, 1, &mine));
        for h in handles {
            ops.extend(h.join().unwrap());
        }
        heap.check().unwrap();
        let mut out = Vec::new();
        loop {
            let start = clock.fetch_add(1, Ordering::SeqCst);
            let n = heap.delete_min(&mut out);
            let end = clock.fetch_add(1, Ordering::SeqCst);
            ops.push(Op { kind: OpKind::Delete, start, end, keys: out.clone(), who: 99 });
            if n == 0 {
                break;
            }
        }
        heap.check().unwrap();
        if let Err(e) = check(&ops, k) {
            let mut ops = ops.clone();
            ops.sort_by_key(|o| o.start);
            panic!("{e}\nhistory: {ops:#?}");
        }
    });
}

use Step::{Delete, Insert};

/// Two full-batch inserts race up from sibling leaves of a one-node heap to the root (bottom-up
/// against bottom-up: the lock order, and the second waiting while the first's batch is tagged
/// above it).
#[test]
fn two_bottom_up_inserts() {
    model(1, 4, vec![vec![50]], vec![vec![Insert(vec![1])], vec![Insert(vec![3])]]);
}

/// A full-batch insert against a delete: the insert goes bottom-up and the delete waits for it,
/// or the delete is first and the insert goes top-down behind (or ahead of) it.
#[test]
fn full_insert_against_delete() {
    model(1, 8, vec![vec![10], vec![20], vec![30]], vec![vec![Insert(vec![1])], vec![Delete]]);
}

/// With two keys per node: the insert's batch splits on its first merge while a delete runs.
#[test]
fn split_batch_against_delete() {
    model(2, 8, vec![vec![10, 20], vec![30, 40]], vec![vec![Insert(vec![1, 55])], vec![Delete]]);
}

/// Two deletes sift down behind each other while a full insert arrives: top-down when a delete
/// is active, so the second delete may have to wait for its target as the last node.
#[test]
fn two_deletes_and_a_full_insert() {
    model(1, 8, vec![vec![10], vec![20], vec![30]], vec![vec![Delete, Delete], vec![Insert(vec![5])]]);
}

/// Two deletes sift down behind each other.
#[test]
fn two_deletes() {
    model(1, 8, vec![vec![10], vec![20], vec![30], vec![40]], vec![vec![Delete], vec![Delete]]);
}

/// Partial batches: the buffer and its overflow into a top-down insert, against a delete.
#[test]
fn partial_overflow_against_delete() {
    model(2, 8, vec![vec![10, 20], vec![30, 40], vec![7]], vec![vec![Insert(vec![3])], vec![Delete]]);
}

/// Deletes on an almost empty heap: the root as the last node, then the partial buffer, against
/// a partial insert.
#[test]
fn deletes_drain_to_the_buffer() {
    model(2, 4, vec![vec![4, 8], vec![6]], vec![vec![Delete, Delete], vec![Insert(vec![5])]]);
}

/// The fused delete (from 4 nodes on: the root, its children and the last node locked before
/// anything is read; heap.cuh's default) twice in a row against a full insert, which goes
/// top-down behind the first delete and may be the second one's `TARGET` last node while that
/// delete holds the root's children; and the sift-down's paired child locks.
#[test]
fn fused_deletes_and_a_top_down_insert() {
    model(
        1,
        16,
        vec![vec![10], vec![20], vec![30], vec![40], vec![50]],
        vec![vec![Delete, Delete], vec![Insert(vec![5])]],
    );
}
