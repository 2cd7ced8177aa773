//! Arithmetic in GF(2^8) and the slice kernels the codes are built on.
//!
//! The field is GF(2)\[x\]/(x^8 + x^4 + x^3 + x + 1) (polynomial `0x11B`, the AES field), with
//! 3 as generator. That polynomial is the one the x86 GFNI instruction `GF2P8MULB` hard-wires,
//! so the GFNI kernel and the table kernels compute the same products.
//!
//! The hot loop of RLNC is `dst ^= c·src` over symbol-sized byte slices ([`mul_add`]). It is
//! dispatched at run time to the fastest [`Kernel`] the CPU has:
//!
//! * [`Kernel::Gfni512`]: `VGF2P8MULB` on 64-byte AVX-512 registers, one instruction per 64
//!   products; a ragged end is a 32-byte window if at least 32 bytes remain (unmasked, so
//!   that a later narrower load of those bytes is forwarded from the store: the decoder's
//!   32-byte rows are read byte-wise right after their update) and one masked load and
//!   store (AVX-512BW) for the rest, and the multi-source
//!   kernel accumulates up to 16 sources in registers per pass over `dst`;
//! * [`Kernel::Gfni`]: `VGF2P8MULB` on 32-byte AVX registers, one instruction per 32 products;
//! * [`Kernel::Avx2`]: split-table multiply, `c·b = lo[b & 15] ^ hi[b >> 4]` with the two
//!   16-entry tables looked up by `VPSHUFB` on 32 bytes at a time;
//! * [`Kernel::Ssse3`]: the same split-table method on 16-byte `PSHUFB`;
//! * [`Kernel::Scalar`]: a 64 KiB full multiplication table, portable.
//!
//! All kernels are exposed through [`Kernel`] so tests can check that they agree byte for byte.

use crate::error::{check_len, Error, Result};
use std::sync::atomic::{AtomicU8, Ordering};

/// The field's reduction polynomial, x^8 + x^4 + x^3 + x + 1.
pub const POLYNOMIAL: u16 = 0x11B;

/// The product of `a` and `b` in GF(2)\[x\]/(`poly`), bit by bit (for building tables).
const fn slow_mul(mut a: u16, mut b: u8, poly: u16) -> u16 {
    let mut p = 0;
    while b != 0 {
        if b & 1 != 0 {
            p ^= a;
        }
        a <<= 1;
        if a & 0x100 != 0 {
            a ^= poly;
        }
        b >>= 1;
    }
    p
}

/// The exponential (doubled, so that a sum of two logarithms needs no reduction) and
/// logarithm tables of GF(2^8) with reduction polynomial `poly` and primitive element
/// `generator`. Also builds RaptorQ's octet field (`raptorq_rows`).
pub(crate) const fn exp_log_tables(poly: u16, generator: u8) -> ([u8; 512], [u8; 256]) {
    let mut exp = [0u8; 512];
    let mut log = [0u8; 256];
    let mut x: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = x as u8;
        log[x as usize] = i as u8;
        x = slow_mul(x, generator, poly);
        i += 1;
    }
    while i < 512 {
        exp[i] = exp[i - 255];
        i += 1;
    }
    (exp, log)
}

const fn build_exp_log() -> ([u8; 512], [u8; 256]) {
    exp_log_tables(POLYNOMIAL, 3)
}

const EXP_LOG: ([u8; 512], [u8; 256]) = build_exp_log();
static EXP: [u8; 512] = EXP_LOG.0;
static LOG: [u8; 256] = EXP_LOG.1;

const fn build_mul_table() -> [[u8; 256]; 256] {
    let (exp, log) = build_exp_log();
    let mut t = [[0u8; 256]; 256];
    let mut a = 1;
    while a < 256 {
        let mut b = 1;
        while b < 256 {
            t[a][b] = exp[log[a] as usize + log[b] as usize];
            b += 1;
        }
        a += 1;
    }
    t
}

/// `MUL[a][b] = a·b`.
static MUL: [[u8; 256]; 256] = build_mul_table();

/// Product of two field elements.
#[inline]
pub fn mul(a: u8, b: u8) -> u8 {
    MUL[a as usize][b as usize]
}

/// Multiplicative inverse; `None` for 0, which has none.
#[inline]
pub fn inv(a: u8) -> Option<u8> {
    if a == 0 {
        None
    } else {
        Some(EXP[255 - LOG[a as usize] as usize])
    }
}

/// A slice kernel implementation. [`Kernel::best`] is what the free functions use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Portable table lookups, one byte at a time.
    Scalar,
    /// 16-byte split-table `PSHUFB` (x86-64 with SSSE3).
    Ssse3,
    /// 32-byte split-table `VPSHUFB` (x86-64 with AVX2).
    Avx2,
    /// 32-byte `VGF2P8MULB` (x86-64 with GFNI and AVX2).
    Gfni,
    /// 64-byte `VGF2P8MULB` with masked ragged ends (x86-64 with GFNI, AVX-512F and
    /// AVX-512BW).
    Gfni512,
}

const ALL_KERNELS: [Kernel; 5] = [
    Kernel::Scalar,
    Kernel::Ssse3,
    Kernel::Avx2,
    Kernel::Gfni,
    Kernel::Gfni512,
];

static BEST: AtomicU8 = AtomicU8::new(u8::MAX);

