use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> (u32, u32) {
    (n, n + 1)
}

fn main() {}
