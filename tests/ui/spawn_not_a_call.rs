use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let x = spawn!(n + 1);
    sync!();
    x as u64
}

fn main() {}