impl Kernel {
    /// Whether this CPU can run the kernel.
    pub fn is_available(self) -> bool {
        match self {
            Kernel::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Ssse3 => std::arch::is_x86_feature_detected!("ssse3"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Gfni => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("gfni")
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Gfni512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("gfni")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Every kernel this CPU can run, slowest first.
    pub fn available() -> Vec<Kernel> {
        ALL_KERNELS
            .into_iter()
            .filter(|k| k.is_available())
            .collect()
    }

    /// The fastest kernel this CPU can run (detected once, then cached).
    pub fn best() -> Kernel {
        let cached = BEST.load(Ordering::Relaxed);
        if let Some(&k) = ALL_KERNELS.get(cached as usize) {
            return k;
        }
        let best = *Kernel::available()
            .last()
            .expect("the scalar kernel is always available");
        let index = ALL_KERNELS.iter().position(|&k| k == best).unwrap_or(0);
        BEST.store(index as u8, Ordering::Relaxed);
        best
    }

    fn check(self) -> Result<()> {
        if self.is_available() {
            Ok(())
        } else {
            Err(Error::InvalidParameter {
                name: "kernel",
                reason: "not supported by this CPU",
            })
        }
    }

    /// `dst[i] ^= c·src[i]` for every i.
    ///
    /// Errors if the lengths differ or the CPU lacks the kernel.
    pub fn mul_add(self, dst: &mut [u8], src: &[u8], c: u8) -> Result<()> {
        self.check()?;
        check_len(dst.len(), src.len())?;
        // SAFETY: availability and equal lengths were checked above.
        unsafe { self.mul_add_unchecked(dst, src, c) };
        Ok(())
    }

    /// `dst[i] = c·src[i]` for every i.
    ///
    /// Errors if the lengths differ or the CPU lacks the kernel.
    pub fn mul(self, dst: &mut [u8], src: &[u8], c: u8) -> Result<()> {
        self.check()?;
        check_len(dst.len(), src.len())?;
        // SAFETY: availability and equal lengths were checked above.
        unsafe { self.mul_unchecked(dst, src, c) };
        Ok(())
    }

    /// The kernel is available and every source is as long as `dst`.
    fn check_multi(self, dst: &[u8], srcs: &[(u8, &[u8])]) -> Result<()> {
        self.check()?;
        for (_, s) in srcs {
            check_len(dst.len(), s.len())?;
        }
        Ok(())
    }

    /// `dst ^= Σ cⱼ·srcⱼ`, reading `dst` once per group of sources: up to 16 with
    /// [`Kernel::Gfni512`], four with [`Kernel::Gfni`] and [`Kernel::Avx2`], one (a
    /// [`Kernel::mul_add`] per source) with the others.
    ///
    /// Errors if any source length differs from `dst`, or the CPU lacks the kernel.
    pub fn mul_add_multi(self, dst: &mut [u8], srcs: &[(u8, &[u8])]) -> Result<()> {
        self.check_multi(dst, srcs)?;
        // SAFETY: availability and equal lengths were checked above.
        unsafe { self.mul_add_multi_unchecked(dst, srcs) };
        Ok(())
    }

    /// `dst = Σ cⱼ·srcⱼ` (zero for no sources): [`Kernel::mul_add_multi`] without reading
    /// `dst` first.
    ///
    /// Errors if any source length differs from `dst`, or the CPU lacks the kernel.
    pub fn mul_multi(self, dst: &mut [u8], srcs: &[(u8, &[u8])]) -> Result<()> {
        self.check_multi(dst, srcs)?;
        // SAFETY: availability and equal lengths were checked above.
        unsafe { self.mul_multi_unchecked(dst, srcs) };
        Ok(())
    }

    /// `dst[i] ^= src[i]` (addition in the field).
    ///
    /// Errors if the lengths differ or the CPU lacks the kernel.
    pub fn xor(self, dst: &mut [u8], src: &[u8]) -> Result<()> {
        self.check()?;
        check_len(dst.len(), src.len())?;
        // SAFETY: availability and equal lengths were checked above.
        unsafe { self.xor_unchecked(dst, src) };
        Ok(())
    }

    /// # Safety
    /// `self` is available and `dst.len() == src.len()`.
    pub(crate) unsafe fn mul_add_unchecked(self, dst: &mut [u8], src: &[u8], c: u8) {
        debug_assert_eq!(dst.len(), src.len());
        match (self, c) {
            (_, 0) => {}
            (k, 1) => unsafe { k.xor_unchecked(dst, src) },
            (Kernel::Scalar, _) => scalar::mul_add(dst, src, c),
            #[cfg(target_arch = "x86_64")]
            (Kernel::Ssse3, _) => unsafe { x86::mul_add_ssse3(dst, src, c) },
            #[cfg(target_arch = "x86_64")]
            (Kernel::Avx2, _) => unsafe { x86::mul_add_avx2(dst, src, c) },
            #[cfg(target_arch = "x86_64")]
            (Kernel::Gfni, _) => unsafe { x86::mul_add_gfni(dst, src, c) },
            #[cfg(target_arch = "x86_64")]
            (Kernel::Gfni512, _) => unsafe { x86::mul_add_gfni512(dst, src, c) },
            #[cfg(not(target_arch = "x86_64"))]
            _ => scalar::mul_add(dst, src, c),
        }
    }

    /// # Safety
    /// `self` is available and `dst.len() == src.len()`.
    pub(crate) unsafe fn mul_unchecked(self, dst: &mut [u8], src: &[u8], c: u8) {
        debug_assert_eq!(dst.len(), src.len());
        match (self, c) {
            (_, 0) => dst.fill(0),
            (_, 1) => dst.copy_from_slice(src),
            (Kernel::Scalar, _) => scalar::mul(dst, src, c),
            #[cfg(target_arch = "x86_64")]
            (Kernel::Ssse3, _) => unsafe { x86::mul_ssse3(dst, src, c) },
            #[cfg(target_arch = "x86_64")]
            (Kernel::Avx2, _) => unsafe { x86::mul_avx2(dst, src, c) },
            #[cfg(target_arch = "x86_64")]
            (Kernel::Gfni, _) => unsafe { x86::mul_gfni(dst, src, c) },
            #[cfg(target_arch = "x86_64")]
            (Kernel::Gfni512, _) => unsafe { x86::mul_gfni512(dst, src, c) },
            #[cfg(not(target_arch = "x86_64"))]
            _ => scalar::mul(dst, src, c),
        }
    }

    /// # Safety
    /// `self` is available and every source has `dst.len()` bytes.
    pub(crate) unsafe fn mul_add_multi_unchecked(self, dst: &mut [u8], srcs: &[(u8, &[u8])]) {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Gfni512 => unsafe { x86::mul_multi_gfni512::<true>(dst, srcs) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Gfni => unsafe { x86::mul_add_multi_gfni(dst, srcs) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { x86::mul_add_multi_avx2(dst, srcs) },
            _ => {
                for &(c, s) in srcs {
                    unsafe { self.mul_add_unchecked(dst, s, c) };
                }
            }
        }
    }

    /// `rows[r·stride..][..len] ^= m·rows[src·stride..][..len]` for every `(r, m)` of
    /// `targets`: one pivot column eliminated from several rows (the RLNC decoder's
    /// `add_row`). The same bytes as one [`Kernel::mul_add_unchecked`] per target; with
    /// `Kernel::Gfni512` and 32-byte rows (g = 16: coefficients and transform) the source row
    /// is loaded once and each target is a load, a multiply, an XOR and a store, with no call
    /// per row.
    ///
    /// # Safety
    /// `self` is available, `len ≤ stride`, `src` and every target index `i` satisfy
    /// `i·stride + len ≤ rows.len()`, and no target is `src`.
    pub(crate) unsafe fn mul_add_rows_unchecked(
        self,
        rows: &mut [u8],
        stride: usize,
        len: usize,
        src: usize,
        targets: &[(usize, u8)],
    ) {
        debug_assert!(len <= stride && src * stride + len <= rows.len());
        let base = rows.as_mut_ptr();
        #[cfg(target_arch = "x86_64")]
        if self == Kernel::Gfni512 && len == 32 {
            // SAFETY: the caller's contract.
            return unsafe { x86::mul_add_rows32_gfni512(base, stride, src, targets) };
        }
        for &(r, m) in targets {
            debug_assert!(r != src && r * stride + len <= rows.len());
            // SAFETY: rows `r` and `src` are disjoint ranges inside `rows` (caller's contract).
            unsafe {
                let d = std::slice::from_raw_parts_mut(base.add(r * stride), len);
                let s = std::slice::from_raw_parts(base.add(src * stride) as *const u8, len);
                self.mul_add_unchecked(d, s, m);
            }
        }
    }

    /// Whether [`Kernel::mul_multi_strided_unchecked`] is a kernel of its own (callers
    /// otherwise group the terms themselves).
    pub(crate) fn has_strided(self) -> bool {
        matches!(self, Kernel::Gfni512)
    }

    /// `dst (^)= Σ coeffs[j]·block[j·stride..][..dst.len()]` (`add`: XOR into `dst`; else
    /// overwrite it), zero coefficients skipped. Only for kernels where
    /// [`Kernel::has_strided`]; others do nothing.
    ///
    /// # Safety
    /// `self` is available and `block` holds `(coeffs.len() − 1)·stride + dst.len()` bytes.
    pub(crate) unsafe fn mul_multi_strided_unchecked(
        self,
        dst: &mut [u8],
        coeffs: &[u8],
        block: &[u8],
        stride: usize,
        add: bool,
    ) {
        debug_assert!(coeffs.is_empty() || (coeffs.len() - 1) * stride + dst.len() <= block.len());
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Gfni512 => unsafe {
                x86::mul_multi_strided_gfni512(dst, coeffs, block, stride, add)
            },
            _ => {}
        }
    }

    /// # Safety
    /// `self` is available and every source has `dst.len()` bytes.
    pub(crate) unsafe fn mul_multi_unchecked(self, dst: &mut [u8], srcs: &[(u8, &[u8])]) {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Gfni512 => unsafe { x86::mul_multi_gfni512::<false>(dst, srcs) },
            _ => {
                dst.fill(0);
                unsafe { self.mul_add_multi_unchecked(dst, srcs) };
            }
        }
    }

    /// Whether [`Kernel::mul_add_multi_split_unchecked`] is faster than the plain multi-source
    /// kernel (the AVX2 split-table kernel: with the nibbles stored apart it skips the shift and
    /// the two masks per source and 32 bytes). GFNI multiplies whole bytes and does not need it.
    pub(crate) fn prefers_split(self) -> bool {
        matches!(self, Kernel::Avx2)
    }

    /// `dst ^= Σ cⱼ·srcⱼ` for sources given as their low and high nibbles (see
    /// [`split_nibbles`]): each source is `(c, lo, hi)`.
    ///
    /// # Safety
    /// `self` is available and every `lo` and `hi` has `dst.len()` bytes.
    pub(crate) unsafe fn mul_add_multi_split_unchecked(
        self,
        dst: &mut [u8],
        srcs: &[(u8, &[u8], &[u8])],
    ) {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { x86::mul_add_multi_split_avx2(dst, srcs) },
            _ => {
                for &(c, lo, hi) in srcs {
                    scalar::mul_add_split(dst, lo, hi, c);
                }
            }
        }
    }

    /// # Safety
    /// `self` is available and `dst.len() == src.len()`.
    pub(crate) unsafe fn xor_unchecked(self, dst: &mut [u8], src: &[u8]) {
        debug_assert_eq!(dst.len(), src.len());
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 | Kernel::Gfni => unsafe { x86::xor_avx2(dst, src) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Gfni512 => unsafe { x86::xor_avx512(dst, src) },
            _ => scalar::xor(dst, src),
        }
    }
}

/// An implementation of [`XorPath::xor_rows`]: the dense-XOR path of LT coding, where a
/// symbol is the sum of many source rows (`dst = first ⊕ rows…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum XorPath {
    /// 64-bit words, portable.
    Portable,
    /// 32-byte AVX2 registers. (A 64-byte AVX-512F path was measured no faster: the loop
    /// waits on loads of rows scattered over the block, not on the XORs.)
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

/// Every [`XorPath`], slowest first.
const ALL_XOR_PATHS: &[XorPath] = &[
    XorPath::Portable,
    #[cfg(target_arch = "x86_64")]
    XorPath::Avx2,
];

static BEST_XOR: AtomicU8 = AtomicU8::new(u8::MAX);

impl XorPath {
    /// Whether this CPU can run the path.
    fn is_available(self) -> bool {
        match self {
            XorPath::Portable => true,
            #[cfg(target_arch = "x86_64")]
            XorPath::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
        }
    }

