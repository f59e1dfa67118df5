//! `Packet::new_unchecked` reads exactly what `new_checked` does wherever the latter accepts the
//! buffer, for every header view; where it refuses (too short), `Repr::parse` of an unchecked
//! view refuses the same way instead of panicking.

use proptest::prelude::*;
use rnic_wire::*;

/// For one header module with a `Repr`: the two constructors agree on `bytes`.
macro_rules! agree {
    ($module:ident, $repr:ty, $bytes:expr) => {{
        let bytes: &[u8] = $bytes;
        let unchecked = $module::Packet::new_unchecked(bytes);
        match $module::Packet::new_checked(bytes) {
            Ok(checked) => {
                prop_assert_eq!(<$repr>::parse(&unchecked), <$repr>::parse(&checked));
                prop_assert_eq!(unchecked.into_inner(), checked.into_inner());
            }
            Err(e) => {
                prop_assert!(bytes.len() < $module::HEADER_LEN);
                prop_assert_eq!(<$repr>::parse(&unchecked), Err(e));
            }
        }
    }};
}

proptest! {
    #[test]
    fn unchecked_views_read_what_checked_views_read(
        bytes in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let b = &bytes[..];
        agree!(ethernet, EthernetRepr, b);
        agree!(ipv4, Ipv4Repr, b);
        agree!(udp, UdpRepr, b);
        agree!(bth, BthRepr, b);
        agree!(deth, DethRepr, b);
        agree!(reth, RethRepr, b);
        agree!(atomic_eth, AtomicEthRepr, b);
        agree!(aeth, AethRepr, b);
        agree!(atomic_ack_eth, AtomicAckEthRepr, b);
        agree!(immdt, ImmDtRepr, b);
        agree!(ieth, IethRepr, b);
        if let Ok(checked) = cnp::Packet::new_checked(b) {
            let unchecked = cnp::Packet::new_unchecked(b);
            prop_assert_eq!(unchecked.reserved(), checked.reserved());
        }
    }

    /// The raw accessors the hot path uses, on buffers long enough for every header.
    #[test]
    fn unchecked_accessors_match_checked(bytes in prop::collection::vec(any::<u8>(), 64..80)) {
        let b = &bytes[..];
        let (e, ec) = (ethernet::Packet::new_unchecked(b), ethernet::Packet::new_checked(b).unwrap());
        prop_assert_eq!((e.dst(), e.src(), e.ethertype()), (ec.dst(), ec.src(), ec.ethertype()));
        prop_assert_eq!(e.payload(), ec.payload());
        let (i, ic) = (ipv4::Packet::new_unchecked(b), ipv4::Packet::new_checked(b).unwrap());
        prop_assert_eq!((i.total_len(), i.dst(), i.protocol()), (ic.total_len(), ic.dst(), ic.protocol()));
        prop_assert_eq!(i.payload(), ic.payload());
        let (u, uc) = (udp::Packet::new_unchecked(b), udp::Packet::new_checked(b).unwrap());
        prop_assert_eq!((u.src_port(), u.len(), u.payload()), (uc.src_port(), uc.len(), uc.payload()));
        let (t, tc) = (bth::Packet::new_unchecked(b), bth::Packet::new_checked(b).unwrap());
        prop_assert_eq!(
            (t.opcode_raw(), t.pad_count(), t.dest_qp(), t.psn()),
            (tc.opcode_raw(), tc.pad_count(), tc.dest_qp(), tc.psn())
        );
        let (r, rc) = (reth::Packet::new_unchecked(b), reth::Packet::new_checked(b).unwrap());
        prop_assert_eq!((r.va(), r.rkey(), r.dma_len()), (rc.va(), rc.rkey(), rc.dma_len()));
    }
}
