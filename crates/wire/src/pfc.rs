//! IEEE 802.1Qbb priority-based flow control frame: an Ethernet MAC control frame
//! (EtherType 0x8808) with opcode 0x0101, a class-enable vector and eight 16-bit pause
//! times, one per priority, each in quanta of 512 bit times at the receiving port's speed.
//! A set bit `i` of the vector says time `i` is valid: a time above zero pauses priority `i`
//! for that long (XOFF), zero resumes it at once (XON). Sent to the reserved multicast
//! address 01:80:C2:00:00:01 and padded to the 64-byte minimum frame (60 bytes here: frames
//! are stored and captured without their FCS). The view covers the whole frame, Ethernet
//! header included, because a PFC frame is link-local and never carries IP.

use crate::error::{check_len, Result, WireError};
use crate::view::packet_view;

/// EtherType of MAC control frames.
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
/// MAC control opcode of a PFC frame (0x0001 is the 802.3x PAUSE of the whole link).
pub const OPCODE_PFC: u16 = 0x0101;
/// Destination of every PFC frame (the MAC control reserved multicast address).
pub const DST_MAC: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// Priorities (traffic classes) a PFC frame carries a time for.
pub const PRIORITIES: usize = 8;
/// Bit times in one pause quantum.
pub const QUANTUM_BITS: u64 = 512;
/// The pause time an XOFF usually carries: the longest there is.
pub const XOFF_QUANTA: u16 = 0xffff;

mod field {
    /// The Ethernet header's (a PFC frame is a MAC control frame on Ethernet).
    pub use crate::ethernet::field::{DST, ETHERTYPE, SRC};
    use core::ops::Range;
    pub const OPCODE: Range<usize> = 14..16;
    /// High byte reserved (zero), low byte one enable bit per priority.
    pub const CLASS_ENABLE: Range<usize> = 16..18;
    /// Eight big-endian pause times, priority 0 first.
    pub const TIMES: usize = 18;
    pub const TIMES_END: usize = TIMES + 2 * super::PRIORITIES;
}

/// Bytes up to the last pause time.
pub const HEADER_LEN: usize = field::TIMES_END;
/// Length of the frame on the wire without its FCS: the minimum frame.
pub const FRAME_LEN: usize = super::ethernet::MIN_FRAME_LEN;

packet_view! {
    /// Zero-copy view of a PFC frame, from its Ethernet destination to the pause times.
    "pfc"
}

impl<T: AsRef<[u8]>> Packet<T> {
    #[inline]
    pub fn dst(&self) -> [u8; 6] {
        mac(&self.b()[field::DST])
    }

    #[inline]
    pub fn src(&self) -> [u8; 6] {
        mac(&self.b()[field::SRC])
    }

    #[inline]
    pub fn ethertype(&self) -> u16 {
        self.get(field::ETHERTYPE) as u16
    }

    #[inline]
    pub fn opcode(&self) -> u16 {
        self.get(field::OPCODE) as u16
    }

    /// The class-enable vector (its reserved high byte included).
    #[inline]
    pub fn class_enable(&self) -> u16 {
        self.get(field::CLASS_ENABLE) as u16
    }

    /// Pause time of priority `priority` (0..8), in quanta.
    #[inline]
    pub fn quanta(&self, priority: usize) -> u16 {
        let at = field::TIMES + 2 * priority;
        self.get(at..at + 2) as u16
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    #[inline]
    pub fn set_dst(&mut self, mac: [u8; 6]) {
        self.b_mut()[field::DST].copy_from_slice(&mac);
    }

    #[inline]
    pub fn set_src(&mut self, mac: [u8; 6]) {
        self.b_mut()[field::SRC].copy_from_slice(&mac);
    }

    #[inline]
    pub fn set_ethertype(&mut self, v: u16) {
        self.set(field::ETHERTYPE, v.into());
    }

    #[inline]
    pub fn set_opcode(&mut self, v: u16) {
        self.set(field::OPCODE, v.into());
    }

    #[inline]
    pub fn set_class_enable(&mut self, v: u16) {
        self.set(field::CLASS_ENABLE, v.into());
    }

    #[inline]
    pub fn set_quanta(&mut self, priority: usize, v: u16) {
        let at = field::TIMES + 2 * priority;
        self.set(at..at + 2, v.into());
    }
}

#[inline]
fn mac(bytes: &[u8]) -> [u8; 6] {
    let mut out = [0u8; 6];
    out.copy_from_slice(bytes);
    out
}

/// High-level PFC frame: who sent it and, per priority, the pause time if enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PfcRepr {
    /// The sending port's MAC address.
    pub src: [u8; 6],
    /// Per priority: `Some(quanta)` if its class-enable bit is set.
    pub quanta: [Option<u16>; PRIORITIES],
}

impl PfcRepr {
    /// An XOFF of `priority` for `quanta` (above zero) from `src`.
    pub fn xoff(src: [u8; 6], priority: u8, quanta: u16) -> PfcRepr {
        let mut r = PfcRepr {
            src,
            ..PfcRepr::default()
        };
        r.quanta[usize::from(priority) % PRIORITIES] = Some(quanta);
        r
    }

    /// The XON of `priority` from `src` (its pause time zero).
    pub fn xon(src: [u8; 6], priority: u8) -> PfcRepr {
        PfcRepr::xoff(src, priority, 0)
    }

