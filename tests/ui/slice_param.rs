use gpu_cilk::prelude::*;

#[gpu_cilk]
fn sum(xs: &[String], n: u32) -> u64 {
    n as u64
}

fn main() {}
