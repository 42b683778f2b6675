//! Task shapes the subset promises beyond the example workloads: spawns in a loop into array
//! elements plus a discarded spawn of another task and two syncs (`wide`), mutual recursion
//! between three tasks across modules with a device helper (`ping`/`pong`/`pang`), a unit task
//! with discarded spawns (`walk`), early returns with children outstanding (`early`), locals
//! across two syncs and plain calls of other tasks (`mixed`). Shared by `compile_subset.rs`
//! (every backend against the serial functions) and `device_compile.rs` (CUDA compilation).

use gpu_cilk::prelude::*;

pub use fib_workload::*;
use gpu_cilk_examples::workloads::fib as fib_workload;

#[gpu_cilk]
pub fn wide(d: u32, k: u32) -> u64 {
    if d == 0 {
        return 1;
    }
    let mut parts: [u64; 8] = [0; 8];
    let mut i = 0;
    while i < k {
        parts[i as usize] = spawn!(wide(d - 1, k));
        i += 1;
    }
    spawn!(fib(3));
    sync!();
    let mut s: u64 = 1;
    for j in 0..k as usize {
        s += parts[j];
    }
    let extra = spawn!(fib(d));
    sync!();
    s + extra
}

// ---- three mutually recursive tasks, one of them in another module ----

#[gpu_cilk]
pub fn ping(n: u32) -> u64 {
    if n == 0 {
        return 1;
    }
    let a = spawn!(pong(n - 1));
    let b = spawn!(other::pang(n - 1));
    sync!();
    a + 2 * b + weight(n)
}

#[gpu_cilk]
pub fn pong(n: u32) -> u64 {
    if n == 0 {
        return 2;
    }
    let mut acc: u64 = n as u64;
    let p = spawn!(ping(n - 1));
    sync!();
    acc += p;
    let q = spawn!(other::pang(n / 2));
    sync!();
    acc * 3 + q
}

pub mod other {
    use super::*;

    #[gpu_cilk]
    pub fn pang(n: u32) -> u64 {
        if n < 2 {
            return 5;
        }
        let x = spawn!(super::ping(n - 1));
        sync!();
        x % 1000 + 7
    }
}

#[gpu_cilk::device]
pub fn weight(n: u32) -> u64 {
    let mut w: u64 = 0;
    for i in 0..=n {
        w = w.wrapping_add((i as u64).pow(2));
    }
    w.min(1000)
}

// ---- a unit task with discarded spawns ----

#[gpu_cilk]
pub fn walk(depth: u32, width: u32) {
    if depth == 0 {
        return;
    }
    for _i in 0..width {
        spawn!(walk(depth - 1, width));
    }
    spawn!(leaf(depth));
    sync!();
    spawn!(leaf(depth + 100));
}

#[gpu_cilk]
pub fn leaf(x: u32) -> u32 {
    x.count_ones()
}

// ---- a unit task that falls off its end with children outstanding (implicit sync) ----

/// Writes `v`, `2v`, `2v + 1`, .. into `a` by halving it; it never syncs: falling off the end with
/// children outstanding is an implicit sync, so it completes only once its whole subtree has.
#[gpu_cilk]
pub fn fill_rec(a: &mut [u32], v: u32) {
    if a.len() == 1 {
        a[0] = v;
        return;
    }
    let (l, r) = a.split_at_mut(a.len() / 2);
    spawn!(fill_rec(l, v * 2));
    spawn!(fill_rec(r, v * 2 + 1));
}

/// Spawns `fill_rec` over all of `a` (non-empty), syncs, and sums what the subtree wrote.
#[gpu_cilk]
pub fn fill_root(a: &mut [u32]) -> u64 {
    spawn!(fill_rec(a, 1));
    sync!();
    let mut s: u64 = 0;
    for i in 0..a.len() {
        s += a[i] as u64;
    }
    s
}

// ---- early returns with children outstanding (implicit sync) ----

#[gpu_cilk]
pub fn early(n: u32) -> u64 {
    if n < 3 {
        return n as u64;
    }
    let mut parts: [u64; 3] = [0; 3];
    parts[0] = spawn!(early(n - 1));
    if n % 2 == 0 {
        // Returns while the child above is still running: the value does not depend on it.
        return 10 * n as u64;
    }
    parts[1] = spawn!(early(n - 2));
    spawn!(fib(n));
    let mut k: u32 = 0;
    while k < n {
        if k == 4 {
            return 1000 + k as u64; // inside a loop, with children outstanding
        }
        k += 1;
    }
    sync!();
    parts[0] + parts[1] + parts[2]
}

// ---- a segment-local that lives across two syncs, a call (not a spawn) to a task, else-if ----

