//! Stress tests of the host twin of the warp-coalesced allocator (`gpu_cilk_runtime::alloc`):
//! many threads, random sizes (small, medium, large page runs), single and coalesced requests,
//! tiny heaps that run out. Checks: no two live pieces overlap (an interval set, and a
//! thread-unique pattern in every word re-checked before each free), every free succeeds exactly
//! once, and at the end all memory is back (bytes in use 0, no live blocks, and after `trim` one
//! allocation of the whole heap succeeds).

use gpu_cilk_runtime::alloc::{Offset, XHeap, XHeapConfig};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// Live pieces as byte intervals [start, end); inserting an overlapping one fails the test.
#[derive(Default)]
struct Intervals(Mutex<BTreeMap<u64, u64>>);

impl Intervals {
    fn insert(&self, start: u64, len: u64) {
        let end = start + len.max(1);
        let mut m = self.0.lock().unwrap();
        if let Some((&s, &e)) = m.range(..end).next_back() {
            assert!(e <= start || s >= end, "piece [{start}, {end}) overlaps live [{s}, {e})");
        }
        assert!(m.insert(start, end).is_none(), "piece at {start} handed out twice");
    }

    fn remove(&self, start: u64) {
        assert!(self.0.lock().unwrap().remove(&start).is_some(), "freeing {start}, which is not live");
    }
}

fn pattern(thread: u64, off: Offset, i: u64) -> u64 {
    (thread << 56) ^ (off.get() << 8) ^ i
}

fn fill(h: &XHeap, thread: u64, off: Offset, size: usize) {
    for i in 0..(size as u64).div_ceil(8) {
        h.word(off, i).expect("piece inside the arena").store(pattern(thread, off, i), Ordering::Relaxed);
    }
}

fn check(h: &XHeap, thread: u64, off: Offset, size: usize) {
    for i in 0..(size as u64).div_ceil(8) {
        let got = h.word(off, i).unwrap().load(Ordering::Relaxed);
        assert_eq!(got, pattern(thread, off, i), "thread {thread}: piece at {} word {i} was overwritten", off.get());
    }
}

fn random_size(rng: &mut impl Rng, page: usize) -> usize {
    match rng.gen_range(0..100) {
        0..=79 => rng.gen_range(0..=128),
        80..=94 => rng.gen_range(129..=4096),
        _ => rng.gen_range(4097..=3 * page),
    }
}

/// Runs `threads` threads of `ops` random operations on `heap`, then checks everything came back.
fn stress(mut heap: XHeap, threads: u64, ops: usize, seed: u64) -> (u64, u64) {
    let page = heap.page_size() as usize;
    let shared = Arc::new((heap, Intervals::default()));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let (h, live_set) = &*shared;
                let mut rng = StdRng::seed_from_u64(seed ^ (t * 0x9e37_79b9));
                let mut live: Vec<(Offset, usize)> = Vec::new();
                let (mut ok, mut failed) = (0u64, 0u64);
                for _ in 0..ops {
                    if live.is_empty() || rng.gen_bool(0.55) {
                        // One request, or a coalesced one of 1..=32 pieces (a warp's worth).
                        let sizes: Vec<usize> = if rng.gen_bool(0.5) {
                            vec![random_size(&mut rng, page)]
                        } else {
                            (0..rng.gen_range(1..=32)).map(|_| random_size(&mut rng, page) / 4).collect()
                        };
                        let got =
                            if sizes.len() == 1 { h.alloc(sizes[0]).map(|o| vec![o]) } else { h.alloc_many(&sizes) };
                        match got {
                            Some(offs) => {
                                assert_eq!(offs.len(), sizes.len());
                                for (&o, &s) in offs.iter().zip(&sizes) {
                                    assert_eq!(o.get() % 8, 0);
                                    live_set.insert(o.get(), s as u64);
                                    fill(h, t, o, s);
                                    live.push((o, s));
                                    ok += 1;
                                }
                            }
                            None => failed += 1,
                        }
                    } else {
                        let (o, s) = live.swap_remove(rng.gen_range(0..live.len()));
                        check(h, t, o, s);
                        live_set.remove(o.get());
                        h.free(o).expect("free of a live piece");
                    }
                }
                for (o, s) in live {
                    check(h, t, o, s);
                    live_set.remove(o.get());
                    h.free(o).expect("free of a live piece");
                }
                (ok, failed)
            })
        })
        .collect();
    let (mut ok, mut failed) = (0, 0);
    for handle in handles {
        let (o, f) = handle.join().expect("stress thread panicked");
        ok += o;
        failed += f;
    }
    heap = Arc::try_unwrap(shared).ok().expect("threads are done").0;
    let s = heap.stats();
    assert_eq!((s.bytes_in_use, s.live_blocks, s.bad_frees), (0, 0, 0), "memory not returned: {s:?}");
    assert!(s.high_water <= heap.capacity());
    heap.trim();
    let s = heap.stats();
    assert_eq!((s.pages_taken, s.cached_superblocks, s.superblocks), (0, 0, [0; 8]), "after trim: {s:?}");
    let whole = heap.alloc(heap.max_alloc() as usize).expect("the whole heap as one allocation");
    assert!(heap.alloc(1).is_none());
    heap.free(whole).unwrap();
    assert_eq!(heap.stats().bytes_in_use, 0);
    (ok, failed)
}

