use gpu_cilk::prelude::*;

#[gpu_cilk]
fn halve(a: &mut [u32]) {
    if a.len() > 1 {
        spawn!(halve(&mut a[1..]));
        sync!();
    }
}

fn main() {}
