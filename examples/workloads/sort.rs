//! cilksort (Cilk-5's `cilksort.cilk`) as annotated Rust: sort four quarters in parallel, merge
//! the pairs with a parallel merge, merge the halves. Shared by `examples/sort.rs`, the
//! differential tests and the benchmarks.
//!
//! - [`cilksort`]`(a, tmp)`: sorts `a` using `tmp` (at least as long) as scratch;
//!   up to 1024 keys a warp task ([`warp_sort`]: a whole warp sorts them on the GPU), up to 32
//!   an insertion sort ([`insertion_sort`]).
//! - [`cilkmerge`]`(a, b, out)`: merges the sorted `a` and `b` into `out` (`a.len() + b.len()`
//!   keys): split the longer input in the middle, find its key's place in the other by binary
//!   search ([`lower_bound`]), spawn both halves; up to 4096 keys a warp task ([`warp_merge`]:
//!   merge-path pieces of 32 keys, one a lane), up to 64 a serial merge ([`seq_merge`]).
//!
//! The warp tasks (`#[gpu_cilk(warp)]`, see "Warp tasks" in `docs/dsl.md`) are plain serial
//! functions on the host backends; on the persistent cuda scheduler the 32 lanes of one warp run
//! each of them together. Every variant computes the same stable merge, so the sorted output is
//! the same bits on every backend.
//!
//! Every task and helper is generic over the key type (`T: Key`, see "Generic tasks" in
//! `docs/dsl.md`): one cilksort sorts u32, f32 and i64 keys (any integer or float scalar), each
//! instantiation a task of its own on every backend (a C++ template instantiation on the device).
//! [`SortKey`] says how the tests' inputs of each type are made.
//!
//! The `&mut` ranges given to the children of one segment are disjoint (quarters of `a` and of
//! `tmp`, the two halves of `out`): the programmer's obligation (see `docs/dsl.md`).

use gpu_cilk::prelude::*;

/// Sorts a short slice in place (the base case).
#[gpu_cilk::device]
pub fn insertion_sort<T: Key>(a: &mut [T]) {
    if a.is_empty() {
        return;
    }
    let n: usize = a.len();
    for i in 1..n {
        let x: T = a[i];
        let mut j: usize = i;
        while j > 0 && a[j - 1] > x {
            a[j] = a[j - 1];
            j -= 1;
        }
        a[j] = x;
    }
}

