//! Strassen's matrix product as annotated Rust: f32, square, row-major. Shared by
//! `examples/strassen.rs`, the differential tests and the NVRTC compile test.
//!
//! - [`strassen_root`]`(a, b, c, m)`: `c = a · b` for `n × n` views of the caller's row-major
//!   matrices (`Mat<f32>`, `MatMut<f32>`: `Mat::new(&a, n, n)`). It copies `a` and `b` into zero-padded `m × m` temporaries ([`padded_size`] picks `m`: `n` times a power of two
//!   rounded up so that halving reaches a base case of at most [`BASE`] without odd sizes), runs
//!   [`strassen`] on them and copies the top-left `n × n` of the product back into `c`.
//! - [`strassen`]`(n, a, a0, lda, b, b0, ldb, c, c0, ldc)`: `C = A · B` where each matrix is an
//!   `n × n` strided view of a temporary (element `(i, j)` of `A` is `a[a0 + i * lda + j]`), so a
//!   quadrant is an offset and the parent's leading dimension, never a copy. One level: the ten
//!   sums `S1..S10` into one temporary, the seven products `M1..M7` into another (spawned in
//!   parallel), then `C` from the `M`s; at `n <= BASE` (or odd `n`) a dense product
//!   ([`base_mul`], a warp task: the 32 lanes of a warp share it on the GPU).
//! - [`comb`]: `out = s1·X1 + s2·X2 (+ s3·X3 + s4·X4)` over a rectangle of strided views, split
//!   by rows into parallel children while large, each rectangle then a warp task
//!   ([`comb_rect`]); used for the sums and for assembling `C`.
//! - [`pad_in`] / [`copy_out`]: the parallel copies between the caller's views and the padded
//!   temporaries, split by rows (`split_rows`), each block of rows a warp task ([`pad_rows`], [`copy_rows`]);
//!   [`zero_fill`] zeroes the padding rows (the temporaries are `alloc!(.., uninit)`).
//!
//! Why temporaries with offsets and strides rather than views (`Mat<f32>`, as
//! `examples/workloads/matmul.rs` recurses on): the products must go into task-scoped temporaries
//! (`alloc!`), and a view is of the caller's memory, never of a `Temp`, so one task function
//! cannot take "a view or a temporary". So the recursion works on `Temp<f32>` handles with an
//! offset and a leading dimension; views appear only at the root, where the caller's data comes
//! in and goes out.

use gpu_cilk::prelude::*;

/// Largest size multiplied by the dense base case. The task bodies spell it (and
/// [`COMB_GRAIN`]) as a literal: a path to a user `const` compiles on the host but is not emitted
/// into the CUDA program (the device compiler then finds it undeclared).
pub const BASE: usize = 64;

/// Rectangles (and row blocks of the copies) of at most this many elements are handled by one
/// task; larger ones are split by rows.
pub const COMB_GRAIN: usize = 4096;

/// `C = A · B` for `n × n` strided views (the base case), a warp task (`#[gpu_cilk(warp)]`): on
/// the persistent cuda scheduler lane `l` of a warp owns the columns `l`, `l + 32`, .. of `C`
/// (loads of `B` and stores of `C` coalesced, each element of `A` read by all lanes at once) and
/// accumulates four rows at a time in registers; on the host, the same loops one column after the
/// other. Every element is one dot product accumulated in f32 in the order `k = 0, 1, ..`.
#[gpu_cilk(warp)]
#[allow(clippy::too_many_arguments)]
pub fn base_mul(
    n: usize,
    a: Temp<f32>,
    a0: usize,
    lda: usize,
    b: Temp<f32>,
    b0: usize,
    ldb: usize,
    c: Temp<f32>,
    c0: usize,
    ldc: usize,
) {
    for j in lanes(0, n) {
        let mut i: usize = 0;
        while i + 4 <= n {
            let mut s0: f32 = 0.0;
            let mut s1: f32 = 0.0;
            let mut s2: f32 = 0.0;
            let mut s3: f32 = 0.0;
            for k in 0..n {
                let bk: f32 = b[b0 + k * ldb + j];
                let r: usize = a0 + i * lda + k;
                s0 += a[r] * bk;
                s1 += a[r + lda] * bk;
                s2 += a[r + 2 * lda] * bk;
                s3 += a[r + 3 * lda] * bk;
            }
            let o: usize = c0 + i * ldc + j;
            c[o] = s0;
            c[o + ldc] = s1;
            c[o + 2 * ldc] = s2;
            c[o + 3 * ldc] = s3;
            i += 4;
        }
        while i < n {
            let mut s: f32 = 0.0;
            for k in 0..n {
                s += a[a0 + i * lda + k] * b[b0 + k * ldb + j];
            }
            c[c0 + i * ldc + j] = s;
            i += 1;
        }
    }
}

