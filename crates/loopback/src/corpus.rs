//! Random well-formed RoCEv2 frames of every opcode: the seed corpus of the fuzzers and the
//! input of the parse benchmark.

use rnic_sim::Rng;
use rnic_wire::{
    AethRepr, AethSyndrome, AtomicAckEthRepr, AtomicEthRepr, BthRepr, DethRepr, FrameAddr,
    FrameRepr, NakCode, Opcode, RethRepr, RoceRepr,
};

/// The addressing every corpus frame uses (node A to node B of the loopback pair).
pub const CORPUS_ADDR: FrameAddr = FrameAddr {
    src_mac: [0x02, 0, 0, 0, 0, 0x0a],
    dst_mac: [0x02, 0, 0, 0, 0, 0x0b],
    src_ip: [10, 0, 0, 1],
    dst_ip: [10, 0, 0, 2],
    udp_src_port: 0xc000,
    dscp_ecn: 0,
    ttl: 64,
};

/// A random AETH syndrome: ACK, RNR NAK or one of the NAK codes.
pub fn random_syndrome(rng: &mut Rng) -> AethSyndrome {
    match rng.gen_range(0..7) {
        0 => AethSyndrome::RnrNak {
            timer: rng.gen_range(0..32) as u8,
        },
        1 => AethSyndrome::Nak(NakCode::PsnSequenceError),
        2 => AethSyndrome::Nak(NakCode::InvalidRequest),
        3 => AethSyndrome::Nak(NakCode::RemoteAccessError),
        4 => AethSyndrome::Nak(NakCode::RemoteOperationalError),
        5 => AethSyndrome::Nak(NakCode::InvalidRdRequest),
        _ => AethSyndrome::Ack {
            credits: rng.gen_range(0..32) as u8,
        },
    }
}

/// A random transport part for `opcode` with the given payload (ignored where the opcode carries
/// none). Header fields are random within their widths.
pub fn random_roce<'a>(
    rng: &mut Rng,
    opcode: Opcode,
    dest_qp: u32,
    psn: u32,
    payload: &'a [u8],
) -> RoceRepr<'a> {
    let mut va = || rng.next_u64();
    let (va1, va2) = (va(), va());
    // The draws happen in this order, and only for the headers the opcode has: the corpus is
    // replayed from seeds, so the sequence of random numbers is part of its definition.
    let bth = BthRepr {
        opcode,
        solicited: rng.gen_bool(0.5),
        mig_req: rng.gen_bool(0.5),
        pad_count: 0,
        tver: 0,
        pkey: 0xffff,
        fecn: false,
        becn: opcode == Opcode::Cnp,
        dest_qp: dest_qp & 0xff_ffff,
        ack_req: rng.gen_bool(0.5),
        psn: psn & 0xff_ffff,
    };
    let deth = opcode.has_deth().then(|| DethRepr {
        qkey: rng.next_u64() as u32,
        src_qp: rng.gen_range(0..1 << 24) as u32,
    });
    let reth = opcode.has_reth().then(|| RethRepr {
        va: va1,
        rkey: rng.next_u64() as u32,
        dma_len: rng.gen_range(0..1 << 20) as u32,
    });
    let atomic_eth = opcode.has_atomic_eth().then(|| AtomicEthRepr {
        va: va2,
        rkey: rng.next_u64() as u32,
        swap_add: rng.next_u64(),
        compare: rng.next_u64(),
    });
    let aeth = opcode.has_aeth().then(|| AethRepr {
        syndrome: random_syndrome(rng),
        msn: rng.gen_range(0..1 << 24) as u32,
    });
    let atomic_ack = opcode.has_atomic_ack_eth().then(|| AtomicAckEthRepr {
        orig: rng.next_u64(),
    });
    let imm = opcode.has_immdt().then(|| rng.next_u64() as u32);
    let ieth = opcode.has_ieth().then(|| rng.next_u64() as u32);
    let payload = if opcode.has_payload() { payload } else { &[] };
    RoceRepr::new(bth, payload)
        .with_deth(deth)
        .with_reth(reth)
        .with_atomic_eth(atomic_eth)
        .with_aeth(aeth)
        .with_atomic_ack(atomic_ack)
        .with_imm(imm)
        .with_ieth(ieth)
}

/// One random valid frame of a random opcode with up to `max_payload` payload bytes.
pub fn random_frame(rng: &mut Rng, max_payload: usize, out: &mut Vec<u8>) {
    let opcode = Opcode::ALL[rng.gen_range(0..Opcode::ALL.len() as u64) as usize];
    let len = rng.gen_range(0..max_payload as u64 + 1) as usize;
    let payload: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
    let dest_qp = rng.gen_range(0..1 << 24) as u32;
    let psn = rng.gen_range(0..1 << 24) as u32;
    let roce = random_roce(rng, opcode, dest_qp, psn, &payload);
    FrameRepr {
        addr: CORPUS_ADDR,
        ip_ident: rng.next_u64() as u16,
        roce,
    }
    .emit(out);
}
