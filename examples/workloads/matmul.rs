//! Recursive matrix multiply-add on strided 2-D views: `C += A · B` for row-major f32 matrices of
//! any shape (`C` is `m × n`, `A` is `m × k`, `B` is `k × n`). Shared by `examples/matmul.rs`,
//! the differential tests and the NVRTC compile test.
//!
//! - [`matmul`]`(c, a, b)`: split all three at half their sizes into quadrants
//!   (`c.quadrants_mut(m / 2, n / 2)`, ..) and run the eight quadrant products as two rounds of
//!   four: `C_ij += A_i0 · B_0j` for the four `(i, j)` in parallel (their `C` quadrants are
//!   disjoint), a `sync!()`, then `C_ij += A_i1 · B_1j`. Below [`LEAF`] in any dimension, the
//!   plain triple loop ([`leaf`]). No temporaries: the views are the caller's memory.
//! - [`reference`]: the same product by the plain triple loop over the whole matrices, in the
//!   same order of additions per element as the recursion (`k` ascending), so the results are
//!   equal bit for bit on every backend.

use gpu_cilk::prelude::*;

/// The leaf size: a product with a dimension of at most this many is one triple loop. The task
/// spells it as a literal (a path to a user `const` is not emitted into the CUDA program).
pub const LEAF: usize = 16;

/// `C += A · B` on views, recursively by quadrants (module docs).
#[gpu_cilk]
pub fn matmul(mut c: MatMut<f32>, a: Mat<f32>, b: Mat<f32>) {
    let (m, n, k) = (c.rows(), c.cols(), a.cols());
    if m <= 16 || n <= 16 || k <= 16 {
        // 16 = LEAF
        spawn!(leaf(c, a, b));
        return;
    }
    let (mh, nh, kh): (usize, usize, usize) = (m / 2, n / 2, k / 2);
    let (c00, c01, c10, c11) = c.quadrants_mut(mh, nh);
    let (a00, _a01, a10, _a11) = a.quadrants(mh, kh);
    let (b00, b01, _b10, _b11) = b.quadrants(kh, nh);
    spawn!(matmul(c00, a00, b00));
    spawn!(matmul(c01, a00, b01));
    spawn!(matmul(c10, a10, b00));
    spawn!(matmul(c11, a10, b01));
    sync!();
    // The second round adds the products over the second half of `k`: to the same quadrants of
    // `C`, so only after the first round's children are done.
    let (d00, d01, d10, d11) = c.quadrants_mut(mh, nh);
    let (_e00, e01, _e10, e11) = a.quadrants(mh, kh);
    let (_f00, _f01, f10, f11) = b.quadrants(kh, nh);
    spawn!(matmul(d00, e01, f10));
    spawn!(matmul(d01, e01, f11));
    spawn!(matmul(d10, e11, f10));
    spawn!(matmul(d11, e11, f11));
    sync!();
}

/// `C += A · B` by the triple loop, each element of `C` accumulated in `k` order.
#[gpu_cilk]
pub fn leaf(mut c: MatMut<f32>, a: Mat<f32>, b: Mat<f32>) {
    for i in 0..c.rows() {
        for j in 0..c.cols() {
            let mut s: f32 = c[(i, j)];
            for p in 0..a.cols() {
                s += a[(i, p)] * b[(p, j)];
            }
            c[(i, j)] = s;
        }
    }
}

/// `c += a · b` for row-major `m × k` `a`, `k × n` `b` and `m × n` `c`, by the plain triple loop.
/// The recursion adds the products of one element of `c` in the same order (`k` ascending,
/// starting from the element's old value), so [`matmul`] gives exactly this.
pub fn reference(c: &mut [f32], a: &[f32], b: &[f32], m: usize, n: usize, k: usize) {
    for i in 0..m {
        for j in 0..n {
            let mut s = c[i * n + j];
            for p in 0..k {
                s += a[i * k + p] * b[p * n + j];
            }
            c[i * n + j] = s;
        }
    }
}

/// A deterministic `rows × cols` matrix of small values (exact in f32 sums of a few thousand
/// products), seeded by `seed`.
pub fn matrix(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..rows * cols)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) % 17) as f32 - 8.0
        })
        .collect()
}
