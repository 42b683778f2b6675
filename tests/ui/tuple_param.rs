use gpu_cilk::prelude::*;

// Tuples are results and locals, not parameters (a root's arguments are copied as bytes, and a
// Rust tuple's layout is the compiler's choice).
#[gpu_cilk]
fn f(p: (u32, u32)) -> (u32, u32) {
    (p.1, p.0)
}

fn main() {}
