//! Tasks with a `sync!()` inside control flow (their bodies are state machines): a sync in a
//! base-case branch (`bsum`), a spawn and a sync per iteration of a `for` (`rounds`), a `while`
//! whose condition reads the children's results (`steps`), nested loops with syncs, `break` and
//! `continue` (`grid`), a `loop` that syncs until a child's result says stop (`until`), and an
//! iterative relaxation over two temporaries, one round of tasks and a sync per round
//! (`relax_root`), and slice parameters in such tasks: a loop of chunk rounds with two syncs each
//! (`chunk_sums`) and a sync in a branch (`slice_bsum`). Shared by `control_flow.rs` (every backend against the serial functions) and
//! `device_compile.rs` (CUDA compilation).

use gpu_cilk::prelude::*;

/// A leaf: a little arithmetic on `n`.
#[gpu_cilk]
pub fn leaf(n: u32) -> u64 {
    (n as u64).wrapping_mul(2_654_435_761) % 1000 + 1
}

/// A sum over `lo..hi` whose base case spawns two leaves and syncs inside the `if`.
#[gpu_cilk]
pub fn bsum(lo: u32, hi: u32) -> u64 {
    if hi - lo <= 2 {
        let x = spawn!(leaf(lo));
        let y = spawn!(leaf(hi + 7));
        sync!();
        return x * 3 + y;
    }
    let mid = lo + (hi - lo) / 2;
    let a = spawn!(bsum(lo, mid));
    let b = spawn!(bsum(mid, hi));
    sync!();
    a + b
}

/// `r` rounds; each spawns two children and syncs, and folds their results into `acc`.
#[gpu_cilk]
pub fn rounds(n: u32, r: u32) -> u64 {
    let mut acc: u64 = 0;
    for i in 0..r {
        let a = spawn!(leaf(n + i));
        let b = spawn!(bsum(0, n + i));
        sync!();
        acc = acc.wrapping_mul(7).wrapping_add(a + b);
    }
    acc
}

/// One Collatz step.
#[gpu_cilk]
pub fn collatz(x: u64) -> u64 {
    if x % 2 == 0 {
        x / 2
    } else {
        3 * x + 1
    }
}

/// Counts Collatz steps: each step is a child, and the loop's condition reads its result.
#[gpu_cilk]
pub fn steps(n: u64) -> u32 {
    let mut x: u64 = n;
    let mut count: u32 = 0;
    while x > 1 {
        x = spawn!(collatz(x));
        sync!();
        count += 1;
    }
    count
}

/// Nested loops with a sync in each, `continue` and `break` of the inner one.
#[gpu_cilk]
pub fn grid(n: u32, m: u32) -> u64 {
    let mut total: u64 = 0;
    let mut i: u32 = 0;
    while i < n {
        let mut row: u64 = 0;
        for j in 0..m {
            if (i + j) % 3 == 0 {
                continue;
            }
            let v = spawn!(leaf(i * m + j));
            sync!();
            row += v;
            if row > 2500 {
                break;
            }
        }
        let extra = spawn!(leaf(i));
        sync!();
        total = total * 3 + row + extra;
        i += 1;
    }
    total
}

/// A `loop` that spawns until a child's result is small, then returns from inside it.
#[gpu_cilk]
pub fn until(seed: u32) -> u32 {
    let mut s: u32 = seed;
    let mut k: u32 = 0;
    loop {
        let v = spawn!(leaf(s));
        let w = spawn!(leaf(s + 1));
        sync!();
        if v < 100 || k == 40 {
            return k * 1000 + (v as u32);
        }
        s = s.wrapping_mul(5).wrapping_add(w as u32);
        k += 1;
    }
}

/// One cell of a Jacobi round: `dst[i]` from `src[i - 1..=i + 1]` (the ends are fixed).
#[gpu_cilk]
pub fn relax_cell(src: Temp<u64>, dst: Temp<u64>, i: usize, n: usize) {
    if i == 0 || i + 1 == n {
        dst[i] = src[i];
        return;
    }
    dst[i] = (src[i - 1] + 2 * src[i] + src[i + 1]) / 4;
}

/// `rounds` Jacobi rounds over `a` and `b`: each round spawns one task per index, then syncs.
#[gpu_cilk]
pub fn relax(a: Temp<u64>, b: Temp<u64>, n: usize, rounds: u32) -> u64 {
    for r in 0..rounds {
        for i in 0..n {
            if r % 2 == 0 {
                spawn!(relax_cell(a, b, i, n));
            } else {
                spawn!(relax_cell(b, a, i, n));
            }
        }
        sync!();
    }
    let mut s: u64 = 0;
    for i in 0..n {
        let v = if rounds % 2 == 0 { a[i] } else { b[i] };
        s = s.wrapping_mul(31).wrapping_add(v);
    }
    s
}

/// Allocates the two buffers (a spike in the middle), runs [`relax`], returns its checksum.
#[gpu_cilk]
pub fn relax_root(n: u32, rounds: u32) -> u64 {
    let a = alloc!(u64, n as usize);
    let b = alloc!(u64, n as usize);
    for i in 0..n as usize {
        a[i] = if i == n as usize / 2 { 1 << 40 } else { i as u64 };
    }
    let s = spawn!(relax(a, b, n as usize, rounds));
    sync!();
    s
}

