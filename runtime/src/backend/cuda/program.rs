//! Assembling one CUDA program from the task functions reachable from a root: the device library,
//! one `#define GC_QBASE_<task>` per task (its first queue in the channel table), then every
//! task's `decls`, every task's `types`, every device helper (prototypes, then definitions), every
//! task's `defs`, and finally the root and layout kernels. The tests that compile generated code
//! with NVRTC assemble through [`assemble`] too, so CI compiles exactly what a GPU would run.

use crate::error::{Error, Result};
use crate::task::{CudaFragment, DeviceFn, Registry};
use std::fmt::Write as _;

/// A task's place in an assembled program.
#[derive(Clone, Debug)]
pub struct ProgramTask {
    /// The task's name.
    pub name: &'static str,
    /// Its first queue in the channel table (queues `qbase ..= qbase + syncs + 1`).
    pub qbase: u32,
    /// Its number of syncs.
    pub syncs: usize,
    /// The compiler's bound on spawns per segment, if any.
    pub fanout: Option<usize>,
    /// Its fragment.
    pub fragment: &'static CudaFragment,
}

/// An assembled program.
#[derive(Clone, Debug)]
pub struct AssembledProgram {
    /// Tasks in registry order (the root first).
    pub tasks: Vec<ProgramTask>,
    /// Queues per level, all tasks.
    pub queues_per_level: u32,
    /// The CUDA C++ source.
    pub source: String,
}

/// Assembles the program for `reg` (root first). Every task must carry a CUDA fragment.
pub fn assemble(reg: &Registry) -> Result<AssembledProgram> {
    let mut tasks = Vec::new();
    let mut qbase = 0u32;
    for e in reg.entries() {
        let fragment = e.cuda.ok_or_else(|| Error::BackendUnavailable {
            backend: "cuda",
            reason: format!(
                "task `{}` has no CUDA code (hand-written CilkTask impls run on host backends only)",
                e.name
            ),
        })?;
        tasks.push(ProgramTask { name: e.name, qbase, syncs: e.syncs, fanout: e.fanout, fragment });
        qbase += e.syncs as u32 + 2;
    }
    let mut src = String::new();
    for t in &tasks {
        let _ = writeln!(src, "#define GC_QBASE_{} {}u", t.fragment.name, t.qbase);
    }
    src.push_str(gpu_cilk_kernels::RUNTIME_CUH);
    src.push('\n');
    // The device heap of task-scoped temporaries (`alloc!`): always assembled, used only by
    // programs whose tasks allocate (see `uses_temps`).
    src.push_str(gpu_cilk_kernels::XMALLOC_CUH);
    src.push('\n');
    src.push_str(gpu_cilk_kernels::TEMP_CUH);
    src.push('\n');
    for t in &tasks {
        src.push_str(t.fragment.decls);
        src.push('\n');
    }
    for t in &tasks {
        src.push_str(t.fragment.types);
        src.push('\n');
    }
    let mut helpers: Vec<&'static DeviceFn> = Vec::new();
    fn collect(h: &'static DeviceFn, out: &mut Vec<&'static DeviceFn>) {
        if out.iter().any(|x| std::ptr::eq(*x, h) || x.name == h.name) {
            return;
        }
        out.push(h);
        for inner in h.helpers {
            collect(inner, out);
        }
    }
    for t in &tasks {
        for h in t.fragment.helpers {
            collect(h, &mut helpers);
        }
    }
    for h in &helpers {
        src.push_str(h.decl);
        src.push('\n');
    }
    for h in &helpers {
        src.push_str(h.def);
        src.push('\n');
    }
    for t in &tasks {
        src.push_str(t.fragment.defs);
        src.push('\n');
    }
    if let Some(root) = tasks.first() {
        let n = root.fragment.name;
        let _ =
            writeln!(src, "extern \"C\" __global__ void gc_root(gc_root_params<{n}_task> p) {{ gc_push_root(p); }}");
    }
    src.push_str("extern \"C\" __global__ void gc_layout(gc_u64* out) {\n");
    for (i, t) in tasks.iter().enumerate() {
        let n = t.fragment.name;
        let _ =
            writeln!(src, "  out[{}] = sizeof({n}_task::Pre);\n  out[{}] = sizeof({n}_task::Cont);", 2 * i, 2 * i + 1);
    }
    src.push_str("}\n");
    Ok(AssembledProgram { tasks, queues_per_level: qbase, source: src })
}
