use gpu_cilk::prelude::*;

/// A task that would own its data: the data belongs in a slice the caller owns.
#[gpu_cilk]
fn total(v: Vec<u64>, lo: usize, hi: usize) -> u64 {
    let mut s: u64 = 0;
    for i in lo..hi {
        s += v[i];
    }
    s
}

/// A `Vec` of something a slice cannot hold: the hint names no element type.
#[gpu_cilk]
fn count(n: u32, flags: Vec<bool>) -> u32 {
    n
}

/// A boxed slice and a string.
#[gpu_cilk]
fn label(b: Box<[f32]>, name: &str, s: String) -> u32 {
    0
}

fn main() {}
