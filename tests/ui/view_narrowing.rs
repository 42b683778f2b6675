use gpu_cilk::prelude::*;

#[gpu_cilk]
fn fill(mut a: MatMut<u32>, v: u32) {
    for i in 0..a.rows() {
        for j in 0..a.cols() {
            a[(i, j)] = v;
        }
    }
}

// A view narrows only from a view it was given: here from a call's result.
#[gpu_cilk]
fn of_a_result(a: MatMut<u32>) {
    spawn!(fill(id(a).block_mut(0, 0, 1, 1), 1));
    sync!();
}

#[gpu_cilk::device]
fn id(a: MatMut<u32>) -> MatMut<u32> {
    a
}

// A narrowed view lives only until the next sync: narrow the parameter again after it.
#[gpu_cilk]
fn across_sync(mut a: MatMut<u32>) {
    let (rows, cols) = (a.rows(), a.cols());
    let bottom: MatMut<u32> = a.block_mut(1, 0, rows - 1, cols);
    sync!();
    spawn!(fill(bottom, 2));
    sync!();
}

// The blocks of a split are bound without a type (a view is no tuple element).
#[gpu_cilk]
fn typed_split(mut a: MatMut<u32>) {
    let (top, bottom): (MatMut<u32>, MatMut<u32>) = a.split_rows_mut(1);
    spawn!(fill(top, 1));
    spawn!(fill(bottom, 2));
    sync!();
}

fn main() {}