#[gpu_cilk]
pub fn mixed(n: u32) -> i64 {
    let base: i64 = n as i64 - 3;
    let mut sign = 1i64;
    if n == 0 {
        sign = -1;
    } else if n == 1 {
        sign = 2;
    } else {
        sign += 1;
    }
    let direct = fib(n.min(10)) as i64; // a plain serial call, not a spawn
    let a = spawn!(mixed_leaf(n));
    sync!();
    let b: i64 = a * sign;
    let c = spawn!(mixed_leaf(n + 1));
    sync!();
    base + b + c + direct
}

#[gpu_cilk]
pub fn mixed_leaf(n: u32) -> i64 {
    (n as i64) * 2 - 5
}

/// A root task without parameters (issue 8: this faulted on the cuda backend, whose C++ argument
/// struct is 1 byte where Rust's is 0).
#[gpu_cilk]
pub fn no_params() -> u64 {
    let x = spawn!(fib(20));
    let y = spawn!(no_params_leaf());
    sync!();
    x + y
}

/// A spawned task without parameters.
#[gpu_cilk]
pub fn no_params_leaf() -> u64 {
    7
}

/// A parameterless unit task spawning a parameterless unit leaf (no data in, none out).
#[gpu_cilk]
pub fn nothing() {
    spawn!(nothing_leaf());
    spawn!(nothing_leaf());
    sync!();
}

/// The leaf of [`nothing`].
#[gpu_cilk]
pub fn nothing_leaf() {}

// ---- issue 8: constructs the random program generator (`test-support/src/program_gen.rs`) found
// miscompiled in CUDA; each is one value of `generated_regressions` ----

/// A device helper whose result receives a method call with an unsuffixed literal argument.
#[gpu_cilk::device]
pub fn gen_mix(a: u64, b: u32) -> u64 {
    a.wrapping_mul(0x9e37_79b9) ^ b as u64
}

/// Takes arrays, which its callers pass as literals of unsuffixed elements.
#[gpu_cilk]
pub fn gen_arrays(x: [u32; 4], y: [i64; 2]) -> u64 {
    let mut s: u64 = 0;
    for i in 0..4 {
        s = s.wrapping_mul(1000).wrapping_add(x[i] as u64);
    }
    s.wrapping_add((y[0] - y[1]) as u64)
}

/// A unit task whose body ends in an `if` expression (no spawn in it): writes into `t`.
#[gpu_cilk]
pub fn gen_unit_if(t: Temp<u64>, n: u32) {
    let v: u64 = n as u64 * 3;
    if n % 2 == 0 {
        t[0] = v;
    } else {
        t[1] = v + 1;
    }
}

/// Every regression at once; `n` picks the branches (0..8 covers them).
#[gpu_cilk]
pub fn generated_regressions(n: u32) -> u64 {
    let t = alloc!(u64, 2);
    // (1) array literals as arguments: `[u32; 4]` from unsuffixed literals, `[i64; 2]` with one
    // that does not fit in 32 bits.
    let a = spawn!(gen_arrays([1, 2, 3, 4], [5000000000, 7]));
    let b = spawn!(gen_arrays([9, n, 8, 7], [-3, 4]));
    // (2) a unit task ending in an `if`.
    spawn!(gen_unit_if(t, n));
    spawn!(gen_unit_if(t, n + 1));
    sync!();
    // (3) comparisons in parentheses as operands of `==` / `!=`.
    let p = n as u64;
    let c1: bool = (p == 3) == (p > 5);
    let c2: bool = (p % 2 == 0) != (p < 4);
    let c3: bool = p != 2 && (p == 1) == (p == 5);
    // (4) a method with an unsuffixed literal argument on a call receiver.
    let m: u64 = gen_mix(p, 3).wrapping_add(7).max(11);
    let bits: u64 = (c1 as u64) | (c2 as u64) << 1 | (c3 as u64) << 2;
    a ^ b.rotate_left(7) ^ m ^ (t[0] << 20) ^ (t[1] << 40) ^ (bits << 60)
}

/// Priority spawns with keys of several types and every kind and width of shared bound
/// (`Max<u32>`, `Min<i32>`, `Sum<i64>`, `Max<i64>`): what the CUDA writer must translate
/// (`gc_bound_*`, atomics of each width).
#[gpu_cilk]
pub fn bound_mix(n: u32, hi: &Max<u32>, lo: &Min<i32>, sum: &Sum<i64>, far: &Max<i64>) -> u32 {
    hi.fetch_max(n);
    lo.fetch_min(-(n as i32));
    sum.fetch_add(n as i64 - 2);
    far.fetch_max(n as i64 * 1000000007);
    if n < 2 {
        return (hi.load() >= n) as u32;
    }
    let a = spawn!(bound_mix(n - 1, hi, lo, sum, far), priority = n);
    let b = spawn!(bound_mix(n - 2, hi, lo, sum, far), priority = -(n as i64));
    spawn!(bound_mix(0, hi, lo, sum, far), priority = n as f32 * 0.5);
    sync!();
    a + b + (lo.load() <= -(n as i32)) as u32
}