/// `out[o0 + i * ldo + j] = Σ_t s_t · x[o_t + i * ldx + j]` for `i < rows`, `j < cols`, the
/// first `terms` (2 or 4) terms. Rectangles over [`COMB_GRAIN`] elements are split by rows.
#[gpu_cilk]
#[allow(clippy::too_many_arguments)]
pub fn comb(
    rows: usize,
    cols: usize,
    x: Temp<f32>,
    ldx: usize,
    terms: usize,
    o1: usize,
    s1: f32,
    o2: usize,
    s2: f32,
    o3: usize,
    s3: f32,
    o4: usize,
    s4: f32,
    out: Temp<f32>,
    o0: usize,
    ldo: usize,
) {
    if rows * cols > 4096 && rows > 1 {
        // 4096 = COMB_GRAIN, 64 = BASE: literals, see BASE
        let h: usize = rows / 2;
        spawn!(comb(h, cols, x, ldx, terms, o1, s1, o2, s2, o3, s3, o4, s4, out, o0, ldo));
        spawn!(comb(
            rows - h,
            cols,
            x,
            ldx,
            terms,
            o1 + h * ldx,
            s1,
            o2 + h * ldx,
            s2,
            o3 + h * ldx,
            s3,
            o4 + h * ldx,
            s4,
            out,
            o0 + h * ldo,
            ldo
        ));
        return; // the implicit sync of a return
    }
    spawn!(comb_rect(rows, cols, x, ldx, terms, o1, s1, o2, s2, o3, s3, o4, s4, out, o0, ldo));
    // the implicit sync of the return
}

/// The rectangle of [`comb`] that one task handles, a warp task: on the persistent cuda scheduler
/// the lanes of a warp take its elements in row-major order (lane `l` the elements `l`, `l + 32`,
/// ..: coalesced); on the host, one element after the other.
#[gpu_cilk(warp)]
#[allow(clippy::too_many_arguments)]
pub fn comb_rect(
    rows: usize,
    cols: usize,
    x: Temp<f32>,
    ldx: usize,
    terms: usize,
    o1: usize,
    s1: f32,
    o2: usize,
    s2: f32,
    o3: usize,
    s3: f32,
    o4: usize,
    s4: f32,
    out: Temp<f32>,
    o0: usize,
    ldo: usize,
) {
    if cols == 0 {
        return;
    }
    for e in lanes(0, rows * cols) {
        let i: usize = e / cols;
        let j: usize = e % cols;
        let r: usize = i * ldx + j;
        let mut v: f32 = s1 * x[o1 + r] + s2 * x[o2 + r];
        if terms > 2 {
            v += s3 * x[o3 + r] + s4 * x[o4 + r];
        }
        out[o0 + i * ldo + j] = v;
    }
}

