//! Fixed-width little-endian reads from page bytes, without a fallible slice-to-array conversion.

/// The `N` bytes at `b[at..at + N]`. Panics, like indexing, when they run past the end of `b`.
#[inline(always)]
pub(crate) fn array<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[at..at + N]);
    out
}

/// The little-endian `u32` at `b[at..at + 4]`.
#[inline(always)]
pub(crate) fn u32_le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(array(b, at))
}

/// The little-endian `u64` at `b[at..at + 8]`.
#[inline(always)]
pub(crate) fn u64_le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(array(b, at))
}

/// The little-endian `f64` at `b[at..at + 8]`.
#[inline(always)]
pub(crate) fn f64_le(b: &[u8], at: usize) -> f64 {
    f64::from_le_bytes(array(b, at))
}
