use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let mut c: u64 = 0;
    while let Some(m) = n.checked_sub(c as u32) {
        c += 1;
    }
    c
}

fn main() {}
