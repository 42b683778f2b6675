use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let mut s: u64 = 0;
    for i in 0..10 {
        let x = spawn!(leaf(n));
        sync!();
        s += x;
    }
    let mut k = 0;
    while k < n {
        spawn!(leaf(k));
        sync!();
        k += 1;
    }
    s
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64
}

fn main() {}
