//! Gather from and scatter into scatter/gather lists, every element checked against its MR.
//!
//! A message is the concatenation of its SGEs; `offset` is a byte position in that
//! concatenation. Each SGE a copy touches is checked with [`MrTable::check`] for exactly the
//! bytes touched, and scatter checks every piece before it writes any, so a refused access
//! leaves memory unchanged.

use crate::memory::Memory;
use crate::mr::{Access, MrCheckError, MrTable};
use crate::pd::PdId;
use crate::wr::Sge;

/// Why a gather or scatter was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SglError {
    /// An SGE failed its memory-region check.
    Protection(MrCheckError),
    /// The bytes do not fit in the SGL.
    TooLong,
}

impl SglError {
    /// The completion status of a work request whose local SGL was refused: a protection
    /// error, or a length error when the bytes do not fit.
    pub(crate) fn local_status(self) -> crate::WcStatus {
        match self {
            SglError::Protection(_) => crate::WcStatus::LocProtErr,
            SglError::TooLong => crate::WcStatus::LocLenErr,
        }
    }
}

/// Calls `f(sge, addr, piece)` for every piece of `[offset, offset + len)` in SGL order, with
/// `piece` the byte range of the piece in the copied data. Fails with `TooLong` before any
/// call if the range does not fit.
fn for_each_piece(
    sgl: &[Sge],
    offset: u64,
    len: usize,
    mut f: impl FnMut(&Sge, u64, core::ops::Range<usize>) -> Result<(), SglError>,
) -> Result<(), SglError> {
    let total: u64 = sgl.iter().map(|s| u64::from(s.len)).sum();
    let end = offset.checked_add(len as u64).ok_or(SglError::TooLong)?;
    if end > total {
        return Err(SglError::TooLong);
    }
    let mut skip = offset;
    let mut done = 0usize;
    for sge in sgl {
        if done == len {
            break;
        }
        let sge_len = u64::from(sge.len);
        if skip >= sge_len {
            skip -= sge_len;
            continue;
        }
        let take = core::cmp::min(sge_len - skip, (len - done) as u64) as usize;
        let addr = sge
            .addr
            .checked_add(skip)
            .ok_or(SglError::Protection(MrCheckError::OutOfBounds))?;
        f(sge, addr, done..done + take)?;
        done += take;
        skip = 0;
    }
    Ok(())
}

/// Reads `out.len()` message bytes starting at `offset` (local read: no right needed beyond a
/// valid key in `pd`).
pub(crate) fn gather(
    mem: &dyn Memory,
    mrs: &MrTable,
    pd: PdId,
    sgl: &[Sge],
    offset: u64,
    out: &mut [u8],
) -> Result<(), SglError> {
    let len = out.len();
    for_each_piece(sgl, offset, len, |sge, addr, piece| {
        mrs.check(sge.lkey, pd, addr, piece.len() as u64, Access::empty())
            .map_err(SglError::Protection)
    })?;
    for_each_piece(sgl, offset, len, |_, addr, piece| {
        mem.read(addr, &mut out[piece]);
        Ok(())
    })
}

/// Writes `data` at message offset `offset`; needs LOCAL_WRITE on every touched SGE. Nothing
/// is written unless every piece passes.
pub(crate) fn scatter(
    mem: &mut dyn Memory,
    mrs: &MrTable,
    pd: PdId,
    sgl: &[Sge],
    offset: u64,
    data: &[u8],
) -> Result<(), SglError> {
    for_each_piece(sgl, offset, data.len(), |sge, addr, piece| {
        mrs.check(sge.lkey, pd, addr, piece.len() as u64, Access::LOCAL_WRITE)
            .map_err(SglError::Protection)
    })?;
    for_each_piece(sgl, offset, data.len(), |_, addr, piece| {
        mem.write(addr, &data[piece]);
        Ok(())
    })
}

/// Whether `len` bytes at `offset` of `sgl` may be written locally (the check of
/// [`scatter`] without the write).
pub(crate) fn gather_check(mrs: &MrTable, pd: PdId, sgl: &[Sge], offset: u64, len: usize) -> bool {
    for_each_piece(sgl, offset, len, |sge, addr, piece| {
        mrs.check(sge.lkey, pd, addr, piece.len() as u64, Access::LOCAL_WRITE)
            .map_err(SglError::Protection)
    })
    .is_ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Byte map memory for unit tests.
    #[derive(Default)]
    pub(crate) struct MapMem(pub BTreeMap<u64, u8>);

    impl Memory for MapMem {
        fn read(&self, addr: u64, out: &mut [u8]) {
            for (i, b) in out.iter_mut().enumerate() {
                *b = *self.0.get(&(addr + i as u64)).unwrap_or(&0);
            }
        }
        fn write(&mut self, addr: u64, data: &[u8]) {
            for (i, b) in data.iter().enumerate() {
                self.0.insert(addr + i as u64, *b);
            }
        }
    }

    #[test]
    fn gather_and_scatter_span_sges() {
        let mut mrs = MrTable::new();
        let pd = PdId(0);
        let k = mrs.register(pd, 0, 1 << 20, Access::LOCAL_WRITE).unwrap();
        let ro = mrs.register(pd, 0, 1 << 20, Access::empty()).unwrap();
        let sgl = [
            Sge {
                addr: 100,
                len: 3,
                lkey: k,
            },
            Sge {
                addr: 0,
                len: 0,
                lkey: 999,
            },
            Sge {
                addr: 200,
                len: 4,
                lkey: k,
            },
        ];
        let mut mem = MapMem::default();
        scatter(&mut mem, &mrs, pd, &sgl, 1, &[1, 2, 3, 4]).unwrap();
        assert_eq!(mem.0.get(&101), Some(&1));
        assert_eq!(mem.0.get(&102), Some(&2));
        assert_eq!(mem.0.get(&200), Some(&3));
        assert_eq!(mem.0.get(&201), Some(&4));
        let mut out = [0u8; 7];
        gather(&mem, &mrs, pd, &sgl, 0, &mut out).unwrap();
        assert_eq!(out, [0, 1, 2, 3, 4, 0, 0]);
        assert_eq!(
            scatter(&mut mem, &mrs, pd, &sgl, 5, &[9, 9, 9]),
            Err(SglError::TooLong)
        );
        let ro_sgl = [Sge {
            addr: 0,
            len: 4,
            lkey: ro,
        }];
        assert_eq!(
            scatter(&mut mem, &mrs, pd, &ro_sgl, 0, &[1]),
            Err(SglError::Protection(MrCheckError::AccessDenied))
        );
        assert!(gather(&mem, &mrs, pd, &ro_sgl, 0, &mut out[..4]).is_ok());
        assert_eq!(
            gather(&mem, &mrs, PdId(1), &ro_sgl, 0, &mut out[..4]),
            Err(SglError::Protection(MrCheckError::PdMismatch))
        );
    }

    #[test]
    fn refused_scatter_writes_nothing() {
        let mut mrs = MrTable::new();
        let pd = PdId(0);
        let k = mrs.register(pd, 0, 16, Access::LOCAL_WRITE).unwrap();
        let sgl = [
            Sge {
                addr: 12,
                len: 4,
                lkey: k,
            },
            Sge {
                addr: 16,
                len: 4,
                lkey: k,
            },
        ];
        let mut mem = MapMem::default();
        assert_eq!(
            scatter(&mut mem, &mrs, pd, &sgl, 0, &[7; 8]),
            Err(SglError::Protection(MrCheckError::OutOfBounds))
        );
        assert!(mem.0.is_empty());
    }
}
