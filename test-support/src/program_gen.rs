//! A deterministic generator of random `#[gpu_cilk]` **programs** (issue 8, point 4): each program
//! is a module with several task functions that spawn and call each other, `#[gpu_cilk::device]`
//! helpers, and a parameterless root task `root()`.
//!
//! # Design
//!
//! The generator is plain Rust (a SplitMix64 generator, no dependencies) whose output is
//! **checked in** as `tests/generated/programs.rs`; `tests/generated_programs.rs` regenerates the
//! text and fails when the checked-in copy is stale. This was chosen over a build script because
//! a failing program is then an ordinary source file with line numbers in the repository: rustc,
//! the macro, NVRTC and g++ errors point into it, a reviewer can read it, and a failure can be cut
//! down by hand into a fixture without re-running the generator. Its cost is one regeneration
//! step after changing the generator (below).
//!
//! # What a program contains
//!
//! - Task functions `f1 .. fN` (and `root`), ordered: `fk` spawns or calls only `fj` with `j > k`,
//!   or itself when it has a depth parameter `d: u32` (then with `d - 1`, behind `if d == 0 {
//!   return ..; }`), so every program terminates. An upper bound of the tasks a call makes is
//!   computed while generating (callees first) and keeps every program small.
//! - Parameters of types `u32`, `u64`, `i32`, `i64`, `bool`, `[u32; 4]` (passed as array
//!   literals, some with unsuffixed literal elements), and tasks with **zero parameters**; outputs
//!   `u32`, `u64`, `i32`, `i64`, `bool` and `()` (**unit**: spawned only as `spawn!(f(..));`).
//! - Spawns into locals, in branches (`if c { r = spawn!(..); } else { spawn!(..); }`),
//!   discarded, and in loops into arrays of up to **256** elements (`for i in 0..n { a[i] =
//!   spawn!(..); }`, also with the spawn in a branch in the loop, and `while` loops whose bound is
//!   known only at run time); early returns with children outstanding (implicit sync), also from
//!   inside a loop; one or two `sync!()`s; plain serial calls of other tasks; unit tasks whose body
//!   ends in an `if`; `mut` parameters assigned before the first spawn; locals of 1, 4 and 8
//!   bytes (`bool`, `u32`/`i32`, `i64`) that live across the sync (frame fields of every size);
//!   `loop` with `continue` and `break`; in half the programs a temporary (`alloc!`) filled by a
//!   unit task `fw(t: Temp<u64>, i: usize, x: u64)` spawned in a loop and read after the sync.
//! - Expressions: wrapping arithmetic, bit operators, shifts, comparisons combined with `==`/`!=`
//!   (parenthesized: `(a == b) != (c < d)`), `if` expressions, casts between `u32`/`u64`/`i32`/
//!   `i64`/`bool`, signed `%`, `/` and `>>`, methods (also on a call receiver with an unsuffixed
//!   literal argument: `h0(x, 3).wrapping_add(7)`), `len()` of arrays, and calls of device helpers
//!   `h0 .. hM` (`(a: u64, b: u32[, c: bool | i32 | i64]) -> u64 | u32 | i64 | bool`, with
//!   `else if`; a helper calls only helpers with a smaller index).
//! - In two programs of three, a generic task `gk<T: Key>(x: T, y: T, d: u32) -> T` (compares
//!   and picks, with operators and `total_lt`/`total_le`) that the root spawns for a random
//!   non-empty subset of u32, i64 and f32, and a struct `Sv { a: u32, b: i64, c: [u16; 2] }`
//!   (`#[derive(DeviceStruct)]`) with `fs(s: Sv, d: u32) -> Sv`, whose children's results are
//!   struct fields of its frame; in half the programs a second root `sroot(a: &mut [u64]) ->
//!   u64`, a state machine (a `sync!()` in a `while` loop over chunks, each chunk's halves to two
//!   children `fz(a: &mut [u64], k: u32) -> u64`, and often a `split_at_mut` with a `sync!()` in
//!   an `if`), listed by `roots` through the generated `Roots` trait's `slice_root`.
//! - A task's value depends on every child's result (folded into `acc` after the sync), so a
//!   wrong child value changes the root's value.
//!
//! Every value is computed with wrapping operations, divisors are literals other than 0 and -1,
//! loops and indices stay in bounds, so the plain Rust function (the serial oracle) never panics
//! (and the CUDA C++ has no undefined behaviour).
//!
//! # Changing the seed or the count, reproducing a failure
//!
//! [`SEED`] and [`COUNT`] fix the checked-in set. After changing them (or the generator), run
//! `GPU_CILK_REGENERATE=1 cargo test --test generated_programs fresh` and commit
//! `tests/generated/programs.rs`. A failure names the program (`p7`) and the backend
//! configuration; the program is the module `p7` of `tests/generated/programs.rs` — copy it into
//! a fixture (`test-support/src/programs/fixtures.rs`) and shrink it. To try other seeds, run
//! `GPU_CILK_REGENERATE=1 GPU_CILK_GEN_SEED=7 GPU_CILK_GEN_COUNT=16 cargo test --test
//! generated_programs` (it overwrites the checked-in file with that set and runs it; `fresh` then
//! fails until `git checkout tests/generated/programs.rs`). `GPU_CILK_DUMP_CUDA=<dir>` writes
//! every program's CUDA C++.

use crate::splitmix::Rng;
use std::fmt::Write as _;

/// The seed of the checked-in programs.
pub const SEED: u64 = 0x6770_752d_6369_6c6b;
/// How many programs are checked in.
pub const COUNT: usize = 12;

