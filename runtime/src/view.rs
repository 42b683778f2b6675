//! Strided 2-D sub-blocks of a row-major matrix: [`Mat`] (shared) and [`MatMut`] (mutable), the
//! views a task takes as `Mat<T>` / `MatMut<T>` parameters, and [`RawMat`], their lifetime-erased
//! form in a task's `Args` and `Frame`.
//!
//! A view is `rows` rows of `cols` elements, the rows `stride` elements apart. Its quadrants,
//! row blocks and column blocks ([`MatMut::quadrants_mut`], [`MatMut::split_rows_mut`],
//! [`MatMut::split_cols_mut`], [`MatMut::block_mut`]) are views again; two of them from one split
//! share no element, so they may go to parallel children. A view is a set of row ranges, not one
//! contiguous range: the race check (`Config::check_races`) compares views row by row
//! ([`Strided::overlaps`]).
//!
//! The lifetime story is the slice module's ([`crate::slice`]): a [`RawMat`] starts with the
//! [`RawSlice`] of the view's *extent* (first element to the last row's end), so the cuda backend
//! moves a root view like a slice (`SliceField::view` says to copy back only the rows), and the
//! rules that make erasing a slice's borrow sound make erasing a view's sound.
//!
//! Owns the host views and their layout; must not know about schedulers or backends.

use crate::slice::RawSlice;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// A view with its lifetime erased: `#[repr(C)]` `{ ptr, extent: u64, rows: u64, cols: u64,
/// stride: u64 }` (40 bytes), the device's `gc_mat<T>`. Its first 16 bytes are the
/// [`RawSlice`] of the extent.
#[repr(C)]
pub struct RawMat<T> {
    data: RawSlice<T>,
    rows: u64,
    cols: u64,
    stride: u64,
}

impl<T> Clone for RawMat<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for RawMat<T> {}

impl<T> Default for RawMat<T> {
    /// An empty view (0 × 0).
    fn default() -> Self {
        RawMat { data: RawSlice::default(), rows: 0, cols: 0, stride: 0 }
    }
}

impl<T> fmt::Debug for RawMat<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RawMat<{}>({:p}, {}x{}, stride {})",
            std::any::type_name::<T>(),
            self.ptr(),
            self.rows,
            self.cols,
            self.stride
        )
    }
}

/// The number of elements from a view's first element to the end of its last row.
fn extent(rows: usize, cols: usize, stride: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * stride + cols
    }
}

impl<T> RawMat<T> {
    /// The shape of a view starting at `ptr` (whose extent the caller vouches for).
    fn at(ptr: *mut T, rows: usize, cols: usize, stride: usize) -> Self {
        // SAFETY: a `RawSlice` is only a pointer and a length; dereferencing it later is the
        // callers' `unsafe` (every `Mat`/`MatMut` keeps the extent inside its borrow).
        let data = unsafe { RawSlice::from_parts(ptr, extent(rows, cols, stride)) };
        RawMat { data, rows: rows as u64, cols: cols as u64, stride: stride as u64 }
    }

    fn ptr(&self) -> *mut T {
        self.data.as_ptr()
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows as usize
    }

    /// The number of columns.
    pub fn cols(&self) -> usize {
        self.cols as usize
    }

    /// The distance between two rows' first elements, in elements.
    pub fn stride(&self) -> usize {
        self.stride as usize
    }

    /// The view of a shared one.
    ///
    /// # Safety
    /// As [`RawSlice::from_ref`]: the view's elements must outlive every use of the pair.
    pub unsafe fn from_ref(m: Mat<'_, T>) -> Self {
        m.raw
    }

    /// The view of a mutable one.
    ///
    /// # Safety
    /// As [`RawSlice::from_mut`].
    pub unsafe fn from_mut(m: MatMut<'_, T>) -> Self {
        m.raw
    }

    /// The shared view again.
    ///
    /// # Safety
    /// As [`RawSlice::as_ref`], for the view's elements.
    pub unsafe fn as_ref<'a>(self) -> Mat<'a, T> {
        Mat { raw: self, _borrow: PhantomData }
    }

