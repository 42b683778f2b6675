use gpu_cilk::prelude::*;

// A plain struct without `#[derive(DeviceStruct)]` in a task's types.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct Pair {
    a: u32,
    b: u32,
}

#[gpu_cilk]
fn f(p: Pair) -> u32 {
    p.a + p.b
}

fn main() {}
