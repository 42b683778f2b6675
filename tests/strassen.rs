//! Strassen (`examples/workloads/strassen.rs`) beyond the differential test
//! (`tests/differential.rs`): the serial function is plain Rust, padding picks sizes that halve
//! to the base case, and the accuracy check rejects a wrong product.

use gpu_cilk_examples::workloads::strassen as strassen_workload;

use gpu_cilk::runtime::{Mat, MatMut};
use strassen_workload::{accuracy, levels, matrix, padded_size, strassen_root, BASE};

#[test]
fn padded_sizes_halve_to_a_base_case() {
    for n in [0, 1, 2, 17, 63, 64, 65, 100, 127, 128, 129, 1000, 4095, 4096, 4097] {
        let m = padded_size(n);
        let (k, m0) = levels(m);
        assert!(m >= n && m0 <= BASE.max(n.min(BASE)) && m0 << k == m, "n {n} m {m} k {k} m0 {m0}");
        assert!(m < n + (1 << k), "n {n}: padding {m} is more than needed");
    }
    assert_eq!(padded_size(64), 64);
    assert_eq!(padded_size(100), 100);
    assert_eq!(padded_size(4096), 4096);
    assert_eq!(padded_size(1000), 1008);
}

#[test]
fn the_serial_function_multiplies() {
    for n in [1, 2, 17, 100, 130] {
        let (a, b) = (matrix(n, 1), matrix(n, 2));
        let mut c = vec![0f32; n * n];
        strassen_root(Mat::new(&a, n, n), Mat::new(&b, n, n), MatMut::new(&mut c, n, n), padded_size(n));
        let rows: Vec<usize> = (0..n).collect();
        let acc = accuracy(&a, &b, &c, n, &rows);
        assert!(acc.ok(), "n {n}: {acc:?}");
    }
}

#[test]
fn the_check_rejects_a_wrong_product() {
    let n = 100;
    let (a, b) = (matrix(n, 1), matrix(n, 2));
    let mut c = vec![0f32; n * n];
    strassen_root(Mat::new(&a, n, n), Mat::new(&b, n, n), MatMut::new(&mut c, n, n), padded_size(n));
    let rows: Vec<usize> = (0..n).collect();
    // One element off by a little more than the max-norm bound.
    let acc = accuracy(&a, &b, &c, n, &rows);
    c[n * 37 + 59] += (2.0 * acc.bound_max_abs) as f32;
    assert!(!accuracy(&a, &b, &c, n, &rows).ok());
    // A swapped quadrant (what a wrong offset would give).
    let mut d = c.clone();
    d[n * 37 + 59] -= (2.0 * acc.bound_max_abs) as f32;
    for i in 0..n / 2 {
        for j in 0..n / 2 {
            d.swap(i * n + j, i * n + j + n / 2);
        }
    }
    assert!(!accuracy(&a, &b, &d, n, &rows).ok());
}

#[test]
fn the_literals_in_the_task_bodies_match_the_constants() {
    // The task bodies spell BASE and COMB_GRAIN as literals (a user `const` is not emitted into CUDA).
    let src = include_str!("../examples/workloads/strassen.rs");
    assert!(src.contains(&format!("if n <= {} ||", strassen_workload::BASE)));
    assert_eq!(src.matches(&format!("> {} && rows > 1", strassen_workload::COMB_GRAIN)).count(), 3);
}
