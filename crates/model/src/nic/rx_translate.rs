//! What a received frame translates (MPT + MTT, lane [`super::translation::TransLane::Rx`])
//! before the transport places it.
//!
//! * In-order RoCEv2: a WRITE FIRST/ONLY's RETH names the whole message, which is translated
//!   once, on that packet; the later packets of the message ride on it (no lookup). A READ
//!   request translates the range its responses will read, an atomic its 8-byte word.
//! * A SEND FIRST/ONLY (RC, UC, UD; with immediate or invalidate) translates the scatter
//!   list of the receive WQE it lands in, one span per element its bytes touch (each
//!   element's L_Key is its own MPT entry), once; the later packets ride on it. A SEND ONLY
//!   touches its payload's bytes from the list's start (a UD datagram 40 more: the GRH
//!   area comes first, and the NIC writes it); a SEND FIRST does not say how long its
//!   message is, so it translates the whole list. A SEND whose payload rides in its CQE
//!   (`host.inline_recv_bytes`) writes no buffer and translates nothing, nor does one that
//!   finds no receive WQE (RNR). The transport names the WQE
//!   ([`rnic_transport::Device::recv_target`]).
//! * At the requester a READ RESPONSE FIRST/ONLY translates the READ's local scatter list,
//!   every element the READ fills, once per READ, which its later responses ride on; an
//!   ATOMIC ACKNOWLEDGE translates the 8 bytes its original value is written to (until
//!   2026-12-02 it translated nothing, so an atomic requester never looked up its L_Key
//!   or pages: `atomic-bw -q 400 --mrs 400` read no MPT or MTT entry at the requester).
//! * ORNIC / MP-RDMA out-of-order data: every packet is placed on its own at
//!   `start + (PSN − start PSN) × PMTU`, in any order, so each one translates the pages its
//!   own payload touches: an FSpot from its RETH address (the packet's own VA; the RETH's
//!   length is the whole WQE's and is not this packet's span), a Spot (no RETH) from the
//!   address the responder computes from its learnt start, an OOO READ response from where
//!   it lands in the requester's READ buffer. A Spot the responder cannot place (start not
//!   learnt, PSN outside the WQE) writes nothing and translates nothing.

use rnic_transport::ud::GRH_BYTES;
use rnic_transport::Sge;
use rnic_wire::peek::RoceHeaders;
use rnic_wire::Opcode;

/// Bytes of the target an atomic names.
const ATOMIC_BYTES: u64 = 8;

/// The memory a received frame's target spans: `len_bytes` at `va` through the region of
/// `key` (an R_Key, or the L_Key of a receive buffer or of a READ requester's buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxSpan {
    pub key: u32,
    pub va: u64,
    pub len_bytes: u64,
}

/// What a received frame translates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxTarget {
    /// The one span its headers name, or where an out-of-order packet lands.
    Span(RxSpan),
    /// The first `len_bytes` of the scatter list of the receive WQE the SEND it starts
    /// lands in (`u64::MAX`: the whole list).
    RecvBuffer { len_bytes: u64 },
    /// The local scatter list of the READ or atomic whose first response it is, as far as
    /// the responses fill it.
    ReadBuffer,
}

/// Whether a frame of opcode `op` may need a translation: it names a target (RETH,
/// AtomicETH), is out-of-order data placed by PSN, or starts a SEND or a READ's responses.
/// The others pass through untranslated without a look at their headers beyond the BTH.
pub fn may_translate(op: Opcode) -> bool {
    op.has_reth()
        || op.has_atomic_eth()
        || is_ooo_placed(op)
        || starts_read_response(op)
        || starts_send(op)
}

/// The first response of a RoCEv2 READ or atomic, which translates the local buffer it
/// fills: a READ's scatter list, the 8 bytes an ATOMIC ACKNOWLEDGE's original value is
/// written to.
fn starts_read_response(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::RcReadResponseFirst | Opcode::RcReadResponseOnly | Opcode::RcAtomicAck
    )
}

