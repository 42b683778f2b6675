//! Whole functions: a task's fragment (`decls`, `types`, `defs` with the segment bodies and the
//! task's entry to its serial device form, `<name>_task::dev`) and the serial device functions
//! `<name>_dev` of tasks and `#[gpu_cilk::device]` helpers. Kernels are not written here: the
//! runtime writes each scheduler's entry points around the fragments when it assembles a program.
//!
//! This module owns the assembly of those pieces around the statements that `stmt` writes; it
//! returns the text as the IR's [`Fragment`] and [`DeviceText`].

use super::ty::{callee_cname, callee_targs, mangle, template_of, ty_of_type, Ty};
use super::writer::{Mode, Writer};
use crate::ir::{DeviceText, End, FieldType, Fragment, Function, Machine, Param, Segment, StructDecl, Task, Term};
use std::fmt::Write as _;
use syn::{Ident, Type};

/// The writer's own device helpers, carried (guarded) in every task's `decls`.
pub const PRELUDE: &str = include_str!("prelude.cuh");

/// The type of a frame field (a spawn destination's is the callee's `<name>_ret`).
fn field_ty(task: &Task, ty: &FieldType) -> Ty {
    match ty {
        FieldType::Declared(t) => ty_of_type(t),
        FieldType::OutputOf(c) => {
            let callee = task.callees.get(*c).map(|c| callee_cname(&c.path)).unwrap_or_default();
            let targs = task.callees.get(*c).map(|c| callee_targs(&c.path)).unwrap_or_default();
            // A spawn of the task itself: its own output type, which the writer can see into.
            match &task.output {
                Some(t) if task.name == callee => ty_of_type(t),
                _ => Ty::Named(format!("{callee}_ret{targs}")),
            }
        }
    }
}

/// A function's return type (`None`: unit).
fn output_ty(out: &Option<Type>) -> Option<Ty> {
    out.as_ref().map(ty_of_type)
}

/// `template <typename T, ..> ` of a generic task (empty otherwise).
fn tpl_of(task: &Task) -> String {
    template_of(&task.generics).0
}

/// One `static_assert(false, "..")` per construct that could not be translated.
fn asserts(unsupported: &[String]) -> String {
    let mut s = String::new();
    for u in unsupported {
        let _ = writeln!(s, "static_assert(false, \"{}\");", u.replace('\\', "\\\\").replace('"', "\\\""));
    }
    s
}

