//! IOVA allocation: first-fit over free ranges with coalescing on free.

use std::collections::BTreeMap;

use crate::error::{Result, VfioError};

/// Hands out non-overlapping, aligned ranges of an IOVA window and takes them back.
///
/// Free ranges are kept in a `BTreeMap<start, len>`; allocation is first fit (lowest address
/// that fits with the requested alignment, the unaligned head staying free); freeing merges the
/// range with free neighbours, so fragmentation disappears once everything is freed. Only ranges
/// exactly as allocated can be freed (double frees and partial frees are errors).
#[derive(Debug, Clone)]
pub struct IovaAllocator {
    start: u64,
    end: u64,
    free: BTreeMap<u64, u64>,
    used: BTreeMap<u64, u64>,
}

impl IovaAllocator {
    /// An allocator for `[start, end)`.
    pub fn new(start: u64, end: u64) -> Result<Self> {
        if end <= start {
            return Err(VfioError::InvalidArgument {
                op: "IovaAllocator::new",
                reason: format!("empty IOVA window {start:#x}..{end:#x}"),
            });
        }
        let mut free = BTreeMap::new();
        free.insert(start, end - start);
        Ok(IovaAllocator {
            start,
            end,
            free,
            used: BTreeMap::new(),
        })
    }

    /// Allocate `len` bytes aligned to `align` (a power of two).
    pub fn alloc(&mut self, len: u64, align: u64) -> Result<u64> {
        if len == 0 || !align.is_power_of_two() {
            return Err(VfioError::InvalidArgument {
                op: "IovaAllocator::alloc",
                reason: format!(
                    "length {len:#x} / alignment {align:#x} (need len > 0, power-of-two alignment)"
                ),
            });
        }
        let found = self.free.iter().find_map(|(&s, &l)| {
            let a = s.checked_add(align - 1)? & !(align - 1);
            let head = a - s;
            (l >= head && l - head >= len).then_some((s, l, a))
        });
        let Some((s, l, a)) = found else {
            return Err(VfioError::IovaExhausted {
                len,
                align,
                largest_free: self.largest_free(),
            });
        };
        self.free.remove(&s);
        if a > s {
            self.free.insert(s, a - s);
        }
        let tail_start = a + len;
        let tail = s + l - tail_start;
        if tail > 0 {
            self.free.insert(tail_start, tail);
        }
        self.used.insert(a, len);
        Ok(a)
    }

    /// Return a range obtained from [`alloc`](Self::alloc).
    pub fn free(&mut self, iova: u64, len: u64) -> Result<()> {
        if self.used.get(&iova) != Some(&len) {
            return Err(VfioError::NotAllocated { iova, len });
        }
        self.used.remove(&iova);
        let mut start = iova;
        let mut size = len;
        if let Some((&ps, &pl)) = self.free.range(..iova).next_back() {
            if ps + pl == iova {
                self.free.remove(&ps);
                start = ps;
                size += pl;
            }
        }
        if let Some(&nl) = self.free.get(&(iova + len)) {
            self.free.remove(&(iova + len));
            size += nl;
        }
        self.free.insert(start, size);
        Ok(())
    }

    /// Bytes currently free.
    pub fn free_bytes(&self) -> u64 {
        self.free.values().sum()
    }

    /// Largest free range.
    pub fn largest_free(&self) -> u64 {
        self.free.values().copied().max().unwrap_or(0)
    }

    /// Number of free ranges (1 when unfragmented).
    pub fn free_ranges(&self) -> usize {
        self.free.len()
    }