    /// Reads a PFC frame: MAC control EtherType, PFC opcode and the reserved destination
    /// are required; the reserved high byte of the vector and the padding are ignored, as
    /// the standard asks of a receiver. Times of disabled priorities are not reported.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<PfcRepr> {
        check_len("pfc", HEADER_LEN, packet.b().len())?;
        if packet.ethertype() != ETHERTYPE_MAC_CONTROL {
            return Err(bad("ethertype", packet.ethertype().into()));
        }
        if packet.opcode() != OPCODE_PFC {
            return Err(bad("opcode", packet.opcode().into()));
        }
        if packet.dst() != DST_MAC {
            let d = packet.dst();
            let v = d.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
            return Err(bad("destination", v));
        }
        let enable = packet.class_enable() & 0xff;
        let mut quanta = [None; PRIORITIES];
        for (i, q) in quanta.iter_mut().enumerate() {
            if enable & (1 << i) != 0 {
                *q = Some(packet.quanta(i));
            }
        }
        Ok(PfcRepr {
            src: packet.src(),
            quanta,
        })
    }

    /// The frame's length without FCS (the minimum frame, padded).
    pub fn buffer_len(&self) -> usize {
        FRAME_LEN
    }

    /// Writes the whole frame, padding zeroed, into a buffer of at least
    /// [`PfcRepr::buffer_len`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_dst(DST_MAC);
        packet.set_src(self.src);
        packet.set_ethertype(ETHERTYPE_MAC_CONTROL);
        packet.set_opcode(OPCODE_PFC);
        let mut enable = 0u16;
        for (i, q) in self.quanta.iter().enumerate() {
            enable |= u16::from(q.is_some()) << i;
            packet.set_quanta(i, q.unwrap_or(0));
        }
        packet.set_class_enable(enable);
        packet.b_mut()[HEADER_LEN..FRAME_LEN].fill(0);
    }

    /// The frame as bytes.
    pub fn to_bytes(&self) -> [u8; FRAME_LEN] {
        let mut buf = [0u8; FRAME_LEN];
        self.emit(&mut Packet::new_unchecked(&mut buf[..]));
        buf
    }
}

fn bad(field: &'static str, value: u64) -> WireError {
    WireError::BadField {
        layer: "pfc",
        field,
        value,
    }
}

/// Whether `frame` is a MAC control frame (EtherType 0x8808): PAUSE or PFC, never data.
pub fn is_mac_control(frame: &[u8]) -> bool {
    frame.len() >= field::ETHERTYPE.end
        && frame[field::ETHERTYPE] == ETHERTYPE_MAC_CONTROL.to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An XOFF of priority 3 for 0xffff quanta from 00:1b:21:aa:bb:cc, byte by byte as
    /// IEEE 802.1Qbb lays it out: DA, SA, 0x8808, 0x0101, vector 0x0008, eight times (only
    /// the fourth non-zero), then 26 bytes of padding. tshark decodes these bytes as MAC
    /// control opcode 0x0101 with `macc.cbfc.enbv == 0x0008` and
    /// `macc.cbfc.pause_time.c3 == 65535`.
    const XOFF3: [u8; 60] = [
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, // DA
        0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc, // SA
        0x88, 0x08, // MAC control
        0x01, 0x01, // PFC
        0x00, 0x08, // class-enable: priority 3
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, // times 0..3
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // times 4..7
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    const SRC: [u8; 6] = [0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc];

    #[test]
    fn parse_an_xoff() {
        let p = Packet::new_checked(&XOFF3[..]).unwrap();
        assert_eq!(p.opcode(), 0x0101);
        assert_eq!(p.quanta(3), 0xffff);
        let r = PfcRepr::parse(&p).unwrap();
        assert_eq!(r, PfcRepr::xoff(SRC, 3, XOFF_QUANTA));
        assert_eq!(r.quanta[3], Some(0xffff));
        assert_eq!(r.quanta[0], None);
    }

    #[test]
    fn emit_an_xoff_and_an_xon() {
        assert_eq!(PfcRepr::xoff(SRC, 3, 0xffff).to_bytes(), XOFF3);
        let mut xon = XOFF3;
        xon[24] = 0;
        xon[25] = 0;
        assert_eq!(PfcRepr::xon(SRC, 3).to_bytes(), xon);
        let r = PfcRepr::parse(&Packet::new_checked(&xon[..]).unwrap()).unwrap();
        assert_eq!(r.quanta[3], Some(0));
        assert_eq!(r.buffer_len(), 60);
    }

    #[test]
    fn several_priorities_and_reserved_bits() {
        let mut f = XOFF3;
        f[16] = 0xa5; // reserved high byte: ignored
        f[17] = 0x81; // priorities 0 and 7
        f[18..20].copy_from_slice(&[0x12, 0x34]);
        f[32..34].copy_from_slice(&[0x00, 0x10]);
        let r = PfcRepr::parse(&Packet::new_checked(&f[..]).unwrap()).unwrap();
        assert_eq!(r.quanta[0], Some(0x1234));
        assert_eq!(r.quanta[7], Some(0x10));
        assert_eq!(r.quanta[3], None, "time 3 is set but not enabled");
    }

    #[test]
    fn not_pfc_is_refused() {
        let mut f = XOFF3;
        f[15] = 0x01 - 1; // opcode 0x0100
        let e = PfcRepr::parse(&Packet::new_checked(&f[..]).unwrap());
        assert_eq!(e, Err(bad("opcode", 0x0100)));
        let mut f = XOFF3;
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let e = PfcRepr::parse(&Packet::new_checked(&f[..]).unwrap());
        assert_eq!(e, Err(bad("ethertype", 0x0800)));
        assert!(!is_mac_control(&f));
        assert!(is_mac_control(&XOFF3));
        let mut f = XOFF3;
        f[5] = 0x02;
        let e = PfcRepr::parse(&Packet::new_checked(&f[..]).unwrap());
        assert_eq!(e, Err(bad("destination", 0x0180_c200_0002)));
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Packet::new_checked(&XOFF3[..33]).unwrap_err(),
            WireError::Truncated {
                layer: "pfc",
                need: 34,
                have: 33
            }
        );
    }
}
