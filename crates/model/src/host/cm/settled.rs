//! What a host's connection manager keeps of its connections once every connection of the
//! run is established ([`Settled`]): the application is about to start and the CM has
//! nothing more to send of its own, so the setup state (each end's spec, state, timers and
//! transaction, the listen table) is given back. A million QP pairs kept about 570 bytes
//! each of it for the whole run.
//!
//! What a later MAD still needs is kept, 8 bytes per end: a duplicate REP (the passive side
//! resent it before our RTU arrived, or the network duplicated it) is answered with the RTU
//! again, as before, which takes the peer's address and communication id; every other MAD
//! (a late REQ, a late RTU, a REP for a passive end or from a stranger) is ignored and
//! counted, as an established connection ignored it before.

/// One end after setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct End {
    /// The peer host's IPv4 address.
    peer_ip: [u8; 4],
    /// The peer's communication id for an active end (the one a duplicate REP must carry),
    /// 0 for a passive end (communication ids are never 0).
    peer_comm_id: u32,
}

/// Every end of one host after setup, by its number on the host.
#[derive(Debug, Default)]
pub(super) struct Settled {
    ends: Vec<End>,
}

impl Settled {
    /// An empty table with room for `n` ends.
    pub(super) fn with_capacity(n: usize) -> Settled {
        Settled {
            ends: Vec::with_capacity(n),
        }
    }

    /// Adds the next end: active ends keep their peer's communication id.
    pub(super) fn push(&mut self, peer_ip: [u8; 4], active: bool, peer_comm_id: u32) {
        self.ends.push(End {
            peer_ip,
            peer_comm_id: if active { peer_comm_id } else { 0 },
        });
    }

    /// Ends on the host.
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Where to send the RTU again for a REP to end `conn` whose sender's communication id
    /// is `rep_local_comm_id`: the peer's address, if `conn` is active and the REP is its
    /// peer's.
    pub(super) fn rtu_again(&self, conn: usize, rep_local_comm_id: u32) -> Option<[u8; 4]> {
        let e = self.ends.get(conn)?;
        (e.peer_comm_id != 0 && e.peer_comm_id == rep_local_comm_id).then_some(e.peer_ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_end_stays_at_eight_bytes() {
        assert_eq!(std::mem::size_of::<End>(), 8);
    }

    #[test]
    fn only_an_active_end_answers_its_own_peers_rep() {
        let mut s = Settled::with_capacity(2);
        s.push([10, 0, 0, 1], true, 7);
        s.push([10, 0, 0, 2], false, 9);
        assert_eq!(s.rtu_again(0, 7), Some([10, 0, 0, 1]));
        assert_eq!(s.rtu_again(0, 8), None);
        assert_eq!(s.rtu_again(1, 9), None);
        assert_eq!(s.rtu_again(2, 7), None);
    }
}