/// Most tasks (an upper bound, counting serial calls) one call of a non-root function may make.
const FN_BUDGET: u64 = 600;
/// Most tasks the root of a program may make.
const ROOT_BUDGET: u64 = 4000;
/// The largest depth argument a caller passes to a recursive function.
const MAX_DEPTH: u64 = 3;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ty {
    U32,
    U64,
    I32,
    I64,
    Bool,
    Unit,
    /// `[u32; 4]` (parameters only).
    Arr,
}

impl Ty {
    fn rust(self) -> &'static str {
        match self {
            Ty::U32 => "u32",
            Ty::U64 => "u64",
            Ty::I32 => "i32",
            Ty::I64 => "i64",
            Ty::Bool => "bool",
            Ty::Unit => "()",
            Ty::Arr => "[u32; 4]",
        }
    }

    fn zero(self) -> &'static str {
        match self {
            Ty::Bool => "false",
            _ => "0",
        }
    }
}

struct Func {
    name: String,
    /// Has a first parameter `d: u32` and may spawn itself with `d - 1`.
    recursive: bool,
    params: Vec<(String, Ty)>,
    ret: Ty,
    /// An upper bound of the tasks one call makes (at depth [`MAX_DEPTH`] when recursive).
    cost: u64,
}

/// What the generated set covers, counted while generating (the tests check that every feature
/// the issue names is present at least once).
#[derive(Default, Debug, Clone)]
pub struct Coverage {
    pub programs: usize,
    pub tasks: usize,
    pub helpers: usize,
    pub zero_param_tasks: usize,
    pub unit_tasks: usize,
    pub unit_tasks_ending_in_if: usize,
    pub widest_loop: u64,
    pub loops_of_256: usize,
    pub recursive_tasks: usize,
    pub array_params: usize,
    pub branch_spawns: usize,
    pub discarded_spawns: usize,
    pub early_returns_with_children: usize,
    pub serial_calls: usize,
    pub mut_params: usize,
    pub temps: usize,
    pub typed_frame_locals: usize,
    pub loops_with_break: usize,
    pub method_on_call: usize,
    pub paren_comparisons: usize,
    pub unit_roots: usize,
    /// Spawns of the generic task `gk<T: Key>` per instantiation (u32, i64, f32).
    pub generic_spawns: [usize; 3],
    /// Spawns of the struct task `fs(s: Sv, d: u32) -> Sv`.
    pub struct_spawns: usize,
    /// Programs with the slice root `sroot(a: &mut [u64])`, a state machine.
    pub slice_roots: usize,
    /// Of those, the ones with a `sync!()` in a branch as well as in the loop.
    pub slice_branch_syncs: usize,
    pub types: Vec<&'static str>,
}

struct Gen<'a> {
    rng: Rng,
    /// How many helpers an expression may call (`h0 .. h{helpers - 1}`).
    helpers: usize,
    /// Each helper's optional third parameter and its output.
    helper_sigs: Vec<(Option<Ty>, Ty)>,
    /// The program has the unit task `fw(t: Temp<u64>, i: usize, x: u64)` (writes `t[i]`).
    writer: bool,
    /// The program has the generic task `gk<T: Key>` and the struct task `fs` (the root spawns
    /// them).
    extras: bool,
    /// The program has the slice root `sroot(a: &mut [u64]) -> u64`.
    slice_root: bool,
    cov: &'a mut Coverage,
}

/// The text of `tests/generated/programs.rs`: `count` programs from `seed`, and what they cover.
pub fn generate(seed: u64, count: usize) -> (String, Coverage) {
    let mut cov = Coverage::default();
    let mut out = String::new();
    out.push_str(
        "// @generated by test-support/src/program_gen.rs: do not edit; regenerate with\n\
         // `GPU_CILK_REGENERATE=1 cargo test --test generated_programs fresh`.\n\
         //! Random `#[gpu_cilk]` programs (see `test-support/src/program_gen.rs`).\n\n\
         use gpu_cilk::runtime::{Call, CilkTask};\n\n\
         /// Visits every program's root task.\n\
         pub trait Roots {\n    \
             /// `serial` is the plain Rust root (the oracle), `task` its root call.\n    \
             fn root<T: CilkTask>(&mut self, program: &'static str, serial: fn() -> T::Output, task: fn() -> Call<'static, T>)\n    \
             where\n        T::Output: PartialEq + std::fmt::Debug;\n    \
             /// A root over the caller's `&mut [u64]` (`sroot`): its value and the slice must agree.\n    \
             fn slice_root<T: CilkTask<Output = u64>>(&mut self, program: &'static str, serial: fn(&mut [u64]) -> u64, task: for<'a> fn(&'a mut [u64]) -> Call<'a, T>);\n}\n\n",
    );
    let mut rng = Rng(seed);
    let mut names = Vec::new();
    let mut slice_roots = Vec::new();
    for p in 0..count {
        let mut g = Gen {
            rng: Rng(rng.next()),
            helpers: 0,
            helper_sigs: Vec::new(),
            writer: false,
            extras: false,
            slice_root: false,
            cov: &mut cov,
        };
        let name = format!("p{p}");
        out.push_str(&g.program(&name, p));
        if g.slice_root {
            slice_roots.push(name.clone());
        }
        names.push(name);
    }
    out.push_str("/// Calls `v.root` for every program.\npub fn roots(v: &mut impl Roots) {\n");
    for n in &names {
        let _ = writeln!(out, "    v.root(\"{n}\", {n}::root, {n}::root::task);");
    }
    for n in &slice_roots {
        let _ = writeln!(out, "    v.slice_root(\"{n}\", {n}::sroot, {n}::sroot::task);");
    }
    out.push_str("}\n");
    cov.programs = count;
    (out, cov)
}

