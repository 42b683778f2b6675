use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let x = spawn!(n.count_ones());
    sync!();
    x as u64
}

fn main() {}
