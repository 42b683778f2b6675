use gpu_cilk::prelude::*;

#[gpu_cilk]
fn fill(a: &mut [u32], v: u32) {
    for i in 0..a.len() {
        a[i] = v;
    }
}

#[gpu_cilk]
fn sum(a: &[u32]) -> u64 {
    let mut s = 0u64;
    for i in 0..a.len() {
        s += a[i] as u64;
    }
    s
}

// Two children given the same `&mut` slice run at once on the parallel backends: a race that the
// serial function (where spawn is a call) would hide.
#[gpu_cilk]
fn twice(a: &mut [u32]) {
    spawn!(fill(a, 1));
    spawn!(fill(a, 2));
    sync!();
}

// A reader beside a writer of the same slice.
#[gpu_cilk]
fn read_while_written(a: &mut [u32]) -> u64 {
    spawn!(fill(a, 1));
    let s = spawn!(sum(a));
    sync!();
    s
}

// One spawn per iteration, no sync in the loop: every iteration's child gets all of `a`.
#[gpu_cilk]
fn in_a_loop(a: &mut [u32], n: u32) {
    for i in 0..n {
        spawn!(fill(a, i));
    }
    sync!();
}

fn main() {}
