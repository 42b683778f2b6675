//! IR → CUDA C++ **text**: the task's fragment (decls / types / defs) and device functions.
//!
//! This module owns the CUDA emitter. It reads only the IR ([`Task`], and [`Function`] for
//! `#[gpu_cilk::device]` helpers) and returns text ([`Fragment`], [`DeviceText`], both IR types)
//! in exactly the form of `kernels/tests/fib_hand.cu`: per task a `decls` section (`<name>_ret`,
//! `<name>_args`), a `types` section (`<name>_frame`, `<name>_task` with `seg0`/`resume`
//! prototypes) and a `defs` section (the segment bodies and the kernels
//! `gc_<name>_q0 ..= gc_<name>_q<SYNCS + 1>`). Every task also gets a *serial device function*
//! `<name>_dev(cx, args..)` (spawn = call, sync = nothing), which is what a plain (not spawned)
//! call of the task from device code runs; helpers are `<name>_dev` too, so a call `h(x)` is
//! always `h_dev(cx, x)`. It emits no Rust: `expand` turns the text into Rust items.
//!
//! Rust semantics: integer `+ - *` wrap (`gc_add`..), `/ %` and indexing are checked and raise a
//! device fault with a *site* number (an index into the fragment's `sites`, `file:line:col`),
//! shifts mask, `& | ^ !` and methods go through small templates of the emitter's prelude
//! (`prelude.cuh`, guarded so that every fragment can carry it). Unsuffixed literals take
//! the type of the operand they meet (`(gc_u32)2`); an unannotated `let x = 0;` takes the type of
//! the first typed operand `x` is combined with later in its block. What cannot be translated
//! becomes a `static_assert(false, "..")` naming the construct and its location, so the CUDA
//! program fails to compile with a clear message while the host backends still work.
//!
//! Output is deterministic: no hash iteration, names and site numbers follow the source order.
//!
//! Layout, each module depending only on the ones above it:
//! - `ty`: Rust types, names and operators spelled in C++;
//! - `writer`: the state of one function being written (text, scopes, sites, called helpers);
//! - `infer`: the static types of expressions, as far as literals need them;
//! - `expr`: expressions;
//! - `stmt`: statements;
//! - `task`: whole fragments and device functions (the entry points re-exported here).
//!
//! [`Task`]: crate::ir::Task
//! [`Function`]: crate::ir::Function
//! [`Fragment`]: crate::ir::Fragment
//! [`DeviceText`]: crate::ir::DeviceText

mod expr;
mod infer;
mod stmt;
mod task;
mod ty;
mod writer;

pub use task::{device_fn, struct_def, task_device_fn, task_fragment};

#[cfg(test)]
pub use task::PRELUDE;
