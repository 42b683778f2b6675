use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    if n > 1 {
        let x = spawn!(leaf(n));
        let mut y: u64 = 0;
        y = spawn!(leaf(n - 1));
    }
    sync!();
    0
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64
}

fn main() {}