/// The CUDA fragment of a lowered task.
pub fn task_fragment(task: &Task) -> Fragment {
    let name = mangle(&task.name.to_string());
    let ret = output_ty(&task.output);
    let ret_cxx = ret.as_ref().map_or("gc_unit".to_string(), Ty::cxx);

    // A generic task is a family of C++ templates over its type parameters; the cuda backend
    // instantiates them per instantiation of the Rust task (`CilkTask::TYPE_ARGS`), whose ids it
    // gives the template through `gc_task_ids` and whose names (`<name>__gc_u32_task`, ..) it
    // defines as typedefs.
    let (tpl, targs) = template_of(&task.generics);
    let mut decls = String::new();
    decls.push_str(PRELUDE);
    let _ = writeln!(decls, "// ---- decls: {name}");
    if tpl.is_empty() {
        let _ = writeln!(decls, "typedef {ret_cxx} {name}_ret;");
    } else {
        let _ = writeln!(decls, "{tpl}using {name}_ret = {ret_cxx};");
    }
    let arg_fields: Vec<String> =
        task.params.iter().map(|p| format!("{} {};", ty_of_type(&p.ty).cxx(), mangle(&p.name.to_string()))).collect();
    let _ = writeln!(decls, "{tpl}struct {name}_args {{ {} }};", arg_fields.join(" "));
    if !tpl.is_empty() {
        let _ = writeln!(decls, "{tpl}struct {name}_task;");
    }
    // A warp task runs on a whole warp, never as a sum group's member; a generic task's
    // instantiations are not marked one by one.
    let sum_base = if task.warp || task.block || !tpl.is_empty() { None } else { task.sum_base };
    if sum_base.is_some() {
        // The assembler defines it to 1 when every task this one spawns is a sum as well.
        let _ = writeln!(decls, "#ifndef GC_SUM_{name}\n#define GC_SUM_{name} 0\n#endif");
    }

    let mut types = String::new();
    let _ = writeln!(types, "// ---- types: {name}");
    let frame_fields: Vec<String> = task
        .frame
        .iter()
        .map(|f| format!("{} {};", field_ty(task, &f.ty).cxx(), mangle(&f.name.to_string())))
        .collect();
    let resume_field = if task.machine.is_some() { "gc_u32 gc_resume; " } else { "" };
    let _ = writeln!(types, "{tpl}struct {name}_frame {{ {resume_field}{} }};", frame_fields.join(" "));
    let _ = writeln!(types, "{tpl}struct {name}_task {{");
    let (qbase, id) = if tpl.is_empty() {
        (format!("GC_QBASE_{name}"), format!("GC_ID_{name}"))
    } else {
        (format!("gc_task_ids<{name}_task{targs} >::QBASE"), format!("gc_task_ids<{name}_task{targs} >::ID"))
    };
    for l in [
        format!("typedef {name}_args{targs} Args;"),
        format!("typedef {name}_frame{targs} Frame;"),
        format!("typedef {name}_ret{targs} Ret;"),
        format!("static const gc_u32 QBASE = {qbase};"),
        format!("static const gc_u32 ID = {id};"),
        format!("static const gc_u32 SYNCS = {};", task.syncs()),
        "static __device__ bool seg0(gc_cx& cx, Args a, Frame* out, Ret* ret);".into(),
        "static __device__ bool resume(gc_cx& cx, gc_u32 k, Frame f, Frame* out, Ret* ret);".into(),
        "static __device__ Ret dev(const gc_cx& cx, Args a);".into(),
    ] {
        let _ = writeln!(types, "  {l}");
    }
    if task.machine.is_some() {
        let _ = writeln!(types, "  static __device__ bool machine(gc_cx& cx, Frame f, Frame* out, Ret* ret);");
    }
    if task.warp {
        // A warp task (`#[gpu_cilk(warp)]`): the persistent scheduler runs `warp` on all 32 lanes
        // of a warp at once (persistent.cuh, gc_pwarp_start); `seg0` and `dev` are its serial form.
        let _ = writeln!(types, "  static const bool WARP = true;");
        let _ = writeln!(types, "  static __device__ bool warp(gc_cx& cx, Args a, Frame* out, Ret* ret);");
    }
    if let Some(base) = sum_base {
        // Its result is `sum_base()` plus its children's (lower::sums): the persistent scheduler
        // runs a tree of such tasks as one sum group (persistent.cuh, SUM GROUPS).
        let _ = writeln!(types, "  static const bool SUM = GC_SUM_{name};");
        let _ = writeln!(types, "  static __device__ __forceinline__ Ret sum_base() {{ return (Ret){base}ull; }}");
    }

    let mut writer = Writer::new(Some(task), Mode::Segment, name.clone(), ret);
    if let Some(m) = &task.machine {
        machine_defs(&mut writer, task, m);
    } else {
        segment_defs(&mut writer, task);
    }
    if task.warp {
        warp_def(&mut writer, task);
    }
    if task.block {
        // A block task (`#[gpu_cilk(block)]`): the persistent scheduler runs `block` on every
        // thread of a thread block at once (persistent.cuh, BLOCK ITEMS), with `SCRATCH` bytes of
        // the block's shared memory for its `shared!` arrays; `seg0` and `dev` are its serial form.
        coop_def(&mut writer, task, "block", ", unsigned char* gc_scratch");
        let _ = writeln!(types, "  static const bool BLOCK = true;");
        let _ = writeln!(types, "  static const gc_u64 SCRATCH = {};", super::writer::scratch_sum(&writer.scratch));
        let _ = writeln!(
            types,
            "  static __device__ bool block(gc_cx& cx, Args a, Frame* out, Ret* ret, unsigned char* gc_scratch);"
        );
    }
    types.push_str("};\n");
    // The task run as a plain call, whole (what a scheduler runs when it inlines a spawn): its own
    // serial device form, and those of the tasks it spawns (which a scheduler may run inline), are
    // part of the program. Not inlined into the scheduler: with mutually recursive tasks, NVVM's
    // inliner otherwise takes minutes on the persistent kernel.
    writer.helper(&syn::Path::from(task.name.clone()));
    for c in &task.callees {
        writer.helper(&c.path);
    }
    let fields: Vec<String> = task.params.iter().map(|p| format!("a.{}", mangle(&p.name.to_string()))).collect();
    let mut call = vec!["cx".to_string()];
    call.extend(fields);
    writer.line(&format!(
        "{tpl}__device__ __noinline__ {name}_ret{targs} {name}_task{targs}::dev(const gc_cx& cx, Args a) {{ return {name}_dev{targs}({}); }}",
        call.join(", ")
    ));
    let defs = format!("// ---- defs: {name}\n{}{}", asserts(&writer.unsupported), writer.out);
    Fragment {
        name,
        decls,
        types,
        defs,
        sites: writer.sites,
        helpers: writer.helpers,
        arg_cnames: task.params.iter().map(|p| mangle(&p.name.to_string())).collect(),
        uses_temps: task.frame.iter().any(|f| f.temp),
        sum_of: sum_base.map(|_| task.callees.iter().map(|c| callee_cname(&c.path)).collect()),
    }
}

