//! Workloads with task-scoped temporaries (`alloc!`): a parent allocates, children write into
//! it, the parent syncs and combines (the Strassen pattern).

use gpu_cilk::prelude::*;

/// Writes `x` into element `i` of the parent's temporary.
#[gpu_cilk]
pub fn fill(t: Temp<u64>, i: usize, x: u64) {
    t[i] = x;
}

/// Allocates `k` elements, spawns `k` children that each write one, sums them after the sync.
#[gpu_cilk]
pub fn scatter_sum(k: u32, seed: u64) -> u64 {
    let t = alloc!(u64, k as usize);
    for i in 0..k as usize {
        spawn!(fill(t, i, seed.wrapping_mul(31).wrapping_add(i as u64 * i as u64)));
    }
    sync!();
    let mut s: u64 = 0;
    for i in 0..t.len() {
        s = s.wrapping_add(t[i]);
    }
    s
}

/// A tree of temporaries: each node allocates room for its `width` children's results, the
/// children recurse (each with its own temporary) and write their result into the parent's.
#[gpu_cilk]
pub fn tree(depth: u32, width: u32, out: Temp<u64>, slot: usize) {
    if depth == 0 {
        out[slot] = slot as u64 + 1;
        return;
    }
    let mine = alloc!(u64, width as usize);
    for c in 0..width as usize {
        spawn!(tree(depth - 1, width, mine, c));
    }
    sync!();
    let mut s: u64 = depth as u64;
    for c in 0..width as usize {
        s = s.wrapping_mul(1_000_003).wrapping_add(mine[c]);
    }
    out[slot] += s;
}

/// The root of [`tree`]: a one-element temporary for the whole tree's result.
#[gpu_cilk]
pub fn tree_root(depth: u32, width: u32) -> u64 {
    let r = alloc!(u64, 1);
    spawn!(tree(depth, width, r, 0));
    sync!();
    r[0]
}

/// Floats, a temporary read across two syncs, and compound assignment.
#[gpu_cilk]
pub fn scale(t: Temp<f32>, i: usize, f: f32) {
    t[i] *= f;
}

/// Fills, scales in a second round of children, then combines.
#[gpu_cilk]
pub fn two_rounds(n: u32) -> f32 {
    let v = alloc!(f32, n as usize);
    for i in 0..n as usize {
        v[i] = i as f32 + 0.5;
    }
    for i in 0..n as usize {
        spawn!(scale(v, i, 2.0));
    }
    sync!();
    for i in 0..n as usize {
        spawn!(scale(v, i, 0.25));
    }
    sync!();
    let mut s: f32 = 0.0;
    for i in 0..n as usize {
        s += v[i];
    }
    s
}

/// A temporary in a task without children: allocated, used and freed in one segment.
#[gpu_cilk]
pub fn big(n: u32, x: u64) -> u64 {
    let t = alloc!(u64, n as usize);
    for i in 0..n as usize {
        t[i] = x + i as u64;
    }
    let mut s: u64 = 0;
    for i in 0..n as usize {
        s = s.wrapping_add(t[i]);
    }
    s
}

/// Three large temporaries one after the other: they fit a heap that holds one at a time only
/// if each is freed when its task ends.
#[gpu_cilk]
pub fn waves(n: u32) -> u64 {
    let a = spawn!(big(n, 1));
    sync!();
    let b = spawn!(big(n, 2));
    sync!();
    let c = spawn!(big(n, 3));
    sync!();
    a + b + c
}

/// A device struct as a temporary's element: fields of four widths, an array and padding (24
/// bytes in Rust and C++).
#[derive(Clone, Copy, Default, Debug, PartialEq, DeviceStruct)]
#[repr(C)]
pub struct Rec {
    pub x: f32,
    pub n: u8,
    pub w: [u16; 3],
    pub k: i64,
}

/// Writes a whole `Rec` into element `i` of the parent's temporary.
#[gpu_cilk]
pub fn put_rec(t: Temp<Rec>, i: usize, seed: u64) {
    t[i] = Rec { x: i as f32 * 0.5, n: (seed % 251) as u8, w: [i as u16, 7, (seed % 65521) as u16], k: -(seed as i64) };
}

/// Allocates `k` `Rec`s (checked to start at zero), spawns a child per element that writes it,
/// rewrites one field of each (read, change, write back), and folds the fields.
#[gpu_cilk]
pub fn rec_sum(k: u32, seed: u64) -> u64 {
    let t = alloc!(Rec, k as usize);
    let mut s: u64 = 0;
    for i in 0..t.len() {
        let z = t[i];
        if z.x != 0.0 || z.n != 0 || z.w[0] != 0 || z.w[2] != 0 || z.k != 0 {
            s = s.wrapping_add(1_000_000_007);
        }
    }
    for i in 0..k as usize {
        spawn!(put_rec(t, i, seed.wrapping_mul(2654435761).wrapping_add(i as u64)));
    }
    sync!();
    for i in 0..k as usize {
        let mut r = t[i];
        r.w[1] += i as u16;
        t[i] = r;
    }
    for i in 0..k as usize {
        let r = t[i];
        s = s.wrapping_mul(31).wrapping_add((r.x * 4.0) as u64);
        s = s.wrapping_mul(31).wrapping_add(r.n as u64 + r.w[0] as u64 + r.w[1] as u64 + r.w[2] as u64);
        s = s.wrapping_mul(31).wrapping_add(t[i].k as u64);
    }
    s
}