/// Strassen's product `C = A · B` of `n × n` strided views of temporaries (see the module docs).
#[gpu_cilk]
#[allow(clippy::too_many_arguments)]
pub fn strassen(
    n: usize,
    a: Temp<f32>,
    a0: usize,
    lda: usize,
    b: Temp<f32>,
    b0: usize,
    ldb: usize,
    c: Temp<f32>,
    c0: usize,
    ldc: usize,
) {
    if n <= 64 || n % 2 == 1 {
        spawn!(base_mul(n, a, a0, lda, b, b0, ldb, c, c0, ldc));
        return; // the implicit sync of a return waits for it
    }
    let h: usize = n / 2;
    let hh: usize = h * h;
    // Quadrant offsets.
    let a12: usize = a0 + h;
    let a21: usize = a0 + h * lda;
    let a22: usize = a21 + h;
    let b12: usize = b0 + h;
    let b21: usize = b0 + h * ldb;
    let b22: usize = b21 + h;
    // S1..S10, each h × h with leading dimension h, at k * hh. `uninit`: every element is
    // written (by the `comb`s below) before it is read, so the cuda backend need not zero them.
    let s = alloc!(f32, 10 * hh, uninit);
    // M1..M7, each h × h with leading dimension h, at k * hh (written whole by the products).
    let m = alloc!(f32, 7 * hh, uninit);
    spawn!(comb(h, h, a, lda, 2, a0, 1.0, a22, 1.0, 0, 0.0, 0, 0.0, s, 0, h)); // S1 = A11 + A22
    spawn!(comb(h, h, b, ldb, 2, b0, 1.0, b22, 1.0, 0, 0.0, 0, 0.0, s, hh, h)); // S2 = B11 + B22
    spawn!(comb(h, h, a, lda, 2, a21, 1.0, a22, 1.0, 0, 0.0, 0, 0.0, s, 2 * hh, h)); // S3 = A21 + A22
    spawn!(comb(h, h, b, ldb, 2, b12, 1.0, b22, -1.0, 0, 0.0, 0, 0.0, s, 3 * hh, h)); // S4 = B12 - B22
    spawn!(comb(h, h, b, ldb, 2, b21, 1.0, b0, -1.0, 0, 0.0, 0, 0.0, s, 4 * hh, h)); // S5 = B21 - B11
    spawn!(comb(h, h, a, lda, 2, a0, 1.0, a12, 1.0, 0, 0.0, 0, 0.0, s, 5 * hh, h)); // S6 = A11 + A12
    spawn!(comb(h, h, a, lda, 2, a21, 1.0, a0, -1.0, 0, 0.0, 0, 0.0, s, 6 * hh, h)); // S7 = A21 - A11
    spawn!(comb(h, h, b, ldb, 2, b0, 1.0, b12, 1.0, 0, 0.0, 0, 0.0, s, 7 * hh, h)); // S8 = B11 + B12
    spawn!(comb(h, h, a, lda, 2, a12, 1.0, a22, -1.0, 0, 0.0, 0, 0.0, s, 8 * hh, h)); // S9 = A12 - A22
    spawn!(comb(h, h, b, ldb, 2, b21, 1.0, b22, 1.0, 0, 0.0, 0, 0.0, s, 9 * hh, h)); // S10 = B21 + B22
    sync!();
    spawn!(strassen(h, s, 0, h, s, hh, h, m, 0, h)); // M1 = S1 · S2
    spawn!(strassen(h, s, 2 * hh, h, b, b0, ldb, m, hh, h)); // M2 = S3 · B11
    spawn!(strassen(h, a, a0, lda, s, 3 * hh, h, m, 2 * hh, h)); // M3 = A11 · S4
    spawn!(strassen(h, a, a22, lda, s, 4 * hh, h, m, 3 * hh, h)); // M4 = A22 · S5
    spawn!(strassen(h, s, 5 * hh, h, b, b22, ldb, m, 4 * hh, h)); // M5 = S6 · B22
    spawn!(strassen(h, s, 6 * hh, h, s, 7 * hh, h, m, 5 * hh, h)); // M6 = S7 · S8
    spawn!(strassen(h, s, 8 * hh, h, s, 9 * hh, h, m, 6 * hh, h)); // M7 = S9 · S10
    sync!();
    let c12: usize = c0 + h;
    let c21: usize = c0 + h * ldc;
    let c22: usize = c21 + h;
    // C11 = M1 + M4 - M5 + M7
    spawn!(comb(h, h, m, h, 4, 0, 1.0, 3 * hh, 1.0, 4 * hh, -1.0, 6 * hh, 1.0, c, c0, ldc));
    // C12 = M3 + M5
    spawn!(comb(h, h, m, h, 2, 2 * hh, 1.0, 4 * hh, 1.0, 0, 0.0, 0, 0.0, c, c12, ldc));
    // C21 = M2 + M4
    spawn!(comb(h, h, m, h, 2, hh, 1.0, 3 * hh, 1.0, 0, 0.0, 0, 0.0, c, c21, ldc));
    // C22 = M1 - M2 + M3 + M6
    spawn!(comb(h, h, m, h, 4, 0, 1.0, hh, -1.0, 2 * hh, 1.0, 5 * hh, 1.0, c, c22, ldc));
    sync!();
}

