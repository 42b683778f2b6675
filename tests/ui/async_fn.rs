use gpu_cilk::prelude::*;

#[gpu_cilk]
async fn f(n: u32) -> u64 {
    n as u64
}

fn main() {}
