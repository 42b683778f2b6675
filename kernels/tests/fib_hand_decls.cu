// fib, written by hand in the form the CUDA emitter produces (the CUDA twin of
// tests/hand_expanded.rs), section 1 of 3: decls. The runtime concatenates, for all tasks of a
// program: every task's decls, every task's types, every device function, every task's defs
// (fib_hand_types.cu, fib_hand.cu), after `#define GC_QBASE_<task>` / `GC_ID_<task>` lines and the
// device library, and writes the scheduler's kernels after them.
//
// #[gpu_cilk] fn fib(n: u32) -> u64 { if n < 2 { return n as u64; }
//     let x = spawn!(fib(n - 1)); let y = spawn!(fib(n - 2)); sync!(); x + y }

// ---- decls: fib
typedef gc_u64 fib_ret;
struct fib_args { gc_u32 n; };