    /// Every path this CPU can run, slowest first (the tests run each).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<XorPath> {
        ALL_XOR_PATHS
            .iter()
            .copied()
            .filter(|p| p.is_available())
            .collect()
    }

    /// The fastest path this CPU can run (detected once, then cached).
    pub(crate) fn best() -> XorPath {
        if let Some(&p) = ALL_XOR_PATHS.get(BEST_XOR.load(Ordering::Relaxed) as usize) {
            return p;
        }
        let index = ALL_XOR_PATHS
            .iter()
            .rposition(|p| p.is_available())
            .unwrap_or(0);
        BEST_XOR.store(index as u8, Ordering::Relaxed);
        ALL_XOR_PATHS[index]
    }

    /// `dst = first ⊕ base[r·t .. r·t + t] ⊕ …` for every `r` in `rows`, over `t` bytes: each
    /// source is read once and `dst` written once, in register-sized strips (instead of one
    /// read-modify-write pass of `dst` per source).
    ///
    /// # Safety
    /// The path is available on this CPU (as [`XorPath::best`] is); `dst` is valid for `t`
    /// bytes of writes, `first` and every `base + r·t` for `t` bytes of reads; no source
    /// overlaps `dst` except that `first` may be `dst` itself.
    pub(crate) unsafe fn xor_rows(
        self,
        dst: *mut u8,
        first: *const u8,
        base: *const u8,
        rows: &[u32],
        t: usize,
    ) {
        match self {
            XorPath::Portable => unsafe { portable_xor_rows(dst, first, base, rows, t, 0) },
            #[cfg(target_arch = "x86_64")]
            XorPath::Avx2 => unsafe { x86::xor_rows_avx2(dst, first, base, rows, t) },
        }
    }
}

/// [`XorPath::xor_rows`] from byte `from` on, 8 bytes at a time, then byte by byte.
///
/// # Safety
/// As [`XorPath::xor_rows`].
unsafe fn portable_xor_rows(
    dst: *mut u8,
    first: *const u8,
    base: *const u8,
    rows: &[u32],
    t: usize,
    from: usize,
) {
    let mut off = from;
    unsafe {
        while off + 32 <= t {
            let mut acc = [0u64; 4];
            for (j, a) in acc.iter_mut().enumerate() {
                *a = first.add(off + 8 * j).cast::<u64>().read_unaligned();
            }
            for &r in rows {
                let s = base.add(r as usize * t + off);
                for (j, a) in acc.iter_mut().enumerate() {
                    *a ^= s.add(8 * j).cast::<u64>().read_unaligned();
                }
            }
            for (j, a) in acc.iter().enumerate() {
                dst.add(off + 8 * j).cast::<u64>().write_unaligned(*a);
            }
            off += 32;
        }
        while off < t {
            let mut a = *first.add(off);
            for &r in rows {
                a ^= *base.add(r as usize * t + off);
            }
            *dst.add(off) = a;
            off += 1;
        }
    }
}

/// Splits `src` into its low and high nibbles (`lo[i] = src[i] & 15`, `hi[i] = src[i] >> 4`),
/// the form the split-table kernel reads without reshuffling (the RLNC coder keeps a
/// generation's source symbols and the received payloads this way, since each is multiplied
/// many times). `lo` and `hi` must have `src.len()` bytes.
pub(crate) fn split_nibbles(src: &[u8], lo: &mut [u8], hi: &mut [u8]) {
    for ((&s, l), h) in src.iter().zip(lo.iter_mut()).zip(hi.iter_mut()) {
        *l = s & 15;
        *h = s >> 4;
    }
}

/// `dst ^= c·src` with the best kernel. Errors if the lengths differ.
pub fn mul_add(dst: &mut [u8], src: &[u8], c: u8) -> Result<()> {
    Kernel::best().mul_add(dst, src, c)
}

/// `dst = c·src` with the best kernel. Errors if the lengths differ.
pub fn mul_slice(dst: &mut [u8], src: &[u8], c: u8) -> Result<()> {
    Kernel::best().mul(dst, src, c)
}

