use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let mut parts: [u64; 4] = [0; 4];
    let mut i: usize = 0;
    while i < 4 {
        parts[i] = spawn!(leaf(n + parts[0] as u32));
        i += 1;
    }
    sync!();
    parts[0] + parts[3]
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64
}

fn main() {}
