use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let t = alloc!(u64, 4);
    if n > 1 {
        spawn!(g(n));
        sync!();
    }
    t[0]
}

#[gpu_cilk]
fn g(_n: u32) {}

fn main() {}
