use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    spawn!();
    sync!();
    0
}

fn main() {}
