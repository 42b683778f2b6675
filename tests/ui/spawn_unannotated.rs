use gpu_cilk::prelude::*;

/// Not annotated: no macro compiled it, so there is no task to spawn.
fn plain(n: u32) -> u64 {
    n as u64
}

/// A helper has a device form, but it is called, not spawned.
#[gpu_cilk::device]
fn helper(n: u32) -> u64 {
    n as u64 + 1
}

#[gpu_cilk]
fn f(n: u32) -> u64 {
    // Stored: the frame and the read-back after `sync!()` name `plain` as well.
    let x = spawn!(plain(n));
    // Discarded.
    spawn!(plain(n + 1));
    let mut parts: [u64; 2] = [0; 2];
    parts[1] = spawn!(helper(n));
    sync!();
    x + parts[1] + (x as u64).min(3)
}

fn main() {}