impl Gen<'_> {
    fn program(&mut self, name: &str, index: usize) -> String {
        let mut out = format!("pub mod {name} {{\n    use gpu_cilk::prelude::*;\n");
        // Helpers first: `hk` calls only `hj`, `j < k`.
        self.helpers = 1 + self.rng.below(3) as usize;
        for h in 0..self.helpers {
            out.push_str(&self.helper(h));
        }
        self.cov.helpers += self.helpers;
        // Signatures: f1 .. fn, then root. The last function is always a non-recursive leaf.
        let n = 3 + self.rng.below(3) as usize;
        let mut funcs: Vec<Func> = Vec::new();
        for k in 1..=n {
            let recursive = k < n && self.rng.chance(1, 3);
            let nparams = if self.rng.chance(1, 3) { 0 } else { 1 + self.rng.below(3) as usize };
            let mut params = Vec::new();
            if recursive {
                params.push(("d".to_string(), Ty::U32));
            }
            for i in 0..nparams {
                let t = match self.rng.below(11) {
                    0 | 1 => Ty::U32,
                    2 | 3 => Ty::U64,
                    4 | 5 => Ty::I32,
                    6 | 7 => Ty::I64,
                    8 | 9 => Ty::Bool,
                    _ => Ty::Arr,
                };
                params.push((format!("x{i}"), t));
            }
            let ret = match self.rng.below(7) {
                0 => Ty::U32,
                1 | 2 => Ty::U64,
                3 => Ty::I32,
                4 => Ty::I64,
                5 => Ty::Bool,
                _ => Ty::Unit,
            };
            funcs.push(Func { name: format!("f{k}"), recursive, params, ret, cost: 1 });
        }
        // Every few programs the root is a unit task (its run only has to finish).
        let root_ret = if index % 5 == 4 { Ty::Unit } else { Ty::U64 };
        funcs.insert(0, Func { name: "root".into(), recursive: false, params: Vec::new(), ret: root_ret, cost: 1 });
        // A task that writes into a temporary its parent allocated (`alloc!`), in half the programs.
        self.writer = self.rng.chance(1, 2);
        if self.writer {
            let r = self.rng.below(64);
            let _ = write!(
                out,
                "\n    #[gpu_cilk]\n    pub fn fw(t: Temp<u64>, i: usize, x: u64) {{\n        \
                 t[i] = x.rotate_left(i as u32 % 64) ^ {r};\n    }}\n"
            );
            self.cov.tasks += 1;
            self.cov.unit_tasks += 1;
        }
        // A generic task and a struct task that the root spawns, in two programs of three.
        self.extras = self.rng.chance(2, 3);
        if self.extras {
            out.push_str(&self.generic_and_struct_tasks());
            self.cov.tasks += 2;
        }
        // Bodies, callees first.
        let mut bodies = vec![String::new(); funcs.len()];
        for k in (0..funcs.len()).rev() {
            let (body, cost) = self.task(&funcs, k);
            funcs[k].cost = cost;
            bodies[k] = body;
        }
        for (f, body) in funcs.iter().zip(&bodies) {
            self.cov.tasks += 1;
            if f.params.is_empty() {
                self.cov.zero_param_tasks += 1;
            }
            if f.ret == Ty::Unit {
                self.cov.unit_tasks += 1;
            }
            if f.recursive {
                self.cov.recursive_tasks += 1;
            }
            for (_, t) in &f.params {
                if *t == Ty::Arr {
                    self.cov.array_params += 1;
                }
                if !self.cov.types.contains(&t.rust()) {
                    self.cov.types.push(t.rust());
                }
            }
            if !self.cov.types.contains(&f.ret.rust()) {
                self.cov.types.push(f.ret.rust());
            }
            out.push_str(body);
        }
        if root_ret == Ty::Unit {
            self.cov.unit_roots += 1;
        }
        // A second root over a caller's slice, in half the programs.
        self.slice_root = self.rng.chance(1, 2);
        if self.slice_root {
            out.push_str(&self.slice_tasks());
            self.cov.tasks += 2;
            self.cov.slice_roots += 1;
        }
        out.push_str("}\n\n");
        out
    }

    /// A comparison of `p` and `q` (of a `T: Key`): an operator or `Key`'s total order.
    fn key_cmp(&mut self, p: &str, q: &str) -> String {
        match self.rng.below(5) {
            0 => format!("{p} < {q}"),
            1 => format!("{p} >= {q}"),
            2 => format!("{p}.total_lt({q})"),
            3 => format!("{q}.total_le({p})"),
            _ => format!("{p} != {q} && {p} > {q}"),
        }
    }

    /// `gk<T: Key>(x: T, y: T, d: u32) -> T`, a recursion that only compares and picks (all a
    /// `T: Key` allows), and the struct `Sv` with `fs(s: Sv, d: u32) -> Sv`, whose children's
    /// struct results live in its frame.
    fn generic_and_struct_tasks(&mut self) -> String {
        let (c0, c1) = (self.key_cmp("x", "y"), self.key_cmp("a", "b"));
        let (sx, sy) = if self.rng.chance(1, 2) { ("y", "x") } else { ("x", "y") };
        let k: Vec<u64> = (0..8).map(|_| 1 + self.rng.below(60_000)).collect();
        format!(
            "\n    #[gpu_cilk]\n    pub fn gk<T: Key>(x: T, y: T, d: u32) -> T {{\n        \
             if d == 0 {{\n            return if {c0} {{ x }} else {{ y }};\n        }}\n        \
             let a = spawn!(gk::<T>({sx}, {sy}, d - 1));\n        \
             let b = spawn!(gk::<T>(y, x, d - 1));\n        \
             sync!();\n        \
             if {c1} {{ a }} else {{ b }}\n    }}\n\
             \n    #[derive(Clone, Copy, Debug, Default, PartialEq, DeviceStruct)]\n    #[repr(C)]\n    \
             pub struct Sv {{\n        pub a: u32,\n        pub b: i64,\n        pub c: [u16; 2],\n    }}\n\
             \n    #[gpu_cilk]\n    pub fn fs(s: Sv, d: u32) -> Sv {{\n        \
             if d == 0 {{\n            \
             return Sv {{ a: s.a.wrapping_mul({k0}) ^ {k1}, b: s.b.wrapping_sub({k2}), c: [s.c[1], s.c[0] ^ {k3}] }};\n        }}\n        \
             let l = spawn!(fs(Sv {{ a: s.a ^ {k4}, b: s.b, c: s.c }}, d - 1));\n        \
             let r = spawn!(fs(Sv {{ a: s.a.rotate_left({k5}), b: s.b ^ {k6}, c: [s.c[0], {k7}] }}, d - 1));\n        \
             sync!();\n        \
             Sv {{ a: l.a.wrapping_add(r.a), b: l.b.wrapping_mul(3).wrapping_add(r.b), c: [l.c[0] ^ r.c[1], r.c[0]] }}\n    }}\n",
            k0 = k[0],
            k1 = k[1],
            k2 = k[2],
            k3 = k[3] % 65_536,
            k4 = k[4],
            k5 = k[5] % 32,
            k6 = k[6],
            k7 = k[7] % 65_536,
        )
    }

    /// The root's spawns of `gk` (a random subset of its u32, i64 and f32 instantiations) and
    /// `fs`: the spawns (before the sync) and the folds into `acc` (after it).
    fn extra_spawns(&mut self, vars: &[String]) -> (String, String) {
        let (mut spawns, mut folds) = (String::new(), String::new());
        let pick = 1 + self.rng.below(7); // a non-empty subset of the three instantiations
        for (i, t) in ["u32", "i64", "f32"].iter().enumerate() {
            if pick & (1 << i) == 0 {
                continue;
            }
            self.cov.generic_spawns[i] += 1;
            let d = self.rng.below(MAX_DEPTH + 1);
            let (x, y) = (self.expr(vars, 1), self.expr(vars, 1));
            let (x, y) = if *t == "f32" {
                // Small integers: exact in f32, so the casts back agree on every backend.
                (format!("(({x}) % 100000) as f32"), format!("(({y}) % 100000) as f32"))
            } else {
                (format!("({x}) as {t}"), format!("({y}) as {t}"))
            };
            let _ = writeln!(spawns, "        let gq{i} = spawn!(gk::<{t}>({x}, {y}, {d}));");
            let _ = writeln!(folds, "        acc = acc.rotate_left(9) ^ (gq{i} as u64);");
        }
        self.cov.struct_spawns += 1;
        let d = self.rng.below(MAX_DEPTH + 1);
        let (a, b, c) = (self.expr(vars, 1), self.expr(vars, 1), self.expr(vars, 0));
        let _ = writeln!(
            spawns,
            "        let sq = spawn!(fs(Sv {{ a: ({a}) as u32, b: ({b}) as i64, c: [({c}) as u16, {}] }}, {d}));",
            self.rng.below(65_536)
        );
        let _ = writeln!(
            folds,
            "        acc = acc.wrapping_mul(31).wrapping_add(sq.a as u64) ^ (sq.b as u64) ^ ((sq.c[0] as u64) << 16) ^ (sq.c[1] as u64);"
        );
        (spawns, folds)
    }

    /// `fz(a: &mut [u64], k: u32) -> u64` (rewrites and sums its slice) and the root over a
    /// caller's slice `sroot(a: &mut [u64]) -> u64`, a state machine: a `while` loop over chunks
    /// with a `sync!()` in it, two children on the disjoint halves of each chunk, and maybe a
    /// `sync!()` in a branch after a `split_at_mut`.
    fn slice_tasks(&mut self) -> String {
        let (r, r0, chunk, k1) =
            (self.rng.below(1 << 20), self.rng.below(1 << 20), 1 + self.rng.below(97), self.rng.below(64));
        let mut out = format!(
            "\n    #[gpu_cilk]\n    pub fn fz(a: &mut [u64], k: u32) -> u64 {{\n        \
             let mut s: u64 = 0;\n        \
             for i in 0..a.len() {{\n            a[i] = a[i].rotate_left(k % 64) ^ {r};\n            s = s.wrapping_add(a[i]);\n        }}\n        \
             s\n    }}\n\
             \n    #[gpu_cilk]\n    pub fn sroot(a: &mut [u64]) -> u64 {{\n        \
             let mut acc: u64 = {r0};\n        \
             let mut lo: usize = 0;\n        \
             while lo < a.len() {{\n            \
             let hi: usize = (lo + {chunk}).min(a.len());\n            \
             let mid: usize = lo + (hi - lo) / 2;\n            \
             let x = spawn!(fz(&mut a[lo..mid], {k1}));\n            \
             let y = spawn!(fz(&mut a[mid..hi], (acc % 64) as u32));\n            \
             sync!();\n            \
             acc = acc.rotate_left(7) ^ x.wrapping_mul(3) ^ y;\n            \
             lo = hi;\n        }}\n"
        );
        if self.rng.chance(2, 3) {
            self.cov.slice_branch_syncs += 1;
            let (m, k2, k3) = (2 + self.rng.below(3), self.rng.below(64), self.rng.below(64));
            let _ = write!(
                out,
                "        if acc % {m} != 0 {{\n            \
                 let (l, r) = a.split_at_mut(a.len() / 2);\n            \
                 let p = spawn!(fz(l, {k2}));\n            \
                 let q = spawn!(fz(r, {k3}));\n            \
                 sync!();\n            \
                 acc ^= p.wrapping_add(q);\n        }}\n"
            );
        }
        out.push_str("        acc\n    }\n");
        out
    }

    fn helper(&mut self, h: usize) -> String {
        let third = [None, None, Some(Ty::Bool), Some(Ty::I64), Some(Ty::I32)][self.rng.below(5) as usize];
        let ret = [Ty::U64, Ty::U64, Ty::U32, Ty::I64, Ty::Bool][self.rng.below(5) as usize];
        let mut vars = vec!["a".to_string(), "(b as u64)".to_string()];
        if let Some(t) = third {
            vars.extend(Self::as_u64("c", t));
        }
        let saved = self.helpers;
        self.helpers = h; // only helpers below `h`
        let init = self.expr(&vars, 2);
        let cond = self.cond(&vars, 1);
        let mut zv = vars.clone();
        zv.push("z".into());
        let upd = self.expr(&zv, 1);
        let tail = self.expr(&zv, 1);
        let upd2 = self.expr(&zv, 1);
        let c2 = self.cond(&zv, 0);
        self.helpers = saved;
        let k = 1 + self.rng.below(4);
        let tail = match ret {
            Ty::U64 => tail,
            Ty::Bool => format!("{tail} % 2 == 1"),
            t => format!("({tail}) as {}", t.rust()),
        };
        let third_param = third.map(|t| format!(", c: {}", t.rust())).unwrap_or_default();
        self.helper_sigs.push((third, ret));
        format!(
            "\n    #[gpu_cilk::device]\n    pub fn h{h}(a: u64, b: u32{third_param}) -> {ret} {{\n        \
             let mut z: u64 = {init};\n        \
             for i in 0..(b % {k}) {{\n            z = z.rotate_left(i + 1) ^ a;\n        }}\n        \
             if {cond} {{\n            z = {upd};\n        }} else if {c2} {{\n            z = {upd2};\n        }}\n        \
             {tail}\n    }}\n",
            ret = ret.rust()
        )
    }

    /// A u64-valued expression over `vars`, at most `depth` operators deep.
    fn expr(&mut self, vars: &[String], depth: u32) -> String {
        if depth == 0 || self.rng.chance(1, 4) {
            return match self.rng.below(5) {
                0 => format!("{}u64", self.rng.below(100_000)),
                _ => vars[self.rng.below(vars.len() as u64) as usize].clone(),
            };
        }
        let d = depth - 1;
        let x = self.expr(vars, d);
        match self.rng.below(17) {
            0 => format!("{x}.wrapping_add({})", self.expr(vars, d)),
            1 => format!("{x}.wrapping_mul({})", self.expr(vars, d)),
            2 => format!("{x}.wrapping_sub({})", self.expr(vars, d)),
            3 => format!("({x} ^ {})", self.expr(vars, d)),
            4 => format!("({x} | {})", self.expr(vars, d)),
            5 => format!("({x} & {})", self.expr(vars, d)),
            6 => format!("({x} >> {})", 1 + self.rng.below(40)),
            7 => format!("({x} << {})", 1 + self.rng.below(40)),
            8 => format!("{x}.rotate_left({})", self.rng.below(64)),
            9 => format!("{x}.min({})", self.expr(vars, d)),
            10 => format!("({x}.count_ones() as u64)"),
            11 => format!("({x} % {})", 1 + self.rng.below(1000)),
            12 => format!("(if {} {{ {x} }} else {{ {} }})", self.cond(vars, d), self.expr(vars, d)),
            13 => {
                // Signed arithmetic: `%`, `/` and `>>` round and shift differently from unsigned.
                match self.rng.below(3) {
                    0 => format!("((({x} as i64).wrapping_mul(-3) >> 2) as u64)"),
                    1 => format!("((({x} as i32) % {}) as u64)", 2 + self.rng.below(50)),
                    // Not `/ -1`: `i64::MIN / -1` overflows.
                    _ => format!("((({x} as i64) / -{}) as u64)", 2 + self.rng.below(9)),
                }
            }
            14 if self.helpers > 0 => {
                let h = self.rng.below(self.helpers as u64) as usize;
                let y = self.expr(vars, d);
                let (third, ret) = self.helper_sigs[h];
                let c = match third {
                    Some(t) => format!(", {}", self.arg(t, vars)),
                    None => String::new(),
                };
                let call = format!("h{h}({x}, ({y}) as u32{c})");
                match ret {
                    Ty::Bool => format!("({call} as u64)"),
                    _ if self.rng.chance(1, 2) => {
                        // A method on a call receiver with an unsuffixed literal argument.
                        self.cov.method_on_call += 1;
                        format!("({call}.wrapping_add({}) as u64)", self.rng.below(1000))
                    }
                    Ty::U64 => call,
                    _ => format!("({call} as u64)"),
                }
            }
            15 => format!("(({}) as u64)", self.cond(vars, d)),
            _ => format!("{x}.max({})", self.expr(vars, d)),
        }
    }

    /// A bool-valued expression over `vars`.
    fn cond(&mut self, vars: &[String], depth: u32) -> String {
        let d = depth.saturating_sub(1);
        match self.rng.below(6) {
            0 | 1 => format!("{} % {} == {}", self.expr(vars, d), 2 + self.rng.below(5), self.rng.below(2)),
            2 => format!("{} > {}", self.expr(vars, d), self.expr(vars, d)),
            3 => {
                self.cov.paren_comparisons += 1;
                let (a, b, c, e) = (self.expr(vars, d), self.expr(vars, 0), self.expr(vars, d), self.expr(vars, 0));
                // `==`/`!=` of two comparisons: C++ needs the parentheses Rust requires.
                let (o1, o2) = if self.rng.chance(1, 2) { ("==", "!=") } else { ("!=", "==") };
                let o3 = ["<", "==", ">="][self.rng.below(3) as usize];
                format!("({a} {o1} {b}) {o2} ({c} {o3} {e})")
            }
            4 => format!("({} & 1 == 1) && ({} <= {})", self.expr(vars, d), self.expr(vars, 0), self.expr(vars, d)),
            _ => format!("!({} >= {})", self.expr(vars, d), self.expr(vars, d)),
        }
    }

    /// An argument of type `t` from `vars`.
    fn arg(&mut self, t: Ty, vars: &[String]) -> String {
        let e = self.expr(vars, 1);
        match t {
            Ty::U64 => e,
            Ty::U32 | Ty::I32 | Ty::I64 => format!("({e}) as {}", t.rust()),
            Ty::Bool => format!("{e} % 2 == 0"),
            Ty::Arr => {
                if self.rng.chance(1, 3) {
                    format!("[{}, {}, {}, {}]", self.rng.below(99), self.rng.below(99), self.rng.below(99), 7)
                } else {
                    let y = self.expr(vars, 0);
                    format!("[({e}) as u32, 3, ({y}) as u32, {}]", self.rng.below(1000))
                }
            }
            Ty::Unit => unreachable!("no unit parameters"),
        }
    }

    /// The arguments of a call of `f` from a caller with `vars`; `self_depth` is `Some("d - 1")`
    /// for a recursive call.
    fn args(&mut self, f: &Func, vars: &[String], self_depth: Option<&str>) -> String {
        let mut a = Vec::new();
        for (i, (_, t)) in f.params.iter().enumerate() {
            if i == 0 && f.recursive {
                a.push(match self_depth {
                    Some(d) => d.to_string(),
                    None if self.rng.chance(1, 2) => format!("{}", self.rng.below(MAX_DEPTH + 1)),
                    None => format!("({} % {}) as u32", self.expr(vars, 1), MAX_DEPTH + 1),
                });
            } else {
                a.push(self.arg(*t, vars));
            }
        }
        a.join(", ")
    }

    /// A parameter (or any value) as u64 text.
    fn as_u64(name: &str, t: Ty) -> Option<String> {
        match t {
            Ty::Unit => None,
            Ty::Arr => Some(format!("({name}[{}] as u64)", name.len() % 4)),
            Ty::U64 => Some(name.to_string()),
            _ => Some(format!("({name} as u64)")),
        }
    }

    /// The body of `funcs[k]` and the bound of the tasks one call makes.
    fn task(&mut self, funcs: &[Func], k: usize) -> (String, u64) {
        let f = &funcs[k];
        let is_root = k == 0;
        let budget = if is_root { ROOT_BUDGET } else { FN_BUDGET };
        let mut vars: Vec<String> = f.params.iter().filter_map(|(n, t)| Self::as_u64(n, *t)).collect();
        for (n, t) in &f.params {
            if *t == Ty::Arr {
                vars.push(format!("({n}[3] as u64)"));
            }
        }
        vars.push("acc".into());
        let mut b = String::new();
        let ret_expr = |g: &mut Self, vars: &[String]| -> String {
            let e = g.expr(vars, 2);
            match f.ret {
                Ty::Unit => String::new(),
                Ty::U64 => e,
                Ty::Bool => format!("{e} % 3 == 1"),
                t => format!("({e}) as {}", t.rust()),
            }
        };
        let pre: Vec<String> = vars.iter().filter(|v| *v != "acc").cloned().collect();
        let pre = if pre.is_empty() { vec![format!("{}u64", self.rng.below(1 << 20))] } else { pre };
        if f.recursive {
            let v = ret_expr(self, &pre);
            let _ = writeln!(b, "        if d == 0 {{\n            return {v};\n        }}");
        } else if !is_root && self.rng.chance(1, 4) {
            let c = self.cond(&pre, 1);
            let v = ret_expr(self, &pre);
            let _ = writeln!(b, "        if {c} {{\n            return {v};\n        }}");
        }
        let init = self.expr(&pre, 2);
        let _ = writeln!(b, "        let mut acc: u64 = {init};");
        // Parameters assigned before the first spawn (`mut` parameters).
        let mut mutable: Vec<String> = Vec::new();
        for (n, t) in &f.params {
            if n != "d" && self.rng.chance(1, 5) {
                self.cov.mut_params += 1;
                mutable.push(n.clone());
                let v = self.arg(*t, &vars);
                match t {
                    Ty::Arr => {
                        let _ = writeln!(b, "        {n}[{}] = ({}) as u32;", self.rng.below(4), self.expr(&vars, 1));
                    }
                    _ => {
                        let _ = writeln!(b, "        {n} = {v};");
                    }
                }
            }
        }
        // Typed locals that live across the sync (frame fields of 1, 4 and 8 bytes).
        let mut typed: Vec<String> = Vec::new();
        for j in 0..self.rng.below(3) {
            let t = [Ty::U32, Ty::I32, Ty::I64, Ty::Bool][self.rng.below(4) as usize];
            let v = self.arg(t, &vars);
            let _ = writeln!(b, "        let t{j}: {} = {v};", t.rust());
            typed.push(format!("t{j}"));
            self.cov.typed_frame_locals += 1;
        }
        if self.rng.chance(1, 4) {
            // `loop` with `continue` and `break`.
            self.cov.loops_with_break += 1;
            let bound = self.expr(&vars, 1);
            let _ = writeln!(
                b,
                "        let mut n0: u32 = 0;\n        loop {{\n            n0 += 1;\n            \
                 if n0 > ({bound} % 5) as u32 {{\n                break;\n            }}\n            \
                 if n0 % 2 == 0 {{\n                continue;\n            }}\n            \
                 acc = acc.rotate_left(3) ^ (n0 as u64);\n        }}"
            );
        }

        // Spawn sites of segment 1 (and maybe 2). `cost` is per call (or per level when recursive).
        let mut cost: u64 = 1;
        let mut self_sites: u64 = 0;
        let callees: Vec<usize> = (k + 1..funcs.len()).collect();
        // A temporary filled by children: no return may follow a spawn in its segment.
        let temp = self.writer && self.rng.chance(1, 3) && (budget / if f.recursive { 7 } else { 1 }) > 64;
        if temp {
            self.cov.temps += 1;
            let n = 1 + self.rng.below(64);
            cost += n;
            let mut lv = vars.clone();
            lv.push("(i as u64)".into());
            let x = self.expr(&lv, 1);
            let _ = writeln!(
                b,
                "        let tmp = alloc!(u64, {n});\n        for i in 0..{n} {{\n            spawn!(fw(tmp, i, {x}));\n        }}"
            );
        }
        let mut combine: Vec<String> = Vec::new();
        let mut uid = 0;
        let mut spawned = temp;
        let mut wide_done = false;
        let nsites = 1 + self.rng.below(4);
        for _ in 0..nsites {
            if callees.is_empty() && !f.recursive {
                break;
            }
            uid += 1;
            // Self-recursion (depth-bounded), at most twice.
            if f.recursive && self_sites < 2 && (callees.is_empty() || self.rng.chance(1, 3)) {
                self_sites += 1;
                spawned = true;
                let args = self.args(f, &vars, Some("d - 1"));
                if f.ret == Ty::Unit || self.rng.chance(1, 4) {
                    self.cov.discarded_spawns += 1;
                    let _ = writeln!(b, "        spawn!({}({args}));", f.name);
                } else {
                    let _ = writeln!(b, "        let r{uid} = spawn!({}({args}));", f.name);
                    combine.push(format!("r{uid}"));
                }
                continue;
            }
            if callees.is_empty() {
                continue;
            }
            let g = &funcs[callees[self.rng.below(callees.len() as u64) as usize]];
            // A recursive function makes up to 1 + 2 + 4 levels' worth of its per-level cost.
            let room = (budget / if f.recursive { 7 } else { 1 }).saturating_sub(cost);
            if g.cost > room {
                continue;
            }
            let kind = if !wide_done && is_root { 0 } else { self.rng.below(6) };
            match kind {
                0 | 1 => {
                    // A loop of spawns, into an array unless the callee is unit.
                    let max = (room / g.cost).min(256);
                    if max < 2 {
                        continue;
                    }
                    let n = if max >= 256 && ((is_root && !wide_done) || self.rng.chance(1, 4)) {
                        256
                    } else {
                        2 + self.rng.below(max - 1)
                    };
                    wide_done = true;
                    self.cov.widest_loop = self.cov.widest_loop.max(n);
                    if n == 256 {
                        self.cov.loops_of_256 += 1;
                    }
                    cost += n * g.cost;
                    spawned = true;
                    let mut lv = vars.clone();
                    lv.push("(i as u64)".into());
                    let args = self.args(g, &lv, None);
                    if g.ret == Ty::Unit {
                        self.cov.discarded_spawns += 1;
                        let _ = writeln!(
                            b,
                            "        for i in 0..{n}u32 {{\n            spawn!({}({args}));\n        }}",
                            g.name
                        );
                    } else if self.rng.chance(1, 2) {
                        // Every element, or (a spawn in a branch in a loop) every m-th one.
                        let m = 1 + self.rng.below(3);
                        let spawn = format!("a{uid}[i] = spawn!({}({args}));", g.name);
                        let body = if m == 1 {
                            spawn
                        } else {
                            self.cov.branch_spawns += 1;
                            format!("if i % {m} != 0 {{\n                {spawn}\n            }}")
                        };
                        let _ = writeln!(
                            b,
                            "        let mut a{uid}: [{t}; {n}] = [{z}; {n}];\n        \
                             for i in 0..{n} {{\n            {body}\n        }}",
                            t = g.ret.rust(),
                            z = g.ret.zero()
                        );
                        combine.push(format!("a{uid}"));
                    } else {
                        // A while loop over a bound computed at run time (at most `n`).
                        let bound = self.expr(&vars, 1);
                        let _ = writeln!(
                            b,
                            "        let mut a{uid}: [{t}; {n}] = [{z}; {n}];\n        \
                             let mut w{uid}: u32 = 0;\n        \
                             while w{uid} < ({bound} % {m}) as u32 {{\n            a{uid}[w{uid} as usize] = spawn!({}({}));\n            w{uid} += 1;\n        }}",
                            g.name,
                            args.replace("(i as u64)", &format!("(w{uid} as u64)")),
                            t = g.ret.rust(),
                            z = g.ret.zero(),
                            m = n + 1
                        );
                        combine.push(format!("a{uid}"));
                    }
                }
                2 if g.ret != Ty::Unit => {
                    // A spawn in a branch, maybe another (discarded) in the else branch.
                    cost += g.cost;
                    spawned = true;
                    self.cov.branch_spawns += 1;
                    let c = self.cond(&vars, 1);
                    let args = self.args(g, &vars, None);
                    let _ = write!(
                        b,
                        "        let mut r{uid}: {t} = {z};\n        if {c} {{\n            r{uid} = spawn!({}({args}));\n        }}",
                        g.name,
                        t = g.ret.rust(),
                        z = g.ret.zero()
                    );
                    if self.rng.chance(1, 2) {
                        let args = self.args(g, &vars, None);
                        let _ = write!(b, " else {{\n            spawn!({}({args}));\n        }}", g.name);
                    }
                    b.push('\n');
                    combine.push(format!("r{uid}"));
                }
                3 if g.ret != Ty::Unit && !spawned => {
                    // A plain serial call (before any spawn: `acc` is not a destination).
                    cost += g.cost;
                    self.cov.serial_calls += 1;
                    let args = self.args(g, &vars, None);
                    let _ = writeln!(b, "        acc = acc.wrapping_add({}({args}) as u64);", g.name);
                }
                4 => {
                    cost += g.cost;
                    spawned = true;
                    self.cov.discarded_spawns += 1;
                    let args = self.args(g, &vars, None);
                    let _ = writeln!(b, "        spawn!({}({args}));", g.name);
                }
                _ => {
                    cost += g.cost;
                    spawned = true;
                    let args = self.args(g, &vars, None);
                    if g.ret == Ty::Unit {
                        self.cov.discarded_spawns += 1;
                        let _ = writeln!(b, "        spawn!({}({args}));", g.name);
                    } else {
                        let _ = writeln!(b, "        let r{uid} = spawn!({}({args}));", g.name);
                        combine.push(format!("r{uid}"));
                    }
                }
            }
        }
        let mut extra_folds = String::new();
        if is_root && self.extras {
            let (spawns, folds) = self.extra_spawns(&vars);
            b.push_str(&spawns);
            extra_folds = folds;
            spawned = true;
        }
        if spawned && !temp && self.rng.chance(1, 3) {
            // A return with children outstanding: an implicit sync; the value ignores them.
            self.cov.early_returns_with_children += 1;
            if self.rng.chance(1, 2) {
                let c = self.cond(&vars, 1);
                let v = ret_expr(self, &vars);
                let _ = writeln!(b, "        if {c} {{\n            return {v};\n        }}");
            } else {
                // ... from inside a loop.
                let mut kv = vars.clone();
                kv.push("(k as u64)".into());
                let c = self.cond(&kv, 1);
                let v = ret_expr(self, &kv);
                let _ = writeln!(b, "        for k in 0..4u32 {{\n            if {c} {{\n                return {v};\n            }}\n        }}");
            }
        }
        b.push_str("        sync!();\n");
        b.push_str(&extra_folds);
        if temp {
            let _ = writeln!(
                b,
                "        for j in 0..tmp.len() {{\n            acc = acc.rotate_left(3) ^ tmp[j];\n        }}"
            );
        }
        for t in &typed {
            let _ = writeln!(b, "        acc = acc.wrapping_mul(7).wrapping_add({t} as u64);");
        }
        for c in &combine {
            if c.starts_with('a') {
                let _ = writeln!(
                    b,
                    "        for j in 0..{c}.len() {{\n            acc = acc.rotate_left(5) ^ ({c}[j] as u64);\n        }}"
                );
            } else {
                let _ = writeln!(b, "        acc = acc.wrapping_mul(31).wrapping_add({c} as u64);");
            }
        }
        // A second segment.
        if !callees.is_empty() && self.rng.chance(1, 3) {
            let g = &funcs[callees[self.rng.below(callees.len() as u64) as usize]];
            if g.ret != Ty::Unit && g.cost <= budget.saturating_sub(cost * 3) {
                cost += g.cost;
                let args = self.args(g, &vars, None);
                let _ = writeln!(
                    b,
                    "        let s{uid} = spawn!({}({args}));\n        sync!();\n        acc ^= s{uid} as u64;",
                    g.name
                );
            }
        }
        let total = if f.recursive {
            // C(0) = 1, C(d) = cost + self_sites × C(d - 1).
            let mut c = 1u64;
            for _ in 0..MAX_DEPTH {
                c = cost + self_sites * c;
            }
            c
        } else {
            cost
        };
        // The tail.
        if f.ret == Ty::Unit {
            let c = self.cond(&vars, 1);
            match callees.iter().map(|&j| &funcs[j]).find(|g| g.cost <= 50) {
                Some(g) if !temp && self.rng.chance(1, 2) => {
                    // A unit task ending in an `if` statement that spawns.
                    self.cov.unit_tasks_ending_in_if += 1;
                    let args = self.args(g, &vars, None);
                    let _ = writeln!(b, "        if {c} {{\n            spawn!({}({args}));\n        }}", g.name);
                }
                _ if self.rng.chance(1, 2) => {
                    self.cov.unit_tasks_ending_in_if += 1;
                    let e = self.expr(&vars, 1);
                    let _ = writeln!(b, "        if {c} {{\n            acc = {e};\n        }} else {{\n            acc = acc.wrapping_add(1);\n        }}");
                }
                _ => {}
            }
        } else {
            // The value depends on `acc`, so on every child's result.
            let e = self.expr(&vars, 1);
            let v = match f.ret {
                Ty::U64 => format!("acc ^ {e}"),
                Ty::Bool => format!("(acc ^ {e}) % 3 == 1"),
                t => format!("(acc ^ {e}) as {}", t.rust()),
            };
            let _ = writeln!(b, "        {v}");
        }
        let params: Vec<String> = f
            .params
            .iter()
            .map(|(n, t)| format!("{}{n}: {}", if mutable.contains(n) { "mut " } else { "" }, t.rust()))
            .collect();
        let ret = if f.ret == Ty::Unit { String::new() } else { format!(" -> {}", f.ret.rust()) };
        let head = format!("\n    #[gpu_cilk]\n    pub fn {}({}){ret} {{\n", f.name, params.join(", "));
        (format!("{head}{b}    }}\n"), total)
    }
}
