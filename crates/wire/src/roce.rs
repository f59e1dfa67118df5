//! The transport part of a RoCEv2 frame: BTH, the extension headers its opcode defines, the
//! payload and the pad; everything the ICRC covers after the UDP header, except the ICRC itself.

use crate::error::{check_len, Result, WireError};
use crate::{aeth, atomic_ack_eth, atomic_eth, bth, cnp, deth, ieth, immdt, ooo_eth, reth};
use crate::{
    AethRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, DethRepr, OooAckEthRepr, Opcode, RethRepr,
};

/// Everything from the BTH on, plus the payload it carries (pad and ICRC not included).
///
/// On emit, the extension headers written are those the opcode defines; a required one that is
/// `None` is written as zeros, one the opcode does not define is ignored. On parse, exactly the
/// opcode's headers are `Some`.
///
/// `payload` is emitted as given, even for an opcode that allows none (the frame then fails
/// [`crate::FrameRepr::parse`]); senders keep it empty for READ requests, ACKs, atomics and
/// CNPs.
///
/// Build one with [`RoceRepr::new`] and the `with_*` methods rather than a struct literal, so a
/// packet states the headers it has and not the seven it lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceRepr<'a> {
    pub bth: BthRepr,
    pub deth: Option<DethRepr>,
    pub reth: Option<RethRepr>,
    pub atomic_eth: Option<AtomicEthRepr>,
    pub aeth: Option<AethRepr>,
    pub atomic_ack: Option<AtomicAckEthRepr>,
    /// Immediate data (ImmDt).
    pub imm: Option<u32>,
    /// R_Key to invalidate (IETH).
    pub ieth: Option<u32>,
    /// Start-learnt flag and bitmap of an out-of-order ACK/NAK.
    pub ooo_ack: Option<OooAckEthRepr>,
    pub payload: &'a [u8],
}

impl<'a> RoceRepr<'a> {
    /// A packet of `bth` and `payload` without extension headers; add those the opcode defines
    /// with the `with_*` methods.
    pub const fn new(bth: BthRepr, payload: &'a [u8]) -> RoceRepr<'a> {
        RoceRepr {
            bth,
            deth: None,
            reth: None,
            atomic_eth: None,
            aeth: None,
            atomic_ack: None,
            imm: None,
            ieth: None,
            ooo_ack: None,
            payload,
        }
    }

    /// Sets the DETH; takes a `DethRepr` or an `Option` (`None` clears it), as do all `with_*`.
    pub fn with_deth(self, deth: impl Into<Option<DethRepr>>) -> RoceRepr<'a> {
        RoceRepr {
            deth: deth.into(),
            ..self
        }
    }

    pub fn with_reth(self, reth: impl Into<Option<RethRepr>>) -> RoceRepr<'a> {
        RoceRepr {
            reth: reth.into(),
            ..self
        }
    }

    pub fn with_atomic_eth(self, atomic_eth: impl Into<Option<AtomicEthRepr>>) -> RoceRepr<'a> {
        RoceRepr {
            atomic_eth: atomic_eth.into(),
            ..self
        }
    }

    pub fn with_aeth(self, aeth: impl Into<Option<AethRepr>>) -> RoceRepr<'a> {
        RoceRepr {
            aeth: aeth.into(),
            ..self
        }
    }

    pub fn with_atomic_ack(self, atomic_ack: impl Into<Option<AtomicAckEthRepr>>) -> RoceRepr<'a> {
        RoceRepr {
            atomic_ack: atomic_ack.into(),
            ..self
        }
    }

    /// Sets the immediate data (ImmDt).
    pub fn with_imm(self, imm: impl Into<Option<u32>>) -> RoceRepr<'a> {
        RoceRepr {
            imm: imm.into(),
            ..self
        }
    }

    /// Sets the R_Key to invalidate (IETH).
    pub fn with_ieth(self, rkey: impl Into<Option<u32>>) -> RoceRepr<'a> {
        RoceRepr {
            ieth: rkey.into(),
            ..self
        }
    }

    /// Sets the out-of-order ACK ETH.
    pub fn with_ooo_ack(self, ooo_ack: impl Into<Option<OooAckEthRepr>>) -> RoceRepr<'a> {
        RoceRepr {
            ooo_ack: ooo_ack.into(),
            ..self
        }
    }
}

/// Pad bytes that make `payload_len` a multiple of 4.
pub fn pad_len(payload_len: usize) -> usize {
    (4 - payload_len % 4) % 4
}