#[test]
fn many_threads_medium_heap() {
    let heap = XHeap::new(XHeapConfig::new(8 << 20)).unwrap(); // 64 KiB pages
    let (ok, _failed) = stress(heap, 8, 3000, 1);
    assert!(ok > 10_000, "{ok} allocations");
}

#[test]
fn many_threads_small_pages() {
    let heap = XHeap::new(XHeapConfig::new(2 << 20).page_shift(12)).unwrap();
    stress(heap, 8, 3000, 2);
}

#[test]
fn tiny_heap_runs_out_and_recovers() {
    // 16 pages of 4 KiB: large requests and coalesced ones fail often; nothing may break.
    let heap = XHeap::new(XHeapConfig::new(64 << 10).page_shift(12)).unwrap();
    let (ok, failed) = stress(heap, 6, 2000, 3);
    assert!(ok > 0 && failed > 0, "ok {ok}, failed {failed}: the tiny heap should both serve and refuse");
}

#[test]
fn tiny_heap_tiny_queues() {
    // One superblock per small class: the bound forces fallback to larger classes and pages.
    let heap = XHeap::new(XHeapConfig { heap_bytes: 256 << 10, page_shift: 12, queue_capacity: Some(128) }).unwrap();
    stress(heap, 6, 2000, 4);
}

#[test]
fn alloc_free_cycles_reuse_blocks() {
    // Same-size churn: the first level recycles blocks; the footprint stays at its first high water.
    let heap = XHeap::new(XHeapConfig::new(1 << 20).page_shift(12)).unwrap();
    let shared = Arc::new(heap);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let h = shared.clone();
            std::thread::spawn(move || {
                for _ in 0..5000 {
                    let o = h.alloc(8).expect("plenty of room");
                    h.free(o).unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let s = shared.stats();
    assert_eq!(s.bytes_in_use, 0);
    assert!(s.high_water <= 4 * 32, "at most one 32-byte block per thread at once: {s:?}");
    assert!(s.superblocks[0] <= 4, "{s:?}");
}

#[test]
fn burst_of_single_lane_requests_on_small_heap() {
    // The device's `simd_widths` at one lane per warp, scaled down: a fresh heap, many threads
    // released at once, each making single small requests (a one-lane warp each) and holding
    // them. Every empty class queue used to be refilled by every thread that found it empty (one
    // 64 KiB superblock each), exhausting the pages while the live bytes were a few percent of
    // the heap. With the refill gate a class takes one superblock at a time.
    const THREADS: usize = 32;
    const EACH: usize = 48;
    let heap = Arc::new(XHeap::new(XHeapConfig::new(24 << 16)).unwrap()); // 24 pages of 64 KiB
    for round in 0..3u64 {
        let barrier = Arc::new(std::sync::Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS as u64)
            .map(|t| {
                let (h, barrier) = (heap.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let mut rng = StdRng::seed_from_u64(round * 1000 + t);
                    let sizes: Vec<usize> = (0..EACH).map(|_| rng.gen_range(1..=256)).collect();
                    barrier.wait();
                    let got: Vec<_> = sizes.iter().map(|&s| h.alloc(s).map(|o| (o, s))).collect();
                    for &(o, s) in got.iter().flatten() {
                        fill(&h, t, o, s);
                    }
                    barrier.wait(); // everything is live at once
                    for &(o, s) in got.iter().flatten() {
                        check(&h, t, o, s);
                        h.free(o).unwrap();
                    }
                    got.iter().filter(|g| g.is_none()).count()
                })
            })
            .collect();
        let nulls: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        let s = heap.stats();
        let page = heap.page_size();
        let sbs: u64 = s.superblocks.iter().sum();
        eprintln!("round {round}: {nulls} nulls, {sbs} superblocks {:?}, {s:?}", s.superblocks);
        assert_eq!(
            nulls,
            0,
            "{} single requests of <= 256 bytes on {} pages: {s:?}",
            THREADS * EACH,
            heap.capacity() / page
        );
        assert_eq!((s.bytes_in_use, s.live_blocks), (0, 0));
        // At most one superblock per class beyond what the peak of live blocks needed.
        assert!(
            sbs <= s.high_water.div_ceil(page) + 8,
            "{sbs} superblocks for a high water of {} bytes: {s:?}",
            s.high_water
        );
    }
}

#[test]
fn coalesced_requests_over_4k_share_class_blocks() {
    // Full warps of ~200-byte pieces (~6.6 KiB a warp): segments of 4 KiB class blocks, not one
    // 64 KiB page per warp. 64 such warps (~420 KiB) fit a 1 MiB heap of 16 pages.
    let heap = XHeap::new(XHeapConfig::new(1 << 20)).unwrap();
    let mut rng = StdRng::seed_from_u64(9);
    let mut live = Vec::new();
    for w in 0..64u64 {
        let sizes: Vec<usize> = (0..32).map(|_| rng.gen_range(150..=250)).collect();
        let offs = heap.alloc_many(&sizes).unwrap_or_else(|| panic!("warp {w}: {:?}", heap.stats()));
        for (&o, &s) in offs.iter().zip(&sizes) {
            fill(&heap, w, o, s);
            live.push((w, o, s));
        }
    }
    for (w, o, s) in live {
        check(&heap, w, o, s);
        heap.free(o).unwrap();
    }
    assert_eq!(heap.stats().bytes_in_use, 0);
}
