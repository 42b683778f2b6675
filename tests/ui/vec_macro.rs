use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let v = vec![1u64, 2, 3];
    v[0]
}

fn main() {}
