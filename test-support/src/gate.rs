//! How every test binary of the workspace decides whether GPU and NVRTC tests run (the one
//! place; [`crate::target`] applies it to the generic device suites).
//!
//! - **GPU tests** are `#[ignore = "needs a CUDA GPU ..."]`: a plain `cargo test` lists them as
//!   *ignored*, never as passed. `scripts/gpu-check.sh` runs them with `--include-ignored`; a GPU
//!   test that runs and finds no usable GPU fails, naming why.
//! - **Host-simulation tests** (device code run on CPU threads, `g++`) run everywhere; without a
//!   compiler they skip visibly, unless `GPU_CILK_REQUIRE_SIM=1` (CI sets it).
//! - **NVRTC tests** (compiling CUDA C++ needs no GPU) run everywhere. Where NVRTC cannot be loaded
//!   they print `SKIPPED <test>: <why>` and return, unless `GPU_CILK_REQUIRE_NVRTC` is set to `1`,
//!   which makes that a failure; CI (`.ci/run`) sets it, since it installs NVRTC first.
//!   `scripts/test.sh` (the README's test command) tries to install NVRTC and leaves it unset.
//!
//! `GPU_CILK_REQUIRE_NVRTC` and `GPU_CILK_REQUIRE_SIM` accept `1`/`true`/`yes` and `0`/`false`/`no`/empty; anything else is
//! an error, so a typo cannot silently turn a requirement off.

/// Whether the boolean environment variable `name` is on (unset = off).
///
/// # Panics
/// When it holds something other than a boolean word.
pub fn env_flag(name: &str) -> bool {
    match std::env::var(name) {
        Err(_) => false,
        Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" => true,
            "" | "0" | "false" | "no" => false,
            other => panic!("{name}={other:?}: expected 1 or 0"),
        },
    }
}

/// Whether a missing NVRTC must fail the test (`GPU_CILK_REQUIRE_NVRTC=1`).
pub fn require_nvrtc() -> bool {
    env_flag("GPU_CILK_REQUIRE_NVRTC")
}

/// For an NVRTC test that could not load NVRTC: fails when NVRTC is required, else prints that
/// `test` is skipped and why.
pub fn nvrtc_missing(test: &str, why: &dyn std::fmt::Display) {
    assert!(!require_nvrtc(), "GPU_CILK_REQUIRE_NVRTC=1 but NVRTC cannot be loaded: {why}");
    eprintln!("SKIPPED {test}: NVRTC cannot be loaded ({why}); `source scripts/nvrtc-env.sh` to run it");
}

/// Whether a missing C++ compiler must fail a host-simulation test (`GPU_CILK_REQUIRE_SIM=1`).
pub fn require_sim() -> bool {
    env_flag("GPU_CILK_REQUIRE_SIM")
}

/// For a host-simulation test that could not run the compiler: fails when the simulation is
/// required, else prints that `test` is skipped and why.
pub fn sim_missing(test: &str, why: &dyn std::fmt::Display) {
    assert!(!require_sim(), "GPU_CILK_REQUIRE_SIM=1 but the host simulation cannot compile: {why}");
    eprintln!("SKIPPED {test}: the host simulation cannot compile ({why})");
}

/// The reason every GPU test gives in its `#[ignore]` (for messages; the attribute needs a literal).
pub const NEEDS_GPU: &str = "needs a CUDA GPU: run with `--include-ignored` (scripts/gpu-check.sh does)";

/// For a GPU test that found no usable GPU: always a failure (it was asked to run).
pub fn no_gpu(test: &str, why: &dyn std::fmt::Display) -> ! {
    panic!("{test} {NEEDS_GPU}, and no CUDA device could be used here: {why}")
}

/// The environment variable that marks a child process started by [`in_child_process`]; its
/// value is the `what` string given there.
pub const CHILD_ENV: &str = "GPU_CILK_TEST_CHILD";

/// Runs the test `test` of this test binary alone in a child process with [`CHILD_ENV`]` = what`
/// and returns its output (stdout then stderr), panicking with that output when the child fails.
/// For GPU tests that break the CUDA state of their process on purpose (a kernel fault: CUDA
/// cannot recover from it inside the process), so that they cannot break the other tests.
pub fn in_child_process(test: &str, what: &str) -> String {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args(["--exact", test, "--include-ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, what)
        .output()
        .expect("running the test binary again");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("---- child process `{test}` ({what}) ----\n{text}---- end of child ----");
    assert!(out.status.success(), "the child process `{test}` ({what}) failed:\n{text}");
    text
}

/// In a test that [`in_child_process`] starts: the `what` it was given, or `None` when the test
/// was started directly (it then has nothing to do: the parent test is the one to run).
pub fn child_role() -> Option<String> {
    std::env::var(CHILD_ENV).ok()
}
