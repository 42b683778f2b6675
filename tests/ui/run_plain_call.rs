use gpu_cilk::prelude::*;

#[gpu_cilk]
fn fib(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let x = spawn!(fib(n - 1));
    let y = spawn!(fib(n - 2));
    sync!();
    x + y
}

fn main() -> Result<(), gpu_cilk::Error> {
    let rt = Runtime::new()?;
    // The plain serial call: its value, not a root call.
    let v = rt.run(fib(30))?;
    println!("{v}");
    Ok(())
}
