use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let c = |x: u32| x + 1;
    let mut i: u32 = 0;
    while i < n {
        let s = { sync!(); 1u32 };
        i += s;
    }
    let v: u64 = match n {
        _ => 1,
    };
    v
}

fn main() {}