/// Copies the rows of the view `src` (its first row is row `r0` of the matrix) into the top-left
/// of the `m × m` temporary `t`; split by rows while large.
#[gpu_cilk]
pub fn pad_in(src: Mat<f32>, r0: usize, t: Temp<f32>, m: usize) {
    let rows: usize = src.rows();
    if rows * src.cols() > 4096 && rows > 1 {
        let h: usize = rows / 2;
        let (top, bottom) = src.split_rows(h);
        spawn!(pad_in(top, r0, t, m));
        spawn!(pad_in(bottom, r0 + h, t, m));
        return; // the implicit sync of a return
    }
    spawn!(pad_rows(src, r0, t, m));
    // the implicit sync of the return
}

/// The rows of [`pad_in`] that one task copies, a warp task: row `r0 + i` of `t` gets row `i` of
/// `src` in its first `src.cols()` columns and zeros in the others (lanes take the row-major
/// elements of the `m`-wide rows in turn).
#[gpu_cilk(warp)]
pub fn pad_rows(src: Mat<f32>, r0: usize, t: Temp<f32>, m: usize) {
    if m == 0 {
        return;
    }
    for e in lanes(0, src.rows() * m) {
        let i: usize = e / m;
        let j: usize = e % m;
        t[(r0 + i) * m + j] = if j < src.cols() { src[(i, j)] } else { 0.0 };
    }
}

/// Zeroes `t[lo..hi]`: split in halves while longer than 4096, each piece a warp task
/// ([`zero_span`]).
#[gpu_cilk]
pub fn zero_fill(t: Temp<f32>, lo: usize, hi: usize) {
    if hi > lo + 4096 {
        let mid: usize = lo + (hi - lo) / 2;
        spawn!(zero_fill(t, lo, mid));
        spawn!(zero_fill(t, mid, hi));
        return; // the implicit sync of a return
    }
    spawn!(zero_span(t, lo, hi));
    // the implicit sync of the return
}

/// `t[lo..hi] = 0`, a warp task.
#[gpu_cilk(warp)]
pub fn zero_span(t: Temp<f32>, lo: usize, hi: usize) {
    for i in lanes(lo, hi) {
        t[i] = 0.0;
    }
}

/// Copies the top-left block of the `m × m` temporary `t` from row `r0` into the view `dst`
/// (as many rows and columns as it has); split by rows while large.
#[gpu_cilk]
pub fn copy_out(t: Temp<f32>, m: usize, mut dst: MatMut<f32>, r0: usize) {
    let rows: usize = dst.rows();
    if rows * dst.cols() > 4096 && rows > 1 {
        let h: usize = rows / 2;
        let (top, bottom) = dst.split_rows_mut(h);
        spawn!(copy_out(t, m, top, r0));
        spawn!(copy_out(t, m, bottom, r0 + h));
        return; // the implicit sync of a return
    }
    spawn!(copy_rows(t, m, dst, r0));
    // the implicit sync of the return
}

