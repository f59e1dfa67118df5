//! What a received frame translates (MPT + MTT, lane [`super::translation::TransLane::Rx`])
//! before the transport places it.
//!
//! * In-order RoCEv2: a WRITE FIRST/ONLY's RETH names the whole message, which is translated
//!   once, on that packet; the later packets of the message ride on it (no lookup). A READ
//!   request translates the range its responses will read, an atomic its 8-byte word. At
//!   the requester a READ RESPONSE FIRST/ONLY translates the READ's local buffer (its first
//!   SGE, as the transport reports it), once per READ, which its later responses ride on.
//! * ORNIC / MP-RDMA out-of-order data: every packet is placed on its own at
//!   `start + (PSN − start PSN) × PMTU`, in any order, so each one translates the pages its
//!   own payload touches: an FSpot from its RETH address (the packet's own VA; the RETH's
//!   length is the whole WQE's and is not this packet's span), a Spot (no RETH) from the
//!   address the responder computes from its learnt start, an OOO READ response from where
//!   it lands in the requester's READ buffer. A Spot the responder cannot place (start not
//!   learnt, PSN outside the WQE) writes nothing and translates nothing.

use rnic_wire::peek::RoceHeaders;
use rnic_wire::Opcode;

/// Bytes of the target an atomic names.
const ATOMIC_BYTES: u64 = 8;

/// The memory a received frame's target spans: `len_bytes` at `va` through the region of
/// `key` (an R_Key, or the L_Key of a READ requester's buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxSpan {
    pub key: u32,
    pub va: u64,
    pub len_bytes: u64,
}

/// Whether a frame of opcode `op` may need a translation: it names a target (RETH,
/// AtomicETH) or is out-of-order data placed by PSN. The others pass through untranslated
/// without a look at their headers beyond the BTH.
pub fn may_translate(op: Opcode) -> bool {
    op.has_reth() || op.has_atomic_eth() || is_ooo_placed(op) || starts_read_response(op)
}

/// The first packet of a RoCEv2 READ's responses, which translates the READ's local buffer.
fn starts_read_response(op: Opcode) -> bool {
    matches!(op, Opcode::RcReadResponseFirst | Opcode::RcReadResponseOnly)
}

/// Out-of-order data placed by its PSN: the OOO WRITE packets and OOO READ responses.
fn is_ooo_placed(op: Opcode) -> bool {
    Opcode::OOO_DATA.contains(&op) || op == Opcode::OooReadResponse
}

