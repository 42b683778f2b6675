use gpu_cilk::prelude::*;

#[gpu_cilk]
fn leaf(x: u32) -> u32 {
    x
}

// A priority must be an ordered scalar: an array is not.
#[gpu_cilk]
fn by_array(x: u32) -> u32 {
    let a = spawn!(leaf(x), priority = [x, 1]);
    sync!();
    a
}

// The only option of `spawn!` is `priority`.
#[gpu_cilk]
fn by_name(x: u32) -> u32 {
    let a = spawn!(leaf(x), prio = x);
    sync!();
    a
}

// A tuple is not a key either.
#[gpu_cilk]
fn by_tuple(x: u32) -> u32 {
    let a = spawn!(leaf(x), priority = (x, x));
    sync!();
    a
}

fn main() {}