/// The first packet of a SEND, which translates its receive buffer.
fn starts_send(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        RcSendFirst
            | RcSendOnly
            | RcSendOnlyImm
            | RcSendOnlyInv
            | UcSendFirst
            | UcSendOnly
            | UcSendOnlyImm
            | UdSendOnly
            | UdSendOnlyImm
    )
}

/// Whether a frame of opcode `op` needs a posted receive WQE when the transport handles it:
/// every packet of a SEND (its WQE stays at the receive queue's head until the message
/// ends), a WRITE with immediate's last or only packet, a UD datagram. Without one, an RC
/// responder answers RNR NAK and UC and UD drop the message.
pub fn needs_recv(op: Opcode) -> bool {
    use Opcode::*;
    consumes_recv(op) || matches!(op, RcSendFirst | RcSendMiddle | UcSendFirst | UcSendMiddle)
}

/// A single-packet SEND, whose whole message can ride in its CQE.
pub fn is_send_only(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        RcSendOnly
            | RcSendOnlyImm
            | RcSendOnlyInv
            | UcSendOnly
            | UcSendOnlyImm
            | UdSendOnly
            | UdSendOnlyImm
    )
}

/// A UD SEND, whose receive buffer starts with the GRH area.
pub fn is_ud_send(op: Opcode) -> bool {
    matches!(op, Opcode::UdSendOnly | Opcode::UdSendOnlyImm)
}

/// Whether a SEND ONLY of `payload_bytes` rides in its CQE instead of its receive buffer
/// (scatter to CQE, `host.inline_recv_bytes`).
pub fn scatters_to_cqe(op: Opcode, payload_bytes: u64, inline_recv_bytes: u64) -> bool {
    payload_bytes > 0 && payload_bytes <= inline_recv_bytes && is_send_only(op)
}

/// Whether a frame of opcode `op` ends a message that consumes a receive WQE: a SEND's
/// last or only packet, a WRITE with immediate's, a UD datagram. A SEND that starts behind
/// such frames still on their way to the transport lands in a later receive WQE than the
/// RQ head: one further per frame.
pub fn consumes_recv(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        RcSendLast
            | RcSendLastImm
            | RcSendLastInv
            | RcSendOnly
            | RcSendOnlyImm
            | RcSendOnlyInv
            | RcWriteLastImm
            | RcWriteOnlyImm
            | UcSendLast
            | UcSendLastImm
            | UcSendOnly
            | UcSendOnlyImm
            | UcWriteLastImm
            | UcWriteOnlyImm
            | UdSendOnly
            | UdSendOnlyImm
    )
}

/// Out-of-order data placed by its PSN: the OOO WRITE packets and OOO READ responses.
fn is_ooo_placed(op: Opcode) -> bool {
    Opcode::OOO_DATA.contains(&op) || op == Opcode::OooReadResponse
}

/// What frame `h` translates (see the module doc), or `None` for nothing.
/// `ooo_target` gives, when asked, the `(key, address)` the transport would place an
/// out-of-order packet without an address at (`None` when it would place nothing);
/// `inline_recv_bytes` is the largest SEND ONLY payload that rides in its CQE.
pub fn rx_target(
    h: &RoceHeaders,
    ooo_target: impl FnOnce() -> Option<(u32, u64)>,
    inline_recv_bytes: u64,
) -> Option<RxTarget> {
    let op = h.bth.opcode;
    let payload_bytes = h.payload_len as u64;
    if starts_read_response(op) {
        return Some(RxTarget::ReadBuffer);
    }
    if starts_send(op) {
        if scatters_to_cqe(op, payload_bytes, inline_recv_bytes) {
            return None;
        }
        let len_bytes = match op {
            _ if is_ud_send(op) => GRH_BYTES as u64 + payload_bytes,
            _ if is_send_only(op) => payload_bytes,
            // A FIRST: the message's length is not known before its last packet.
            _ => u64::MAX,
        };
        return Some(RxTarget::RecvBuffer { len_bytes });
    }
    if is_ooo_placed(op) {
        let (key, va) = match h.reth {
            Some(r) => (r.rkey, r.va),
            None => ooo_target()?,
        };
        return Some(RxTarget::Span(RxSpan {
            key,
            va,
            len_bytes: payload_bytes,
        }));
    }
    if let Some(r) = h.reth {
        return Some(RxTarget::Span(RxSpan {
            key: r.rkey,
            va: r.va,
            len_bytes: u64::from(r.dma_len),
        }));
    }
    h.atomic_eth.map(|a| {
        RxTarget::Span(RxSpan {
            key: a.rkey,
            va: a.va,
            len_bytes: ATOMIC_BYTES,
        })
    })
}

