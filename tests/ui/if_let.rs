use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    if let Some(m) = n.checked_sub(1) {
        return m as u64;
    }
    0
}

fn main() {}
