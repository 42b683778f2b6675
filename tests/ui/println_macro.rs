use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    println!("n = {}", n);
    n as u64
}

fn main() {}
