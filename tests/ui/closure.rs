use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let double = |x: u64| x * 2;
    n as u64
}

fn main() {}
