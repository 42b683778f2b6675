use gpu_cilk::prelude::*;

#[gpu_cilk]
fn fill(mut a: MatMut<u32>, v: u32) {
    for i in 0..a.rows() {
        for j in 0..a.cols() {
            a[(i, j)] = v;
        }
    }
}

// One quadrant to two children that run at once: a `MatMut` is not `Copy`, so the serial
// function already moves it into the first spawn.
#[gpu_cilk]
fn same_quadrant(mut a: MatMut<u32>) {
    let h = a.rows() / 2;
    let (q0, _q1, _q2, _q3) = a.quadrants_mut(h, h);
    spawn!(fill(q0, 1));
    spawn!(fill(q0, 2));
    sync!();
}

fn main() {}