/// `seg0` and `resume` of a straight-line task: one `case` per top-level sync.
fn segment_defs(writer: &mut Writer<'_>, task: &Task) {
    let name = writer.task_cname.clone();
    // Segment 0.
    writer.line(&format!(
        "{}__device__ bool {name}_task{}::seg0(gc_cx& cx, Args a, Frame* out, Ret* ret) {{",
        tpl_of(task),
        writer.targs
    ));
    writer.depth = 1;
    for p in &task.params {
        let t = ty_of_type(&p.ty);
        let n = writer.declare(&p.name, Some(t.clone()));
        writer.line(&format!("{} {n} = a.{};", t.cxx(), mangle(&p.name.to_string())));
    }
    if let Some(seg) = task.segments.first() {
        writer.temps.clear();
        segment_body(writer, task, seg);
    }
    writer.depth = 0;
    writer.line("}");
    writer.line("");
    // Continuations.
    writer.line(&format!(
        "{}__device__ bool {name}_task{}::resume(gc_cx& cx, gc_u32 k, Frame f, Frame* out, Ret* ret) {{",
        tpl_of(task),
        writer.targs
    ));
    writer.depth = 1;
    writer.line("switch (k) {");
    for seg in task.segments.iter().skip(1) {
        writer.depth = 2;
        writer.line(&format!("case {}: {{", seg.index));
        writer.depth = 3;
        writer.scopes = vec![Vec::new()];
        writer.used.clear();
        writer.temps.clear();
        for &i in &seg.restores {
            if let Some(fl) = task.frame.get(i) {
                let t = field_ty(task, &fl.ty);
                let n = writer.declare(&fl.name, Some(t.clone()));
                writer.line(&format!("{} {n} = f.{};", t.cxx(), mangle(&fl.name.to_string())));
                if fl.temp {
                    writer.temps.push(n);
                }
            }
        }
        segment_body(writer, task, seg);
        writer.depth = 2;
        writer.line("}");
    }
    writer.depth = 1;
    writer.line("}");
    writer.line("return false;");
    writer.depth = 0;
    writer.line("}");
    writer.line("");
}

