use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let v: u64 = match n {
        0 => 1,
        _ => 2,
    };
    v
}

fn main() {}
