//! Strided 2-D views (`Mat<T>` / `MatMut<T>`, the runtime's `view` module) as task parameters:
//! the recursive matrix multiply (`examples/workloads/matmul.rs`) equals the plain triple loop on
//! every host backend (serial, cpu, cuda-sim), on whole matrices and on sub-blocks of larger ones
//! (the elements outside the block untouched); views index by `(row, col)` with bounds checked on
//! every backend; the race check of the cpu stealing scheduler compares views row by row, so
//! disjoint quadrants pass and overlapping blocks are a race.

#[path = "support/backends.rs"]
mod backends;
#[path = "../examples/workloads/matmul.rs"]
mod matmul_workload;

use gpu_cilk::prelude::*;
use gpu_cilk::runtime::SchedulerKind;
use matmul_workload::{matmul, matrix, reference};

/// `C += A · B` on `m × n` (`k` inner) blocks at `(r0, c0)` of matrices `pad` columns wider
/// and `pad` rows taller than the blocks, on `rt`, checked against [`reference`] on the block and
/// against the old values outside it.
fn check_matmul(rt: &Runtime, m: usize, n: usize, k: usize, pad: usize) {
    let (r0, c0) = (pad / 2, pad - pad / 2);
    let (ldc, lda, ldb) = (n + pad, k + pad, n + pad);
    let a = matrix(m + pad, lda, 1);
    let b = matrix(k + pad, ldb, 2);
    let c0v = matrix(m + pad, ldc, 3);
    let mut c = c0v.clone();
    let av = Mat::strided(&a, m + pad, lda, lda).block(r0, c0, m, k);
    let bv = Mat::strided(&b, k + pad, ldb, ldb).block(r0, c0, k, n);
    let mut whole = MatMut::new(&mut c, m + pad, ldc);
    let cv = whole.block_mut(r0, c0, m, n);
    rt.run(matmul::task(cv, av, bv)).unwrap_or_else(|e| panic!("{} {m}x{n}x{k} pad {pad}: {e}", rt.backend()));
    // The expected block, by the plain loop on dense copies.
    let dense = |v: &[f32], ld: usize, rows: usize, cols: usize| -> Vec<f32> {
        (0..rows).flat_map(|i| (0..cols).map(move |j| (i, j))).map(|(i, j)| v[(r0 + i) * ld + c0 + j]).collect()
    };
    let mut want = dense(&c0v, ldc, m, n);
    reference(&mut want, &dense(&a, lda, m, k), &dense(&b, ldb, k, n), m, n, k);
    for i in 0..m + pad {
        for j in 0..ldc {
            let inside = (r0..r0 + m).contains(&i) && (c0..c0 + n).contains(&j);
            let w = if inside { want[(i - r0) * n + j - c0] } else { c0v[i * ldc + j] };
            assert_eq!(c[i * ldc + j], w, "{} {m}x{n}x{k} pad {pad}: element ({i}, {j})", rt.backend());
        }
    }
}

#[test]
fn matmul_equals_the_triple_loop_on_the_host_backends() {
    for rt in backends::host(Config::default()) {
        for (m, n, k, pad) in
            [(1, 1, 1, 0), (16, 16, 16, 0), (17, 33, 20, 0), (64, 64, 64, 0), (40, 70, 90, 3), (100, 37, 65, 5)]
        {
            check_matmul(&rt, m, n, k, pad);
        }
    }
}

#[gpu_cilk]
fn get(a: Mat<u32>, i: usize, j: usize) -> u32 {
    a[(i, j)]
}

#[test]
fn indexing_outside_a_view_fails_on_every_backend() {
    let v: Vec<u32> = (0..12).collect();
    for rt in backends::host(Config::default()) {
        let a = Mat::strided(&v, 3, 2, 4);
        assert_eq!(rt.run(get::task(a, 2, 1)).expect("inside"), 9);
        let e = rt.run(get::task(a, 1, 2)).expect_err("column 2 of 2");
        assert!(e.to_string().contains("2"), "{}: {e}", rt.backend());
    }
}

#[gpu_cilk]
fn fill(mut a: MatMut<u32>, x: u32) {
    for i in 0..a.rows() {
        for j in 0..a.cols() {
            a[(i, j)] += x;
        }
    }
}

/// Fills the four quadrants in parallel (disjoint: never a race), then two blocks that overlap
/// when `overlap` (rows `0..h` and `h - 1..`, columns all): a race the check must see.
#[gpu_cilk]
fn quads_then_rows(mut a: MatMut<u32>, overlap: bool) {
    let h: usize = a.rows() / 2;
    let w = a.cols() / 2;
    let (q0, q1, q2, q3) = a.quadrants_mut(h, w);
    spawn!(fill(q0, 1));
    spawn!(fill(q1, 2));
    spawn!(fill(q2, 3));
    spawn!(fill(q3, 4));
    sync!();
    let lo = if overlap { h - 1 } else { h };
    let cols = a.cols();
    spawn!(fill(a.block_mut(0, 0, h, cols), 10));
    spawn!(fill(a.block_mut(lo, 0, a.rows() - lo, 1), 20));
    sync!();
}

/// Column blocks of the same rows: disjoint row ranges in every row, though each block's extent
/// covers the other's.
#[gpu_cilk]
fn two_columns(mut a: MatMut<u32>) {
    let (l, r) = a.split_cols_mut(1);
    spawn!(fill(l, 1));
    spawn!(fill(r, 2));
    sync!();
}

fn checking() -> Runtime {
    let c = Config::default().backend(BackendKind::Cpu).scheduler(SchedulerKind::Stealing).check_races(true);
    Runtime::with_config(c).expect("cpu backend")
}

#[test]
fn the_race_check_compares_views_row_by_row() {
    let rt = checking();
    let mut v = vec![0u32; 4 * 6];
    rt.run(quads_then_rows::task(MatMut::new(&mut v, 4, 6), false)).expect("disjoint");
    let want: Vec<u32> =
        [[11, 11, 11, 12, 12, 12], [11, 11, 11, 12, 12, 12], [23, 3, 3, 4, 4, 4], [23, 3, 3, 4, 4, 4]].concat();
    assert_eq!(v, want);
    let e = rt.run(quads_then_rows::task(MatMut::new(&mut v, 4, 6), true)).expect_err("rows 1..2 overlap");
    let msg = e.to_string();
    assert!(matches!(e, Error::SliceRace { task: "quads_then_rows", .. }), "{msg}");
    assert!(msg.contains("`&mut` 2x6 block at element 0 (row stride 6)"), "{msg}");
    assert!(msg.contains("`&mut` 3x1 block at element 6 (row stride 6)"), "{msg}");
    let mut v = vec![0u32; 3 * 5];
    rt.run(two_columns::task(MatMut::strided(&mut v, 3, 2, 5))).expect("disjoint columns");
    assert_eq!(v, [[1, 2, 0, 0, 0]; 3].concat());
}

#[test]
fn a_view_written_on_cuda_sim_leaves_the_gaps_between_its_rows_alone() {
    let Some(rt) = backends::sim(Config::default()).into_iter().next() else { return };
    let mut v = vec![7u32; 3 * 5];
    rt.run(fill::task(MatMut::strided(&mut v, 3, 2, 5), 1)).expect("fill");
    assert_eq!(v, [[8, 8, 7, 7, 7], [8, 8, 7, 7, 7], [8, 8, 7, 7, 7]].concat());
}