/// `warp` of a warp task: its one segment with `lanes` loops spread over the warp's lanes (the
/// same statements as `seg0`, which runs them as plain loops).
fn warp_def(writer: &mut Writer<'_>, task: &Task) {
    coop_def(writer, task, "warp", "");
}

/// The cooperative entry `entry` of a warp or block task (`extra`: its parameters after `ret`):
/// its one segment with the cooperative loops spread over the warp's lanes or the block's threads.
fn coop_def(writer: &mut Writer<'_>, task: &Task, entry: &str, extra: &str) {
    let name = writer.task_cname.clone();
    writer.line(&format!(
        "{}__device__ bool {name}_task{}::{entry}(gc_cx& cx, Args a, Frame* out, Ret* ret{extra}) {{",
        tpl_of(task),
        writer.targs
    ));
    writer.depth = 1;
    writer.scopes = vec![Vec::new()];
    writer.used.clear();
    writer.temps.clear();
    writer.line("(void)out;");
    for p in &task.params {
        let t = ty_of_type(&p.ty);
        let n = writer.declare(&p.name, Some(t.clone()));
        writer.line(&format!("{} {n} = a.{};", t.cxx(), mangle(&p.name.to_string())));
    }
    writer.coop = true;
    if let Some(seg) = task.segments.first() {
        segment_body(writer, task, seg);
    }
    writer.coop = false;
    writer.depth = 0;
    writer.line("}");
    writer.line("");
}

/// `seg0`, `resume` and `machine` of a task whose body is a [`Machine`]: both entries call
/// `machine`, which starts at the frame's resume point; each block is a label, each jump a `goto`.
fn machine_defs(writer: &mut Writer<'_>, task: &Task, m: &Machine) {
    let name = writer.task_cname.clone();
    writer.line(&format!(
        "{}__device__ bool {name}_task{}::seg0(gc_cx& cx, Args a, Frame* out, Ret* ret) {{",
        tpl_of(task),
        writer.targs
    ));
    writer.depth = 1;
    writer.line("Frame f{};");
    writer.line("f.gc_resume = 0u;");
    for p in &task.params {
        let n = mangle(&p.name.to_string());
        writer.line(&format!("f.{n} = a.{n};"));
    }
    writer.line("return machine(cx, f, out, ret);");
    writer.depth = 0;
    writer.line("}");
    writer.line("");
    writer.line(&format!(
        "{}__device__ bool {name}_task{}::resume(gc_cx& cx, gc_u32 k, Frame f, Frame* out, Ret* ret) {{",
        tpl_of(task),
        writer.targs
    ));
    writer.line("  (void)k;  // the resume point is the frame's");
    writer.line("  return machine(cx, f, out, ret);");
    writer.line("}");
    writer.line("");
    writer.line(&format!(
        "{}__device__ bool {name}_task{}::machine(gc_cx& cx, Frame f, Frame* out, Ret* ret) {{",
        tpl_of(task),
        writer.targs
    ));
    writer.depth = 1;
    writer.scopes = vec![Vec::new()];
    writer.used.clear();
    writer.temps.clear();
    for fl in &task.frame {
        let t = field_ty(task, &fl.ty);
        let n = writer.declare(&fl.name, Some(t.clone()));
        writer.line(&format!("{} {n} = f.{};", t.cxx(), mangle(&fl.name.to_string())));
    }
    writer.line("switch (f.gc_resume) {");
    for k in std::iter::once(0).chain(m.resumes()) {
        writer.line(&format!("  case {k}u: goto gc_b{k};"));
    }
    writer.line("  default: return false;");
    writer.line("}");
    for (k, b) in m.blocks.iter().enumerate() {
        writer.line(&format!("gc_b{k}: {{"));
        writer.depth = 2;
        writer.push();
        if b.header {
            writer.line("gc_progress();");
        }
        let tail = match &b.term {
            Term::Tail(e) => Some(e),
            _ => None,
        };
        writer.stmts(&b.stmts, tail);
        match &b.term {
            Term::Goto(j) => writer.line(&format!("goto gc_b{j};")),
            Term::Branch { cond, then, els } => {
                let c = writer.expr(cond, None);
                writer.line(&format!("if ({c}) goto gc_b{then}; else goto gc_b{els};"));
            }
            Term::Sync(j) => {
                let mut vals = vec![format!("{j}u")];
                for f in &task.frame {
                    let v = writer.lookup(&f.name.to_string()).map(|b| b.cxx.clone());
                    vals.push(v.unwrap_or_else(|| format!("{}()", field_ty(task, &f.ty).cxx())));
                }
                writer.line(&format!("*out = {name}_frame{}{{{}}};", writer.targs, vals.join(", ")));
                writer.line("return true;");
            }
            Term::Tail(e) => writer.ret(Some(e)),
            Term::FallOff if task.output.is_none() => writer.ret(None),
            Term::FallOff => writer.line("return false;"),
        }
        writer.pop();
        writer.depth = 1;
        writer.line("}");
    }
    writer.depth = 0;
    writer.line("}");
    writer.line("");
}

