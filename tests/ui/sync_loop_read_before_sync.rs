use gpu_cilk::prelude::*;

// On the path where `n <= 2` no sync runs between the spawn and the read.
#[gpu_cilk]
fn f(n: u32) -> u64 {
    let x = spawn!(leaf(n));
    if n > 2 {
        sync!();
    }
    x + 1
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64
}

fn main() {}
