//! Strided 2-D views (`Mat<T>` / `MatMut<T>`, the runtime's `view` module) as task parameters
//! (the recursive multiply of `examples/workloads/matmul.rs` is `tests/differential.rs`'s): views
//! index by `(row, col)` with bounds checked on every host backend (serial, cpu, cuda-sim); the race check of the cpu stealing scheduler compares views row by row, so
//! disjoint quadrants pass and overlapping blocks are a race.

use gpu_cilk_examples::workloads::matmul as matmul_workload;
use gpu_cilk_test_support::programs::backends;

use gpu_cilk::prelude::*;
use gpu_cilk::runtime::SchedulerKind;
use matmul_workload::matmul;

/// The task spells its leaf size as a literal (a user `const` is not emitted into the CUDA
/// program): it must be `LEAF`.
#[test]
fn matmul_spells_its_leaf_size() {
    let src = include_str!("../examples/workloads/matmul.rs");
    let leaf = matmul_workload::LEAF;
    assert!(src.contains(&format!("if m <= {leaf} || n <= {leaf} || k <= {leaf} {{")), "matmul's leaf test");
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

/// The view fixtures and the multiply in one program, as the cuda backend assembles it for the
/// persistent scheduler, compiled by NVRTC (no GPU needed; skipped with a reason without NVRTC
/// unless `GPU_CILK_REQUIRE_NVRTC=1`). `tests/device_compile.rs` compiles `matmul` alone for both
/// schedulers.
#[test]
fn the_view_tasks_compile_with_nvrtc() {
    use gpu_cilk::runtime::backend::cuda::program::assemble_for;
    use gpu_cilk::runtime::backend::cuda::{compile_ptx, nvrtc_version, Arch, DeviceScheduler};
    use gpu_cilk::runtime::{CilkTask, Registry};
    if let Err(e) = nvrtc_version() {
        backends::gate::nvrtc_missing("the_view_tasks_compile_with_nvrtc", &e);
        return;
    }
    let mut reg = Registry::new();
    <quads_then_rows::Task as CilkTask>::register(&mut reg);
    <two_columns::Task as CilkTask>::register(&mut reg);
    <get::Task as CilkTask>::register(&mut reg);
    <matmul::Task as CilkTask>::register(&mut reg);
    let src = assemble_for(&reg, DeviceScheduler::Persistent).expect("every task has a CUDA fragment").source;
    let ptx = compile_ptx(&src, "views", Arch::new(8, 0)).unwrap_or_else(|e| panic!("{e}"));
    assert!(ptx.contains(".entry gc_persistent("));
}
