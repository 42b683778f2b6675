use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let [a, b] = [n, n + 1];
    (a + b) as u64
}

fn main() {}