/// The body of one segment and its end: store the frame at a sync, or return.
fn segment_body(writer: &mut Writer<'_>, task: &Task, seg: &Segment) {
    let tail = match &seg.end {
        End::Tail(e) => Some(e),
        _ => None,
    };
    writer.stmts(&seg.body, tail);
    match &seg.end {
        End::Sync => {
            let vals: Vec<String> = task
                .frame
                .iter()
                .map(|f| {
                    if f.segment <= seg.index {
                        if let Some(b) = writer.lookup(&f.name.to_string()) {
                            return b.cxx.clone();
                        }
                    }
                    format!("{}()", field_ty(task, &f.ty).cxx())
                })
                .collect();
            writer.line(&format!("*out = {}_frame{}{{{}}};", writer.task_cname, writer.targs, vals.join(", ")));
            writer.line("return true;");
        }
        End::Tail(e) => writer.ret(Some(e)),
        End::FallOff => {
            if task.output.is_none() {
                writer.ret(None);
            } else {
                writer.line("return false;");
            }
        }
    }
}

/// The serial device function `<name>_dev(cx, params..)` of a task or helper.
fn device_text(
    name: &Ident,
    generics: &[Ident],
    params: &[Param],
    output: &Option<Type>,
    task: Option<&Task>,
    body: DeviceBody<'_>,
) -> DeviceText {
    let dev_cname = format!("{}_dev", mangle(&name.to_string()));
    let ret = output_ty(output);
    let ret_cxx = ret.as_ref().map_or("gc_unit".to_string(), Ty::cxx);
    let mut writer = Writer::new(task, Mode::Device, mangle(&name.to_string()), ret);
    let base = format!("GC_SITEBASE_{dev_cname}");
    writer.site_base = Some(base.clone());
    let mut params_cxx = vec!["const gc_cx& cx".to_string()];
    for p in params {
        let t = ty_of_type(&p.ty);
        let n = writer.declare(&p.name, Some(t.clone()));
        params_cxx.push(format!("{} {n}", t.cxx()));
    }
    // A task's serial form that allocates (`alloc!`) is never inlined: it holds the allocator's
    // paths, and inlining its recursion multiplies them (with the unwinding checks, NVCC inlined
    // Strassen's seven recursive calls into `strassen_task::dev`: 1.11 -> 1.56 MB of PTX; out of
    // line, 1.09 MB). A call costs little next to an allocation.
    let linkage = if task.is_some_and(|t| t.frame.iter().any(|f| f.temp)) { "__noinline__ " } else { "" };
    let tpl = template_of(generics).0;
    let proto = format!("{tpl}__device__ {linkage}{ret_cxx} {dev_cname}({})", params_cxx.join(", "));
    writer.line(&format!("{proto} {{"));
    writer.depth = 1;
    if let Some(t) = task {
        // A task run serially recurses on the thread's stack: the scheduler bounds the stack it
        // uses, and a guard that trips makes every serial form return at once (unwinding).
        let site = writer.site(name.span());
        let mut flags = Vec::new();
        if t.warp {
            // A warp task run on one lane: the work of a whole warp (see persistent.cuh).
            flags.push("GC_DEV_WARP");
        }
        if !restartable(t) {
            flags.push("GC_DEV_DIRTY");
        }
        let flags = if flags.is_empty() { String::new() } else { format!(", {}", flags.join(" | ")) };
        writer.line(&format!("gc_dev_guard gc_guard(cx, {site}{flags});"));
        writer.unwind_check();
    }
    match body {
        DeviceBody::Function(f) => {
            writer.stmts(&f.body, f.tail.as_ref());
            match &f.tail {
                Some(t) => writer.ret(Some(t)),
                None if f.output.is_none() => writer.ret(None),
                None => {}
            }
        }
        DeviceBody::Task(t) => {
            for seg in &t.segments {
                let tail = match &seg.end {
                    End::Tail(e) => Some(e),
                    _ => None,
                };
                writer.stmts(&seg.body, tail);
                match &seg.end {
                    End::Tail(e) => writer.ret(Some(e)),
                    End::FallOff if t.output.is_none() => writer.ret(None),
                    _ => {}
                }
            }
        }
    }
    writer.depth = 0;
    writer.line("}");
    let decl = format!("#ifndef {base}\n#define {base} 0x80000000u\n#endif\n{proto};\n");
    let def = format!("{}{}", asserts(&writer.unsupported), writer.out);
    DeviceText {
        name: name.to_string(),
        decl,
        def,
        sites: writer.sites,
        site_base: base,
        helpers: writer.helpers,
        calls: writer.calls,
    }
}

