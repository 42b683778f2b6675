use gpu_cilk::prelude::*;

#[gpu_cilk]
fn fill(a: &mut [u32]) {
    if a.len() < 2 {
        return;
    }
    let left: &mut [u32] = &mut a[..1];
    spawn!(fill(&mut a[1..]));
    sync!();
    left[0] = 7;
}

fn main() {}
