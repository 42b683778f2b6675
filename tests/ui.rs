//! The diagnostics of `#[gpu_cilk]` and `#[gpu_cilk::device]`: every rejected construct of the
//! subset, with its message and span, pinned by a `tests/ui/<case>.rs` + `.stderr` pair; and, in
//! `tests/ui/pass/`, programs that must compile and run (the shapes those diagnostics must not
//! catch). Regenerate with `TRYBUILD=overwrite cargo test --test ui`, then read every changed
//! `.stderr`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
