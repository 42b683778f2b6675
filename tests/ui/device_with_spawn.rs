use gpu_cilk::prelude::*;

#[gpu_cilk::device]
fn helper(n: u32) -> u64 {
    let x = spawn!(leaf(n));
    sync!();
    x
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64
}

fn main() {}