/// The rows of [`copy_out`] that one task copies, a warp task (lanes take the elements of `dst`
/// in row-major order in turn).
#[gpu_cilk(warp)]
pub fn copy_rows(t: Temp<f32>, m: usize, mut dst: MatMut<f32>, r0: usize) {
    let n: usize = dst.cols();
    if n == 0 {
        return;
    }
    for e in lanes(0, dst.rows() * n) {
        dst[(e / n, e % n)] = t[(r0 + e / n) * m + e % n];
    }
}

/// `c = a · b` for `n × n` views `a`, `b`, `c` (`Mat::new(&a, n, n)`, ..), through `m × m`
/// padded temporaries (`m = padded_size(n)`; any `m >= n` that halves down to odd sizes or sizes
/// `<= BASE` works).
#[gpu_cilk]
pub fn strassen_root(a: Mat<f32>, b: Mat<f32>, c: MatMut<f32>, m: usize) {
    let n: usize = c.rows();
    if n == 0 {
        return;
    }
    // `uninit`: pad_in writes the first `n` rows whole (zeros right of column `n`), zero_fill the
    // rest; the product writes all of `tc`. (Zeroing 3 m² floats in the allocating thread would
    // cost more than the product at m = 4096.)
    let ta = alloc!(f32, m * m, uninit);
    let tb = alloc!(f32, m * m, uninit);
    let tc = alloc!(f32, m * m, uninit);
    spawn!(pad_in(a, 0, ta, m));
    spawn!(pad_in(b, 0, tb, m));
    spawn!(zero_fill(ta, n * m, m * m));
    spawn!(zero_fill(tb, n * m, m * m));
    sync!();
    spawn!(strassen(m, ta, 0, m, tb, 0, m, tc, 0, m));
    sync!();
    spawn!(copy_out(tc, m, c, 0));
    sync!();
}

// ---- Host side: sizes, inputs, the f64 reference and the error bound.

/// The padded size for `n`: the least `m0 · 2^k >= n` with `m0 <= BASE` and `k` the fewest
/// halvings that bring `n` to at most `BASE` (so the recursion halves `k` times without odd
/// sizes and ends in `m0 × m0` base cases). `n` itself when `n <= BASE`; `m < n + 2^k`.
pub fn padded_size(n: usize) -> usize {
    let mut k: u32 = 0;
    while n.div_ceil(1 << k) > BASE {
        k += 1;
    }
    n.div_ceil(1 << k) << k
}