    /// The mutable view again.
    ///
    /// # Safety
    /// As [`RawSlice::as_mut`], for the view's elements.
    pub unsafe fn as_mut<'a>(self) -> MatMut<'a, T> {
        MatMut { raw: self, _borrow: PhantomData }
    }

    /// Element offset of `(i, j)`, panicking (with Rust's index message) outside the view.
    fn offset(&self, i: usize, j: usize) -> usize {
        let (r, c) = (self.rows(), self.cols());
        assert!(i < r && j < c, "index ({i}, {j}) out of bounds for a {r}x{c} matrix view");
        i * self.stride() + j
    }

    /// The sub-view of `rows` × `cols` elements at `(r0, c0)`.
    fn block(&self, r0: usize, c0: usize, rows: usize, cols: usize) -> Self {
        let (r, c) = (self.rows(), self.cols());
        assert!(
            r0.checked_add(rows).is_some_and(|e| e <= r) && c0.checked_add(cols).is_some_and(|e| e <= c),
            "block of {rows}x{cols} at ({r0}, {c0}) out of bounds for a {r}x{c} matrix view"
        );
        if rows == 0 || cols == 0 {
            return RawMat::at(self.ptr(), rows, cols, self.stride());
        }
        // The block's first element lies inside the extent (r0 < r, c0 < c).
        RawMat::at(self.ptr().wrapping_add(r0 * self.stride() + c0), rows, cols, self.stride())
    }

    fn split_rows(&self, m: usize) -> (Self, Self) {
        let (r, c) = (self.rows(), self.cols());
        assert!(m <= r, "row {m} out of bounds for a {r}x{c} matrix view");
        (self.block(0, 0, m, c), self.block(m, 0, r - m, c))
    }

    fn split_cols(&self, m: usize) -> (Self, Self) {
        let (r, c) = (self.rows(), self.cols());
        assert!(m <= c, "column {m} out of bounds for a {r}x{c} matrix view");
        (self.block(0, 0, r, m), self.block(0, m, r, c - m))
    }

    fn quadrants(&self, mr: usize, mc: usize) -> [Self; 4] {
        let (top, bottom) = self.split_rows(mr);
        let (a, b) = top.split_cols(mc);
        let (c, d) = bottom.split_cols(mc);
        [a, b, c, d]
    }

    /// The view's shape in bytes, for the race check.
    pub(crate) fn strided(&self, elem: usize) -> Strided {
        Strided { lo: self.ptr() as usize, rows: self.rows(), width: self.cols() * elem, stride: self.stride() * elem }
    }
}

/// The view `f` (a [`SliceField::view`](crate::SliceField::view)) in `args`, or `None` when it does not lie inside `args`.
pub(crate) fn read_view<A>(args: &A, f: &crate::SliceField) -> Option<RawMat<u8>> {
    if f.offset + std::mem::size_of::<RawMat<u8>>() > std::mem::size_of::<A>() {
        return None;
    }
    // SAFETY: in bounds (checked above); `Args` is `#[repr(C)]` with a `RawMat<T>` at
    // `f.offset`, whose layout does not depend on `T`; read unaligned, touching no element.
    Some(unsafe { std::ptr::read_unaligned((args as *const A).cast::<u8>().add(f.offset).cast::<RawMat<u8>>()) })
}

/// A set of row ranges in bytes: `rows` ranges of `width` bytes from `lo`, `stride` bytes apart
/// (a slice is one row). What the race check compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Strided {
    pub lo: usize,
    pub rows: usize,
    pub width: usize,
    pub stride: usize,
}

impl Strided {
    /// A contiguous byte range `[lo, hi)`.
    pub fn contiguous(lo: usize, hi: usize) -> Self {
        Strided { lo, rows: 1, width: hi - lo, stride: hi - lo }
    }

    /// No bytes.
    pub fn is_empty(&self) -> bool {
        self.rows == 0 || self.width == 0
    }

