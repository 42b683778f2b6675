use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f<T: Copy>(n: u32) -> u64 {
    n as u64
}

fn main() {}
