use gpu_cilk::prelude::*;

#[gpu_cilk]
struct Frame {
    x: u64,
}

fn main() {}
