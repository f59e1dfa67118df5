//! What the live fuzzers share: two nodes, each with one registered region between guard
//! pages; the hostile values forged frames carry; injecting a frame; and the final check that
//! no byte outside a registered region was read or written.

use rnic_sim::Rng;
use rnic_transport::{Access, Memory, MrKeys};
use rnic_wire::{FrameAddr, FrameRepr, RoceRepr};

use crate::fabric::Impairments;
use crate::pair::{Pair, A, B};

/// Start of each node's registered region.
pub(super) const BASE: u64 = 0x2000_0000;
/// Length of the registered region.
pub(super) const LEN: u64 = 1 << 20;
/// Path MTU of the fuzzed QPs.
pub(super) const PMTU: u32 = 1024;
/// Bytes of the guard pages just below and just above the region.
const GUARD_BYTES: usize = 4096;
/// What the guard pages hold; any other byte there is a write outside the region.
const GUARD: u8 = 0xA5;

/// A connected-to-nothing pair with the region registered on both nodes (all access) and
/// the guard pages written; returns the pair and each node's keys.
pub(super) fn guarded_pair(seed: u64) -> Result<(Pair, Vec<MrKeys>), String> {
    let mut pair = Pair::new(seed, Impairments::clean(500_000));
    let keys = [A, B]
        .iter()
        .map(|&n| {
            pair.reg_mr(n, BASE, LEN, Access::all())
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let guard = [GUARD; GUARD_BYTES];
    for n in [A, B] {
        for at in guard_addrs() {
            pair.nodes[n].mem.bytes.write(at, &guard);
        }
    }
    Ok((pair, keys))
}

fn guard_addrs() -> [u64; 2] {
    [BASE - GUARD_BYTES as u64, BASE + LEN]
}

/// `Err` names the first access outside every MR, or a guard page that changed.
pub(super) fn check_memory(pair: &Pair) -> Result<(), String> {
    for n in [A, B] {
        let v = pair.nodes[n].mem.violations();
        if let Some(first) = v.first() {
            return Err(format!(
                "node {n}: {} accesses outside every MR, first {first:?}",
                v.len()
            ));
        }
        for at in guard_addrs() {
            let mut g = [0u8; GUARD_BYTES];
            pair.nodes[n].mem.bytes.read(at, &mut g);
            if g.iter().any(|&b| b != GUARD) {
                return Err(format!("node {n}: guard bytes at {at:#x} changed"));
            }
        }
    }
    Ok(())
}

/// The QP a forged frame to node `dst` names: mostly the live one, sometimes any QPN.
pub(super) fn dest_qp(rng: &mut Rng, dst: usize, qps: (u32, u32)) -> u32 {
    match rng.gen_range(0..20) {
        0 => rng.gen_range(0..1 << 24) as u32,
        _ if dst == A => qps.0,
        _ => qps.1,
    }
}

/// A PSN around `base` (within `-back .. span - back`), sometimes far from it or anywhere.
pub(super) fn hostile_psn(rng: &mut Rng, base: u32, span: u64, back: u32) -> u32 {
    (match rng.gen_range(0..8) {
        0 => rng.gen_range(0..1 << 24) as u32,
        1 => base.wrapping_add(rng.gen_range(0..1 << 23) as u32),
        _ => base
            .wrapping_add(rng.gen_range(0..span) as u32)
            .wrapping_sub(back),
    }) & 0xff_ffff
}

/// A payload length for a forged frame: none, one PMTU, all of `payload`, or any part of it.
pub(super) fn payload_len(rng: &mut Rng, payload: &[u8]) -> usize {
    match rng.gen_range(0..4) {
        0 => 0,
        1 => PMTU as usize,
        2 => payload.len(),
        _ => rng.gen_index(payload.len()),
    }
}

/// A target address inside the region, at its edges, just outside it, near the top of the
/// address space, or anywhere.
pub(super) fn hostile_va(rng: &mut Rng) -> u64 {
    match rng.gen_range(0..6) {
        0 => BASE + rng.gen_range(0..LEN),
        1 => BASE + LEN - rng.gen_range(0..16),
        2 => BASE - rng.gen_range(1..64),
        3 => u64::MAX - rng.gen_range(0..4096),
        4 => BASE,
        _ => rng.next_u64(),
    }
}

/// Emits `roce` into `out` as a frame from the other node to node `dst`.
pub(super) fn emit_to(dst: usize, roce: RoceRepr<'_>, out: &mut Vec<u8>) {
    let src = 1 - dst;
    let mac = |n: usize| [0x02, 0, 0, 0, 0, 0x0a + n as u8];
    let ip = |n: usize| [10, 0, 0, 1 + n as u8];
    FrameRepr {
        addr: FrameAddr {
            src_mac: mac(src),
            dst_mac: mac(dst),
            src_ip: ip(src),
            dst_ip: ip(dst),
            udp_src_port: 0xc000,
            dscp_ecn: 0,
            ttl: 64,
        },
        ip_ident: 0,
        roce,
    }
    .emit(out);
}

/// Hands `frame` to node `dst`'s device, then lets the pair run 0 to 3 steps; true if the
/// device refused the frame.
pub(super) fn inject(pair: &mut Pair, rng: &mut Rng, dst: usize, frame: &[u8]) -> bool {
    let now = pair.now_ps();
    let node = &mut pair.nodes[dst];
    let refused = node.dev.handle_packet(now, frame, &mut node.mem).is_err();
    for _ in 0..rng.gen_range(0..4) {
        if !pair.step() {
            break;
        }
    }
    refused
}
