//! Slicing execution (optimized-v1) and adaptive WRR (optimized-v2): what the transport does
//! after each request packet it sends.
//!
//! Baseline (run to completion): the TX engine stays on a WQE until its last packet. With
//! slicing, a BS WQE gives the transport up after `nic.iso_slice_packets` packets: its
//! progress is written back to the slicing station (the "write-back" state of the paper's
//! slicing FSM; in the model the transport keeps the WQE's PSN and offset per QP, and the
//! station is the set of BS QPs with such a pending WQE, p_wqe) and the QP goes behind the
//! others. LS QPs wait in a queue of their own that the engine serves first, so an LS WQE
//! waits for at most the slice in progress, whatever the number of BS tenants and the size
//! of their messages.
//!
//! Round robin gives each BS tenant one slice per turn; adaptive WRR gives it
//! [`crate::params::isolation::wrr_weight`] slices per turn (the tenant's credit in
//! [`super::tenant_ring::TenantRing`] counts what is left of the turn), so tenants with a
//! small PMTU send as many bytes per turn as those with a large one.

/// What the engine does after a request packet of a QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Send this WQE's next packet now (run to completion, or the slice is not over).
    Stay,
    /// The slice (or the WQE) is over: the QP goes back to its queue, at the front when it
    /// has slices left in its WRR turn.
    Requeue {
        /// Keep the QP at the head of the BS queue (behind any LS QP).
        front: bool,
    },
}

/// Decides what follows a request packet. `mid`: the packet was not its WQE's last;
/// `slice_pkts` is the QP's packets in the current slice, `credit` its tenant's slices left
/// in the turn; `weight` the tenant's WRR weight (1 for round robin).
pub fn after_packet(
    slicing_bs: bool,
    slice_packets: u32,
    mid: bool,
    weight: u32,
    slice_pkts: &mut u32,
    credit: &mut u32,
) -> After {
    if !slicing_bs {
        return if mid {
            After::Stay
        } else {
            After::Requeue { front: false }
        };
    }
    *slice_pkts += 1;
    if mid && *slice_pkts < slice_packets {
        return After::Stay;
    }
    *slice_pkts = 0;
    if *credit == 0 {
        *credit = weight.max(1);
    }
    *credit -= 1;
    After::Requeue { front: *credit > 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_to_completion_stays_until_the_last_packet() {
        let (mut s, mut c) = (0, 0);
        assert_eq!(after_packet(false, 1, true, 1, &mut s, &mut c), After::Stay);
        assert_eq!(
            after_packet(false, 1, false, 1, &mut s, &mut c),
            After::Requeue { front: false }
        );
    }

    #[test]
    fn a_slice_yields_after_its_packets() {
        let (mut s, mut c) = (0, 0);
        assert_eq!(after_packet(true, 2, true, 1, &mut s, &mut c), After::Stay);
        assert_eq!(
            after_packet(true, 2, true, 1, &mut s, &mut c),
            After::Requeue { front: false }
        );
        // The last packet of a WQE ends its slice early.
        assert_eq!(
            after_packet(true, 2, false, 1, &mut s, &mut c),
            After::Requeue { front: false }
        );
    }

    /// Over many turns, WRR shares of packets converge to the weights (1 KB PMTU: 4; 2 KB:
    /// 2), i.e. equal bytes.
    #[test]
    fn wrr_shares_converge_to_the_weights() {
        let weights = [4u32, 2];
        let mut state = [(0u32, 0u32); 2];
        let mut sent = [0u64; 2];
        let mut queue: std::collections::VecDeque<usize> = [0, 1].into();
        for _ in 0..6000 {
            let q = queue.pop_front().unwrap();
            sent[q] += 1;
            let (s, c) = &mut state[q];
            match after_packet(true, 1, true, weights[q], s, c) {
                After::Requeue { front: true } => queue.push_front(q),
                _ => queue.push_back(q),
            }
        }
        assert_eq!(sent[0], 2 * sent[1]);
        assert_eq!(sent[0] * 1024, sent[1] * 2048);
    }
}
