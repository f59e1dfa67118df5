//! A work request's scatter/gather list: one element inline (what perftest and most
//! applications post), more in a boxed slice. A `Vec` would cost one heap block per posted
//! WR, allocated when the driver builds the WR and kept until the peer acknowledges the
//! WQE; a million QPs with one WQE each would keep a million of those blocks. The same
//! list moves from the WR into the queued WQE without being copied or reallocated.

use core::ops::{Deref, DerefMut};

/// A scatter/gather element: `len` bytes at `addr`, inside the region of `lkey`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Sge {
    pub addr: u64,
    pub len: u32,
    pub lkey: u32,
}

/// The scatter/gather list of a [`SendWr`](crate::SendWr). Builds from a `Vec`, a slice, an
/// array or one [`Sge`] (`.into()`), and reads as a `&[Sge]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Sgl(Repr);

/// How the elements are held.
#[derive(Clone, PartialEq, Eq)]
enum Repr {
    /// One element, inline.
    One(Sge),
    /// None (a zero-length message: an empty boxed slice allocates nothing) or several.
    Many(Box<[Sge]>),
}

impl Sgl {
    /// The empty list (a zero-length message); allocates nothing.
    pub fn new() -> Sgl {
        Sgl(Repr::Many(Box::new([])))
    }

    /// A one-element list, held inline.
    pub fn one(sge: Sge) -> Sgl {
        Sgl(Repr::One(sge))
    }

    /// The elements in order.
    pub fn as_slice(&self) -> &[Sge] {
        match &self.0 {
            Repr::One(s) => core::slice::from_ref(s),
            Repr::Many(s) => s,
        }
    }

    /// The elements in order, to change in place.
    pub fn as_mut_slice(&mut self) -> &mut [Sge] {
        match &mut self.0 {
            Repr::One(s) => core::slice::from_mut(s),
            Repr::Many(s) => s,
        }
    }
}

impl Default for Sgl {
    fn default() -> Sgl {
        Sgl::new()
    }
}

/// Prints as the `Vec` it replaced did, so that debug output is unchanged.
impl core::fmt::Debug for Sgl {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl Deref for Sgl {
    type Target = [Sge];
    fn deref(&self) -> &[Sge] {
        self.as_slice()
    }
}

impl DerefMut for Sgl {
    fn deref_mut(&mut self) -> &mut [Sge] {
        self.as_mut_slice()
    }
}

impl From<Sge> for Sgl {
    fn from(sge: Sge) -> Sgl {
        Sgl::one(sge)
    }
}

/// Takes the vector's block as it is for several elements (no copy).
impl From<Vec<Sge>> for Sgl {
    fn from(sgl: Vec<Sge>) -> Sgl {
        match sgl.as_slice() {
            [one] => Sgl::one(*one),
            _ => Sgl(Repr::Many(sgl.into_boxed_slice())),
        }
    }
}

impl From<&[Sge]> for Sgl {
    fn from(sgl: &[Sge]) -> Sgl {
        match sgl {
            [one] => Sgl::one(*one),
            _ => Sgl(Repr::Many(sgl.into())),
        }
    }
}

impl<const N: usize> From<[Sge; N]> for Sgl {
    fn from(sgl: [Sge; N]) -> Sgl {
        Sgl::from(&sgl[..])
    }
}

impl FromIterator<Sge> for Sgl {
    fn from_iter<I: IntoIterator<Item = Sge>>(iter: I) -> Sgl {
        Sgl::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl PartialEq<[Sge]> for Sgl {
    fn eq(&self, other: &[Sge]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<Vec<Sge>> for Sgl {
    fn eq(&self, other: &Vec<Sge>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sge(i: u32) -> Sge {
        Sge {
            addr: 0x1000 * u64::from(i),
            len: 64 + i,
            lkey: i,
        }
    }

    #[test]
    fn one_element_stays_inline_and_every_list_reads_back_in_order() {
        for n in 0..4 {
            let v: Vec<Sge> = (0..n).map(sge).collect();
            let from_vec = Sgl::from(v.clone());
            assert_eq!(from_vec.as_slice(), v.as_slice());
            assert_eq!(matches!(from_vec.0, Repr::One(_)), n == 1);
            assert_eq!(Sgl::from(v.as_slice()), from_vec);
            assert_eq!((0..n).map(sge).collect::<Sgl>(), from_vec);
            assert_eq!(format!("{from_vec:?}"), format!("{v:?}"));
        }
        assert_eq!(Sgl::from([sge(1), sge(2)]), vec![sge(1), sge(2)]);
        assert!(Sgl::default().is_empty());
        // No larger than the Vec it replaces.
        assert!(core::mem::size_of::<Sgl>() <= core::mem::size_of::<Vec<Sge>>());
    }

    #[test]
    fn elements_change_in_place() {
        let mut s = Sgl::one(sge(1));
        s[0].len = 7;
        assert_eq!(s[0].len, 7);
    }
}