/// Halvings from `m` (a [`padded_size`]) to the base case, and the base case's size.
pub fn levels(m: usize) -> (u32, usize) {
    let (mut k, mut s) = (0u32, m);
    while s > BASE && s % 2 == 0 {
        s /= 2;
        k += 1;
    }
    (k, s)
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `n × n` pseudo-random entries, uniform in [-1, 1).
pub fn matrix(n: usize, seed: u64) -> Vec<f32> {
    (0..n * n)
        .map(|i| (splitmix(seed ^ (i as u64).wrapping_mul(0x2545_F491)) >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
        .collect()
}

/// Rows `rows` of the f64 product `a · b` (row-major, `n × n`), one `Vec` of `n` per row.
pub fn reference_rows(a: &[f32], b: &[f32], n: usize, rows: &[usize]) -> Vec<Vec<f64>> {
    use rayon::prelude::*;
    rows.par_iter()
        .map(|&i| {
            let mut r = vec![0f64; n];
            for k in 0..n {
                let aik = f64::from(a[i * n + k]);
                for (x, &bkj) in r.iter_mut().zip(&b[k * n..(k + 1) * n]) {
                    *x += aik * f64::from(bkj);
                }
            }
            r
        })
        .collect()
}

/// How far a product is from the f64 reference, on the checked rows.
#[derive(Clone, Copy, Debug)]
pub struct Accuracy {
    /// `‖C − C_ref‖_F / ‖C_ref‖_F` over the checked rows.
    pub rel_frobenius: f64,
    /// `max |C − C_ref|` over the checked rows.
    pub max_abs: f64,
    /// Higham's bound on `max |C − C_ref|` (see [`higham_bound`]).
    pub bound_max_abs: f64,
}

/// The unit roundoff of f32.
pub const U32: f64 = 1.0 / (1u64 << 24) as f64;

/// Higham's first-order bound for Strassen's method (Accuracy and Stability of Numerical
/// Algorithms, 2nd ed., Theorem 23.3): for `m = m0 · 2^k` and conventional multiplication at
/// `m0`, `‖C − Ĉ‖ ≤ [(m/m0)^log2(12) (m0² + 5 m0) − 5 m] u ‖A‖ ‖B‖ + O(u²)` in the max norm
/// `‖X‖ = max |x_ij|`. Zero padding does not change `‖A‖`, `‖B‖` or the product's top-left block.
/// Returns the bracket times `u` (f32); multiply by `‖A‖ ‖B‖`. Doubled to cover the `O(u²)`
/// term and f32 accumulation of the base case's dot products in any order.
pub fn higham_factor(m: usize) -> f64 {
    let (k, m0) = levels(m);
    let m0f = m0 as f64;
    let growth = (12f64).powi(k as i32); // (m/m0)^log2(12) = 12^k
    2.0 * (growth * (m0f * m0f + 5.0 * m0f) - 5.0 * m as f64).max(m0f) * U32
}

/// The bound on `max |C − C_ref|`: [`higham_factor`]`(m) · max|a| · max|b|`.
pub fn higham_bound(a: &[f32], b: &[f32], m: usize) -> f64 {
    let na = a.iter().fold(0f64, |x, &v| x.max(f64::from(v.abs())));
    let nb = b.iter().fold(0f64, |x, &v| x.max(f64::from(v.abs())));
    higham_factor(m) * na * nb
}

/// Compares `c` with the f64 reference on `rows`.
pub fn accuracy(a: &[f32], b: &[f32], c: &[f32], n: usize, rows: &[usize]) -> Accuracy {
    let reference = reference_rows(a, b, n, rows);
    let (mut err2, mut ref2, mut max_abs) = (0f64, 0f64, 0f64);
    for (&i, r) in rows.iter().zip(&reference) {
        for (j, &x) in r.iter().enumerate() {
            let d = f64::from(c[i * n + j]) - x;
            err2 += d * d;
            ref2 += x * x;
            max_abs = max_abs.max(d.abs());
        }
    }
    let rel_frobenius = if ref2 > 0.0 { (err2 / ref2).sqrt() } else { err2.sqrt() };
    Accuracy { rel_frobenius, max_abs, bound_max_abs: higham_bound(a, b, padded_size(n)) }
}

/// The empirical bound on the relative Frobenius error for inputs from [`matrix`]: measured
/// errors are at most about `1e-7 · sqrt(n)` (2.4e-6 at n = 1000 on the cpu backend, so about
/// 6e-6 expected at n = 4096); `2e-4` leaves a margin of about 30× there, while a wrong
/// quadrant or sign gives an error of order 1.
pub const REL_FROBENIUS_BOUND: f64 = 2e-4;

impl Accuracy {
    /// Within both bounds: Higham's (sound, first order) on the max error, and the empirical one
    /// on the relative Frobenius error.
    pub fn ok(&self) -> bool {
        self.max_abs <= self.bound_max_abs && self.rel_frobenius <= REL_FROBENIUS_BOUND
    }
}

/// `Config::temp_heap_bytes` for padded size `m` (the example's and the benchmark's): bytes of
/// temporaries if every task of every level held its own at once (the breadth-first
/// worst case): the three padded `m × m` matrices of the root, and at level `l` `7^l` tasks with
/// 17 `(m / 2^(l+1))²` each; 4 bytes per element (an `f32`, on the host too), a quarter more for
/// the allocator's rounding.
pub fn heap_bytes(m: usize) -> usize {
    let (k, _) = levels(m);
    let mut words = 3.0 * (m * m) as f64;
    for l in 0..k {
        let h = (m >> (l + 1)) as f64;
        words += 7f64.powi(l as i32) * 17.0 * h * h;
    }
    ((words * 4.0 * 1.25) as usize).max(64 << 20)
}
