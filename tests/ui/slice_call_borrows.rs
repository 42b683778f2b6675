use gpu_cilk::prelude::*;

#[gpu_cilk]
fn bump(a: &mut [u32]) {
    for i in 0..a.len() {
        a[i] += 1;
    }
}

fn main() -> Result<(), gpu_cilk::Error> {
    let rt = Runtime::new()?;
    let mut v = vec![1u32, 2, 3];
    // The call borrows `v` until the run that consumes it: no use of `v` in between, and the
    // call cannot be copied to run twice.
    let call = bump::task(&mut v);
    v.push(4);
    rt.run(call)?;
    let _again = call;
    Ok(())
}
