//! The diagnostics of `#[gpu_cilk]` and `#[gpu_cilk::device]`: every rejected construct of the
//! subset, with its message and span, pinned by a `tests/ui/<case>.rs` + `.stderr` pair.
//! Regenerate with `TRYBUILD=overwrite cargo test --test ui`, then read every changed `.stderr`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
