//! Warp tasks (`#[gpu_cilk(warp)]`, `for i in lanes(lo, hi)`): the same results as the serial
//! function on every host backend (serial, cpu stealing and levels, and the persistent scheduler
//! on cuda-sim, which runs the warp entry with its one-lane warps) and, on request, on the GPU
//! (32 lanes, both device schedulers). Shapes: a warp task as the root, warp tasks spawned into
//! frame destinations (their results delivered by the owner lane), phases of `lanes` loops that
//! read each other's writes, `continue`, an empty range, and many warp tasks in one batch.

use gpu_cilk_test_support::programs::backends;

use gpu_cilk::prelude::*;

/// Phase 1: each row of `a` (`n` wide) becomes its prefix sums, except rows `i % 5 == 2`;
/// phase 2 reads phase 1's writes across rows (row `i` adds the last element of row `i - 1`);
/// returns the sum of every element (computed on every lane, after the phases).
#[gpu_cilk(warp)]
pub fn rows(a: &mut [u64], n: usize, t: Temp<u64>) -> u64 {
    if n == 0 {
        return 0;
    }
    let r: usize = a.len() / n;
    for i in lanes(0, r) {
        if i % 5 == 2 {
            continue;
        }
        let mut s: u64 = 0;
        for j in 0..n {
            s += a[i * n + j];
            a[i * n + j] = s;
        }
    }
    for i in lanes(1, r) {
        t[i] = a[i * n - 1];
    }
    for i in lanes(1, r) {
        a[i * n] += t[i];
    }
    let mut total: u64 = 0;
    for k in 0..a.len() {
        total = total.wrapping_mul(31).wrapping_add(a[k]);
    }
    total
}

/// Splits `a` into `parts` blocks of rows, spawns a warp task on each, combines their results.
#[gpu_cilk]
#[allow(unused_assignments)] // `x` starts at 0 only because a frame local is initialized where declared
pub fn blocks(a: &mut [u64], n: usize, parts: usize) -> u64 {
    let t = alloc!(u64, a.len() / n.max(1) + 1);
    let mut x: u64 = 0;
    let mut y: u64 = 0;
    let leaf: bool = parts <= 1 || a.len() < 2 * n;
    if leaf {
        x = spawn!(rows(a, n, t));
    } else {
        let h: usize = a.len() / n / 2 * n;
        let (lo, hi) = a.split_at_mut(h);
        x = spawn!(blocks(lo, n, parts / 2));
        y = spawn!(blocks(hi, n, parts - parts / 2));
    }
    sync!();
    if leaf {
        x
    } else {
        x.wrapping_mul(1_000_003).wrapping_add(y)
    }
}

fn input(len: usize) -> Vec<u64> {
    (0..len as u64).map(|i| (i * 2_654_435_761) % 1000).collect()
}

fn blocks_equal_serial(rts: &[Runtime]) {
    for (len, n, parts) in [(0usize, 4usize, 1usize), (8, 4, 1), (640, 8, 1), (4096, 16, 8), (3000, 10, 37)] {
        let mut want = input(len);
        let wv = blocks(&mut want, n, parts);
        for rt in rts {
            let mut a = input(len);
            let v = rt
                .run(blocks::task(&mut a, n, parts))
                .unwrap_or_else(|e| panic!("{len} {n} {parts} on {:?}: {e}", rt.config()));
            assert_eq!((v, &a), (wv, &want), "{len} {n} {parts} on {:?}", rt.config());
        }
    }
}

#[test]
fn warp_tasks_equal_serial_on_the_host_backends() {
    blocks_equal_serial(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn warp_tasks_equal_serial_on_cuda() {
    blocks_equal_serial(&backends::cuda_all(Config::default()));
}

/// Scales `a` by `k` and returns the sum of the scaled keys (a root warp task).
#[gpu_cilk(warp)]
pub fn scale(a: &mut [u32], k: u32) -> u32 {
    for i in lanes(0, a.len()) {
        a[i] = a[i].wrapping_mul(k);
    }
    let mut s: u32 = 0;
    for i in 0..a.len() {
        s = s.wrapping_add(a[i]);
    }
    s
}

/// A warp task as the root: the warp that takes the root item runs it and delivers the result.
#[test]
fn a_warp_task_can_be_the_root() {
    for len in [0usize, 1, 31, 32, 33, 1000] {
        let mut want: Vec<u32> = (0..len as u32).collect();
        let wv = scale(&mut want, 7);
        for rt in backends::host(Config::default()) {
            let mut a: Vec<u32> = (0..len as u32).collect();
            let v = rt.run(scale::task(&mut a, 7)).expect("runs");
            assert_eq!((v, &a), (wv, &want), "{len} on {:?}", rt.config());
        }
    }
}
