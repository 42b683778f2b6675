//! Strided 2-D views (`Mat<T>` / `MatMut<T>`) through the pipeline: the expansion stores them as
//! `RawMat`s in `Args` and `Frame` and lists them in `SLICES` with `view: true`; the CUDA writer
//! gives them `gc_mat<T>` with checked `at` and narrowings. Snapshots: review by reading them.

use super::{cuda, dump, expand, lowered};
use quote::quote;

/// The recursive multiply of `examples/workloads/matmul.rs`, cut to one round: quadrants to four
/// parallel children, a read-only view handed to two of them, the view parameter used again after
/// the sync (it lives in the frame), a leaf loop indexing by `(i, j)`.
fn quad_mul() -> proc_macro2::TokenStream {
    quote! {
        pub fn quad_mul(mut c: MatMut<f32>, a: Mat<f32>, b: Mat<f32>) {
            let n = c.rows();
            if n <= 16 {
                for i in 0..n {
                    for j in 0..c.cols() {
                        let mut s: f32 = c[(i, j)];
                        for k in 0..a.cols() {
                            s += a[(i, k)] * b[(k, j)];
                        }
                        c[(i, j)] = s;
                    }
                }
                return;
            }
            let h: usize = n / 2;
            let (c00, c01, c10, c11) = c.quadrants_mut(h, h);
            let (a00, _a01, a10, _a11) = a.quadrants(h, h);
            let (top, _bottom) = b.split_rows(h);
            let (b00, b01) = top.split_cols(h);
            spawn!(quad_mul(c00, a00, b00));
            spawn!(quad_mul(c01, a00, b01));
            spawn!(quad_mul(c10, a10, b00));
            spawn!(quad_mul(c11, a10, b01));
            sync!();
            let cols = c.cols();
            spawn!(quad_mul(c.block_mut(0, 0, h, cols), a.block(0, h, h, h), b.block(h, 0, h, cols)));
            sync!();
        }
    }
}

#[test]
fn quad_mul_ir() {
    insta::assert_snapshot!(dump(&lowered(quad_mul())));
}

#[test]
fn quad_mul_expansion() {
    insta::assert_snapshot!(expand(quote!(), quad_mul()));
}

#[test]
fn quad_mul_cuda() {
    insta::assert_snapshot!(cuda(quad_mul()));
}