/// The span frame `h` translates (see the module doc), or `None` for nothing.
/// `ooo_target` gives, when asked, the `(key, address)` the transport would place an
/// out-of-order packet without an address at (`None` when it would place nothing);
/// `read_target` the `(L_Key, address, bytes)` of the local buffer of the READ whose first
/// response this is (`None` when no READ starts at its PSN).
pub fn rx_span(
    h: &RoceHeaders,
    ooo_target: impl FnOnce() -> Option<(u32, u64)>,
    read_target: impl FnOnce() -> Option<(u32, u64, u64)>,
) -> Option<RxSpan> {
    let op = h.bth.opcode;
    if starts_read_response(op) {
        let (key, va, len_bytes) = read_target()?;
        return Some(RxSpan { key, va, len_bytes });
    }
    if is_ooo_placed(op) {
        let (key, va) = match h.reth {
            Some(r) => (r.rkey, r.va),
            None => ooo_target()?,
        };
        return Some(RxSpan {
            key,
            va,
            len_bytes: h.payload_len as u64,
        });
    }
    if let Some(r) = h.reth {
        return Some(RxSpan {
            key: r.rkey,
            va: r.va,
            len_bytes: u64::from(r.dma_len),
        });
    }
    h.atomic_eth.map(|a| RxSpan {
        key: a.rkey,
        va: a.va,
        len_bytes: ATOMIC_BYTES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rnic_wire::{AtomicEthRepr, BthRepr, RethRepr};

    fn headers(op: Opcode, reth: Option<RethRepr>, payload_len: usize) -> RoceHeaders {
        RoceHeaders {
            dst_mac: [0; 6],
            dst_ip: [0; 4],
            udp_src_port: 0,
            bth: BthRepr {
                opcode: op,
                solicited: false,
                mig_req: false,
                pad_count: 0,
                tver: 0,
                pkey: 0xffff,
                fecn: false,
                becn: false,
                dest_qp: 17,
                ack_req: false,
                psn: 7,
            },
            reth,
            atomic_eth: None,
            aeth: None,
            payload_offset: 0,
            payload_len,
        }
    }

    const WQE_RETH: RethRepr = RethRepr {
        va: 0x10_0000 + 3 * 4096,
        rkey: 9,
        dma_len: 4 << 20,
    };

    #[test]
    fn a_rocev2_write_first_translates_the_whole_message() {
        let h = headers(Opcode::RcWriteFirst, Some(WQE_RETH), 4096);
        let span = rx_span(&h, || panic!("not out-of-order"), no_read);
        assert_eq!(
            span,
            Some(RxSpan {
                key: 9,
                va: WQE_RETH.va,
                len_bytes: 4 << 20
            })
        );
        let middle = headers(Opcode::RcWriteMiddle, None, 4096);
        assert!(!may_translate(middle.bth.opcode));
        assert_eq!(
            rx_span(&middle, || panic!("not out-of-order"), no_read),
            None
        );
    }

    #[test]
    fn an_fspot_translates_its_own_payload_not_the_wqe() {
        for op in [Opcode::OooWriteFspot, Opcode::OooWriteLastFspot] {
            let h = headers(op, Some(WQE_RETH), 4096);
            assert!(may_translate(op));
            let span = rx_span(&h, || panic!("the RETH gives the address"), no_read);
            assert_eq!(
                span,
                Some(RxSpan {
                    key: 9,
                    va: WQE_RETH.va,
                    len_bytes: 4096
                })
            );
        }
    }

    #[test]
    fn a_spot_and_a_read_response_translate_where_the_transport_places_them() {
        for op in [
            Opcode::OooWriteSpot,
            Opcode::OooWriteLast,
            Opcode::OooReadResponse,
        ] {
            assert!(may_translate(op));
            let h = headers(op, None, 1000);
            let span = rx_span(&h, || Some((5, 0x2000)), no_read);
            assert_eq!(
                span,
                Some(RxSpan {
                    key: 5,
                    va: 0x2000,
                    len_bytes: 1000
                })
            );
            // Not placeable: nothing written, nothing translated.
            assert_eq!(rx_span(&h, || None, no_read), None);
        }
    }

    #[test]
    fn an_atomic_translates_its_word_and_an_ooo_read_request_its_range() {
        let mut h = headers(Opcode::RcFetchAdd, None, 0);
        h.atomic_eth = Some(AtomicEthRepr {
            va: 0x40,
            rkey: 3,
            ..AtomicEthRepr::default()
        });
        let span = rx_span(&h, || panic!("not out-of-order"), no_read);
        assert_eq!(
            span,
            Some(RxSpan {
                key: 3,
                va: 0x40,
                len_bytes: 8
            })
        );
        let h = headers(Opcode::OooReadRequest, Some(WQE_RETH), 0);
        let span = rx_span(&h, || panic!("the RETH gives the range"), no_read);
        assert_eq!(span.map(|s| s.len_bytes), Some(4 << 20));
    }

    /// A READ target that a frame which is no READ response's first packet never asks.
    fn no_read() -> Option<(u32, u64, u64)> {
        panic!("not the first response of a READ")
    }

    #[test]
    fn a_read_response_first_or_only_translates_the_reads_local_buffer_once() {
        for op in [Opcode::RcReadResponseFirst, Opcode::RcReadResponseOnly] {
            let h = headers(op, None, 1024);
            let span = rx_span(
                &h,
                || panic!("not out-of-order"),
                || Some((4, 0x9000, 8192)),
            );
            assert_eq!(
                span,
                Some(RxSpan {
                    key: 4,
                    va: 0x9000,
                    len_bytes: 8192
                })
            );
            // No READ starts at the PSN (a duplicate, or one retried from the middle).
            assert_eq!(rx_span(&h, || panic!("not out-of-order"), || None), None);
            assert!(may_translate(op));
        }
        // The later responses ride on the first one's translation.
        for op in [Opcode::RcReadResponseMiddle, Opcode::RcReadResponseLast] {
            let h = headers(op, None, 1024);
            assert_eq!(rx_span(&h, || panic!("not out-of-order"), no_read), None);
            assert!(!may_translate(op));
        }
    }
}
