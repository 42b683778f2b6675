use gpu_cilk::prelude::*;

#[gpu_cilk]
fn first_half(a: &mut [u32]) -> &[u32] {
    &a[..a.len() / 2]
}

fn main() {}
