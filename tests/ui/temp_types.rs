use gpu_cilk::prelude::*;

#[gpu_cilk]
fn g(t: Temp<bool>, u: Temp<[u8; 2]>) -> u64 {
    0
}

#[gpu_cilk]
fn r(t: Temp<u32>) -> Temp<u32> {
    t
}

#[gpu_cilk]
fn s(n: u32) -> u64 {
    let t = alloc!(u64, 4);
    {
        let t = 3u64;
    }
    sync!();
    t[0]
}

fn main() {}
