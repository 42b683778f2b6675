use gpu_cilk::prelude::*;

#[gpu_cilk]
fn f(n: u32) -> u64 {
    let mut c: u64 = 0;
    'outer: for i in 0..n {
        for j in 0..n {
            if i * j > 10 {
                break 'outer;
            }
            c += 1;
        }
    }
    c
}

fn main() {}
