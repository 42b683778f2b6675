//! [`Function`] → [`Task`]: segments, name resolution, liveness across syncs, frame layout.
//!
//! This module owns the rules that need to know what each name refers to:
//!
//! - the body is split at each top-level `sync!()` into segments;
//! - every use of a name is resolved with Rust's scoping (blocks, `for` variables, shadowing) to a
//!   *top-level declaration* (a parameter or a `let` directly in the body) or to a nested local;
//! - a top-level declaration is a **frame field** when it is used in a later segment than the one
//!   that declares it, or when a `spawn!` writes into it; its type must then be known (annotation,
//!   parameter type, spawn output, suffixed literal, `as` cast), it must be initialized, and its
//!   name may not be declared twice at top level;
//! - a spawn destination must resolve to a top-level declaration (a nested local would go out of
//!   scope before the sync);
//! - in a segment, a destination may not be used textually after a spawn into it, nor anywhere in
//!   a loop that contains a spawn into it (the child may still be running);
//! - `FANOUT` is the most spawn sites of one segment, unless a spawn sits inside a loop.
//!
//! Every violation is collected; the result is a [`Task`] or all the errors. Name resolution is
//! `resolve`'s, the rule about temporaries and returns `temps`'; this file is the sequence of
//! steps and the frame layout.

mod machine;
mod resolve;
mod sums;
mod temps;

use crate::error::{self, Errors};
use crate::ir::{Callee, End, FieldOrigin, FrameField, Function, If, Segment, SpawnSite, Stmt, Task};
use resolve::{Decl, Resolved};

/// Lowers a parsed, checked function.
pub fn task(f: Function) -> Result<Task, syn::Error> {
    if f.body.iter().any(|s| !matches!(s, Stmt::Sync(_)) && machine::has_sync(s)) {
        return machine_task(f);
    }
    let mut errors = Errors::new();

    // 1. Split at the top-level syncs.
    let mut bodies: Vec<Vec<Stmt>> = vec![Vec::new()];
    for s in f.body {
        match s {
            Stmt::Sync(_) => bodies.push(Vec::new()),
            other => {
                if let Some(last) = bodies.last_mut() {
                    last.push(other);
                }
            }
        }
    }

    // 2. Callees and spawn-site numbering, in textual order.
    let mut callees: Vec<Callee> = Vec::new();
    let mut next_site = 0;
    for body in &mut bodies {
        number_spawns(body, &mut callees, &mut next_site, false);
    }

    // 3. Resolve names, segment by segment.
    let Resolved { decls, shadows } = resolve::resolve(&f.params, &bodies, f.tail.as_ref(), &mut errors);

    // 4. Frame fields.
    // A temporary always lives in the frame: every later return frees it.
    let resident = |d: &Decl| d.spawn_dest || d.used_later || d.temp;
    let mut frame = Vec::new();
    let mut field_of_decl = vec![None; decls.len()];
    for (i, d) in decls.iter().enumerate() {
        if !resident(d) {
            continue;
        }
        let Some(ty) = d.ty.clone() else {
            errors.push(error::frame_type_unknown(&d.name));
            continue;
        };
        if d.origin == FieldOrigin::Local
            && matches!(&ty, crate::ir::FieldType::Declared(t) if crate::syntax::slice_type(t).is_some())
        {
            let crate::ir::FieldType::Declared(t) = &ty else { continue };
            errors.push(crate::syntax::slice_or_view(t, error::SLICE_FRAME, error::VIEW_FRAME).on(&d.name));
            continue;
        }
        if d.origin == FieldOrigin::Local
            && matches!(&ty, crate::ir::FieldType::Declared(t) if crate::syntax::bound_type(t).is_some())
        {
            errors.push(error::BOUND_FRAME.on(&d.name));
            continue;
        }
        if !d.init {
            errors.push(error::frame_uninit(&d.name));
        }
        field_of_decl[i] = Some(frame.len());
        frame.push(FrameField {
            name: d.name.clone(),
            mutable: d.mutable,
            ty,
            segment: d.segment,
            origin: d.origin,
            temp: d.temp,
        });
    }
    for (old, new) in shadows {
        if let (Some(a), Some(b)) = (decls.get(old), decls.get(new)) {
            if resident(a) || resident(b) {
                errors.push(error::frame_shadowed(&b.name));
            }
        }
    }

    // 5. Segments.
    let count = bodies.len();
    let mut segments = Vec::new();
    let mut tail = f.tail;
    let mut any_loop_spawn = false;
    for (k, mut body) in bodies.into_iter().enumerate() {
        mark_frame_lets(&mut body, &frame);
        let mut spawns = 0;
        crate::ir::visit_spawns(&body, &mut |s: &SpawnSite| {
            spawns += 1;
            any_loop_spawn |= s.in_loop;
        });
        let end = if k + 1 < count {
            End::Sync
        } else {
            match tail.take() {
                Some(t) => End::Tail(t),
                None => End::FallOff,
            }
        };
        let restores = if k == 0 {
            Vec::new()
        } else {
            frame.iter().enumerate().filter(|(_, fl)| fl.segment < k).map(|(i, _)| i).collect()
        };
        segments.push(Segment { index: k, restores, body, end, spawns });
    }

    temps::check_temp_returns(&segments, &frame, &mut errors);
    // FANOUT: the most spawn sites of one segment, unknowable when a spawn sits in a loop.
    let fanout = if any_loop_spawn { None } else { Some(segments.iter().map(|s| s.spawns).max().unwrap_or(0)) };

    let task = Task {
        name: f.name,
        vis: f.vis,
        generics: f.generics,
        structs: f.structs,
        params: f.params,
        output: f.output,
        frame,
        callees,
        segments,
        fanout,
        machine: None,
        warp: false,
        block: false,
        sum_base: None,
        host: None,
    };
    let task = Task { sum_base: sums::sum_form(&task), ..task };
    errors.finish(task)
}

