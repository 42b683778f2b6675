use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let s = n.to_string();
    n as u64
}

fn main() {}