/// Whether running a task's serial form twice is harmless, so that the persistent scheduler may
/// unwind an inline call of it and run the call again as a task (persistent.cuh, INLINE LIMITS):
/// not when it writes through a `&mut` slice, takes a `Temp` (its heap memory) or allocates one
/// (`alloc!`: an early return would leak it). Bounds are harmless: `Max`/`Min` updates are
/// monotone (a second run changes nothing) and the scheduler holds a `&Sum`'s adds back until the
/// inline call completes (persistent.cuh, `gc_sum_add`).
fn restartable(task: &Task) -> bool {
    let writes = task.params.iter().any(|p| match crate::syntax::slice_type(&p.ty) {
        Some((mutable, _)) => mutable,
        None => matches!(ty_of_type(&p.ty), Ty::Temp(_)),
    });
    !writes && !task.frame.iter().any(|f| f.temp)
}

/// What a device function's body comes from.
enum DeviceBody<'a> {
    /// A `#[gpu_cilk::device]` helper's statements.
    Function(&'a Function),
    /// A task's segments, run one after the other (spawn = call, sync = nothing).
    Task(&'a Task),
}

/// The serial device function of a task (what a plain call of it runs on the device).
pub fn task_device_fn(task: &Task) -> DeviceText {
    device_text(&task.name, &task.generics, &task.params, &task.output, Some(task), DeviceBody::Task(task))
}

/// The device function of a `#[gpu_cilk::device]` helper.
pub fn device_fn(f: &Function) -> DeviceText {
    device_text(&f.name, &f.generics, &f.params, &f.output, None, DeviceBody::Function(f))
}

/// The C++ definition of a device struct (`#[derive(DeviceStruct)]`): its fields in declaration
/// order with the types every other C++ text of the program uses (`[f32; 3]` is
/// `gc_array<gc_f32, 3>`), so that `#[repr(C)]` lays it out alike; the cuda backend checks the
/// size and the offsets against Rust's.
pub fn struct_def(s: &StructDecl) -> String {
    let fields: Vec<String> = s.fields.iter().map(|(n, t)| format!("{} {n};", ty_of_type(t).cxx())).collect();
    format!("struct {} {{ {} }};", s.name, fields.join(" "))
}