    /// Whether some byte lies in both: for each row of the one with fewer rows, the rows of the
    /// other that could meet it are found by division (O(min rows)).
    pub fn overlaps(&self, other: &Strided) -> bool {
        if self.is_empty() || other.is_empty() {
            return false;
        }
        let (a, b) = if self.rows <= other.rows { (self, other) } else { (other, self) };
        let (blo, bw, bs) = (b.lo as i128, b.width as i128, b.stride.max(1) as i128);
        (0..a.rows).any(|i| {
            let (x, w) = ((a.lo + i * a.stride) as i128, a.width as i128);
            // Rows j of `b` with blo + j*bs < x + w and blo + j*bs + bw > x.
            let first = (x - bw - blo).div_euclid(bs) + 1;
            let last = (x + w - 1 - blo).div_euclid(bs);
            first.max(0) <= last.min(b.rows as i128 - 1)
        })
    }
}

/// `rows()`, `cols()` and `stride()` of a view type holding a `raw: RawMat<T>`.
macro_rules! shape_accessors {
    () => {
        /// The number of rows.
        pub fn rows(&self) -> usize {
            self.raw.rows()
        }

        /// The number of columns.
        pub fn cols(&self) -> usize {
            self.raw.cols()
        }

        /// The distance between two rows, in elements.
        pub fn stride(&self) -> usize {
            self.raw.stride()
        }
    };
}

/// A shared view of a row-major matrix block: `rows` rows of `cols` elements, `stride` apart.
/// `Copy`, as `&[T]` is. Index with `m[(i, j)]`.
pub struct Mat<'a, T> {
    raw: RawMat<T>,
    _borrow: PhantomData<&'a [T]>,
}

/// A mutable view of a row-major matrix block. Split it with [`MatMut::quadrants_mut`],
/// [`MatMut::split_rows_mut`], [`MatMut::split_cols_mut`] or [`MatMut::block_mut`]; index with
/// `m[(i, j)]`.
pub struct MatMut<'a, T> {
    raw: RawMat<T>,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a `Mat` is a shared borrow of `T`s (as `&[T]`), a `MatMut` an exclusive one (as
// `&mut [T]`): the same auto-trait rules.
unsafe impl<T: Sync> Send for Mat<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Mat<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for MatMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for MatMut<'_, T> {}

impl<T> Clone for Mat<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Mat<'_, T> {}

/// Checks a view's shape against its data.
fn check_shape(len: usize, rows: usize, cols: usize, stride: usize) {
    assert!(rows <= 1 || cols <= stride, "a matrix view's rows of {cols} elements overlap at stride {stride}");
    let need =
        if rows == 0 || cols == 0 { Some(0) } else { (rows - 1).checked_mul(stride).and_then(|n| n.checked_add(cols)) };
    assert!(
        need.is_some_and(|n| n <= len),
        "a {rows}x{cols} matrix view at stride {stride} does not fit in {len} elements"
    );
}

impl<'a, T> Mat<'a, T> {
    /// The `rows` × `cols` matrix stored row by row in `data` (stride `cols`).
    ///
    /// # Panics
    /// When `data` has fewer than `rows * cols` elements.
    pub fn new(data: &'a [T], rows: usize, cols: usize) -> Self {
        Self::strided(data, rows, cols, cols)
    }

    /// `rows` rows of `cols` elements of `data`, `stride` elements apart.
    ///
    /// # Panics
    /// When the rows overlap (`cols > stride` with two or more rows) or do not fit in `data`.
    pub fn strided(data: &'a [T], rows: usize, cols: usize, stride: usize) -> Self {
        check_shape(data.len(), rows, cols, stride);
        Mat { raw: RawMat::at(data.as_ptr().cast_mut(), rows, cols, stride), _borrow: PhantomData }
    }

    shape_accessors!();

    fn wrap(raw: RawMat<T>) -> Self {
        Mat { raw, _borrow: PhantomData }
    }

    /// The `rows` × `cols` block at `(r0, c0)`.
    ///
    /// # Panics
    /// When the block does not lie inside the view.
    pub fn block(&self, r0: usize, c0: usize, rows: usize, cols: usize) -> Mat<'a, T> {
        Mat::wrap(self.raw.block(r0, c0, rows, cols))
    }

    /// Rows `..m` and rows `m..`.
    pub fn split_rows(&self, m: usize) -> (Mat<'a, T>, Mat<'a, T>) {
        let (a, b) = self.raw.split_rows(m);
        (Mat::wrap(a), Mat::wrap(b))
    }

    /// Columns `..m` and columns `m..`.
    pub fn split_cols(&self, m: usize) -> (Mat<'a, T>, Mat<'a, T>) {
        let (a, b) = self.raw.split_cols(m);
        (Mat::wrap(a), Mat::wrap(b))
    }

    /// The four blocks split at row `mr` and column `mc`: top left, top right, bottom left,
    /// bottom right.
    pub fn quadrants(&self, mr: usize, mc: usize) -> (Mat<'a, T>, Mat<'a, T>, Mat<'a, T>, Mat<'a, T>) {
        let [a, b, c, d] = self.raw.quadrants(mr, mc);
        (Mat::wrap(a), Mat::wrap(b), Mat::wrap(c), Mat::wrap(d))
    }
}