/// `dst[i] ^= c·src[i]` for a `c` given by its split tables, `c·b = lo[b & 15] ^ hi[b >> 4]`.
///
/// Multiplication by a constant is GF(2)-linear in every representation of GF(2^8), so this
/// serves another field's elements (RaptorQ's, polynomial 0x11D) with this module's
/// split-table kernels: [`Kernel::Avx2`] on any CPU with AVX2, else [`Kernel::Ssse3`], else
/// scalar. The caller guarantees `dst.len() == src.len()` (checked in debug builds).
pub(crate) fn mul_add_nibbles(dst: &mut [u8], src: &[u8], lo: &[u8; 16], hi: &[u8; 16]) {
    debug_assert_eq!(dst.len(), src.len());
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    match Kernel::best() {
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 | Kernel::Gfni | Kernel::Gfni512 => {
            // SAFETY: each of these kernels is only `best` on a CPU with AVX2.
            unsafe { x86::mul_add_nibbles_avx2(dst, src, lo, hi) }
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Ssse3 => {
            // SAFETY: `best` is SSSE3 only on a CPU that has it.
            unsafe { x86::mul_add_nibbles_ssse3(dst, src, lo, hi) }
        }
        _ => scalar::mul_nibbles::<true>(dst, src, lo, hi),
    }
}

/// `dst ^= src` with the best kernel. Errors if the lengths differ.
pub fn xor(dst: &mut [u8], src: &[u8]) -> Result<()> {
    Kernel::best().xor(dst, src)
}

mod scalar {
    use super::MUL;

    pub(super) fn mul_add(dst: &mut [u8], src: &[u8], c: u8) {
        let row = &MUL[c as usize];
        for (d, &s) in dst.iter_mut().zip(src) {
            *d ^= row[s as usize];
        }
    }

    pub(super) fn mul(dst: &mut [u8], src: &[u8], c: u8) {
        let row = &MUL[c as usize];
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = row[s as usize];
        }
    }

    pub(super) fn mul_add_split(dst: &mut [u8], lo: &[u8], hi: &[u8], c: u8) {
        let row = &MUL[c as usize];
        for ((d, &l), &h) in dst.iter_mut().zip(lo).zip(hi) {
            *d ^= row[usize::from(l | (h << 4))];
        }
    }

    /// `dst (^)= c·src` for the `c` whose split tables are `lo` and `hi`.
    pub(super) fn mul_nibbles<const ADD: bool>(
        dst: &mut [u8],
        src: &[u8],
        lo: &[u8; 16],
        hi: &[u8; 16],
    ) {
        for (d, &s) in dst.iter_mut().zip(src) {
            let p = lo[usize::from(s & 15)] ^ hi[usize::from(s >> 4)];
            *d = if ADD { *d ^ p } else { p };
        }
    }

    pub(super) fn xor(dst: &mut [u8], src: &[u8]) {
        // Word-at-a-time; the compiler vectorises this with the baseline SSE2.
        let mut d = dst.chunks_exact_mut(8);
        let mut s = src.chunks_exact(8);
        for (d, s) in (&mut d).zip(&mut s) {
            let x = u64::from_ne_bytes(d[..].try_into().unwrap())
                ^ u64::from_ne_bytes(s.try_into().unwrap());
            d.copy_from_slice(&x.to_ne_bytes());
        }
        for (d, s) in d.into_remainder().iter_mut().zip(s.remainder()) {
            *d ^= *s;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! x86-64 kernels. Every function requires its target feature to be present (checked by
    //! [`super::Kernel::is_available`]) and `dst.len() == src.len()`.
    use super::{scalar, MUL};
    use std::arch::asm;
    use std::arch::x86_64::*;

    /// The two 16-entry split tables of `c`: products with the low and the high nibble.
    fn split_tables(c: u8) -> ([u8; 16], [u8; 16]) {
        let row = &MUL[c as usize];
        let mut lo = [0u8; 16];
        let mut hi = [0u8; 16];
        for i in 0..16 {
            lo[i] = row[i];
            hi[i] = row[i << 4];
        }
        (lo, hi)
    }

    #[inline(always)]
    unsafe fn load16(p: *const u8) -> __m128i {
        unsafe { _mm_loadu_si128(p as *const __m128i) }
    }
    #[inline(always)]
    unsafe fn load32(p: *const u8) -> __m256i {
        unsafe { _mm256_loadu_si256(p as *const __m256i) }
    }
    #[inline(always)]
    unsafe fn store32(p: *mut u8, v: __m256i) {
        unsafe { _mm256_storeu_si256(p as *mut __m256i, v) }
    }

    #[target_feature(enable = "ssse3")]
    unsafe fn mul_ssse3_impl<const ADD: bool>(dst: &mut [u8], src: &[u8], c: u8) {
        let (lo, hi) = split_tables(c);
        unsafe { mul_ssse3_tables::<ADD>(dst, src, &lo, &hi) }
    }

    /// `dst (^)= c·src` for the `c` whose split tables are `lo` and `hi`.
    #[target_feature(enable = "ssse3")]
    unsafe fn mul_ssse3_tables<const ADD: bool>(
        dst: &mut [u8],
        src: &[u8],
        lo: &[u8; 16],
        hi: &[u8; 16],
    ) {
        let n = dst.len() / 16 * 16;
        unsafe {
            let tlo = load16(lo.as_ptr());
            let thi = load16(hi.as_ptr());
            let mask = _mm_set1_epi8(0x0f);
            let mut i = 0;
            while i < n {
                let s = load16(src.as_ptr().add(i));
                let l = _mm_and_si128(s, mask);
                let h = _mm_and_si128(_mm_srli_epi64(s, 4), mask);
                let mut p = _mm_xor_si128(_mm_shuffle_epi8(tlo, l), _mm_shuffle_epi8(thi, h));
                if ADD {
                    p = _mm_xor_si128(p, load16(dst.as_ptr().add(i)));
                }
                _mm_storeu_si128(dst.as_mut_ptr().add(i) as *mut __m128i, p);
                i += 16;
            }
        }
        scalar::mul_nibbles::<ADD>(&mut dst[n..], &src[n..], lo, hi);
    }

    pub(super) unsafe fn mul_add_nibbles_ssse3(
        dst: &mut [u8],
        src: &[u8],
        lo: &[u8; 16],
        hi: &[u8; 16],
    ) {
        unsafe { mul_ssse3_tables::<true>(dst, src, lo, hi) }
    }
    pub(super) unsafe fn mul_add_ssse3(dst: &mut [u8], src: &[u8], c: u8) {
        unsafe { mul_ssse3_impl::<true>(dst, src, c) }
    }
    pub(super) unsafe fn mul_ssse3(dst: &mut [u8], src: &[u8], c: u8) {
        unsafe { mul_ssse3_impl::<false>(dst, src, c) }
    }

    /// Split-table product of 32 bytes.
    #[inline(always)]
    unsafe fn shuf_mul(s: __m256i, tlo: __m256i, thi: __m256i, mask: __m256i) -> __m256i {
        unsafe {
            let l = _mm256_and_si256(s, mask);
            let h = _mm256_and_si256(_mm256_srli_epi64(s, 4), mask);
            _mm256_xor_si256(_mm256_shuffle_epi8(tlo, l), _mm256_shuffle_epi8(thi, h))
        }
    }

    #[inline(always)]
    unsafe fn tables256(c: u8) -> (__m256i, __m256i) {
        let (lo, hi) = split_tables(c);
        unsafe { broadcast_tables(&lo, &hi) }
    }

    /// Split tables broadcast to both 128-bit halves, for `VPSHUFB` on 32 bytes.
    #[inline(always)]
    unsafe fn broadcast_tables(lo: &[u8; 16], hi: &[u8; 16]) -> (__m256i, __m256i) {
        unsafe {
            (
                _mm256_broadcastsi128_si256(load16(lo.as_ptr())),
                _mm256_broadcastsi128_si256(load16(hi.as_ptr())),
            )
        }
    }

    /// `VGF2P8MULB ymm`: 32 products in the 0x11B field. Inline assembly, so that the
    /// functions using it need only `avx2` enabled (callers checked GFNI at run time); the
    /// intrinsic `_mm256_gf2p8mul_epi8` (stable since Rust 1.89, the workspace's minimum,
    /// and used by the AVX-512 kernel) would do the same with `gfni` enabled as well.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn gf_mul(a: __m256i, b: __m256i) -> __m256i {
        let p: __m256i;
        unsafe {
            asm!(
                "vgf2p8mulb {p}, {a}, {b}",
                p = lateout(ymm_reg) p,
                a = in(ymm_reg) a,
                b = in(ymm_reg) b,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        p
    }

    /// One 32-byte window at offset `i`: `c·src[i..i+32]`, XORed with `dst[i..i+32]` if `ADD`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn window<const ADD: bool, const GFNI: bool>(
        dst: *const u8,
        src: *const u8,
        i: usize,
        t: &(__m256i, __m256i, __m256i),
    ) -> __m256i {
        unsafe {
            let x = load32(src.add(i));
            let mut p = if GFNI {
                gf_mul(x, t.0)
            } else {
                shuf_mul(x, t.0, t.1, t.2)
            };
            if ADD {
                p = _mm256_xor_si256(p, load32(dst.add(i)));
            }
            p
        }
    }

    /// The constants a window needs: the broadcast coefficient (GFNI), or the two split
    /// tables and the nibble mask.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn consts<const GFNI: bool>(c: u8) -> (__m256i, __m256i, __m256i) {
        unsafe {
            if GFNI {
                let v = _mm256_set1_epi8(c as i8);
                (v, v, v)
            } else {
                let (lo, hi) = tables256(c);
                (lo, hi, _mm256_set1_epi8(0x0f))
            }
        }
    }

    /// `dst (^)= c·src` over whole 32-byte windows. A ragged end is handled by one window
    /// ending exactly at the end of the slice, computed from the original bytes *before* the
    /// main loop runs and stored after it: every output byte depends only on its own input
    /// bytes, so the overlap is rewritten with the same values.
    #[target_feature(enable = "avx2")]
    unsafe fn mul_impl<const ADD: bool, const GFNI: bool>(dst: &mut [u8], src: &[u8], c: u8) {
        let len = dst.len();
        if len < 32 {
            if ADD {
                scalar::mul_add(dst, src, c);
            } else {
                scalar::mul(dst, src, c);
            }
            return;
        }
        unsafe { windows::<ADD, GFNI>(dst, src, &consts::<GFNI>(c)) }
    }

    /// `dst (^)= c·src` for the `c` whose split tables are `lo` and `hi` (any field).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn mul_add_nibbles_avx2(
        dst: &mut [u8],
        src: &[u8],
        lo: &[u8; 16],
        hi: &[u8; 16],
    ) {
        if dst.len() < 32 {
            scalar::mul_nibbles::<true>(dst, src, lo, hi);
            return;
        }
        unsafe {
            let (lo, hi) = broadcast_tables(lo, hi);
            windows::<true, false>(dst, src, &(lo, hi, _mm256_set1_epi8(0x0f)))
        }
    }

    /// `dst (^)= c·src` for slices of at least 32 bytes, with the constants `t` of `c`.
    #[target_feature(enable = "avx2")]
    unsafe fn windows<const ADD: bool, const GFNI: bool>(
        dst: &mut [u8],
        src: &[u8],
        t: &(__m256i, __m256i, __m256i),
    ) {
        let len = dst.len();
        debug_assert!(len >= 32);
        let n = len / 32 * 32;
        unsafe {
            let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
            let last = window::<ADD, GFNI>(d, s, len - 32, t);
            let mut i = 0;
            // Two independent windows per iteration keep both vector pipes busy.
            while i + 64 <= n {
                let p = window::<ADD, GFNI>(d, s, i, t);
                let q = window::<ADD, GFNI>(d, s, i + 32, t);
                store32(d.add(i), p);
                store32(d.add(i + 32), q);
                i += 64;
            }
            if i < n {
                store32(d.add(i), window::<ADD, GFNI>(d, s, i, t));
            }
            store32(d.add(len - 32), last);
        }
    }

    pub(super) unsafe fn mul_add_avx2(dst: &mut [u8], src: &[u8], c: u8) {
        unsafe { mul_impl::<true, false>(dst, src, c) }
    }
    pub(super) unsafe fn mul_avx2(dst: &mut [u8], src: &[u8], c: u8) {
        unsafe { mul_impl::<false, false>(dst, src, c) }
    }
    pub(super) unsafe fn mul_add_gfni(dst: &mut [u8], src: &[u8], c: u8) {
        unsafe { mul_impl::<true, true>(dst, src, c) }
    }
    pub(super) unsafe fn mul_gfni(dst: &mut [u8], src: &[u8], c: u8) {
        unsafe { mul_impl::<false, true>(dst, src, c) }
    }

    /// `dst[i..i+32] ^ Σ cⱼ·srcⱼ[i..i+32]` for a group of four sources.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn window4<const GFNI: bool>(
        dst: *const u8,
        s: &[*const u8; 4],
        t: &[(__m256i, __m256i, __m256i); 4],
        i: usize,
    ) -> __m256i {
        unsafe {
            let a = _mm256_xor_si256(
                window::<false, GFNI>(dst, s[0], i, &t[0]),
                window::<false, GFNI>(dst, s[1], i, &t[1]),
            );
            let b = _mm256_xor_si256(
                window::<false, GFNI>(dst, s[2], i, &t[2]),
                window::<false, GFNI>(dst, s[3], i, &t[3]),
            );
            _mm256_xor_si256(load32(dst.add(i)), _mm256_xor_si256(a, b))
        }
    }

    /// Sources are consumed four at a time so `dst` is loaded and stored once per four; the
    /// ragged end is handled as in [`mul_impl`].
    #[target_feature(enable = "avx2")]
    unsafe fn mul_add_multi_impl<const GFNI: bool>(dst: &mut [u8], srcs: &[(u8, &[u8])]) {
        let len = dst.len();
        let mut groups = srcs.chunks_exact(4);
        if len >= 32 {
            let n = len / 32 * 32;
            for g in &mut groups {
                unsafe {
                    let t = [
                        consts::<GFNI>(g[0].0),
                        consts::<GFNI>(g[1].0),
                        consts::<GFNI>(g[2].0),
                        consts::<GFNI>(g[3].0),
                    ];
                    let s = [
                        g[0].1.as_ptr(),
                        g[1].1.as_ptr(),
                        g[2].1.as_ptr(),
                        g[3].1.as_ptr(),
                    ];
                    let d = dst.as_mut_ptr();
                    let last = window4::<GFNI>(d, &s, &t, len - 32);
                    let mut i = 0;
                    while i < n {
                        store32(d.add(i), window4::<GFNI>(d, &s, &t, i));
                        i += 32;
                    }
                    store32(d.add(len - 32), last);
                }
            }
        }
        for &(c, s) in groups.remainder() {
            unsafe { mul_impl::<true, GFNI>(dst, s, c) };
        }
        if len < 32 {
            for &(c, s) in srcs.chunks_exact(4).flatten() {
                scalar::mul_add(dst, s, c);
            }
        }
    }

    /// `dst[i..i+32] ^ Σ cⱼ·srcⱼ[i..i+32]` for four sources stored as nibbles: two shuffles
    /// and two XORs per source.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn window4_split(
        dst: *const u8,
        s: &[(*const u8, *const u8); 4],
        t: &[(__m256i, __m256i); 4],
        i: usize,
    ) -> __m256i {
        unsafe {
            let a = _mm256_xor_si256(split_term(&t[0], s[0], i), split_term(&t[1], s[1], i));
            let b = _mm256_xor_si256(split_term(&t[2], s[2], i), split_term(&t[3], s[3], i));
            _mm256_xor_si256(load32(dst.add(i)), _mm256_xor_si256(a, b))
        }
    }

    /// `c·src[i..i+32]` from the nibbles `s = (lo, hi)` and the split tables `t` of c.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn split_term(t: &(__m256i, __m256i), s: (*const u8, *const u8), i: usize) -> __m256i {
        unsafe {
            _mm256_xor_si256(
                _mm256_shuffle_epi8(t.0, load32(s.0.add(i))),
                _mm256_shuffle_epi8(t.1, load32(s.1.add(i))),
            )
        }
    }

    /// [`mul_add_multi_impl`] for sources stored as nibbles (`(c, lo, hi)`), four at a time;
    /// fewer than four left, or a slice shorter than 32 bytes, go through the scalar kernel.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn mul_add_multi_split_avx2(dst: &mut [u8], srcs: &[(u8, &[u8], &[u8])]) {
        let len = dst.len();
        if len < 32 {
            for &(c, lo, hi) in srcs {
                scalar::mul_add_split(dst, lo, hi, c);
            }
            return;
        }
        let n = len / 32 * 32;
        let mut groups = srcs.chunks_exact(4);
        for g in &mut groups {
            unsafe {
                let t = [
                    tables256(g[0].0),
                    tables256(g[1].0),
                    tables256(g[2].0),
                    tables256(g[3].0),
                ];
                let s = [
                    (g[0].1.as_ptr(), g[0].2.as_ptr()),
                    (g[1].1.as_ptr(), g[1].2.as_ptr()),
                    (g[2].1.as_ptr(), g[2].2.as_ptr()),
                    (g[3].1.as_ptr(), g[3].2.as_ptr()),
                ];
                let d = dst.as_mut_ptr();
                // The ragged end as in `mul_impl`: computed before the loop, stored after.
                let last = window4_split(d, &s, &t, len - 32);
                let mut i = 0;
                while i < n {
                    store32(d.add(i), window4_split(d, &s, &t, i));
                    i += 32;
                }
                store32(d.add(len - 32), last);
            }
        }
        for &(c, lo, hi) in groups.remainder() {
            unsafe {
                let t = tables256(c);
                let s = (lo.as_ptr(), hi.as_ptr());
                let d = dst.as_mut_ptr();
                let last = _mm256_xor_si256(load32(d.add(len - 32)), split_term(&t, s, len - 32));
                let mut i = 0;
                while i < n {
                    store32(
                        d.add(i),
                        _mm256_xor_si256(load32(d.add(i)), split_term(&t, s, i)),
                    );
                    i += 32;
                }
                store32(d.add(len - 32), last);
            }
        }
    }

    pub(super) unsafe fn mul_add_multi_gfni(dst: &mut [u8], srcs: &[(u8, &[u8])]) {
        unsafe { mul_add_multi_impl::<true>(dst, srcs) }
    }
    pub(super) unsafe fn mul_add_multi_avx2(dst: &mut [u8], srcs: &[(u8, &[u8])]) {
        unsafe { mul_add_multi_impl::<false>(dst, srcs) }
    }

    // ------------------------------------------------------------------ AVX-512 + GFNI

    #[inline(always)]
    unsafe fn load64(p: *const u8) -> __m512i {
        unsafe { _mm512_loadu_si512(p as *const __m512i) }
    }
    #[inline(always)]
    unsafe fn store64(p: *mut u8, v: __m512i) {
        unsafe { _mm512_storeu_si512(p as *mut __m512i, v) }
    }
    /// Mask of the first `n` bytes of a 64-byte window, `n < 64`.
    #[inline(always)]
    fn tail_mask(n: usize) -> __mmask64 {
        debug_assert!(n < 64);
        (1u64 << n) - 1
    }

    /// `dst (^)= c·src`, 64 bytes per `VGF2P8MULB`; the ragged end is a 32-byte window (if
    /// 32 bytes remain) and one masked window (masked-off bytes are neither read nor written).
    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    unsafe fn mul_impl_512<const ADD: bool>(dst: &mut [u8], src: &[u8], c: u8) {
        let len = dst.len();
        unsafe {
            let cv = _mm512_set1_epi8(c as i8);
            let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
            let mut i = 0;
            while i + 64 <= len {
                let mut p = _mm512_gf2p8mul_epi8(load64(s.add(i)), cv);
                if ADD {
                    p = _mm512_xor_si512(p, load64(d.add(i)));
                }
                store64(d.add(i), p);
                i += 64;
            }
            if i + 32 <= len {
                let mut p = _mm256_gf2p8mul_epi8(load32(s.add(i)), _mm512_castsi512_si256(cv));
                if ADD {
                    p = _mm256_xor_si256(p, load32(d.add(i)));
                }
                store32(d.add(i), p);
                i += 32;
            }
            if i < len {
                let m = tail_mask(len - i);
                let mut p =
                    _mm512_gf2p8mul_epi8(_mm512_maskz_loadu_epi8(m, s.add(i) as *const i8), cv);
                if ADD {
                    p = _mm512_xor_si512(p, _mm512_maskz_loadu_epi8(m, d.add(i) as *const i8));
                }
                _mm512_mask_storeu_epi8(d.add(i) as *mut i8, m, p);
            }
        }
    }

    pub(super) unsafe fn mul_add_gfni512(dst: &mut [u8], src: &[u8], c: u8) {
        unsafe { mul_impl_512::<true>(dst, src, c) }
    }
    pub(super) unsafe fn mul_gfni512(dst: &mut [u8], src: &[u8], c: u8) {
        unsafe { mul_impl_512::<false>(dst, src, c) }
    }

    /// Sources accumulated in registers per pass over `dst`.
    const GROUP_512: usize = 16;

    /// [`super::Kernel::mul_add_rows_unchecked`] for rows of 32 bytes: row `src` is held in a
    /// register; each target row is one unmasked 32-byte load, multiply, XOR and store (so
    /// the byte reads that follow can be forwarded from the store).
    ///
    /// # Safety
    /// As `mul_add_rows_unchecked` with `len = 32`, on a CPU with these features.
    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    pub(super) unsafe fn mul_add_rows32_gfni512(
        base: *mut u8,
        stride: usize,
        src: usize,
        targets: &[(usize, u8)],
    ) {
        unsafe {
            let x = load32(base.add(src * stride));
            for &(r, m) in targets {
                let d = base.add(r * stride);
                let p = _mm256_gf2p8mul_epi8(x, _mm256_set1_epi8(m as i8));
                store32(d, _mm256_xor_si256(load32(d), p));
            }
        }
    }

    /// `dst (^)= Σ cⱼ·srcⱼ`: sources in groups of up to [`GROUP_512`], each group one pass
    /// over `dst` (two 64-byte windows at a time, then one, then a 32-byte one, then the
    /// masked ragged end), so
    /// `dst` is read and written once per group. Without `ADD` the first group overwrites
    /// `dst` (zero for no sources).
    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    pub(super) unsafe fn mul_multi_gfni512<const ADD: bool>(dst: &mut [u8], srcs: &[(u8, &[u8])]) {
        unsafe { multi_512(dst, srcs.iter().map(|&(c, s)| (c, s.as_ptr())), ADD) }
    }

    /// [`mul_multi_gfni512`] for sources `block[j·stride..][..dst.len()]` with coefficients
    /// `coeffs[j]`; zero coefficients are skipped.
    #[target_feature(enable = "avx512f,avx512bw,gfni")]
    pub(super) unsafe fn mul_multi_strided_gfni512(
        dst: &mut [u8],
        coeffs: &[u8],
        block: &[u8],
        stride: usize,
        add: bool,
    ) {
        let p = block.as_ptr();
        let len = dst.len();
        let d = dst.as_mut_ptr();
        if let Ok(c16) = <&[u8; GROUP_512]>::try_from(coeffs) {
            if !has_zero_byte(u128::from_ne_bytes(*c16)) {
                // A dense vector of g = 16 (the encoder's usual case): one full group, the
                // sources at fixed offsets from `block`.
                // (A plain loop: `<[_; 16]>::map` here was an out-of-line call.)
                let mut cv = [_mm512_setzero_si512(); GROUP_512];
                for (v, &c) in cv.iter_mut().zip(c16) {
                    *v = _mm512_set1_epi8(c as i8);
                }
                // SAFETY: inside `block` (caller's contract).
                return unsafe { pass_full_512(d, len, cv, |j| p.add(j * stride), add) };
            }
        }
        let mut add = add;
        let mut cv = [_mm512_setzero_si512(); GROUP_512];
        let mut sp = [std::ptr::null::<u8>(); GROUP_512];
        let mut j = 0;
        loop {
            // Gather the next group of non-zero terms (plain loop: iterator adaptors here were
            // not inlined into this function).
            let mut n = 0;
            while j < coeffs.len() && n < GROUP_512 {
                let c = coeffs[j];
                if c != 0 {
                    cv[n] = _mm512_set1_epi8(c as i8);
                    // SAFETY: inside `block` (caller's contract).
                    sp[n] = unsafe { p.add(j * stride) };
                    n += 1;
                }
                j += 1;
            }
            if n == 0 {
                if !add {
                    dst.fill(0);
                }
                return;
            }
            unsafe { pass_512(d, len, &cv[..n], &sp[..n], add) };
            add = true;
            if j >= coeffs.len() {
                return;
            }
        }
    }

    /// Whether one of the 16 bytes of `x` is zero (`contains(&0)` on the bytes compiled to
    /// a call of the generic `memchr`): the classic test `(x − 0x01…01) & !x & 0x80…80`,
    /// exact for the question "is any byte zero" (a borrow only propagates above a zero byte).
    #[inline(always)]
    pub(super) fn has_zero_byte(x: u128) -> bool {
        const LO: u128 = u128::from_ne_bytes([0x01; 16]);
        const HI: u128 = u128::from_ne_bytes([0x80; 16]);
        x.wrapping_sub(LO) & !x & HI != 0
    }

    /// The body of the multi-source kernels: every `(c, src)` source has `dst.len()` bytes.
    #[inline(always)]
    unsafe fn multi_512(
        dst: &mut [u8],
        mut srcs: impl Iterator<Item = (u8, *const u8)>,
        mut add: bool,
    ) {
        let len = dst.len();
        let d = dst.as_mut_ptr();
        let mut cv = [unsafe { _mm512_setzero_si512() }; GROUP_512];
        let mut sp = [std::ptr::null::<u8>(); GROUP_512];
        loop {
            let mut n = 0;
            for (c, s) in srcs.by_ref() {
                cv[n] = unsafe { _mm512_set1_epi8(c as i8) };
                sp[n] = s;
                n += 1;
                if n == GROUP_512 {
                    break;
                }
            }
            if n == 0 {
                if !add {
                    dst.fill(0);
                }
                return;
            }
            unsafe { pass_512(d, len, &cv[..n], &sp[..n], add) };
            add = true;
            if n < GROUP_512 {
                return;
            }
        }
    }

    /// [`pass_512`] for a full group of [`GROUP_512`] sources, source j at `src(j)`. With the
    /// group size fixed the loops over the sources unroll and the 16 broadcast coefficients
    /// stay in registers (the variable-length loop reloaded each one from the stack for every
    /// 64-byte window: about a quarter of the pass's time on 16 × 1,380 bytes in L1).
    /// Same terms added in the same order, so the same bytes.
    #[inline(always)]
    unsafe fn pass_full_512(
        d: *mut u8,
        len: usize,
        cv: [__m512i; GROUP_512],
        src: impl Fn(usize) -> *const u8,
        add: bool,
    ) {
        unsafe {
            let mut i = 0;
            while i + 128 <= len {
                let (mut a, mut b) = if add {
                    (load64(d.add(i)), load64(d.add(i + 64)))
                } else {
                    (_mm512_setzero_si512(), _mm512_setzero_si512())
                };
                for (j, &c) in cv.iter().enumerate() {
                    let s = src(j).add(i);
                    a = _mm512_xor_si512(a, _mm512_gf2p8mul_epi8(load64(s), c));
                    b = _mm512_xor_si512(b, _mm512_gf2p8mul_epi8(load64(s.add(64)), c));
                }
                store64(d.add(i), a);
                store64(d.add(i + 64), b);
                i += 128;
            }
            tail_512(d, i, len, GROUP_512, |j| (cv[j], src(j)), add);
        }
    }

    /// The end of a pass, below the 128-byte windows: one 64-byte window, one unmasked
    /// 32-byte window (a masked store cannot be forwarded to the byte reads that follow an
    /// update of a 32-byte decoder row), then a masked rest; term j is `term(j)`, j < `n`.
    ///
    /// A pass that overwrites `dst` (not `add`) of at least 64 bytes instead ends with full
    /// windows that end at `len` and overlap bytes already written: an overlapped byte is
    /// computed again from the same terms in the same order, so it is stored with the value
    /// it has (`dst` is only written, never read, and no source is `dst`). For the 1,380-byte
    /// symbols of `nc-mptcp` that is one 128-byte window (two multiplies per term) instead of a
    /// 64-byte, a 32-byte and a masked window (three multiplies and a masked load per term).
    #[inline(always)]
    unsafe fn tail_512(
        d: *mut u8,
        mut i: usize,
        len: usize,
        n: usize,
        term: impl Fn(usize) -> (__m512i, *const u8),
        add: bool,
    ) {
        unsafe {
            if !add && i < len && len >= 64 {
                if len - i > 64 && len >= 128 {
                    // One 128-byte window ending at `len` (two independent accumulators).
                    let w = len - 128;
                    let (mut a, mut b) = (_mm512_setzero_si512(), _mm512_setzero_si512());
                    for j in 0..n {
                        let (c, s) = term(j);
                        a = _mm512_xor_si512(a, _mm512_gf2p8mul_epi8(load64(s.add(w)), c));
                        b = _mm512_xor_si512(b, _mm512_gf2p8mul_epi8(load64(s.add(w + 64)), c));
                    }
                    store64(d.add(w), a);
                    store64(d.add(w + 64), b);
                    return;
                }
                // 64-byte windows, the last one ending at `len` (64 < len < 128: at 0 and at
                // len − 64).
                loop {
                    let w = i.min(len - 64);
                    let mut a = _mm512_setzero_si512();
                    for j in 0..n {
                        let (c, s) = term(j);
                        a = _mm512_xor_si512(a, _mm512_gf2p8mul_epi8(load64(s.add(w)), c));
                    }
                    store64(d.add(w), a);
                    i = w + 64;
                    if i >= len {
                        return;
                    }
                }
            }
            if i + 64 <= len {
                let mut a = if add {
                    load64(d.add(i))
                } else {
                    _mm512_setzero_si512()
                };
                for j in 0..n {
                    let (c, s) = term(j);
                    a = _mm512_xor_si512(a, _mm512_gf2p8mul_epi8(load64(s.add(i)), c));
                }
                store64(d.add(i), a);
                i += 64;
            }
            if i + 32 <= len {
                let mut a = if add {
                    load32(d.add(i))
                } else {
                    _mm256_setzero_si256()
                };
                for j in 0..n {
                    let (c, s) = term(j);
                    let x = load32(s.add(i));
                    a = _mm256_xor_si256(a, _mm256_gf2p8mul_epi8(x, _mm512_castsi512_si256(c)));
                }
                store32(d.add(i), a);
                i += 32;
            }
            if i < len {
                let m = tail_mask(len - i);
                let mut a = if add {
                    _mm512_maskz_loadu_epi8(m, d.add(i) as *const i8)
                } else {
                    _mm512_setzero_si512()
                };
                for j in 0..n {
                    let (c, s) = term(j);
                    let x = _mm512_maskz_loadu_epi8(m, s.add(i) as *const i8);
                    a = _mm512_xor_si512(a, _mm512_gf2p8mul_epi8(x, c));
                }
                _mm512_mask_storeu_epi8(d.add(i) as *mut i8, m, a);
            }
        }
    }

    /// One pass: `dst[..len] (^)= Σ cv[j]·sp[j][..len]`.
    #[inline(always)]
    unsafe fn pass_512(d: *mut u8, len: usize, cv: &[__m512i], sp: &[*const u8], add: bool) {
        if let (Ok(cv), Ok(sp)) = (
            <&[__m512i; GROUP_512]>::try_from(cv),
            <&[*const u8; GROUP_512]>::try_from(sp),
        ) {
            // SAFETY: the caller's contract.
            return unsafe { pass_full_512(d, len, *cv, |j| sp[j], add) };
        }
        unsafe {
            let mut i = 0;
            while i + 128 <= len {
                let (mut a, mut b) = if add {
                    (load64(d.add(i)), load64(d.add(i + 64)))
                } else {
                    (_mm512_setzero_si512(), _mm512_setzero_si512())
                };
                for (&c, &s) in cv.iter().zip(sp) {
                    a = _mm512_xor_si512(a, _mm512_gf2p8mul_epi8(load64(s.add(i)), c));
                    b = _mm512_xor_si512(b, _mm512_gf2p8mul_epi8(load64(s.add(i + 64)), c));
                }
                store64(d.add(i), a);
                store64(d.add(i + 64), b);
                i += 128;
            }
            tail_512(d, i, len, cv.len(), |j| (cv[j], sp[j]), add);
        }
    }

    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn xor_avx512(dst: &mut [u8], src: &[u8]) {
        let len = dst.len();
        unsafe {
            let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
            let mut i = 0;
            while i + 64 <= len {
                store64(
                    d.add(i),
                    _mm512_xor_si512(load64(d.add(i)), load64(s.add(i))),
                );
                i += 64;
            }
            if i < len {
                let m = tail_mask(len - i);
                let x = _mm512_xor_si512(
                    _mm512_maskz_loadu_epi8(m, d.add(i) as *const i8),
                    _mm512_maskz_loadu_epi8(m, s.add(i) as *const i8),
                );
                _mm512_mask_storeu_epi8(d.add(i) as *mut i8, m, x);
            }
        }
    }

    /// [`super::XorPath::xor_rows`] with AVX2: strips of eight 32-byte registers, then one
    /// strip of the whole 32-byte registers left (three for the 1376-byte symbols of `hmtp`,
    /// read in one pass over the rows instead of one pass per register), then the portable
    /// tail.
    ///
    /// # Safety
    /// As [`super::XorPath::xor_rows`], with AVX2 present.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn xor_rows_avx2(
        dst: *mut u8,
        first: *const u8,
        base: *const u8,
        rows: &[u32],
        t: usize,
    ) {
        // `dst[off..off + 32·N] = first ⊕ rows`, the N registers kept across the rows.
        macro_rules! strip {
            ($n:literal, $off:expr) => {{
                let off = $off;
                let mut acc = [_mm256_setzero_si256(); $n];
                for (j, a) in acc.iter_mut().enumerate() {
                    *a = load32(first.add(off + 32 * j));
                }
                for &r in rows {
                    let s = base.add(r as usize * t + off);
                    for (j, a) in acc.iter_mut().enumerate() {
                        *a = _mm256_xor_si256(*a, load32(s.add(32 * j)));
                    }
                }
                for (j, a) in acc.iter().enumerate() {
                    store32(dst.add(off + 32 * j), *a);
                }
            }};
        }
        let mut off = 0;
        unsafe {
            while off + 256 <= t {
                strip!(8, off);
                off += 256;
            }
            let left = (t - off) / 32;
            match left {
                7 => strip!(7, off),
                6 => strip!(6, off),
                5 => strip!(5, off),
                4 => strip!(4, off),
                3 => strip!(3, off),
                2 => strip!(2, off),
                1 => strip!(1, off),
                _ => {}
            }
            off += 32 * left;
            super::portable_xor_rows(dst, first, base, rows, t, off);
        }
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn xor_avx2(dst: &mut [u8], src: &[u8]) {
        let n = dst.len() / 64 * 64;
        unsafe {
            let mut i = 0;
            while i < n {
                let a = _mm256_xor_si256(load32(dst.as_ptr().add(i)), load32(src.as_ptr().add(i)));
                let b = _mm256_xor_si256(
                    load32(dst.as_ptr().add(i + 32)),
                    load32(src.as_ptr().add(i + 32)),
                );
                store32(dst.as_mut_ptr().add(i), a);
                store32(dst.as_mut_ptr().add(i + 32), b);
                i += 64;
            }
        }
        scalar::xor(&mut dst[n..], &src[n..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xorshift;

    /// The split-table entry points for another field's tables compute `dst ^= c·src` with
    /// those tables, on every length (ragged ends, below one 32-byte window, empty) and on
    /// each SIMD path this CPU has, against the byte-wise reference. The tables here are a
    /// field-free GF(2)-linear map (a permutation of bit positions XOR a shift), so a path
    /// that used this field's own multiplication instead would fail.
    #[test]
    fn nibble_tables_drive_every_path() {
        let f = |b: u8| b.rotate_left(3) ^ (b >> 1);
        let (mut lo, mut hi) = ([0u8; 16], [0u8; 16]);
        for i in 0..16u8 {
            lo[i as usize] = f(i);
            hi[i as usize] = f(i << 4);
        }
        for len in [0usize, 1, 15, 16, 17, 31, 32, 33, 63, 64, 100, 1400] {
            let src: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let start: Vec<u8> = (0..len).map(|i| (i * 5 + 3) as u8).collect();
            let want: Vec<u8> = start.iter().zip(&src).map(|(&d, &s)| d ^ f(s)).collect();
            let mut got = start.clone();
            mul_add_nibbles(&mut got, &src, &lo, &hi);
            assert_eq!(got, want, "best path, len {len}");
            #[cfg(target_arch = "x86_64")]
            {
                if Kernel::Ssse3.is_available() {
                    let mut got = start.clone();
                    // SAFETY: SSSE3 checked just above; equal lengths.
                    unsafe { x86::mul_add_nibbles_ssse3(&mut got, &src, &lo, &hi) };
                    assert_eq!(got, want, "ssse3, len {len}");
                }
                if Kernel::Avx2.is_available() {
                    let mut got = start.clone();
                    // SAFETY: AVX2 checked just above; equal lengths.
                    unsafe { x86::mul_add_nibbles_avx2(&mut got, &src, &lo, &hi) };
                    assert_eq!(got, want, "avx2, len {len}");
                }
            }
            let mut got = start.clone();
            scalar::mul_nibbles::<true>(&mut got, &src, &lo, &hi);
            assert_eq!(got, want, "scalar, len {len}");
        }
    }

    /// The word-wise zero-byte test of the dense-vector check agrees with `contains(&0)`,
    /// for a zero in every position, beside every byte value (borrows from a zero byte into
    /// the bytes above it must not decide the answer) and on random vectors.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn zero_byte_test_matches_contains() {
        let check = |b: [u8; 16]| {
            assert_eq!(
                x86::has_zero_byte(u128::from_ne_bytes(b)),
                b.contains(&0),
                "{b:?}"
            );
        };
        for pos in 0..16 {
            for v in 0..=255u8 {
                let mut b = [v; 16];
                check(b);
                b[pos] = 0;
                check(b);
                b[pos] = 1;
                check(b);
                b[pos] = 0x80;
                check(b);
            }
        }
        let mut rng = xorshift(0x1234_5678);
        for _ in 0..100_000 {
            let mut b = [0u8; 16];
            for x in &mut b {
                // Small values, so zeros and 0x01s are frequent.
                *x = (rng() % 5) as u8;
            }
            check(b);
        }
    }

    /// Carry-less "Russian peasant" multiplication, independent of the tables.
    fn slow_mul(mut a: u8, mut b: u8) -> u8 {
        let mut p = 0u8;
        while b != 0 {
            if b & 1 != 0 {
                p ^= a;
            }
            let carry = a & 0x80 != 0;
            a <<= 1;
            if carry {
                a ^= (POLYNOMIAL & 0xff) as u8;
            }
            b >>= 1;
        }
        p
    }

    /// The split-nibble multi-source kernel equals the scalar multiply-add, on every kernel,
    /// for lengths around the 32-byte windows and any number of sources.
    #[test]
    fn split_kernel_matches_scalar() {
        let mut rng = xorshift(0x1234_5678u32);
        let mut next = || rng() as u8;
        for kernel in Kernel::available() {
            for len in [1, 31, 32, 33, 63, 64, 65, 100, 1380] {
                for n in 0..=9 {
                    let srcs: Vec<Vec<u8>> =
                        (0..n).map(|_| (0..len).map(|_| next()).collect()).collect();
                    let cs: Vec<u8> = (0..n).map(|_| next()).collect();
                    let init: Vec<u8> = (0..len).map(|_| next()).collect();
                    let mut want = init.clone();
                    for (s, &c) in srcs.iter().zip(&cs) {
                        scalar::mul_add(&mut want, s, c);
                    }
                    let split: Vec<(Vec<u8>, Vec<u8>)> = srcs
                        .iter()
                        .map(|s| {
                            let (mut lo, mut hi) = (vec![0; len], vec![0; len]);
                            split_nibbles(s, &mut lo, &mut hi);
                            (lo, hi)
                        })
                        .collect();
                    let terms: Vec<(u8, &[u8], &[u8])> = split
                        .iter()
                        .zip(&cs)
                        .map(|((lo, hi), &c)| (c, &lo[..], &hi[..]))
                        .collect();
                    let mut got = init.clone();
                    // SAFETY: the kernel is available; every slice has `len` bytes.
                    unsafe { kernel.mul_add_multi_split_unchecked(&mut got, &terms) };
                    assert_eq!(got, want, "{kernel:?}, len {len}, {n} sources");
                }
            }
        }
    }

    /// The decoder's several-rows elimination equals one scalar multiply-add per target row,
    /// for every available kernel, 32-byte rows (the AVX-512 path) and others.
    #[test]
    fn row_elimination_matches_scalar() {
        let mut rng = xorshift(0x2468_ace1u32);
        let mut next = || rng() as u8;
        for kernel in Kernel::available() {
            for (len, stride) in [
                (32, 32),
                (32, 40),
                (16, 16),
                (31, 33),
                (64, 64),
                (1380, 1380),
            ] {
                let nrows = 9;
                let init: Vec<u8> = (0..nrows * stride).map(|_| next()).collect();
                for src in [0, 4, 8] {
                    // Every other row, multipliers including 0 and 1.
                    let targets: Vec<(usize, u8)> = (0..nrows)
                        .filter(|&r| r != src && r % 2 == 1)
                        .map(|r| (r, [0, 1, 2, 0x53, 0xff][r % 5]))
                        .chain([(if src == 0 { 2 } else { 0 }, next() | 1)])
                        .collect();
                    let mut want = init.clone();
                    for &(r, m) in &targets {
                        let s = want[src * stride..src * stride + len].to_vec();
                        scalar::mul_add(&mut want[r * stride..r * stride + len], &s, m);
                    }
                    let mut got = init.clone();
                    // SAFETY: the kernel is available; all rows lie inside `got`; no target
                    // is `src`.
                    unsafe { kernel.mul_add_rows_unchecked(&mut got, stride, len, src, &targets) };
                    assert_eq!(
                        got, want,
                        "{kernel:?}, len {len}, stride {stride}, src {src}"
                    );
                }
            }
        }
    }

    /// The strided multi-source kernel equals the scalar multiply-add, overwriting or adding,
    /// with zero coefficients among the terms and lengths around the 64-byte windows.
    #[test]
    fn strided_kernel_matches_scalar() {
        let mut rng = xorshift(0x9876_5432u32);
        let mut next = || rng() as u8;
        for kernel in Kernel::available().into_iter().filter(|k| k.has_strided()) {
            for len in [1, 16, 31, 32, 63, 64, 65, 127, 128, 129, 191, 200, 1380] {
                // (n, dense): dense vectors (no zero coefficient) take the full-group path
                // for n = 16 and the first group of 17 and 33.
                for (n, dense) in [
                    (0, false),
                    (1, false),
                    (5, false),
                    (16, false),
                    (16, true),
                    (17, false),
                    (17, true),
                    (33, false),
                    (33, true),
                ] {
                    let stride = len + usize::from(next() % 3);
                    let block: Vec<u8> = (0..n * stride + len).map(|_| next()).collect();
                    let cs: Vec<u8> = (0..n)
                        .map(|_| match next() {
                            0 if dense => 1,
                            c if dense || next() % 4 != 0 => c,
                            _ => 0,
                        })
                        .collect();
                    assert!(!dense || !cs.contains(&0));
                    let init: Vec<u8> = (0..len).map(|_| next()).collect();
                    for add in [false, true] {
                        let mut want = if add { init.clone() } else { vec![0; len] };
                        for (j, &c) in cs.iter().enumerate() {
                            scalar::mul_add(&mut want, &block[j * stride..j * stride + len], c);
                        }
                        let mut got = init.clone();
                        // SAFETY: the kernel is available; `block` holds n strided sources.
                        unsafe {
                            kernel.mul_multi_strided_unchecked(&mut got, &cs, &block, stride, add)
                        };
                        assert_eq!(got, want, "{kernel:?}, len {len}, {n} sources, add {add}");
                    }
                }
            }
        }
    }

    /// Every dense-XOR path equals a plain byte loop, for lengths around each path's strip
    /// and register sizes (every count of 32-byte registers after the last full strip, and
    /// the 1376-byte symbols of `hmtp`), any number of rows,
    /// and `first` being `dst` itself or another buffer.
    #[test]
    fn xor_rows_paths_match_plain_loop() {
        let mut next = xorshift(0x9e37_79b9);
        let paths = XorPath::available();
        assert!(paths.contains(&XorPath::best()));
        for t in [
            1, 7, 8, 31, 32, 33, 63, 64, 65, 95, 96, 97, 255, 256, 257, 288, 320, 352, 384, 416,
            448, 480, 481, 511, 512, 513, 1376, 1380,
        ] {
            for n in [0, 1, 2, 5, 13, 40] {
                let nrows = 50;
                let base: Vec<u8> = (0..nrows * t).map(|_| next() as u8).collect();
                let rows: Vec<u32> = (0..n).map(|_| next() % nrows as u32).collect();
                let first: Vec<u8> = (0..t).map(|_| next() as u8).collect();
                let mut want = first.clone();
                for &r in &rows {
                    for (w, b) in want.iter_mut().zip(&base[r as usize * t..]) {
                        *w ^= b;
                    }
                }
                for &path in &paths {
                    let mut got = vec![0xAAu8; t];
                    // SAFETY: the path is available; every row is inside `base`; `got` is a
                    // separate buffer of t bytes.
                    unsafe {
                        path.xor_rows(got.as_mut_ptr(), first.as_ptr(), base.as_ptr(), &rows, t)
                    };
                    assert_eq!(got, want, "{path:?}, t {t}, {n} rows");
                    let mut inplace = first.clone();
                    let p = inplace.as_mut_ptr();
                    // SAFETY: as above, with `first` = `dst`, which is allowed.
                    unsafe { path.xor_rows(p, p, base.as_ptr(), &rows, t) };
                    assert_eq!(inplace, want, "{path:?} in place, t {t}, {n} rows");
                }
            }
        }
    }

    #[test]
    fn tables_match_reference_multiplication() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(mul(a, b), slow_mul(a, b), "{a}·{b}");
            }
        }
    }

    #[test]
    fn inverses() {
        assert_eq!(inv(0), None);
        for a in 1..=255u8 {
            assert_eq!(mul(a, inv(a).unwrap()), 1, "{a}");
        }
    }

    #[test]
    fn unavailable_or_mismatched_input_is_an_error() {
        let mut d = [0u8; 3];
        assert_eq!(
            Kernel::Scalar.mul_add(&mut d, &[1, 2], 7),
            Err(Error::LengthMismatch {
                expected: 3,
                actual: 2
            })
        );
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn this_machine_has_a_simd_kernel_when_x86() {
        // Not a correctness property, but a guard that dispatch is not silently scalar on the
        // machines the benchmarks are run on.
        if std::arch::is_x86_feature_detected!("ssse3") {
            assert_ne!(Kernel::best(), Kernel::Scalar);
        }
        if Kernel::Gfni512.is_available() {
            assert_eq!(Kernel::best(), Kernel::Gfni512);
        }
    }
}