/// The spans of the first `len_bytes` of scatter list `sgl`: one per element those bytes
/// touch, in order (elements of no bytes, and those past `len_bytes`, none).
pub fn sgl_spans(sgl: &[Sge], len_bytes: u64) -> impl Iterator<Item = RxSpan> + '_ {
    let mut left_bytes = len_bytes;
    sgl.iter().filter_map(move |s| {
        let take = u64::from(s.len).min(left_bytes);
        left_bytes -= take;
        (take > 0).then_some(RxSpan {
            key: s.lkey,
            va: s.addr,
            len_bytes: take,
        })
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

    /// An out-of-order target that a frame which is not out-of-order data never asks.
    fn in_order() -> Option<(u32, u64)> {
        panic!("not out-of-order")
    }

    fn span(key: u32, va: u64, len_bytes: u64) -> Option<RxTarget> {
        Some(RxTarget::Span(RxSpan { key, va, len_bytes }))
    }

    #[test]
    fn a_rocev2_write_first_translates_the_whole_message() {
        let h = headers(Opcode::RcWriteFirst, Some(WQE_RETH), 4096);
        assert_eq!(rx_target(&h, in_order, 0), span(9, WQE_RETH.va, 4 << 20));
        let middle = headers(Opcode::RcWriteMiddle, None, 4096);
        assert!(!may_translate(middle.bth.opcode));
        assert_eq!(rx_target(&middle, in_order, 0), None);
    }

    #[test]
    fn an_fspot_translates_its_own_payload_not_the_wqe() {
        for op in [Opcode::OooWriteFspot, Opcode::OooWriteLastFspot] {
            let h = headers(op, Some(WQE_RETH), 4096);
            assert!(may_translate(op));
            let got = rx_target(&h, || panic!("the RETH gives the address"), 0);
            assert_eq!(got, span(9, WQE_RETH.va, 4096));
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
            assert_eq!(
                rx_target(&h, || Some((5, 0x2000)), 0),
                span(5, 0x2000, 1000)
            );
            // Not placeable: nothing written, nothing translated.
            assert_eq!(rx_target(&h, || None, 0), None);
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
        assert_eq!(rx_target(&h, in_order, 0), span(3, 0x40, 8));
        let h = headers(Opcode::OooReadRequest, Some(WQE_RETH), 0);
        let got = rx_target(&h, || panic!("the RETH gives the range"), 0);
        assert_eq!(got, span(9, WQE_RETH.va, 4 << 20));
    }

    #[test]
    fn a_read_response_first_or_only_translates_the_reads_local_buffer_once() {
        for op in [Opcode::RcReadResponseFirst, Opcode::RcReadResponseOnly] {
            let h = headers(op, None, 1024);
            assert_eq!(rx_target(&h, in_order, 0), Some(RxTarget::ReadBuffer));
            assert!(may_translate(op));
        }
        // The later responses ride on the first one's translation.
        for op in [Opcode::RcReadResponseMiddle, Opcode::RcReadResponseLast] {
            let h = headers(op, None, 1024);
            assert_eq!(rx_target(&h, in_order, 0), None);
            assert!(!may_translate(op));
        }
    }

    #[test]
    fn a_send_translates_the_bytes_it_writes_into_its_receive_buffer_once() {
        let recv = |len_bytes| Some(RxTarget::RecvBuffer { len_bytes });
        for op in [
            Opcode::RcSendOnly,
            Opcode::RcSendOnlyImm,
            Opcode::RcSendOnlyInv,
            Opcode::UcSendOnly,
            Opcode::UcSendOnlyImm,
        ] {
            assert!(may_translate(op), "{op:?}");
            assert_eq!(rx_target(&headers(op, None, 1000), in_order, 0), recv(1000));
            // A zero-byte SEND writes nothing (no span comes out of its list).
            assert_eq!(rx_target(&headers(op, None, 0), in_order, 0), recv(0));
        }
        // A UD datagram writes the GRH area first, then its payload.
        for op in [Opcode::UdSendOnly, Opcode::UdSendOnlyImm] {
            assert_eq!(
                rx_target(&headers(op, None, 1000), in_order, 0),
                recv(GRH_BYTES as u64 + 1000)
            );
        }
        // A FIRST does not know its message's length: the whole list.
        for op in [Opcode::RcSendFirst, Opcode::UcSendFirst] {
            assert_eq!(
                rx_target(&headers(op, None, 4096), in_order, 0),
                recv(u64::MAX)
            );
        }
        // The later packets ride on it.
        for op in [
            Opcode::RcSendMiddle,
            Opcode::RcSendLast,
            Opcode::RcSendLastImm,
            Opcode::RcSendLastInv,
            Opcode::UcSendMiddle,
            Opcode::UcSendLast,
        ] {
            assert!(!may_translate(op), "{op:?}");
            assert_eq!(rx_target(&headers(op, None, 4096), in_order, 0), None);
        }
    }

    #[test]
    fn a_send_whose_payload_rides_in_its_cqe_translates_nothing() {
        let h = headers(Opcode::RcSendOnly, None, 32);
        assert_eq!(rx_target(&h, in_order, 64), None);
        let h = headers(Opcode::RcSendOnly, None, 65);
        assert_eq!(
            rx_target(&h, in_order, 64),
            Some(RxTarget::RecvBuffer { len_bytes: 65 })
        );
        // Only single-packet SENDs ride in a CQE.
        let h = headers(Opcode::RcSendFirst, None, 32);
        assert!(rx_target(&h, in_order, 64).is_some());
    }

    #[test]
    fn each_element_the_bytes_touch_is_one_span_with_its_own_key() {
        let sgl = [
            Sge {
                addr: 0x1000,
                len: 100,
                lkey: 1,
            },
            Sge {
                addr: 0x9000,
                len: 0,
                lkey: 7,
            },
            Sge {
                addr: 0x5000,
                len: 300,
                lkey: 2,
            },
            Sge {
                addr: 0x8000,
                len: 50,
                lkey: 3,
            },
        ];
        let spans = |len| sgl_spans(&sgl, len).collect::<Vec<_>>();
        let s = |key, va, len_bytes| RxSpan { key, va, len_bytes };
        assert_eq!(spans(0), []);
        assert_eq!(spans(60), [s(1, 0x1000, 60)]);
        assert_eq!(spans(100), [s(1, 0x1000, 100)]);
        assert_eq!(spans(101), [s(1, 0x1000, 100), s(2, 0x5000, 1)]);
        let whole = [s(1, 0x1000, 100), s(2, 0x5000, 300), s(3, 0x8000, 50)];
        assert_eq!(spans(450), whole);
        assert_eq!(spans(u64::MAX), whole);
    }

    #[test]
    fn what_consumes_a_receive_wqe() {
        let consuming: Vec<Opcode> = Opcode::ALL
            .into_iter()
            .filter(|&op| consumes_recv(op))
            .collect();
        // Every SEND's end, every WRITE with immediate's end, nothing else.
        assert_eq!(consuming.len(), 16);
        for op in consuming {
            assert!(op.is_last() || op.is_only(), "{op:?}");
            let name = format!("{op:?}");
            assert!(name.contains("Send") || name.contains("Imm"), "{op:?}");
        }
    }
}
