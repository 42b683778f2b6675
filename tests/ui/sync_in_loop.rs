use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let mut total: u64 = 0;
    let mut i: u32 = 0;
    while i < n {
        let x = spawn!(leaf(i));
        sync!();
        i += 1;
    }
    total
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64
}

fn main() {}
