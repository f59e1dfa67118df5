//! ACK Extended Transport Header (4 bytes): syndrome (ACK / RNR NAK / NAK) and MSN.

use crate::error::{check_len, Result, WireError};
use crate::view::packet_view;

mod field {
    use core::ops::Range;
    pub const SYNDROME: Range<usize> = 0..1;
    pub const MSN: Range<usize> = 1..4;
}

/// Length of the AETH in bytes.
pub const HEADER_LEN: usize = field::MSN.end;
/// Credit code meaning "no end-to-end credit limit".
pub const CREDITS_UNLIMITED: u8 = 0x1F;

packet_view! {
    /// Zero-copy view of an AETH.
    "aeth"
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// The raw syndrome byte; bits 6–5 select the kind, bits 4–0 its value.
    #[inline]
    pub fn syndrome_raw(&self) -> u8 {
        self.get(field::SYNDROME) as u8
    }

    /// Message sequence number (24 bit): requests completed by the responder.
    #[inline]
    pub fn msn(&self) -> u32 {
        self.get(field::MSN) as u32
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    #[inline]
    pub fn set_syndrome_raw(&mut self, v: u8) {
        self.set(field::SYNDROME, v.into());
    }

    /// Sets the 24-bit MSN; higher bits are dropped.
    #[inline]
    pub fn set_msn(&mut self, v: u32) {
        self.set(field::MSN, v.into());
    }
}

/// Why a responder refused a request (syndrome 0x60 + code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    PsnSequenceError,
    InvalidRequest,
    RemoteAccessError,
    RemoteOperationalError,
    InvalidRdRequest,
}

/// The meaning of the syndrome byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AethSyndrome {
    /// Positive ACK with a 5-bit credit code ([`CREDITS_UNLIMITED`] = no limit).
    Ack {
        credits: u8,
    },
    /// Receiver not ready; 5-bit RNR timer code the requester must wait.
    RnrNak {
        timer: u8,
    },
    Nak(NakCode),
}

const KIND_ACK: u8 = 0b00 << 5;
const KIND_RNR: u8 = 0b01 << 5;
const KIND_NAK: u8 = 0b11 << 5;

impl AethSyndrome {
    /// Decodes a syndrome byte; kind 10 (reserved) and unknown NAK codes are `BadField`.
    /// Bit 7 is reserved and ignored.
    pub fn from_u8(v: u8) -> Result<AethSyndrome> {
        let value = v & 0x1F;
        let bad = || WireError::BadField {
            layer: "aeth",
            field: "syndrome",
            value: v.into(),
        };
        Ok(match v & 0x60 {
            KIND_ACK => AethSyndrome::Ack { credits: value },
            KIND_RNR => AethSyndrome::RnrNak { timer: value },
            KIND_NAK => AethSyndrome::Nak(match value {
                0 => NakCode::PsnSequenceError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccessError,
                3 => NakCode::RemoteOperationalError,
                4 => NakCode::InvalidRdRequest,
                _ => return Err(bad()),
            }),
            _ => return Err(bad()),
        })
    }

    /// The syndrome byte; credit and timer codes keep their low 5 bits.
    pub fn as_u8(self) -> u8 {
        match self {
            AethSyndrome::Ack { credits } => KIND_ACK | (credits & 0x1F),
            AethSyndrome::RnrNak { timer } => KIND_RNR | (timer & 0x1F),
            AethSyndrome::Nak(code) => KIND_NAK | code as u8,
        }
    }
}

/// High-level AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AethRepr {
    pub syndrome: AethSyndrome,
    /// 24-bit message sequence number.
    pub msn: u32,
}

impl AethRepr {
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<AethRepr> {
        check_len("aeth", HEADER_LEN, packet.b().len())?;
        Ok(AethRepr {
            syndrome: AethSyndrome::from_u8(packet.syndrome_raw())?,
            msn: packet.msn(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_syndrome_raw(self.syndrome.as_u8());
        packet.set_msn(self.msn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(b: &[u8]) -> Result<AethRepr> {
        AethRepr::parse(&Packet::new_checked(b)?)
    }

    #[test]
    fn parse_emit_real_bytes() {
        let cases = [
            (
                [0x1f, 0x00, 0x00, 0x05],
                AethSyndrome::Ack {
                    credits: CREDITS_UNLIMITED,
                },
                5,
            ),
            (
                [0x2e, 0x01, 0x02, 0x03],
                AethSyndrome::RnrNak { timer: 14 },
                0x010203,
            ),
            (
                [0x60, 0x00, 0x00, 0x07],
                AethSyndrome::Nak(NakCode::PsnSequenceError),
                7,
            ),
            (
                [0x61, 0x00, 0x00, 0x00],
                AethSyndrome::Nak(NakCode::InvalidRequest),
                0,
            ),
            (
                [0x62, 0x00, 0x00, 0x00],
                AethSyndrome::Nak(NakCode::RemoteAccessError),
                0,
            ),
            (
                [0x63, 0x00, 0x00, 0x00],
                AethSyndrome::Nak(NakCode::RemoteOperationalError),
                0,
            ),
            (
                [0x64, 0xff, 0xff, 0xff],
                AethSyndrome::Nak(NakCode::InvalidRdRequest),
                0xffffff,
            ),
        ];
        for (bytes, syndrome, msn) in cases {
            let repr = AethRepr { syndrome, msn };
            assert_eq!(parse(&bytes), Ok(repr));
            let mut buf = [0u8; 4];
            repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
            assert_eq!(buf, bytes);
        }
    }

    #[test]
    fn errors() {
        assert_eq!(
            parse(&[0x1f, 0, 0]),
            Err(WireError::Truncated {
                layer: "aeth",
                need: 4,
                have: 3
            })
        );
        assert_eq!(
            parse(&[0x40, 0, 0, 0]),
            Err(WireError::BadField {
                layer: "aeth",
                field: "syndrome",
                value: 0x40
            })
        );
        assert!(matches!(
            parse(&[0x65, 0, 0, 0]),
            Err(WireError::BadField { value: 0x65, .. })
        ));
    }
}
