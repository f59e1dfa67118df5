//! The zero-copy view boilerplate shared by the fixed-size extension headers.

/// Defines `Packet<T>` with `new_unchecked`, `new_checked` (needs `HEADER_LEN` in scope and
/// returns `Truncated` naming `$layer`), `into_inner` and private byte accessors.
macro_rules! packet_view {
    ($layer:literal) => {
        /// Zero-copy view of the header at the start of a buffer.
        #[derive(Debug, Clone)]
        pub struct Packet<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> Packet<T> {
            /// Wraps a buffer without checking its length; accessors panic if it is shorter
            /// than `HEADER_LEN`. Use `new_checked` for untrusted bytes.
            pub fn new_unchecked(buffer: T) -> Packet<T> {
                Packet { buffer }
            }

            /// Wraps a buffer after checking that it holds the whole header.
            pub fn new_checked(buffer: T) -> $crate::Result<Packet<T>> {
                $crate::error::check_len($layer, HEADER_LEN, buffer.as_ref().len())?;
                Ok(Packet { buffer })
            }

            pub fn into_inner(self) -> T {
                self.buffer
            }

            fn b(&self) -> &[u8] {
                self.buffer.as_ref()
            }

            #[allow(dead_code)]
            fn get(&self, range: core::ops::Range<usize>) -> u64 {
                $crate::be::read(&self.b()[range])
            }
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
            #[allow(dead_code)]
            fn set(&mut self, range: core::ops::Range<usize>, value: u64) {
                $crate::be::write(&mut self.buffer.as_mut()[range], value)
            }
        }
    };
}

pub(crate) use packet_view;
