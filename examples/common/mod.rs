//! What every example CLI shares: the `--backend`, `--reps`, `--no-verify` and `--stats` flags,
//! building the runtime, running a root call with a progress bar from the first second, timing
//! the serial oracle, and printing the verdict and a one-line summary of the scheduler's
//! statistics (all of them with `--stats`).

use gpu_cilk::prelude::*;
use gpu_cilk::runtime::{Call, CilkTask, OwnedArgs, Stats};
use indicatif::{ProgressBar, ProgressStyle};
use std::borrow::Cow;
use std::fmt::Debug;
use std::time::{Duration, Instant};

/// Stack of the thread that runs the serial oracle.
const SERIAL_STACK_BYTES: usize = 1 << 30;

/// Flags every example takes.
#[derive(clap::Args, Debug)]
pub struct Common {
    /// Backend: serial, cpu, cuda, cuda-sim or auto (default: $GPU_CILK_BACKEND, else auto: cuda
    /// when a GPU and NVRTC are usable, else cpu, saying why).
    #[arg(long, value_parser = parse_backend)]
    pub backend: Option<BackendKind>,
    /// Runs to time (at least 1); the median is reported.
    #[arg(long, default_value_t = 1, value_parser = parse_reps)]
    pub reps: usize,
    /// Skip the check against the serial function.
    #[arg(long)]
    pub no_verify: bool,
    /// Print the scheduler's full statistics of the last run (default: a one-line summary).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value_t = false,
          action = clap::ArgAction::Set, value_name = "BOOL")]
    pub stats: bool,
}

fn parse_backend(s: &str) -> Result<BackendKind, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

fn parse_reps(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1 (the number of timed runs)".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
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
    // No spinner here: `auto` may print why it falls back to the cpu backend.
    let rt = Runtime::with_config(config)?;
    println!("backend   {} ({})", rt.backend(), rt.device_description());
    Ok(rt)
}

/// A spinner with `msg` and the elapsed time, ticking from the start (drawn on stderr, and only
/// when stderr is a terminal). Print with [`ProgressBar::suspend`] while it is shown.
pub fn spinner(msg: impl Into<Cow<'static, str>>) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}").unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb.set_message(msg);
    pb.enable_steady_tick(Duration::from_millis(100));
    pb
}

/// A bar of `len` steps (runs, instances) with `msg`, ticking from the start like [`spinner`].
pub fn bar(len: usize, msg: impl Into<Cow<'static, str>>) -> ProgressBar {
    let pb = ProgressBar::new(len as u64);
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:24}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.set_message(msg);
    pb.enable_steady_tick(Duration::from_millis(100));
    pb
}

/// Runs `run` `reps` times with a bar over the runs; returns the median time and the last result.
/// Each run is timed from the `Instant` it gets, which it may reset after its own setup.
pub fn timed_runs<R>(
    reps: usize,
    what: &str,
    mut run: impl FnMut(&mut Instant) -> Result<R, Error>,
) -> Result<(Duration, R), Error> {
    let pb = bar(reps, format!("running {what}"));
    let mut times = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps.max(1) {
        let mut t = Instant::now();
        let r = run(&mut t);
        times.push(t.elapsed());
        pb.inc(1);
        last = Some(r.inspect_err(|_| pb.finish_and_clear())?);
    }
    pb.finish_and_clear();
    times.sort();
    let median = times[times.len() / 2];
    let last = last.ok_or_else(|| Error::Internal("no run".into()))?;
    Ok((median, last))
}

/// Runs `f` under a spinner saying `msg`.
pub fn with_spinner<R>(msg: impl Into<Cow<'static, str>>, f: impl FnOnce() -> R) -> R {
    let sp = spinner(msg);
    let r = f();
    sp.finish_and_clear();
    r
}

/// The scheduler's statistics of the last run: all of them with `--stats`, else one line.
pub fn print_stats(common: &Common, stats: &Stats) {
    if common.stats {
        print!("{stats}");
    } else {
        println!("{}", summary(stats));
    }
}

/// One line of [`Stats`]: the scheduler, the tasks and their rate, the workers.
pub fn summary(stats: &Stats) -> String {
    let scheduler = stats.scheduler.map(|s| s.to_string()).unwrap_or_else(|| "serial".into());
    let workers = match stats.workers {
        0 => String::new(),
        1 => ", 1 worker".to_string(),
        n => format!(", {n} workers"),
    };
    format!(
        "stats     {scheduler} scheduler: {} tasks, {:.2e} tasks/s{workers} (--stats for the full report)",
        stats.total_tasks(),
        stats.tasks_per_second()
    )
}

/// Runs `call` `reps` times (a bar over the runs), verifies against `known` and the serial
/// oracle (unless `--no-verify`; a spinner while it runs), prints the result line and the
/// statistics of the last run. Returns whether the result was right.
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
    let (median, report) =
        timed_runs(common.reps, &format!("{label} on {}", rt.backend()), |_| rt.run_with_stats(call))?;
    println!("{label} = {:?}", report.value);
    println!("time      {:.3} ms (median of {})", median.as_secs_f64() * 1e3, common.reps);
    let mut ok = true;
    if let Some(k) = known {
        let good = k == report.value;
        ok &= good;
        println!("known     {k:?} {}", if good { "(matches)" } else { "(MISMATCH)" });
    }
    if !common.no_verify {
        // On a thread with a large stack: the serial function recurses as deep as the task tree
        // (a 1,000,000-deep chain needs tens of MiB), which the main thread's 8 MiB may not hold.
        let (oracle, serial_time) = with_spinner(format!("verifying: {label} as a plain serial call"), || {
            std::thread::scope(|s| {
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
            })
        })?;
        let good = oracle == report.value;
        ok &= good;
        println!(
            "serial    {oracle:?} in {:.3} ms {}",
            serial_time.as_secs_f64() * 1e3,
            if good { "(verified: equal)" } else { "(MISMATCH)" }
        );
    }
    print_stats(common, &report.stats);
    Ok(ok)
}
