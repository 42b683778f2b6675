use gpu_cilk::prelude::*;

/// Not annotated: it has no device form, so a task or helper cannot call it.
fn plain(n: u32) -> u64 {
    n as u64
}

#[gpu_cilk]
fn f(n: u32) -> u64 {
    plain(n) + 1
}

#[gpu_cilk::device]
fn h(n: u32) -> u64 {
    plain(n) * 2
}

fn main() {}
