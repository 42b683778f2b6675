use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> Option<u64> {
    let v = n.checked_sub(1)?;
    Some(v as u64)
}

fn main() {}