/// Checks that `have` bytes after the BTH hold every extension header `op` defines and returns
/// their length in bytes. A shortfall is `Truncated`, naming the first header cut short and
/// the bytes left for it. Shared by the parser and the peek so both report it alike.
#[inline]
pub(crate) fn checked_ext_len(op: Opcode, have: usize) -> Result<usize> {
    let need = op.ext_headers_len();
    if have < need {
        let mut left = have;
        for (_, layer, len) in op.ext_headers().into_iter().filter(|h| h.0) {
            check_len(layer, len, left)?;
            left -= len;
        }
    }
    Ok(need)
}

/// The payload length in bytes of a packet with `bth` whose payload and pad take `rest_len`
/// bytes: an opcode without payload must have neither payload nor pad; otherwise the pad must
/// fit and payload + pad fill whole 4-byte words. Shared by the parser and the peek.
#[inline]
pub(crate) fn checked_payload_len(bth: &BthRepr, rest_len: usize) -> Result<usize> {
    let op = bth.opcode;
    let pad = usize::from(bth.pad_count);
    let bad_pad = WireError::BadPadCount {
        opcode: op.as_u8(),
        pad: bth.pad_count,
    };
    if !op.has_payload() {
        if pad != 0 {
            return Err(bad_pad);
        }
        if rest_len != 0 {
            return Err(WireError::BadField {
                layer: "roce",
                field: "payload_len",
                value: rest_len as u64,
            });
        }
        Ok(0)
    } else if pad > rest_len || rest_len & 3 != 0 {
        Err(bad_pad)
    } else {
        Ok(rest_len - pad)
    }
}

/// Splits `n` bytes off the front of `rest`, or reports `layer` truncated.
fn take<'a>(rest: &mut &'a [u8], n: usize, layer: &'static str) -> Result<&'a [u8]> {
    check_len(layer, n, rest.len())?;
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Ok(head)
}

impl<'a> RoceRepr<'a> {
    /// BTH, extension headers, payload and pad, in bytes (ICRC not included).
    pub fn buffer_len(&self) -> usize {
        let payload = self.payload.len();
        self.headers_len() + payload + pad_len(payload)
    }

