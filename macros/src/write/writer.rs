//! The state of one CUDA function being written: the output text and its indentation, the
//! scopes of user names (Rust name → C++ name and type), the fault sites, the device functions
//! called and the constructs that could not be translated.
//!
//! This module owns that bookkeeping; translating expressions (`expr`), statements (`stmt`) and
//! assembling whole tasks (`task`) are `impl Writer` blocks in their own modules.

use super::ty::{mangle, Ty};
use crate::ir::Task;
use proc_macro2::Span;
use std::collections::BTreeSet;
use syn::{Ident, Path};

/// What kind of C++ function is being written.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Mode {
    /// A task segment: spawns are `gc_spawn`, returns write `*ret`.
    Segment,
    /// A device function (helper, or a task's serial form): spawns are calls, returns return.
    Device,
}

/// A user name in scope.
#[derive(Clone)]
pub(super) struct Binding {
    /// The Rust name.
    pub(super) rust: String,
    /// Its C++ name (mangled, renamed when an outer declaration already uses it).
    pub(super) cxx: String,
    /// Its type, where known (`decltype(<cxx>)` otherwise).
    pub(super) ty: Option<Ty>,
}

/// One C++ function being written.
pub(super) struct Writer<'t> {
    /// The task being written (its segments or its serial device form); `None` for a helper.
    pub(super) task: Option<&'t Task>,
    pub(super) mode: Mode,
    /// The C name of the current task (for segments).
    pub(super) task_cname: String,
    /// `<T, ..>` of a generic task (its C++ templates' arguments), empty otherwise.
    pub(super) targs: String,
    /// The function's return type (`None`: unit).
    pub(super) ret: Option<Ty>,
    /// The text written so far.
    pub(super) out: String,
    /// The indentation depth of the next line.
    pub(super) depth: usize,
    /// `file:line:col` of each fault site, in site-number order.
    pub(super) sites: Vec<String>,
    /// Site numbers are `site_base + n` (helpers: a per-helper base macro).
    pub(super) site_base: Option<String>,
    /// The device functions called, as written (each once, in order of first call).
    pub(super) helpers: Vec<Path>,
    /// Every plain call of a device function (not the spawns of a serial device form).
    pub(super) calls: Vec<Path>,
    /// The scopes of user names, innermost last.
    pub(super) scopes: Vec<Vec<Binding>>,
    /// Every C++ local name used so far (a redeclaration gets a fresh one).
    pub(super) used: BTreeSet<String>,
    /// Messages of the constructs that could not be translated (each a `static_assert`).
    pub(super) unsupported: Vec<String>,
    /// The number of writer-made locals so far (`gc_i1`, `gc_end2`, ...).
    fresh_count: usize,
    /// C++ names of the temporaries this task allocated that are in scope (freed at returns).
    pub(super) temps: Vec<String>,
    /// Writing a warp task's cooperative entry (`<name>_task::warp`): `lanes` loops are spread
    /// over the warp's lanes. Everywhere else they are plain loops.
    pub(super) coop: bool,
    /// Inside a cooperative `lanes` loop (an inner one, rejected by `check`, would be plain).
    pub(super) in_lanes: bool,
    /// Writing a block task's cooperative entry: the `sizeof`s of its `shared!` arrays so far,
    /// each at the sum of the earlier ones (rounded up to 16 bytes) in the block's scratch.
    pub(super) scratch: Vec<String>,
}

impl<'t> Writer<'t> {
    /// Writing a block task's cooperative entry (`<name>_task::block`): `threads` loops are spread
    /// over the block's threads, `shared!` arrays live in its scratch, `block_sync!()` is a barrier.
    pub(super) fn block_coop(&self) -> bool {
        self.coop && self.task.is_some_and(|t| t.block)
    }

    /// The offset of the next `shared!` array in the block's scratch (a C++ constant expression).
    pub(super) fn scratch_offset(&self) -> String {
        scratch_sum(&self.scratch)
    }

