use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: impl Into<u64>) -> u64 {
    0
}

fn main() {}
