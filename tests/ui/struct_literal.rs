use gpu_cilk::prelude::*;

#[derive(Clone, Copy, Debug, Default, DeviceStruct)]
#[repr(C)]
struct Pair {
    a: u32,
    b: u32,
}

// A literal must name every field: no functional update.
#[gpu_cilk]
fn f(n: u32) -> u64 {
    let p = Pair { a: n, ..Pair::default() };
    n as u64
}

fn main() {}