impl<'a, T> MatMut<'a, T> {
    /// The `rows` × `cols` matrix stored row by row in `data` (stride `cols`).
    ///
    /// # Panics
    /// When `data` has fewer than `rows * cols` elements.
    pub fn new(data: &'a mut [T], rows: usize, cols: usize) -> Self {
        Self::strided(data, rows, cols, cols)
    }

    /// `rows` rows of `cols` elements of `data`, `stride` elements apart.
    ///
    /// # Panics
    /// When the rows overlap (`cols > stride` with two or more rows) or do not fit in `data`.
    pub fn strided(data: &'a mut [T], rows: usize, cols: usize, stride: usize) -> Self {
        check_shape(data.len(), rows, cols, stride);
        MatMut { raw: RawMat::at(data.as_mut_ptr(), rows, cols, stride), _borrow: PhantomData }
    }

    shape_accessors!();

    fn wrap<'b>(raw: RawMat<T>) -> MatMut<'b, T> {
        MatMut { raw, _borrow: PhantomData }
    }

    /// The `rows` × `cols` block at `(r0, c0)`, borrowing this view.
    ///
    /// # Panics
    /// When the block does not lie inside the view.
    pub fn block_mut(&mut self, r0: usize, c0: usize, rows: usize, cols: usize) -> MatMut<'_, T> {
        Self::wrap(self.raw.block(r0, c0, rows, cols))
    }

    /// Rows `..m` and rows `m..` (disjoint), borrowing this view.
    pub fn split_rows_mut(&mut self, m: usize) -> (MatMut<'_, T>, MatMut<'_, T>) {
        let (a, b) = self.raw.split_rows(m);
        (Self::wrap(a), Self::wrap(b))
    }

    /// Columns `..m` and columns `m..` (disjoint), borrowing this view.
    pub fn split_cols_mut(&mut self, m: usize) -> (MatMut<'_, T>, MatMut<'_, T>) {
        let (a, b) = self.raw.split_cols(m);
        (Self::wrap(a), Self::wrap(b))
    }

    /// The four disjoint blocks split at row `mr` and column `mc` (top left, top right, bottom
    /// left, bottom right), borrowing this view.
    #[allow(clippy::type_complexity)]
    pub fn quadrants_mut(
        &mut self,
        mr: usize,
        mc: usize,
    ) -> (MatMut<'_, T>, MatMut<'_, T>, MatMut<'_, T>, MatMut<'_, T>) {
        let [a, b, c, d] = self.raw.quadrants(mr, mc);
        (Self::wrap(a), Self::wrap(b), Self::wrap(c), Self::wrap(d))
    }
}

impl<T> Index<(usize, usize)> for Mat<'_, T> {
    type Output = T;
    fn index(&self, (i, j): (usize, usize)) -> &T {
        let k = self.raw.offset(i, j);
        // SAFETY: `k` lies inside the view (checked), whose elements the borrow `'a` keeps valid
        // and unchanged.
        unsafe { &*self.raw.ptr().add(k) }
    }
}

