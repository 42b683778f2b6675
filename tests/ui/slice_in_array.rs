use gpu_cilk::prelude::*;

#[gpu_cilk]
fn both(parts: [&[u32]; 2]) -> u32 {
    0
}

fn main() {}
