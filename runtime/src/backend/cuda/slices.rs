//! A root's slice arguments on a device: before the run each `&[T]`/`&mut [T]` of the root's
//! `Args` (`CilkTask::SLICES`) is copied into a device buffer and the pointer in the `Args` is
//! replaced by the buffer's address; after a successful run the `&mut` ones are copied back into
//! the caller's memory. Children only ever see sub-ranges of these buffers (the device's
//! `gc_slice::sub` and `split_at`), so nothing else crosses.
//!
//! A slice that lies inside a resident buffer's placeholder ([`super::resident`], registered by
//! `crate::resident::ResidentBuffer`) is already on the device: its pointer becomes the buffer's
//! device address and it is neither uploaded nor downloaded.
//!
//! Owns that copy protocol for any [`Target`] (the GPU and the host simulation).

use super::resident;
use super::target::Target;
use crate::error::Result;
use crate::slice::{RawSlice, SliceField};
use std::time::{Duration, Instant};

/// Runs `run` on `args` with every slice of `fields` moved to `dev`, and copies the mutable ones
/// back when it succeeds. Returns `run`'s value and the time the copies took. `owner` is the
/// identity of `dev`'s context for resident buffers ([`resident::lookup`]).
pub(crate) fn with_device_slices<D: Target, A: Copy, R>(
    dev: &D,
    owner: usize,
    mut args: A,
    fields: &[SliceField],
    run: impl FnOnce(A) -> Result<R>,
) -> Result<(R, Duration)> {
    if fields.is_empty() {
        return Ok((run(args)?, Duration::ZERO));
    }
    let start = Instant::now();
    let args_in = args;
    let mut uploaded = Vec::with_capacity(fields.len());
    for f in fields {
        let raw = read_pair(&args, f)?;
        let bytes = raw.len().checked_mul(f.elem_size).ok_or_else(|| too_big(f))?;
        if let Some(addr) = resident::lookup(raw.as_ptr() as usize, bytes, f.elem_size, owner, f.name)? {
            write_addr(&mut args, f, addr);
            continue;
        }
        // SAFETY: `args` came from `f::task(..)`, whose `Call` borrows the caller's slice for the
        // whole run (runtime `slice` module, rule 1): `bytes` readable bytes at `raw`.
        let host: &[u8] = unsafe { std::slice::from_raw_parts(raw.as_ptr().cast_const(), bytes) };
        let mut buf = dev.alloc_zeroed::<u8>(bytes.max(1))?;
        if bytes > 0 {
            dev.copy_htod(host, &mut buf)?;
        }
        write_addr(&mut args, f, D::addr(&buf));
        uploaded.push((f, raw, bytes, buf));
    }
    // Resident slices copy nothing, so a run with only those reports no transfer time.
    let mut transfer = if uploaded.is_empty() { Duration::ZERO } else { start.elapsed() };
    let value = run(args)?;
    let start = Instant::now();
    for (f, raw, bytes, buf) in &uploaded {
        if !(f.mutable || f.bound) || *bytes == 0 {
            continue;
        }
        let data = dev.dtoh(buf)?;
        if f.view {
            // A view owns its rows, not the gaps between them: write back only the rows.
            let m = crate::view::read_view(&args_in, f).ok_or_else(|| outside(f))?;
            let (w, s) = (m.cols() * f.elem_size, m.stride() * f.elem_size);
            for r in 0..m.rows() {
                // SAFETY: as for an upload, and the view is `&mut` (its rows are the run's until it
                // returns); row `r` lies inside the extent that was uploaded.
                let row: &mut [u8] = unsafe { std::slice::from_raw_parts_mut(raw.as_ptr().cast::<u8>().add(r * s), w) };
                row.copy_from_slice(&data[r * s..r * s + w]);
            }
            continue;
        }
        // SAFETY: as above, and the slice is `&mut` (exclusively the run's until it returns).
        let host: &mut [u8] = unsafe { std::slice::from_raw_parts_mut(raw.as_ptr().cast::<u8>(), *bytes) };
        host.copy_from_slice(&data[..*bytes]);
    }
    if !uploaded.is_empty() {
        transfer += start.elapsed();
    }
    Ok((value, transfer))
}

fn outside(f: &SliceField) -> crate::Error {
    crate::Error::Internal(format!("the slice `{}` lies outside the task's Args", f.name))
}

fn too_big(f: &SliceField) -> crate::Error {
    crate::Error::Internal(format!("the slice `{}` is larger than the address space", f.name))
}

/// The `RawSlice` at `f.offset` of `args`.
fn read_pair<A: Copy>(args: &A, f: &SliceField) -> Result<RawSlice<u8>> {
    if f.offset + std::mem::size_of::<RawSlice<u8>>() > std::mem::size_of::<A>() {
        return Err(outside(f));
    }
    // SAFETY: in bounds (checked above); `Args` is `#[repr(C)]` with a `RawSlice<T>` there, whose
    // layout does not depend on `T`; read unaligned-safe.
    Ok(unsafe { std::ptr::read_unaligned((args as *const A).cast::<u8>().add(f.offset).cast::<RawSlice<u8>>()) })
}

/// Replaces the pointer of the `RawSlice` at `f.offset` (checked by `read_pair`) with `addr`.
fn write_addr<A: Copy>(args: &mut A, f: &SliceField, addr: u64) {
    // SAFETY: `read_pair` checked that the pair lies inside `args`; its first field is the
    // pointer, 8 bytes on the 64-bit hosts the cuda backend supports.
    unsafe { std::ptr::write_unaligned((args as *mut A).cast::<u8>().add(f.offset).cast::<u64>(), addr) }
}