// ---- arrays and tuples as results -------------------------------------------------------------

/// A five-word hash of a tree of calls: a task returning `[u32; 5]`, spawn destinations of that
/// type.
#[gpu_cilk]
pub fn hash5(seed: u32, depth: u32) -> [u32; 5] {
    if depth == 0 {
        return [seed, seed ^ 0x5a5a, seed.wrapping_mul(3), seed.rotate_left(7), 1];
    }
    let a = spawn!(hash5(seed.wrapping_add(1), depth - 1));
    let b = spawn!(hash5(seed.wrapping_mul(7), depth - 1));
    sync!();
    let mut out: [u32; 5] = [0; 5];
    for i in 0..5usize {
        out[i] = a[i].wrapping_mul(31) ^ b[(i + 1) % 5];
    }
    out
}

/// `(min, max)` of two values: a helper returning a tuple.
#[gpu_cilk::device]
pub fn minmax(a: u64, b: u64) -> (u64, u64) {
    if a < b {
        (a, b)
    } else {
        (b, a)
    }
}

/// `(min, max)` of a pseudo-random value over `lo..hi`: a task returning a tuple, tuple spawn
/// destinations, destructuring `let`s after the sync.
#[gpu_cilk]
pub fn range_mm(lo: u32, hi: u32) -> (u64, u64) {
    if hi - lo <= 1 {
        let v = (lo as u64).wrapping_mul(2_654_435_761) % 1009;
        return (v, v);
    }
    let mid = lo + (hi - lo) / 2;
    let l = spawn!(range_mm(lo, mid));
    let r = spawn!(range_mm(mid, hi));
    sync!();
    let (mn, _big) = minmax(l.0, r.0);
    let (_small, mx) = minmax(l.1, r.1);
    (mn, mx)
}

/// Rounds of `range_mm` over growing ranges with a sync per round: a tuple destination reused
/// by every iteration of a loop with a sync, and a loop-carried tuple.
#[gpu_cilk]
pub fn mm_rounds(n: u32) -> (u64, u64) {
    let mut best: (u64, u64) = (u64::MAX, 0);
    for k in 1..=n {
        let p = spawn!(range_mm(k, 3 * k + 1));
        sync!();
        if p.0 < best.0 {
            best.0 = p.0;
        }
        best.1 = best.1.max(p.1);
    }
    best
}

/// Multiplies every element of `a` by `f` (wrapping) and adds 1: a `&mut` slice leaf.
#[gpu_cilk]
pub fn chunk_scale(a: &mut [u32], f: u32) {
    for i in 0..a.len() {
        a[i] = a[i].wrapping_mul(f) + 1;
    }
}

/// The sum of `a`: a `&[T]` leaf.
#[gpu_cilk]
pub fn chunk_sum(a: &[u32]) -> u64 {
    let mut s: u64 = 0;
    for i in 0..a.len() {
        s += a[i] as u64;
    }
    s
}

/// Slice parameters in a state machine: one round per chunk of `a` (`out.len()` chunks of
/// `chunk` elements, the last one shorter), each with two syncs: scale the chunk's halves in place
/// (children get disjoint `&mut` sub-slices), sync, sum them (children get `&` sub-slices), sync,
/// and write the chunk's sum into `out[k]`. Returns the total.
#[gpu_cilk]
pub fn chunk_sums(a: &mut [u32], out: &mut [u64], chunk: usize) -> u64 {
    let mut total: u64 = 0;
    let mut k: usize = 0;
    while k < out.len() {
        let lo: usize = k * chunk;
        let hi: usize = (lo + chunk).min(a.len());
        let mid: usize = lo + (hi - lo) / 2;
        let c = &mut a[lo..hi];
        let (l, r) = c.split_at_mut(mid - lo);
        spawn!(chunk_scale(l, 3));
        spawn!(chunk_scale(r, 5));
        sync!();
        let x = spawn!(chunk_sum(&a[lo..mid]));
        let y = spawn!(chunk_sum(&a[mid..hi]));
        sync!();
        out[k] = x + y;
        total += x + y;
        k += 1;
    }
    total
}

/// Slice parameters with the sync inside a branch: halves `a` and `out` (equal lengths) while
/// longer than 4, else writes `2 a[i]` into `out[i]`; after the children's sync the parent bumps
/// `out[0]` and adds `a`'s last element.
#[gpu_cilk]
pub fn slice_bsum(a: &[u32], out: &mut [u64]) -> u64 {
    if a.len() > 4 {
        let m = a.len() / 2;
        let (al, ar) = a.split_at(m);
        let (ol, or) = out.split_at_mut(m);
        let x = spawn!(slice_bsum(al, ol));
        let y = spawn!(slice_bsum(ar, or));
        sync!();
        out[0] += 1;
        return x + y + a[a.len() - 1] as u64;
    }
    let mut s: u64 = 0;
    for i in 0..a.len() {
        out[i] = a[i] as u64 * 2;
        s += out[i];
    }
    s
}