/// A function with a `sync!()` nested in control flow: a [`crate::ir::Machine`] (see `machine`),
/// with the whole structured body kept as segment 0 for the serial device form.
fn machine_task(f: Function) -> Result<Task, syn::Error> {
    let mut errors = Errors::new();
    for p in f.params.iter().filter(|p| crate::syntax::bound_type(&p.ty).is_some()) {
        errors.push(error::BOUND_MACHINE.on(&p.ty));
    }
    let mut body = f.body;
    let mut callees: Vec<Callee> = Vec::new();
    let mut next_site = 0;
    number_spawns(&mut body, &mut callees, &mut next_site, false);
    let (m, frame) = machine::build(&f.params, body.clone(), f.tail.clone(), &mut errors);
    let mut spawns = 0;
    let mut any_loop_spawn = false;
    crate::ir::visit_spawns(&body, &mut |s: &SpawnSite| {
        spawns += 1;
        any_loop_spawn |= s.in_loop;
    });
    // Between two syncs control may pass every site once (a site in a loop: unbounded).
    let fanout = if any_loop_spawn { None } else { Some(spawns) };
    let end = match f.tail {
        Some(t) => End::Tail(t),
        None => End::FallOff,
    };
    let segments = vec![Segment { index: 0, restores: Vec::new(), body, end, spawns }];
    let task = Task {
        name: f.name,
        vis: f.vis,
        generics: f.generics,
        structs: f.structs,
        params: f.params,
        output: f.output,
        frame,
        callees,
        segments,
        fanout,
        machine: Some(m),
        warp: false,
        block: false,
        sum_base: None,
        host: None,
    };
    errors.finish(task)
}

