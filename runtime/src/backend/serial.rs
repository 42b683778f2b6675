//! The serial backend: the plain recursive function on the calling thread, the oracle every other
//! backend is tested against. A panic in the task body comes back as [`Error::TaskPanicked`].

use crate::error::panic_message;
use crate::error::{Error, Result};
use crate::stats::Report;
use crate::stats::Stats;
use crate::task::{Call, CilkTask};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

/// Runs `call` serially.
pub fn run<T: CilkTask>(call: Call<'_, T>) -> Result<Report<T::Output>> {
    let start = Instant::now();
    let value = catch_unwind(AssertUnwindSafe(|| T::serial(call.args))).map_err(|p| Error::TaskPanicked {
        task: T::NAME,
        level: 0,
        message: panic_message(&*p),
    })?;
    Ok(Report { value, stats: Stats { wall: start.elapsed(), levels: 1, ..Stats::default() } })
}
