//! A queued send WQE's scatter/gather list: one element inline (what perftest and most
//! applications post), more in a boxed slice. `SendWr::sgl` is a `Vec`, one heap block per
//! WR; the requester keeps every WQE from post until the peer acknowledges it, so a million
//! QPs with one WQE each would keep a million of those blocks. The WR's `Vec` is dropped
//! when the WQE is queued.

use crate::wr::Sge;

/// The SGL of a queued WQE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WqeSgl {
    /// One element, inline.
    One(Sge),
    /// None (a zero-length message: no allocation) or several.
    Many(Box<[Sge]>),
}

impl WqeSgl {
    /// Takes the WR's list.
    pub(crate) fn from_vec(sgl: Vec<Sge>) -> WqeSgl {
        match sgl.as_slice() {
            [one] => WqeSgl::One(*one),
            _ => WqeSgl::Many(sgl.into_boxed_slice()),
        }
    }

    /// The elements in order.
    pub(crate) fn as_slice(&self) -> &[Sge] {
        match self {
            WqeSgl::One(s) => std::slice::from_ref(s),
            WqeSgl::Many(s) => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_element_stays_inline_and_every_list_reads_back_in_order() {
        let sge = |i: u32| Sge {
            addr: 0x1000 * u64::from(i),
            len: 64 + i,
            lkey: i,
        };
        for n in 0..4 {
            let v: Vec<Sge> = (0..n).map(sge).collect();
            let s = WqeSgl::from_vec(v.clone());
            assert_eq!(s.as_slice(), v.as_slice());
            assert_eq!(matches!(s, WqeSgl::One(_)), n == 1);
        }
        // No larger than the Vec it replaces.
        assert!(std::mem::size_of::<WqeSgl>() <= std::mem::size_of::<Vec<Sge>>());
    }
}