/// Numbers spawn sites, interns their callees and marks the ones inside loops.
fn number_spawns(stmts: &mut [Stmt], callees: &mut Vec<Callee>, next: &mut usize, in_loop: bool) {
    for s in stmts {
        match s {
            Stmt::Spawn(site) => {
                site.index = *next;
                *next += 1;
                site.in_loop = in_loop;
                let text = Callee { path: site.path.clone() }.display();
                site.callee = match callees.iter().position(|c| c.display() == text) {
                    Some(i) => i,
                    None => {
                        callees.push(Callee { path: site.path.clone() });
                        callees.len() - 1
                    }
                };
            }
            Stmt::If(i) => number_if(i, callees, next, in_loop),
            Stmt::While { body, .. } | Stmt::Loop { body } => number_spawns(body, callees, next, true),
            Stmt::For(f) => number_spawns(&mut f.body, callees, next, true),
            Stmt::Block(b) => number_spawns(b, callees, next, in_loop),
            Stmt::Let(_) | Stmt::Return(_) | Stmt::Expr { .. } | Stmt::Sync(_) | Stmt::Jump(_) => {}
        }
    }
}

fn number_if(i: &mut If, callees: &mut Vec<Callee>, next: &mut usize, in_loop: bool) {
    number_spawns(&mut i.then, callees, next, in_loop);
    if let Some(e) = &mut i.els {
        number_spawns(e, callees, next, in_loop);
    }
}

