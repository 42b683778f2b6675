use gpu_cilk::prelude::*;

#[gpu_cilk]
fn offer(best: &Max<u64>, v: u64) {
    best.fetch_max(v);
}

fn main() -> Result<(), gpu_cilk::Error> {
    let rt = Runtime::new()?;
    // The call borrows the bound until the run that consumes it: it cannot be dropped (or
    // moved) in between.
    let call = {
        let best = Max::new(0u64);
        offer::task(&best, 3)
    };
    rt.run(call)?;
    Ok(())
}