    pub(super) fn new(task: Option<&'t Task>, mode: Mode, task_cname: String, ret: Option<Ty>) -> Self {
        let targs = task.map(|t| super::ty::template_of(&t.generics).1).unwrap_or_default();
        Writer {
            task,
            mode,
            task_cname,
            targs,
            ret,
            out: String::new(),
            depth: 0,
            sites: Vec::new(),
            site_base: None,
            helpers: Vec::new(),
            calls: Vec::new(),
            coop: false,
            in_lanes: false,
            scratch: Vec::new(),
            scopes: vec![Vec::new()],
            used: BTreeSet::new(),
            unsupported: Vec::new(),
            fresh_count: 0,
            temps: Vec::new(),
        }
    }

    /// A scratch writer that sees the same names, for reading how an expression would be written
    /// (its text, sites and helpers are discarded).
    pub(super) fn probe(&self) -> Writer<'t> {
        let mut probe = Writer::new(self.task, self.mode, self.task_cname.clone(), None);
        probe.scopes = self.scopes.clone();
        probe
    }

    /// Writes one line at the current depth.
    pub(super) fn line(&mut self, s: &str) {
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    /// Numbers a new fault site at `span`; returns the site number as C++ text.
    pub(super) fn site(&mut self, span: Span) -> String {
        let n = self.sites.len();
        self.sites.push(location(span));
        match &self.site_base {
            Some(b) => format!("{b} + {n}u"),
            None => format!("{n}u"),
        }
    }

    /// Records a plain call of the device function `p`.
    pub(super) fn call_site(&mut self, p: &Path) {
        self.calls.push(p.clone());
        self.helper(p);
    }

    /// Records that the function's text uses the device function `p` (a call, or a spawn in a
    /// serial device form).
    pub(super) fn helper(&mut self, p: &Path) {
        let text = crate::ir::path_text(p);
        if !self.helpers.iter().any(|h| crate::ir::path_text(h) == text) {
            self.helpers.push(p.clone());
        }
    }

    /// Records a construct that has no CUDA translation; returns a placeholder value.
    pub(super) fn unsupported(&mut self, what: &str, span: Span) -> String {
        let msg = format!("gpu-cilk: {what} is not supported in CUDA ({})", location(span));
        if !self.unsupported.contains(&msg) {
            self.unsupported.push(msg);
        }
        "0".into()
    }

    /// Opens a scope.
    pub(super) fn push(&mut self) {
        self.scopes.push(Vec::new());
    }

    /// Closes the innermost scope.
    pub(super) fn pop(&mut self) {
        self.scopes.pop();
    }

    /// The innermost binding of the Rust name `name`.
    pub(super) fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().flat_map(|s| s.iter().rev()).find(|b| b.rust == name)
    }

    /// Declares `rust` in the current scope with a fresh C++ name; returns the C++ name.
    pub(super) fn declare(&mut self, rust: &Ident, ty: Option<Ty>) -> String {
        let base = mangle(&rust.to_string());
        let mut name = base.clone();
        let mut n = 0;
        while self.used.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        self.used.insert(name.clone());
        let ty = ty.or_else(|| Some(Ty::Named(format!("decltype({name})"))));
        if let Some(s) = self.scopes.last_mut() {
            s.push(Binding { rust: rust.to_string(), cxx: name.clone(), ty });
        }
        name
    }

    /// A fresh writer-made local name `gc_<base><n>`.
    pub(super) fn fresh(&mut self, base: &str) -> String {
        self.fresh_count += 1;
        format!("gc_{base}{}", self.fresh_count)
    }
}

/// `file:line:col` (1-based column) of a span.
pub(super) fn location(span: Span) -> String {
    let start = span.start();
    format!("{}:{}:{}", span.file(), start.line, start.column + 1)
}

/// The bytes of `shared!` arrays of these sizes laid out one after the other, each rounded up to
/// 16 bytes (a C++ constant expression).
pub(super) fn scratch_sum(sizes: &[String]) -> String {
    if sizes.is_empty() {
        return "0".to_string();
    }
    sizes.iter().map(|s| format!("(({s} + 15) / 16 * 16)")).collect::<Vec<_>>().join(" + ")
}