/// The number of keys of the sorted `b` that are less than `x`.
#[gpu_cilk::device]
pub fn lower_bound<T: Key>(b: &[T], x: T) -> usize {
    let mut lo: usize = 0;
    let mut hi: usize = b.len();
    while lo < hi {
        let mid: usize = lo + (hi - lo) / 2;
        if b[mid] < x {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Merges the sorted `a` and `b` into `out` serially.
#[gpu_cilk::device]
pub fn seq_merge<T: Key>(a: &[T], b: &[T], out: &mut [T]) {
    let mut i: usize = 0;
    let mut j: usize = 0;
    let mut k: usize = 0;
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out[k] = a[i];
            i += 1;
        } else {
            out[k] = b[j];
            j += 1;
        }
        k += 1;
    }
    while i < a.len() {
        out[k] = a[i];
        i += 1;
        k += 1;
    }
    while j < b.len() {
        out[k] = b[j];
        j += 1;
        k += 1;
    }
}

/// How many of the first `d` keys of the stable merge of the sorted `a` and `b` (ties taken from
/// `a` first, as [`seq_merge`] does) come from `a`: the merge path's crossing of diagonal `d`.
#[gpu_cilk::device]
pub fn merge_path<T: Key>(a: &[T], b: &[T], d: usize) -> usize {
    let mut lo: usize = if d > b.len() { d - b.len() } else { 0 };
    let mut hi: usize = d.min(a.len());
    while lo < hi {
        let mid: usize = lo + (hi - lo) / 2;
        if a[mid] <= b[d - 1 - mid] {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Keys `k0..k1` of the stable merge of the sorted `a` and `b` into `out` (`k1 - k0` keys):
/// both ends found by [`merge_path`], the piece between them merged serially.
#[gpu_cilk::device]
pub fn merge_piece<T: Key>(a: &[T], b: &[T], out: &mut [T], k0: usize, k1: usize) {
    let i0: usize = merge_path(a, b, k0);
    let i1: usize = merge_path(a, b, k1);
    seq_merge(&a[i0..i1], &b[k0 - i0..k1 - i1], out);
}

/// Merges the sorted `a` and `b` into `out` with a whole warp: the output is cut into pieces of
/// 32 keys, one lane merges a piece ([`merge_piece`]). On the host backends its host form
/// [`merge_host`] merges the whole in one pass (the same stable merge, without the 2 binary
/// searches per 32 keys).
#[gpu_cilk(warp, host = merge_host)]
#[allow(clippy::manual_div_ceil)] // `div_ceil` is not in the subset
pub fn warp_merge<T: Key>(a: &[T], b: &[T], out: &mut [T]) {
    let n: usize = a.len() + b.len();
    for p in lanes(0, (n + 31) / 32) {
        let k0: usize = p * 32;
        let k1: usize = (k0 + 32).min(n);
        merge_piece(a, b, &mut out[k0..k1], k0, k1);
    }
}

/// Sorts `a` (at most a few thousand keys) with a whole warp, `tmp` (as long) as scratch: each
/// lane insertion-sorts a run of 32 keys, then rounds of merges double the sorted runs (32, 64,
/// ..), from `a` into `tmp` and back, each round cut into output pieces of 32 keys, one a lane
/// ([`merge_piece`]); the result is copied back into `a` if the last round wrote `tmp`. On the
/// host backends its host form [`sort_host`] calls `sort_unstable_by` in the keys' total order.
#[gpu_cilk(warp, host = sort_host)]
#[allow(clippy::manual_div_ceil)] // `div_ceil` is not in the subset
pub fn warp_sort<T: Key>(a: &mut [T], tmp: &mut [T]) {
    let n: usize = a.len();
    let pieces: usize = (n + 31) / 32;
    for r in lanes(0, pieces) {
        let lo: usize = r * 32;
        let hi: usize = (lo + 32).min(n);
        insertion_sort(&mut a[lo..hi]);
    }
    let mut w: usize = 32;
    let mut in_a: bool = true;
    while w < n {
        for p in lanes(0, pieces) {
            let k0: usize = p * 32;
            let k1: usize = (k0 + 32).min(n);
            // The pair of runs this piece of output belongs to (2w is a multiple of 32).
            let lo: usize = k0 / (2 * w) * (2 * w);
            let mid: usize = (lo + w).min(n);
            let hi: usize = (lo + 2 * w).min(n);
            if in_a {
                merge_piece(&a[lo..mid], &a[mid..hi], &mut tmp[k0..k1], k0 - lo, k1 - lo);
            } else {
                merge_piece(&tmp[lo..mid], &tmp[mid..hi], &mut a[k0..k1], k0 - lo, k1 - lo);
            }
        }
        in_a = !in_a;
        w *= 2;
    }
    if !in_a {
        for i in lanes(0, n) {
            a[i] = tmp[i];
        }
    }
}

/// The host form of [`warp_sort`] (`#[gpu_cilk(warp, host = sort_host)]`): what a Rust
/// programmer calls. Plain Rust, not the subset: it never runs on a GPU. Keys equal in the total
/// order of [`Key`] have the same bits, so an unstable sort gives the stable sort's result.
pub fn sort_host<T: Key>(a: &mut [T], _tmp: &mut [T]) {
    a.sort_unstable_by(|x, y| {
        if x.total_lt(*y) {
            std::cmp::Ordering::Less
        } else if y.total_lt(*x) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
}

/// The host form of [`warp_merge`]: the stable merge of [`seq_merge`] (ties from `a` first) as
/// two independent halves interleaved in one loop (the output's first half, up to the merge
/// path's crossing of its middle, and the second), each step written so that the compiler
/// selects instead of branching on the data (a mispredicted branch per key was most of a random
/// merge's time), so two keys are in flight per iteration instead of one chain of loads and
/// compares; the tails copied whole.
pub fn merge_host<T: Key>(a: &[T], b: &[T], out: &mut [T]) {
    let half = out.len() / 2;
    let ia = merge_path(a, b, half);
    let ((a0, a1), (b0, b1)) = (a.split_at(ia), b.split_at(half - ia));
    let (lo, hi) = out.split_at_mut(half);
    let (mut p, mut q) = (Cursor::default(), Cursor::default());
    while p.i < a0.len() && p.j < b0.len() && q.i < a1.len() && q.j < b1.len() {
        p.step(a0, b0, lo);
        q.step(a1, b1, hi);
    }
    p.finish(a0, b0, lo);
    q.finish(a1, b1, hi);
}

/// A merge in progress: the next key of `a`, of `b` and of the output.
#[derive(Default)]
struct Cursor {
    i: usize,
    j: usize,
    k: usize,
}

impl Cursor {
    /// One key of the merge (both inputs nonempty): the smaller, `a`'s on a tie.
    #[inline(always)]
    fn step<T: Key>(&mut self, a: &[T], b: &[T], out: &mut [T]) {
        let (x, y) = (a[self.i], b[self.j]);
        let first = x <= y;
        out[self.k] = if first { x } else { y };
        self.i += usize::from(first);
        self.j += usize::from(!first);
        self.k += 1;
    }

    /// The rest of the merge.
    fn finish<T: Key>(mut self, a: &[T], b: &[T], out: &mut [T]) {
        while self.i < a.len() && self.j < b.len() && self.k < out.len() {
            self.step(a, b, out);
        }
        let rest_a = a.len() - self.i;
        out[self.k..self.k + rest_a].copy_from_slice(&a[self.i..]);
        out[self.k + rest_a..].copy_from_slice(&b[self.j..]);
    }
}

/// Merges the sorted `a` and `b` into `out` (`a.len() + b.len()` keys) in parallel.
#[gpu_cilk]
pub fn cilkmerge<T: Key>(a: &[T], b: &[T], out: &mut [T]) {
    if a.len() + b.len() <= 64 {
        seq_merge(a, b, out);
        return;
    }
    if a.len() + b.len() <= 4096 {
        // 4096 = WARP_MERGE: a literal, see strassen's BASE
        spawn!(warp_merge::<T>(a, b, out));
        return; // the implicit sync of a return
    }
    if a.len() < b.len() {
        spawn!(cilkmerge::<T>(b, a, out));
        return;
    }
    // `a` is the longer one, so `ma >= 1` and both halves are smaller than the whole.
    let ma: usize = a.len() / 2;
    let mb: usize = lower_bound(b, a[ma]);
    spawn!(cilkmerge::<T>(&a[..ma], &b[..mb], &mut out[..ma + mb]));
    spawn!(cilkmerge::<T>(&a[ma..], &b[mb..], &mut out[ma + mb..]));
    sync!();
}

/// Sorts `a`, with `tmp` (at least `a.len()` keys) as scratch: three phases, two task functions,
/// three syncs.
#[gpu_cilk]
pub fn cilksort<T: Key>(a: &mut [T], tmp: &mut [T]) {
    let n: usize = a.len();
    if n <= 32 {
        insertion_sort(a);
        return;
    }
    if n <= 1024 {
        // 1024 = WARP_SORT: a literal, see strassen's BASE
        spawn!(warp_sort::<T>(a, &mut tmp[..n]));
        return; // the implicit sync of a return
    }
    let q: usize = n / 4;
    spawn!(cilksort::<T>(&mut a[..q], &mut tmp[..q]));
    spawn!(cilksort::<T>(&mut a[q..2 * q], &mut tmp[q..2 * q]));
    spawn!(cilksort::<T>(&mut a[2 * q..3 * q], &mut tmp[2 * q..3 * q]));
    spawn!(cilksort::<T>(&mut a[3 * q..], &mut tmp[3 * q..n]));
    sync!();
    spawn!(cilkmerge::<T>(&a[..q], &a[q..2 * q], &mut tmp[..2 * q]));
    spawn!(cilkmerge::<T>(&a[2 * q..3 * q], &a[3 * q..], &mut tmp[2 * q..n]));
    sync!();
    spawn!(cilkmerge::<T>(&tmp[..2 * q], &tmp[2 * q..n], a));
    sync!();
}

/// Input shapes the example and the tests sort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Pseudo-random keys (splitmix64 of the index and a seed).
    Random,
    /// Already sorted.
    Sorted,
    /// Sorted descending.
    Reverse,
    /// Every key the same.
    Equal,
    /// Few distinct keys (key % 16).
    Few,
}

/// All shapes.
pub const SHAPES: [Shape; 5] = [Shape::Random, Shape::Sorted, Shape::Reverse, Shape::Equal, Shape::Few];

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The key types the example, the tests and the benchmarks sort: how an input of each is made
/// from the u32 keys of a [`Shape`], and the bits a [`Fingerprint`] counts.
pub trait SortKey: Key {
    /// The key for the u32 key `k` (order-preserving).
    fn from_u32(k: u32) -> Self;
    /// The key's bits.
    fn bits(self) -> u64;
}

impl SortKey for u32 {
    fn from_u32(k: u32) -> Self {
        k
    }
    fn bits(self) -> u64 {
        u64::from(self)
    }
}

/// Scaled into [-1e6, 1.1e6) (every value exact, no NaN: a NaN has no place in an order).
impl SortKey for f32 {
    fn from_u32(k: u32) -> Self {
        (k >> 8) as f32 / 8.0 - 1.0e6
    }
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

/// Spread over negative and positive values beyond the range of 32 bits.
impl SortKey for i64 {
    fn from_u32(k: u32) -> Self {
        (i64::from(k) - (1 << 31)) * 3
    }
    fn bits(self) -> u64 {
        self as u64
    }
}

/// `n` keys of `shape`.
pub fn input_keys<T: SortKey>(shape: Shape, n: usize, seed: u64) -> Vec<T> {
    (0..n)
        .map(|i| match shape {
            Shape::Random => splitmix(seed ^ i as u64) as u32,
            Shape::Sorted => i as u32,
            Shape::Reverse => (n - i) as u32,
            Shape::Equal => 7,
            Shape::Few => (splitmix(seed ^ i as u64) % 16) as u32,
        })
        .map(T::from_u32)
        .collect()
}

/// `n` u32 keys of `shape`.
pub fn input(shape: Shape, n: usize, seed: u64) -> Vec<u32> {
    input_keys(shape, n, seed)
}

/// `n` f32 keys of `shape`.
pub fn input_f32(shape: Shape, n: usize, seed: u64) -> Vec<f32> {
    input_keys(shape, n, seed)
}

/// `n` i64 keys of `shape`.
pub fn input_i64(shape: Shape, n: usize, seed: u64) -> Vec<i64> {
    input_keys(shape, n, seed)
}

/// What a permutation keeps: the length, a wrapping sum, a wrapping sum of squares and a
/// 256-bucket histogram of the top byte and of the low byte. Equal for any two permutations of
/// one input; any lost, duplicated or changed key changes it with high probability.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    len: usize,
    sum: u64,
    squares: u64,
    high: Vec<u64>,
    low: Vec<u64>,
}

/// The [`Fingerprint`] of `keys`.
pub fn fingerprint<T: SortKey>(keys: &[T]) -> Fingerprint {
    let mut f = Fingerprint { len: keys.len(), sum: 0, squares: 0, high: vec![0; 256], low: vec![0; 256] };
    for &k in keys {
        let b = k.bits();
        f.sum = f.sum.wrapping_add(b);
        f.squares = f.squares.wrapping_add(b.wrapping_mul(b));
        f.high[(b.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize] += 1;
        f.low[(b & 0xff) as usize] += 1;
    }
    f
}

/// `keys` is in ascending order.
pub fn is_sorted<T: PartialOrd>(keys: &[T]) -> bool {
    keys.windows(2).all(|w| w[0] <= w[1])
}
