use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let mut s: u64 = 0;
    for i in 0..n {
        let s: u64 = spawn!(leaf(i));
        sync!();
        let t = s;
    }
    s
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64
}

fn main() {}
