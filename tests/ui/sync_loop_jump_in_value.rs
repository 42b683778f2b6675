use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let mut s: u64 = 0;
    let mut i: u32 = 0;
    while i < n {
        let x = spawn!(leaf(i));
        sync!();
        let y = if x > 5 { break } else { x };
        s += y;
        i += 1;
    }
    s
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64
}

fn main() {}
