//! The zero-copy view boilerplate every header shares, so a header module states only its field
//! ranges, its accessors and its `Repr`.

/// Defines `Packet<T>`, the zero-copy view of a header at the start of a buffer, documented by
/// the doc comments given before the layer name:
///
/// - `new_checked` checks that the buffer holds `HEADER_LEN` bytes (a constant the module must
///   have in scope) and otherwise returns `Truncated` naming `$layer`. Length fields inside the
///   header (IPv4 total length, UDP length) are checked by the layer's `Repr::parse`, which sees
///   the whole datagram.
/// - `new_unchecked` wraps without any check, for the hot path of callers that validated the
///   frame already (e.g. with `peek_roce` or `FrameRepr::parse`); accessors then panic on a
///   buffer shorter than the header.
/// - `into_inner`, and the private helpers `b`/`b_mut` (raw bytes) and `get`/`set` (big-endian
///   field at a byte range) the accessors are written with.
///
/// Everything is `#[inline]`: a view is a reference plus constant offsets, and a simulator
/// reading one field of a frame should pay for one load, not a call.
macro_rules! packet_view {
    ($(#[$doc:meta])* $layer:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct Packet<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> Packet<T> {
            /// Wraps a buffer without checking its length, for callers that validated the
            /// frame already; accessors panic if it is shorter than `HEADER_LEN`. Use
            /// `new_checked` for untrusted bytes.
            #[inline]
            pub fn new_unchecked(buffer: T) -> Packet<T> {
                Packet { buffer }
            }

            /// Wraps a buffer after checking that it holds the whole header.
            #[inline]
            pub fn new_checked(buffer: T) -> $crate::Result<Packet<T>> {
                $crate::error::check_len($layer, HEADER_LEN, buffer.as_ref().len())?;
                Ok(Packet { buffer })
            }

            /// Returns the wrapped buffer.
            #[inline]
            pub fn into_inner(self) -> T {
                self.buffer
            }

            #[inline]
            fn b(&self) -> &[u8] {
                self.buffer.as_ref()
            }

            #[allow(dead_code)]
            #[inline]
            fn get(&self, range: core::ops::Range<usize>) -> u64 {
                $crate::be::read(&self.b()[range])
            }
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
            #[allow(dead_code)]
            #[inline]
            fn b_mut(&mut self) -> &mut [u8] {
                self.buffer.as_mut()
            }

            #[allow(dead_code)]
            #[inline]
            fn set(&mut self, range: core::ops::Range<usize>, value: u64) {
                $crate::be::write(&mut self.buffer.as_mut()[range], value)
            }
        }
    };
}

pub(crate) use packet_view;