    /// Parses BTH..pad (the UDP payload without the ICRC).
    #[inline]
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<RoceRepr<'a>> {
        let mut rest = bytes;
        let bth = BthRepr::parse(&bth::Packet::new_unchecked(take(
            &mut rest,
            bth::HEADER_LEN,
            "bth",
        )?))?;
        let op = bth.opcode;
        checked_ext_len(op, rest.len())?;
        let mut r = RoceRepr::new(bth, &[]);
        if op.has_deth() {
            let b = take(&mut rest, deth::HEADER_LEN, "deth")?;
            r.deth = Some(DethRepr::parse(&deth::Packet::new_unchecked(b))?);
        }
        if op.has_reth() {
            let b = take(&mut rest, reth::HEADER_LEN, "reth")?;
            r.reth = Some(RethRepr::parse(&reth::Packet::new_unchecked(b))?);
        }
        if op.has_atomic_eth() {
            let b = take(&mut rest, atomic_eth::HEADER_LEN, "atomic_eth")?;
            r.atomic_eth = Some(AtomicEthRepr::parse(&atomic_eth::Packet::new_unchecked(b))?);
        }
        if op.has_aeth() {
            let b = take(&mut rest, aeth::HEADER_LEN, "aeth")?;
            r.aeth = Some(AethRepr::parse(&aeth::Packet::new_unchecked(b))?);
        }
        if op.has_atomic_ack_eth() {
            let b = take(&mut rest, atomic_ack_eth::HEADER_LEN, "atomic_ack_eth")?;
            r.atomic_ack = Some(AtomicAckEthRepr::parse(
                &atomic_ack_eth::Packet::new_unchecked(b),
            )?);
        }
        if op.has_immdt() {
            r.imm = Some(
                immdt::Packet::new_checked(take(&mut rest, immdt::HEADER_LEN, "immdt")?)?.imm(),
            );
        }
        if op.has_ieth() {
            r.ieth =
                Some(ieth::Packet::new_checked(take(&mut rest, ieth::HEADER_LEN, "ieth")?)?.rkey());
        }
        if op == Opcode::Cnp {
            take(&mut rest, cnp::HEADER_LEN, "cnp")?;
        }
        if op.has_ooo_ack_eth() {
            let b = take(&mut rest, ooo_eth::HEADER_LEN, "ooo_ack_eth")?;
            r.ooo_ack = Some(OooAckEthRepr::parse(&ooo_eth::Packet::new_unchecked(b))?);
        }
        let payload_len = checked_payload_len(&bth, rest.len())?;
        r.payload = rest.get(..payload_len).unwrap_or(&[]);
        Ok(r)
    }

    /// Bytes of the BTH and the extension headers: where the payload starts.
    pub(crate) fn headers_len(&self) -> usize {
        bth::HEADER_LEN + self.bth.opcode.ext_headers_len()
    }

    /// Writes the BTH and the extension headers into `buf`, which must be exactly
    /// [`RoceRepr::headers_len`] long and zeroed (a header left out, an AETH of `None`, stays
    /// zero); the payload and pad are the caller's. The BTH pad count is taken from the
    /// payload length, not from `self.bth`.
    pub(crate) fn emit_headers(&self, buf: &mut [u8]) {
        let op = self.bth.opcode;
        let pad = pad_len(self.payload.len());
        let bth = BthRepr {
            pad_count: pad as u8,
            ..self.bth
        };
        let (head, mut rest) = buf.split_at_mut(bth::HEADER_LEN);
        bth.emit(&mut bth::Packet::new_unchecked(head));
        let mut next = |n: usize| {
            let (head, tail) = core::mem::take(&mut rest).split_at_mut(n);
            rest = tail;
            head
        };
        if op.has_deth() {
            let b = next(deth::HEADER_LEN);
            self.deth
                .unwrap_or_default()
                .emit(&mut deth::Packet::new_unchecked(b));
        }
        if op.has_reth() {
            let b = next(reth::HEADER_LEN);
            self.reth
                .unwrap_or_default()
                .emit(&mut reth::Packet::new_unchecked(b));
        }
        if op.has_atomic_eth() {
            let b = next(atomic_eth::HEADER_LEN);
            self.atomic_eth
                .unwrap_or_default()
                .emit(&mut atomic_eth::Packet::new_unchecked(b));
        }
        if op.has_aeth() {
            let b = next(aeth::HEADER_LEN);
            if let Some(a) = self.aeth {
                a.emit(&mut aeth::Packet::new_unchecked(b));
            }
        }
        if op.has_atomic_ack_eth() {
            let b = next(atomic_ack_eth::HEADER_LEN);
            self.atomic_ack
                .unwrap_or_default()
                .emit(&mut atomic_ack_eth::Packet::new_unchecked(b));
        }
        if op.has_immdt() {
            immdt::Packet::new_unchecked(next(immdt::HEADER_LEN)).set_imm(self.imm.unwrap_or(0));
        }
        if op.has_ieth() {
            ieth::Packet::new_unchecked(next(ieth::HEADER_LEN)).set_rkey(self.ieth.unwrap_or(0));
        }
        if op == Opcode::Cnp {
            cnp::Packet::new_unchecked(next(cnp::HEADER_LEN)).clear_reserved();
        }
        if op.has_ooo_ack_eth() {
            let b = next(ooo_eth::HEADER_LEN);
            self.ooo_ack
                .unwrap_or_default()
                .emit(&mut ooo_eth::Packet::new_unchecked(b));
        }
        debug_assert!(rest.is_empty(), "the buffer holds exactly the headers");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AethSyndrome, Opcode};

    fn bth(opcode: Opcode) -> BthRepr {
        BthRepr {
            ack_req: true,
            ..BthRepr::new(opcode, 3, 9)
        }
    }

    #[test]
    fn builder_sets_exactly_the_headers_given() {
        let reth = RethRepr {
            va: 0x1000,
            rkey: 7,
            dma_len: 4,
        };
        let built = RoceRepr::new(bth(Opcode::RcWriteOnlyImm), b"data")
            .with_reth(reth)
            .with_imm(0xabcd);
        let literal = RoceRepr {
            bth: bth(Opcode::RcWriteOnlyImm),
            deth: None,
            reth: Some(reth),
            atomic_eth: None,
            aeth: None,
            atomic_ack: None,
            imm: Some(0xabcd),
            ieth: None,
            ooo_ack: None,
            payload: b"data",
        };
        assert_eq!(built, literal);
        assert_eq!(built.with_imm(None).imm, None);
    }

    #[test]
    fn builder_takes_options_for_every_header() {
        let aeth = AethRepr {
            syndrome: AethSyndrome::Ack { credits: 0 },
            msn: 1,
        };
        let r = RoceRepr::new(bth(Opcode::RcAtomicAck), &[])
            .with_deth(Some(DethRepr::default()))
            .with_atomic_eth(Some(AtomicEthRepr::default()))
            .with_aeth(Some(aeth))
            .with_atomic_ack(AtomicAckEthRepr { orig: 5 })
            .with_ieth(Some(6));
        assert_eq!(r.deth, Some(DethRepr::default()));
        assert_eq!(r.atomic_eth, Some(AtomicEthRepr::default()));
        assert_eq!(r.aeth, Some(aeth));
        assert_eq!(r.atomic_ack, Some(AtomicAckEthRepr { orig: 5 }));
        assert_eq!(r.ieth, Some(6));
        assert_eq!(r.reth, None);
    }
}
