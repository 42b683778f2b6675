use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let a: [u64; 2] = [1, 2];
    let r = &a;
    a[0]
}

fn main() {}
