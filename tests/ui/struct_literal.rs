use gpu_cilk::prelude::*;

#[derive(Clone, Copy)]
struct Pair {
    a: u32,
    b: u32,
}

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let p = Pair { a: n, b: n };
    n as u64
}

fn main() {}
