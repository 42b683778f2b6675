use gpu_cilk::prelude::*;

#[derive(Clone, Copy, Default)]
struct Acc {
    total: u64,
}

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let mut acc = Acc::default();
    acc.total = spawn!(leaf(n));
    let mut grid: [[u64; 2]; 2] = [[0; 2]; 2];
    grid[0][1] = spawn!(leaf(n + 1));
    sync!();
    grid[1][1]
}

#[gpu_cilk]
fn leaf(n: u32) -> u64 {
    n as u64
}

fn main() {}