impl<T> Index<(usize, usize)> for MatMut<'_, T> {
    type Output = T;
    fn index(&self, (i, j): (usize, usize)) -> &T {
        let k = self.raw.offset(i, j);
        // SAFETY: `k` lies inside the view (checked), whose elements are this view's alone.
        unsafe { &*self.raw.ptr().add(k) }
    }
}

impl<T> IndexMut<(usize, usize)> for MatMut<'_, T> {
    fn index_mut(&mut self, (i, j): (usize, usize)) -> &mut T {
        let k = self.raw.offset(i, j);
        // SAFETY: as `index`; `&mut self` makes the element reference unique.
        unsafe { &mut *self.raw.ptr().add(k) }
    }
}

impl<T> fmt::Debug for Mat<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.raw.fmt(f)
    }
}

impl<T> fmt::Debug for MatMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.raw.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quadrants_index_the_right_elements() {
        let mut v: Vec<u32> = (0..30).collect(); // 5 x 6
        let mut m = MatMut::new(&mut v, 5, 6);
        let (mut a, b, c, mut d) = m.quadrants_mut(2, 4);
        assert_eq!((a.rows(), a.cols(), b.cols(), c.rows(), d.stride()), (2, 4, 2, 3, 6));
        assert_eq!((b[(1, 1)], c[(0, 0)], d[(2, 1)]), (11, 12, 29));
        a[(1, 3)] = 100;
        d[(0, 0)] += 1000;
        assert_eq!((v[9], v[16]), (100, 1016));
        let s = Mat::strided(&v, 2, 2, 5).block(1, 1, 1, 1);
        assert_eq!(s[(0, 0)], 6);
    }

    #[test]
    #[should_panic(expected = "index (0, 2) out of bounds for a 3x2 matrix view")]
    fn indexing_outside_panics() {
        let v = [0u8; 12];
        let _ = Mat::strided(&v, 3, 2, 4)[(0, 2)];
    }

    #[test]
    #[should_panic(expected = "does not fit in 11 elements")]
    fn a_view_must_fit() {
        let v = [0u8; 11];
        let _ = Mat::strided(&v, 3, 4, 4);
    }

    #[test]
    fn layout_matches_the_device() {
        assert_eq!(std::mem::size_of::<RawMat<u8>>(), 40);
        assert_eq!(std::mem::offset_of!(RawMat<u8>, rows), 16);
        let v = [0f64; 20];
        let m = Mat::strided(&v, 3, 2, 7);
        // SAFETY: `v` outlives `r`.
        let r = unsafe { RawMat::from_ref(m) };
        assert_eq!(r.data.len(), 16);
    }

    #[test]
    fn strided_sets_overlap_exactly_when_they_share_a_byte() {
        let mut v = [0u8; 64];
        let mut m = MatMut::new(&mut v, 8, 8);
        let s = |m: &MatMut<'_, u8>| m.raw.strided(1);
        let (a, b, c, d) = m.quadrants_mut(4, 4);
        let q = [s(&a), s(&b), s(&c), s(&d)];
        for (i, x) in q.iter().enumerate() {
            for (j, y) in q.iter().enumerate() {
                assert_eq!(x.overlaps(y), i == j, "{i} {j}");
            }
        }
        // Column 3 of the whole matrix meets the top-left quadrant only in rows it shares.
        let col = m.block_mut(5, 3, 3, 1).raw.strided(1);
        assert!(!col.overlaps(&q[0]) && col.overlaps(&q[2]) && !col.overlaps(&q[3]));
        // A contiguous range covering the gap of row 0 (bytes 4..8) meets only the right quadrant.
        let gap = Strided::contiguous(q[0].lo + 4, q[0].lo + 8);
        assert!(!gap.overlaps(&q[0]) && gap.overlaps(&q[1]));
        assert!(!Strided::contiguous(5, 5).overlaps(&gap));
    }
}