    /// The window.
    pub fn window(&self) -> (u64, u64) {
        (self.start, self.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn first_fit_alignment_and_exhaustion() {
        let mut a = IovaAllocator::new(0x1000, 0x9000).unwrap();
        let x = a.alloc(0x1000, 0x1000).unwrap();
        assert_eq!(x, 0x1000);
        let y = a.alloc(0x2000, 0x4000).unwrap();
        assert_eq!(y, 0x4000, "aligned up, head stays free");
        assert_eq!(a.free_bytes(), 0x8000 - 0x3000);
        let z = a.alloc(0x2000, 0x1000).unwrap();
        assert_eq!(z, 0x2000, "first fit takes the free head below y");
        // Left: 0x6000..0x9000 (12 KiB).
        let e = a.alloc(0x4000, 0x1000).unwrap_err();
        assert!(
            matches!(
                e,
                VfioError::IovaExhausted {
                    len: 0x4000,
                    largest_free: 0x3000,
                    ..
                }
            ),
            "{e}"
        );
        // 8 KiB fits by size but not with 16 KiB alignment (0x8000 + 0x2000 > 0x9000).
        let e = a.alloc(0x2000, 0x4000).unwrap_err();
        assert!(
            matches!(e, VfioError::IovaExhausted { align: 0x4000, .. }),
            "{e}"
        );
        assert_eq!(a.alloc(0x3000, 0x1000).unwrap(), 0x6000);
        assert_eq!(a.free_bytes(), 0);
    }

    #[test]
    fn fragmentation_then_coalescing() {
        let mut a = IovaAllocator::new(0, 0x10_000).unwrap();
        let v: Vec<u64> = (0..16).map(|_| a.alloc(0x1000, 0x1000).unwrap()).collect();
        assert!(a.alloc(0x1000, 0x1000).is_err());
        // Free every other page: 8 pages free, but no 2-page range.
        for p in v.iter().step_by(2) {
            a.free(*p, 0x1000).unwrap();
        }
        assert_eq!(a.free_bytes(), 0x8000);
        assert_eq!(a.free_ranges(), 8);
        let e = a.alloc(0x2000, 0x1000).unwrap_err();
        assert!(
            matches!(
                e,
                VfioError::IovaExhausted {
                    largest_free: 0x1000,
                    ..
                }
            ),
            "{e}"
        );
        // Freeing the rest coalesces into one range.
        for p in v.iter().skip(1).step_by(2) {
            a.free(*p, 0x1000).unwrap();
        }
        assert_eq!(a.free_ranges(), 1);
        assert_eq!(a.alloc(0x10_000, 0x1000).unwrap(), 0);
    }

    #[test]
    fn bad_frees_and_arguments() {
        let mut a = IovaAllocator::new(0, 0x4000).unwrap();
        let x = a.alloc(0x2000, 0x1000).unwrap();
        assert!(
            matches!(a.free(x, 0x1000), Err(VfioError::NotAllocated { .. })),
            "partial"
        );
        assert!(matches!(
            a.free(x + 0x1000, 0x1000),
            Err(VfioError::NotAllocated { .. })
        ));
        a.free(x, 0x2000).unwrap();
        assert!(
            matches!(a.free(x, 0x2000), Err(VfioError::NotAllocated { .. })),
            "double free"
        );
        assert!(a.alloc(0, 0x1000).is_err());
        assert!(a.alloc(0x1000, 3).is_err());
        assert!(IovaAllocator::new(5, 5).is_err());
        // Alignment overflow near the top of the address space is exhaustion, not a panic.
        let mut top = IovaAllocator::new(u64::MAX - 0x2000, u64::MAX).unwrap();
        assert!(top.alloc(0x1000, 1 << 63).is_err());
    }

    proptest! {
        /// Random alloc/free sequences: allocations never overlap, stay inside the window and
        /// aligned, and free + used always adds up to the window.
        #[test]
        fn never_overlaps(ops in proptest::collection::vec((any::<bool>(), 1u64..0x5000, 0u32..4, any::<prop::sample::Index>()), 1..200)) {
            let mut a = IovaAllocator::new(0x10_0000, 0x14_0000).unwrap();
            let mut live: Vec<(u64, u64)> = Vec::new();
            for (is_alloc, len, align_log, pick) in ops {
                if is_alloc || live.is_empty() {
                    let align = 0x1000u64 << align_log;
                    if let Ok(x) = a.alloc(len, align) {
                        prop_assert_eq!(x % align, 0);
                        prop_assert!(x >= 0x10_0000 && x + len <= 0x14_0000);
                        for &(s, l) in &live {
                            prop_assert!(x + len <= s || s + l <= x, "overlap");
                        }
                        live.push((x, len));
                    }
                } else {
                    let (s, l) = live.swap_remove(pick.index(live.len()));
                    a.free(s, l).unwrap();
                }
                let used: u64 = live.iter().map(|x| x.1).sum();
                prop_assert_eq!(used + a.free_bytes(), 0x4_0000);
            }
        }
    }
}
