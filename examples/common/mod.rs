//! What every example CLI shares: the `--backend` flag, building the runtime, running a root call
//! with a spinner when it is long, timing the serial oracle, and printing the verdict and stats.

use gpu_cilk::prelude::*;
use gpu_cilk::runtime::{Call, CilkTask, OwnedArgs};
use indicatif::{ProgressBar, ProgressStyle};
use std::fmt::Debug;
use std::time::{Duration, Instant};

/// Stack of the thread that runs the serial oracle.
const SERIAL_STACK_BYTES: usize = 1 << 30;

/// Flags every example takes.
#[derive(clap::Args, Debug)]
pub struct Common {
    /// Backend: serial, cpu, cuda or auto (default: $GPU_CILK_BACKEND, else auto).
    #[arg(long, value_parser = parse_backend)]
    pub backend: Option<BackendKind>,
    /// Runs to time; the median is reported.
    #[arg(long, default_value_t = 1)]
    pub reps: usize,
    /// Skip the check against the serial oracle.
    #[arg(long)]
    pub no_verify: bool,
    /// Print run statistics.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub stats: bool,
}

fn parse_backend(s: &str) -> Result<BackendKind, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

/// The process exit code of an example's run: success only for a verified result; an error is
/// printed first.
pub fn exit_code(result: Result<bool, Error>) -> std::process::ExitCode {
    match result {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Builds the runtime the flags ask for and says which device it runs on.
pub fn runtime(common: &Common) -> Result<Runtime, Error> {
    runtime_with(common, |c| c)
}

/// [`runtime`] with the example's own settings applied to the configuration from the environment
/// (`tune` gets it after the `GPU_CILK_*` variables and before `--backend`).
pub fn runtime_with(common: &Common, tune: impl FnOnce(Config) -> Config) -> Result<Runtime, Error> {
    let mut config = tune(Config::from_env()?);
    if let Some(kind) = common.backend {
        config = config.backend(kind);
    }
    let rt = Runtime::with_config(config)?;
    println!("backend   {} ({})", rt.backend(), rt.device_description());
    Ok(rt)
}

/// Runs `call` `reps` times (spinner after a second), verifies against `expected` (computed by the
/// serial oracle unless `--no-verify`), prints the result line and the stats of the last run.
/// Returns whether the result was right.
pub fn run_and_report<T>(
    rt: &Runtime,
    common: &Common,
    label: &str,
    call: Call<'_, T>,
    known: Option<T::Output>,
) -> Result<bool, Error>
where
    T: CilkTask,
    T::Args: OwnedArgs,
    T::Output: PartialEq + Debug,
{
    let spinner = ProgressBar::new_spinner();
    spinner.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}").unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    spinner.set_message(format!("running {label} on {}", rt.backend()));
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..common.reps.max(1) {
        let t = Instant::now();
        let report = rt.run_with_stats(call)?;
        times.push(t.elapsed());
        if t.elapsed() > Duration::from_secs(1) {
            spinner.enable_steady_tick(Duration::from_millis(120));
        }
        last = Some(report);
    }
    spinner.finish_and_clear();
    let Some(report) = last else { return Ok(false) };
    times.sort();
    let median = times[times.len() / 2];
    println!("{label} = {:?}", report.value);
    println!("time      {:.3} ms (median of {})", median.as_secs_f64() * 1e3, times.len());
    let mut ok = true;
    if let Some(k) = known {
        let good = k == report.value;
        ok &= good;
        println!("known     {k:?} {}", if good { "(matches)" } else { "(MISMATCH)" });
    }
    if !common.no_verify {
        // On a thread with a large stack: the serial function recurses as deep as the task tree
        // (a 1,000,000-deep chain needs tens of MiB), which the main thread's 8 MiB may not hold.
        let (oracle, serial_time) = std::thread::scope(|s| {
            std::thread::Builder::new()
                .stack_size(SERIAL_STACK_BYTES)
                .spawn_scoped(s, || {
                    let t = Instant::now();
                    let oracle = call.serial();
                    (oracle, t.elapsed())
                })
                .map_err(|e| Error::Internal(format!("cannot start the serial oracle's thread: {e}")))?
                .join()
                .map_err(|_| Error::Internal("the serial oracle panicked".into()))
        })?;
        let good = oracle == report.value;
        ok &= good;
        println!(
            "serial    {oracle:?} in {:.3} ms {}",
            serial_time.as_secs_f64() * 1e3,
            if good { "(verified: equal)" } else { "(MISMATCH)" }
        );
    }
    if common.stats {
        println!("{}", report.stats);
    }
    Ok(ok)
}
