// A slice local that lives across a `sync!()` inside a loop (a state-machine task): only slice
// parameters are kept in the task frame.
use gpu_cilk::prelude::*;

#[gpu_cilk]
fn total(a: &[u32]) -> u64 {
    let mut s: u64 = 0;
    for i in 0..a.len() {
        let rest: &[u32] = &a[i..];
        let x = spawn!(leaf(i as u32));
        sync!();
        s += x + rest[0] as u64;
    }
    s
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64
}

fn main() {}
