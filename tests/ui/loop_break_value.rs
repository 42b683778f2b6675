use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let mut i: u32 = 0;
    let v: u64 = loop {
        i += 1;
        if i > n {
            break i as u64;
        }
    };
    v
}

fn main() {}