/// Sets `Let::frame` on the top-level lets that became frame fields.
fn mark_frame_lets(body: &mut [Stmt], frame: &[FrameField]) {
    for s in body {
        if let Stmt::Let(l) = s {
            l.frame = frame.iter().any(|f| f.origin == FieldOrigin::Local && f.name == l.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::FieldType;
    use quote::quote;

    fn lower(tokens: proc_macro2::TokenStream) -> Result<Task, syn::Error> {
        let item: syn::ItemFn = syn::parse2(tokens).expect("parses");
        let mut errors = Errors::new();
        crate::check::function(&item, crate::check::Mode::Task, &mut errors);
        errors.finish(())?;
        task(crate::parse::function(&item)?)
    }

    fn frame_names(t: &Task) -> Vec<String> {
        t.frame.iter().map(|f| f.name.to_string()).collect()
    }

    fn messages(e: syn::Error) -> Vec<String> {
        e.into_iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn fib_frame_is_the_two_spawn_destinations() {
        let t = lower(quote! {
            fn fib(n: u32) -> u64 {
                if n < 2 { return n as u64; }
                let x = spawn!(fib(n - 1));
                let y = spawn!(fib(n - 2));
                sync!();
                x + y
            }
        })
        .expect("lowers");
        assert_eq!(frame_names(&t), ["x", "y"]);
        assert_eq!(t.syncs(), 1);
        assert_eq!(t.fanout, Some(2));
        assert_eq!(t.callees.len(), 1);
        assert!(matches!(t.frame[0].ty, FieldType::OutputOf(0)));
        assert_eq!(t.segments[1].restores, [0, 1]);
        assert!(matches!(t.segments[1].end, End::Tail(_)));
    }

    #[test]
    fn locals_used_after_a_sync_live_in_the_frame_and_loop_locals_do_not() {
        let t = lower(quote! {
            fn wide(d: u32, k: u32) -> u64 {
                if d == 0 { return 1; }
                let mut parts: [u64; 8] = [0; 8];
                let mut i = 0;
                while i < k { parts[i as usize] = spawn!(wide(d - 1, k)); i += 1; }
                spawn!(fib(3));
                sync!();
                let mut s: u64 = 1;
                for j in 0..k as usize { s += parts[j]; }
                let extra = spawn!(fib(d));
                sync!();
                s + extra
            }
        })
        .expect("lowers");
        assert_eq!(frame_names(&t), ["d", "k", "parts", "s", "extra"]);
        assert_eq!(t.syncs(), 2);
        assert_eq!(t.fanout, None);
        assert_eq!(t.callees.iter().map(Callee::display).collect::<Vec<_>>(), ["wide", "fib"]);
        assert_eq!(t.segments[1].restores, [0, 1, 2]);
        assert_eq!(t.segments[2].restores, [0, 1, 2, 3, 4]);
        assert_eq!(t.segments.iter().map(|s| s.spawns).collect::<Vec<_>>(), [2, 1, 0]);
        let mut sites = Vec::new();
        for s in &t.segments {
            crate::ir::visit_spawns(&s.body, &mut |site| sites.push(site.in_loop));
        }
        assert_eq!(sites, [true, false, false]);
    }

    #[test]
    fn a_nested_shadow_does_not_make_a_field() {
        let t = lower(quote! {
            fn f(n: u32) -> u32 {
                let a: u32 = 1;
                spawn!(g(n));
                sync!();
                let b = { let a = 2u32; a };
                b
            }
        })
        .expect("lowers");
        assert_eq!(frame_names(&t), Vec::<String>::new());
        assert_eq!(t.fanout, Some(1));
    }

    #[test]
    fn types_come_from_suffixes_and_casts() {
        let t = lower(quote! {
            fn f(n: u32) -> u64 {
                let a = 1u64;
                let b = n as i64;
                let c = [0u8; 4];
                let d = true;
                sync!();
                a + b as u64 + c[0] as u64 + d as u64
            }
        })
        .expect("lowers");
        let tys: Vec<String> = t
            .frame
            .iter()
            .map(|f| match &f.ty {
                FieldType::Declared(ty) => quote!(#ty).to_string(),
                FieldType::OutputOf(_) => "out".into(),
            })
            .collect();
        assert_eq!(tys, ["u64", "i64", "[u8 ; 4]", "bool"]);
    }

    #[test]
    fn reading_a_spawned_value_before_sync_is_reported_with_every_use() {
        let e = lower(quote! {
            fn f(n: u32) -> u64 {
                let x = spawn!(g(n));
                let y: u64 = x + 1;
                let z: u64 = x * 2;
                sync!();
                y + z
            }
        })
        .expect_err("rejected");
        let m = messages(e);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!(m[0].contains("`x` holds the result of a `spawn!`"));
    }

    #[test]
    fn reading_a_destination_in_the_loop_that_spawns_into_it_is_reported() {
        let e = lower(quote! {
            fn f(n: u32) -> u64 {
                let mut a: [u64; 4] = [0; 4];
                let mut i: usize = 0;
                while i < 4 {
                    let prev = a[0];
                    a[i] = spawn!(g(n));
                    i += 1;
                }
                sync!();
                a[0]
            }
        })
        .expect_err("rejected");
        assert_eq!(messages(e).len(), 1);
    }

    #[test]
    fn reads_before_the_first_spawn_are_fine() {
        lower(quote! {
            fn f(n: u32) -> u64 {
                let mut x: u64 = 5;
                x += 1;
                let y: u64 = x;
                x = spawn!(g(n));
                sync!();
                x + y
            }
        })
        .expect("lowers");
    }

    #[test]
    fn frame_errors_are_all_reported() {
        let e = lower(quote! {
            fn f(n: u32) -> u64 {
                let a = n + 1;
                let b: u64;
                b = 2;
                let c: u64 = 0;
                sync!();
                let d = c;
                let c: u64 = 1;
                if n > 0 { let t: u64 = 0; t = spawn!(g(n)); }
                q = spawn!(g(n));
                a as u64 + b + c + d
            }
        })
        .expect_err("rejected");
        let m = messages(e);
        assert_eq!(m.len(), 5, "{m:#?}");
        assert!(m.iter().any(|s| s.contains("`t` is declared inside a block")));
        assert!(m.iter().any(|s| s.contains("cannot find local `q`")));
        assert!(m.iter().any(|s| s.contains("`a` lives across a `sync!()`, so it is stored in the task frame")));
        assert!(m.iter().any(|s| s.contains("`b` lives across a `sync!()` and must be initialized")));
        assert!(m.iter().any(|s| s.contains("`c` is declared twice")));
    }

    #[test]
    fn unit_task_falls_off_and_counts_branch_spawns() {
        let t = lower(quote! {
            fn visit(n: u32) {
                if n == 0 { return; }
                if n % 2 == 0 { spawn!(visit(n - 1)); } else { spawn!(visit(n - 1)); spawn!(leaf(n)); }
                sync!();
            }
        })
        .expect("lowers");
        assert_eq!(t.fanout, Some(3));
        assert!(t.output.is_none());
        assert!(matches!(t.segments[1].end, End::FallOff));
    }

    #[test]
    fn a_sync_in_a_loop_makes_a_machine_with_loop_carried_locals_in_the_frame() {
        let t = lower(quote! {
            fn f(n: u32) -> u64 {
                let mut acc: u64 = 0;
                let unused_later = 3u32;
                let k = (unused_later + 1) as u32;
                for i in 0..n {
                    let a = spawn!(g(i + k));
                    sync!();
                    let tmp = a * 2;
                    acc += tmp;
                }
                acc
            }
        })
        .expect("lowers");
        // `unused_later` is only read before the loop; `tmp` only after the sync in its block.
        assert_eq!(frame_names(&t), ["n", "acc", "k", "__gc_end0", "i", "a"]);
        assert_eq!(t.syncs(), 1);
        assert_eq!(t.fanout, None);
        let m = t.machine.as_ref().expect("machine");
        assert_eq!(m.resumes().len(), 1);
        assert!(m.blocks.iter().any(|b| b.header));
    }

    #[test]
    fn sibling_branches_share_a_field_and_break_becomes_a_jump() {
        let t = lower(quote! {
            fn f(n: u32) -> u64 {
                let mut s: u64 = 0;
                loop {
                    if n > 3 {
                        let x = spawn!(g(n));
                        sync!();
                        s += x;
                    } else {
                        let x = spawn!(g(1));
                        sync!();
                        s += x * 2;
                    }
                    if s > 10 { break; }
                }
                s
            }
        })
        .expect("lowers");
        assert_eq!(frame_names(&t), ["n", "s", "x"]);
        let m = t.machine.as_ref().expect("machine");
        assert_eq!(m.resumes().len(), 2);
        let jumps = m
            .blocks
            .iter()
            .flat_map(|b| &b.stmts)
            .filter(|s| matches!(s, Stmt::If(i) if matches!(i.then[..], [Stmt::Jump(_)])))
            .count();
        assert_eq!(jumps, 1);
    }

    #[test]
    fn a_read_on_a_path_without_a_sync_and_a_shadowing_frame_local_are_reported() {
        let e = lower(quote! {
            fn f(n: u32) -> u64 {
                let x = spawn!(g(n));
                if n > 2 {
                    sync!();
                }
                let mut i: u32 = 0;
                while i < n {
                    let i: u32 = 5;
                    sync!();
                    let y = i;
                }
                x + 1
            }
        })
        .expect_err("rejected");
        let m = messages(e);
        assert_eq!(m.len(), 2, "{m:#?}");
        assert!(m.iter().any(|s| s.contains("`x` holds the result of a `spawn!`")));
        assert!(m.iter().any(|s| s.contains("`i` is declared again")));
    }

    #[test]
    fn a_block_local_that_would_hide_a_field_at_a_sync_is_reported() {
        let e = lower(quote! {
            fn f(n: u32) -> u64 {
                let x = spawn!(g(n));
                sync!();
                let mut s: u64 = x;
                loop {
                    let x: u64 = 5;
                    s += x;
                    spawn!(g(1));
                    sync!();
                    if s > 20 { break; }
                }
                s + x
            }
        })
        .expect_err("rejected");
        let m = messages(e);
        assert_eq!(m.len(), 1, "{m:#?}");
        assert!(m[0].contains("`x` is declared again"), "{m:#?}");
    }
}
