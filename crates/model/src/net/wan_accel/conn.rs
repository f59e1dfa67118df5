//! One connection as the RDMA WAN accelerator sees it: a state machine without I/O. Local's
//! requests go in through [`Conn::handle_request`], Remote's acknowledgements through
//! [`Conn::handle_response`], time through [`Conn::poll_timeout`]; each returns what to do
//! (forward, hold, drop, pseudo-ACK, go back), and the element around it moves the bytes,
//! taking the frames of a go-back-N round one at a time from [`Conn::next_resend`].
//!
//! Go-back-N, as rnic's RC requester does it: a sequence NAK or the timer starts one round,
//! a cursor that walks the buffer from the missing PSN to its newest frame. Only one round
//! runs at a time. A NAK the round already answers (for the PSN it started from, or for a
//! PSN it has not reached yet) is ignored; a NAK for a PSN it has already resent (a new
//! gap, lost from the round itself) moves the cursor back to it, so what the round had not
//! yet sent is not sent twice. While a round runs, Local's new packets are buffered and
//! pseudo-ACKed but not forwarded: the cursor sends them in PSN order after the older ones
//! (a go-back-N responder drops whatever arrives after a gap, so forwarding them at once
//! would waste them). A request the box cannot answer (a READ) waits behind the round
//! the same way, unacknowledged; when no round runs it passes at once, and so does a
//! packet that cannot be buffered.
//!
//! Invariant: while the connection is accelerated, every PSN from the oldest one Remote has
//! not acknowledged (`una`) up to the newest one seen (`next_psn - 1`) is in the buffer, so
//! whatever Remote misses can be sent again from here. A packet that cannot be buffered
//! (buffer full, not a WRITE) passes untouched and stops acceleration until Remote has
//! acknowledged it: Local's own window and retransmission apply to it, as without the
//! accelerator. Packets are buffered before the connection is learned (Local's QPN is
//! unknown until Remote first answers), so acceleration starts with Remote's first ACK.

use std::collections::VecDeque;

use rnic_sim::TimePs;
use rnic_transport::psn::{psn_add, psn_diff, psn_sub};

/// What Remote answered, as the accelerator reads it from a response's AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Cumulative ACK of every PSN up to `psn`.
    Ack { psn: u32 },
    /// NAK: PSN sequence error; Remote expects `psn` next.
    SeqNak { psn: u32 },
    /// A READ response at `psn`; `ends` for the last (or only) one of its READ. Remote
    /// answers requests in PSN order, so it has every request before `psn`, and after the
    /// last response the READ itself. Local must see it.
    ReadResponse { psn: u32, ends: bool },
    /// Any other response (other NAKs, atomic ACKs): Local must see it.
    Other,
}

/// What to do with a request from Local.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestAction {
    /// Buffered: forward it and answer Local with a pseudo-ACK of `psn` carrying `msn`.
    ForwardAndAck { psn: u32, msn: u32 },
    /// Buffered behind a go-back-N round under way (which will send it in order): do not
    /// forward it now; answer Local with a pseudo-ACK of `psn` carrying `msn`.
    HoldAndAck { psn: u32, msn: u32 },
    /// Buffered behind a round under way but not acknowledged (the connection is not
    /// accelerating, or the request is one the box cannot answer, such as a READ): do not
    /// forward it now.
    Hold,
    /// A retransmission of a PSN already pseudo-ACKed: drop it and repeat the pseudo-ACK
    /// of the newest acknowledged PSN.
    DropAndAck { psn: u32, msn: u32 },
    /// Not accelerated: forward it untouched.
    Forward,
}

/// What to do with a response from Remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseAction {
    /// Local already knows (pseudo-ACKed): absorb it.
    Absorb,
    /// Local must see it.
    Forward,
    /// Absorb it; a go-back-N round from PSN `from` starts (or the running one moves back
    /// to `from`): take its frames from [`Conn::next_resend`].
    AbsorbAndRetransmit { from: u32 },
    /// A sequence NAK the round under way already answers: absorb it, change nothing.
    AbsorbCoveredNak,
}

/// A go-back-N round under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Round {
    /// The PSN it started (or last moved back) from.
    from: u32,
    /// The PSN of the next frame it sends.
    next: u32,
}

/// One buffered frame.
#[derive(Debug, Clone)]
struct Held {
    psn: u32,
    bytes: Vec<u8>,
    /// It has been sent toward Remote (false while it waits behind a round).
    sent: bool,
}

/// What a request from Local is, as the box treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// A WRITE packet: buffered and pseudo-ACKed.
    Write,
    /// A READ request: Remote answers it itself, and its responses take one PSN each, so
    /// Local's next request comes that many PSNs later (the box need not know the path MTU
    /// to tell that from a gap).
    Read,
    /// Anything else (SEND, atomics): passed, unacknowledged.
    Other,
}

/// A connection (one RC QP pair, Local requester to Remote responder).
#[derive(Debug, Clone)]
pub struct Conn {
    /// Local's QPN (the destination QPN of Remote's ACKs), once learned.
    pub local_qpn: Option<u32>,
    /// The next new PSN expected from Local.
    pub(super) next_psn: u32,
    /// Messages Remote will have completed after `next_psn - 1` (its MSN then).
    msn_next: u32,
    /// The oldest PSN Remote has not acknowledged.
    una: u32,
    /// The PSN after the newest one Local has been acknowledged (pseudo or real).
    told: u32,
    /// The PSN after the newest packet that passed unbuffered.
    unbuffered_end: Option<u32>,
    /// The newest request was a READ: Local's next request may skip the PSNs of its
    /// responses.
    after_read: bool,
    /// Remote's MSN after PSN `told - 1` (repeated in a duplicate pseudo-ACK).
    told_msn: u32,
    held: VecDeque<Held>,
    held_bytes: u64,
    /// When Remote's acknowledgements last made progress (or the buffer became non-empty,
    /// or a round started).
    progress_at: TimePs,
    /// The go-back-N round under way, if any.
    round: Option<Round>,
    /// Rounds the timer started in a row without progress from Remote.
    stalled_rounds: u32,
}

/// Rounds the timer starts in a row without progress from Remote before a connection gives
/// up its buffer: 7, the largest retry count a QP takes (`qp.retry_cnt`), as a requester
/// gives up after its retries. A Remote that never answers (its QP failed) was resent to
/// for ever, a million rounds in a `write-lat` whose QP had already failed.
pub const MAX_STALLED_ROUNDS: u32 = 7;

/// What the timer's expiry did to a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// A round (re)started from this PSN, the oldest buffered.
    Round(u32),
    /// The connection gave up after [`MAX_STALLED_ROUNDS`]: its buffered frames and bytes,
    /// dropped undelivered.
    GaveUp { frames: u64, bytes: u64 },
}

impl Conn {
    /// A connection first seen at request PSN `first_psn` (its starting PSN); MSN 0, as
    /// every RC QP starts.
    pub fn new(first_psn: u32) -> Conn {
        Conn {
            local_qpn: None,
            next_psn: first_psn,
            msn_next: 0,
            una: first_psn,
            told: first_psn,
            unbuffered_end: None,
            after_read: false,
            told_msn: 0,
            held: VecDeque::new(),
            held_bytes: 0,
            progress_at: 0,
            round: None,
            stalled_rounds: 0,
        }
    }

    /// A connection known from its setup: Local's QPN and the starting PSN (MSN 0).
    pub fn from_setup(start_psn: u32, local_qpn: u32) -> Conn {
        Conn {
            local_qpn: Some(local_qpn),
            ..Conn::new(start_psn)
        }
    }

    /// Bytes of buffered frames.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Frames still owed to Remote (buffered, not yet acknowledged by it).
    pub fn holds_frames(&self) -> bool {
        !self.held.is_empty()
    }

    /// Whether a go-back-N round is under way (frames to take from [`Conn::next_resend`]).
    pub fn resending(&self) -> bool {
        self.round.is_some()
    }

    /// Whether a new packet may be buffered and pseudo-ACKed now.
    fn accelerating(&self) -> bool {
        self.local_qpn.is_some()
            && self
                .unbuffered_end
                .is_none_or(|end| psn_diff(self.una, end) >= 0)
    }

    /// A request from Local: PSN `psn`; it ends a message (`ends_msg`); what it is
    /// (`kind`); `room` tells whether the buffer can take `bytes` more.
    pub fn handle_request(
        &mut self,
        now: TimePs,
        psn: u32,
        ends_msg: bool,
        kind: Request,
        bytes: &[u8],
        room: bool,
    ) -> RequestAction {
        let write = kind == Request::Write;
        let after_read = std::mem::replace(&mut self.after_read, kind == Request::Read);
        let mut ahead = psn_diff(psn, self.next_psn);
        if ahead > 0 && after_read {
            // The READ before took one PSN per response packet: not a gap. Acceleration
            // waits until Remote's last response to it.
            self.next_psn = psn;
            self.unbuffered_end = Some(psn);
            ahead = 0;
        }
        if ahead < 0 {
            // A retransmission by Local: of a pseudo-ACKed PSN, answer again.
            if psn_diff(psn, self.told) < 0 && self.local_qpn.is_some() {
                return RequestAction::DropAndAck {
                    psn: psn_sub(self.told, 1),
                    msn: self.told_msn,
                };
            }
            return RequestAction::Forward;
        }
        if ahead > 0 {
            // A gap from Local (cannot happen on a lossless local link): stop accelerating
            // until Remote has acknowledged past it.
            self.unbuffered_end = Some(psn_add(psn, 1));
            self.next_psn = psn_add(psn, 1);
            return RequestAction::Forward;
        }
        self.next_psn = psn_add(psn, 1);
        if ends_msg {
            self.msn_next = (self.msn_next + 1) & 0x00FF_FFFF;
        }
        let behind_round = self.round.is_some();
        if !(write && room) {
            // Not acknowledged here: acceleration stops until Remote has answered it.
            self.unbuffered_end = Some(self.next_psn);
            if room && behind_round {
                // A go-back-N responder drops a request that arrives ahead of its gap, so
                // a READ forwarded now would be lost and wait for Local's timer: it waits
                // behind the round instead, and reaches Remote in PSN order.
                self.keep(now, psn, bytes, false);
                return RequestAction::Hold;
            }
            return RequestAction::Forward;
        }
        self.keep(now, psn, bytes, !behind_round);
        if !self.accelerating() {
            // Kept (Remote may miss it) but not acknowledged: an earlier packet is
            // unbuffered, or Local's QPN is not known yet.
            return if behind_round {
                RequestAction::Hold
            } else {
                RequestAction::Forward
            };
        }
        self.told = self.next_psn;
        self.told_msn = self.msn_next;
        let msn = self.msn_next;
        if behind_round {
            RequestAction::HoldAndAck { psn, msn }
        } else {
            RequestAction::ForwardAndAck { psn, msn }
        }
    }

    /// Buffers a copy of request `psn`; `sent`: it goes toward Remote now (not behind a round).
    fn keep(&mut self, now: TimePs, psn: u32, bytes: &[u8], sent: bool) {
        if self.held.is_empty() {
            self.progress_at = now;
        }
        self.held.push_back(Held {
            psn,
            bytes: bytes.to_vec(),
            sent,
        });
        self.held_bytes += bytes.len() as u64;
    }

    /// A response from Remote addressed to Local QPN `dest_qpn`.
    pub fn handle_response(&mut self, now: TimePs, dest_qpn: u32, ans: Answer) -> ResponseAction {
        self.local_qpn.get_or_insert(dest_qpn);
        let acked_to = match ans {
            Answer::Ack { psn } => psn_add(psn, 1),
            Answer::SeqNak { psn } => psn,
            Answer::ReadResponse { psn, ends } if ends => psn_add(psn, 1),
            Answer::ReadResponse { psn, .. } => psn,
            Answer::Other => return ResponseAction::Forward,
        };
        if psn_diff(acked_to, self.una) > 0 {
            self.una = acked_to;
            self.progress_at = now;
            self.stalled_rounds = 0;
            while let Some(h) = self.held.front() {
                if psn_diff(h.psn, self.una) >= 0 {
                    break;
                }
                self.held_bytes -= h.bytes.len() as u64;
                self.held.pop_front();
            }
            if let Some(r) = self.round.as_mut() {
                // Remote has what the round was about to resend: skip it.
                if psn_diff(r.next, self.una) < 0 {
                    r.next = self.una;
                }
            }
            if self.held.is_empty() {
                self.round = None;
            }
        }
        let news_for_local = psn_diff(acked_to, self.told) > 0;
        match ans {
            Answer::Ack { .. } if news_for_local => {
                self.told = acked_to;
                ResponseAction::Forward
            }
            Answer::Ack { .. } => ResponseAction::Absorb,
            Answer::SeqNak { psn } => {
                let buffered = self.held.front().is_some_and(|h| h.psn == psn);
                if !buffered {
                    // The missing packet passed unbuffered: Local resends it itself.
                    return ResponseAction::Forward;
                }
                let covered = self
                    .round
                    .is_some_and(|r| r.from == psn || psn_diff(psn, r.next) >= 0);
                if covered {
                    return ResponseAction::AbsorbCoveredNak;
                }
                self.go_back(now, psn);
                ResponseAction::AbsorbAndRetransmit { from: psn }
            }
            Answer::ReadResponse { .. } | Answer::Other => ResponseAction::Forward,
        }
    }

    /// When the retransmission timer expires, if frames are held.
    pub fn deadline(&self, timeout_ps: TimePs) -> Option<TimePs> {
        self.holds_frames()
            .then(|| self.progress_at.saturating_add(timeout_ps))
    }

    /// At `now`: if Remote's acknowledgements made no progress for `timeout_ps`, a round
    /// (re)starts from the oldest buffered frame and the timer restarts, or, after
    /// [`MAX_STALLED_ROUNDS`] such rounds in a row, the connection drops its buffer.
    pub fn poll_timeout(&mut self, now: TimePs, timeout_ps: TimePs) -> Option<Expiry> {
        let due = self.deadline(timeout_ps)?;
        if now < due {
            return None;
        }
        if self.stalled_rounds >= MAX_STALLED_ROUNDS {
            let gave_up = Expiry::GaveUp {
                frames: self.held.len() as u64,
                bytes: self.held_bytes,
            };
            self.held.clear();
            self.held_bytes = 0;
            self.round = None;
            self.stalled_rounds = 0;
            return Some(gave_up);
        }
        self.stalled_rounds += 1;
        let from = self.held.front()?.psn;
        self.go_back(now, from);
        Some(Expiry::Round(from))
    }

    /// Starts a round from `from`, or moves the running one back to it.
    fn go_back(&mut self, now: TimePs, from: u32) {
        self.progress_at = now;
        self.round = Some(Round { from, next: from });
    }

    /// The next frame of the round under way, oldest first, and whether it was sent before
    /// (false for a packet that waited behind the round); `None` when there is none (the
    /// round has sent the newest buffered frame and ends).
    pub fn next_resend(&mut self) -> Option<(&[u8], bool)> {
        let r = self.round.as_mut()?;
        let next = r.next;
        let i = self.held.partition_point(|h| psn_diff(h.psn, next) < 0);
        let Some(h) = self.held.get_mut(i) else {
            self.round = None;
            return None;
        };
        r.next = psn_add(h.psn, 1);
        let again = std::mem::replace(&mut h.sent, true);
        Some((h.bytes.as_slice(), again))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learned(first: u32) -> Conn {
        let mut c = Conn::new(first);
        c.local_qpn = Some(0x11);
        c
    }

    /// A connection holding one 4-byte frame per PSN of `psns`, each filled with its PSN.
    fn holding(psns: std::ops::Range<u32>) -> Conn {
        let mut c = learned(psns.start);
        for p in psns {
            c.handle_request(0, p, true, Request::Write, &[p as u8; 4], true);
        }
        c
    }

    /// The first bytes of the frames the running round still has to send.
    fn rest_of_round(c: &mut Conn) -> Vec<u8> {
        std::iter::from_fn(|| c.next_resend().map(|(f, _)| f[0])).collect()
    }

    #[test]
    fn pseudo_acks_count_messages_and_real_acks_are_absorbed() {
        let mut c = learned(0);
        assert_eq!(
            c.handle_request(0, 0, false, Request::Write, &[1; 10], true),
            RequestAction::ForwardAndAck { psn: 0, msn: 0 }
        );
        assert_eq!(
            c.handle_request(0, 1, true, Request::Write, &[2; 10], true),
            RequestAction::ForwardAndAck { psn: 1, msn: 1 }
        );
        assert_eq!(c.held_bytes(), 20);
        assert_eq!(
            c.handle_response(5, 0x11, Answer::Ack { psn: 1 }),
            ResponseAction::Absorb
        );
        assert!(!c.holds_frames());
    }

    #[test]
    fn a_sequence_nak_resends_from_the_buffer() {
        let mut c = holding(100..104);
        assert_eq!(
            c.handle_response(9, 0x11, Answer::SeqNak { psn: 102 }),
            ResponseAction::AbsorbAndRetransmit { from: 102 }
        );
        assert_eq!(rest_of_round(&mut c), vec![102, 103]);
        assert!(!c.resending());
    }

    #[test]
    fn a_second_nak_for_the_gap_being_resent_starts_no_second_round() {
        let mut c = holding(100..104);
        assert_eq!(
            c.handle_response(9, 0x11, Answer::SeqNak { psn: 102 }),
            ResponseAction::AbsorbAndRetransmit { from: 102 }
        );
        assert_eq!(
            c.handle_response(10, 0x11, Answer::SeqNak { psn: 102 }),
            ResponseAction::AbsorbCoveredNak
        );
        assert_eq!(
            rest_of_round(&mut c),
            vec![102, 103],
            "one round, each frame once"
        );
    }

    #[test]
    fn a_nak_for_a_psn_the_round_already_resent_moves_it_back_without_a_second_round() {
        let mut c = holding(100..110);
        c.handle_response(1, 0x11, Answer::SeqNak { psn: 101 });
        let first: Vec<u8> = (0..4)
            .filter_map(|_| c.next_resend().map(|(f, _)| f[0]))
            .collect();
        assert_eq!(first, vec![101, 102, 103, 104]);
        // 103 was lost again: Remote NAKs it; a PSN not yet reached is already covered.
        assert_eq!(
            c.handle_response(2, 0x11, Answer::SeqNak { psn: 103 }),
            ResponseAction::AbsorbAndRetransmit { from: 103 }
        );
        let gap_to_tail: Vec<u8> = (103..110).collect();
        assert_eq!(rest_of_round(&mut c), gap_to_tail, "gap to tail, once");
    }

    #[test]
    fn a_nak_beyond_the_cursor_is_covered_and_new_packets_wait_behind_the_round() {
        let mut c = holding(0..6);
        c.handle_response(1, 0x11, Answer::SeqNak { psn: 2 });
        assert_eq!(c.next_resend().map(|(f, _)| f[0]), Some(2));
        // Remote got 2 and 3 and NAKs 4, which the round has not resent yet.
        assert_eq!(
            c.handle_response(2, 0x11, Answer::SeqNak { psn: 4 }),
            ResponseAction::AbsorbCoveredNak
        );
        assert_eq!(
            c.handle_request(3, 6, true, Request::Write, &[6; 4], true),
            RequestAction::HoldAndAck { psn: 6, msn: 7 }
        );
        let rest: Vec<(u8, bool)> =
            std::iter::from_fn(|| c.next_resend().map(|(f, again)| (f[0], again))).collect();
        // 6 waited behind the round: its first sending, not a resend.
        assert_eq!(rest, vec![(4, true), (5, true), (6, false)]);
        assert_eq!(
            c.handle_request(4, 7, true, Request::Write, &[7; 4], true),
            RequestAction::ForwardAndAck { psn: 7, msn: 8 }
        );
    }

    /// A READ of three response packets takes PSNs 3, 4 and 5: Local's next request is 6.
    /// Not a gap: the box keeps accelerating once Remote's last response ends the READ.
    #[test]
    fn a_multi_packet_read_is_not_a_gap() {
        let mut c = holding(0..3);
        c.handle_response(1, 0x11, Answer::Ack { psn: 2 });
        assert_eq!(
            c.handle_request(2, 3, true, Request::Read, &[3; 4], true),
            RequestAction::Forward
        );
        // The WRITE after it, before the READ is answered: kept, not yet acknowledged.
        assert_eq!(
            c.handle_request(3, 6, true, Request::Write, &[6; 4], true),
            RequestAction::Forward
        );
        for (psn, ends) in [(3, false), (4, false), (5, true)] {
            c.handle_response(4, 0x11, Answer::ReadResponse { psn, ends });
        }
        assert_eq!(
            c.handle_request(5, 7, true, Request::Write, &[7; 4], true),
            RequestAction::ForwardAndAck { psn: 7, msn: 6 },
            "the READ answered, acceleration goes on"
        );
        // A real gap after a WRITE still stops it.
        assert_eq!(
            c.handle_request(6, 9, true, Request::Write, &[9; 4], true),
            RequestAction::Forward
        );
    }

    #[test]
    fn a_read_waits_behind_the_round_and_its_last_response_acknowledges_it() {
        let mut c = holding(0..3);
        c.handle_response(1, 0x11, Answer::SeqNak { psn: 1 });
        assert_eq!(
            c.handle_request(2, 3, true, Request::Read, &[3; 4], true),
            RequestAction::Hold,
            "a READ forwarded ahead of the gap would be dropped by Remote"
        );
        let rest: Vec<(u8, bool)> =
            std::iter::from_fn(|| c.next_resend().map(|(f, again)| (f[0], again))).collect();
        assert_eq!(rest, vec![(1, true), (2, true), (3, false)]);
        // Not acknowledged by the box: WRITEs after it pass unacknowledged too.
        assert_eq!(
            c.handle_request(3, 4, true, Request::Write, &[4; 4], true),
            RequestAction::Forward
        );
        assert_eq!(
            c.handle_response(4, 0x11, Answer::ReadResponse { psn: 3, ends: true }),
            ResponseAction::Forward
        );
        assert_eq!(
            c.held_bytes(),
            4,
            "the READ and what came before it are released"
        );
        assert_eq!(
            c.handle_request(5, 5, true, Request::Write, &[5; 4], true),
            RequestAction::ForwardAndAck { psn: 5, msn: 6 },
            "answered, the READ no longer stops acceleration"
        );
    }

    #[test]
    fn a_full_buffer_stops_pseudo_acks_until_remote_catches_up() {
        let mut c = learned(0);
        c.handle_request(0, 0, true, Request::Write, &[0; 4], true);
        assert_eq!(
            c.handle_request(0, 1, true, Request::Write, &[0; 4], false),
            RequestAction::Forward
        );
        // Room again, but PSN 1 passed unbuffered: PSN 2 is kept, not acknowledged.
        assert_eq!(
            c.handle_request(0, 2, true, Request::Write, &[0; 4], true),
            RequestAction::Forward
        );
        assert_eq!(c.held_bytes(), 8);
        // Remote's ACK of PSN 2 is news for Local.
        assert_eq!(
            c.handle_response(1, 0x11, Answer::Ack { psn: 2 }),
            ResponseAction::Forward
        );
        assert_eq!(
            c.handle_request(2, 3, true, Request::Write, &[0; 4], true),
            RequestAction::ForwardAndAck { psn: 3, msn: 4 }
        );
    }

    #[test]
    fn silence_from_remote_times_out_and_resends_everything_held() {
        let mut c = learned(7);
        c.handle_request(10, 7, true, Request::Write, &[0; 4], true);
        assert_eq!(c.poll_timeout(50, 100), None);
        assert_eq!(c.poll_timeout(110, 100), Some(Expiry::Round(7)));
        assert_eq!(c.deadline(100), Some(210));
        assert_eq!(
            c.next_resend().map(|(f, again)| (f.len(), again)),
            Some((4, true))
        );
        assert_eq!(c.next_resend(), None);
    }

    /// A Remote that never answers is resent to for [`MAX_STALLED_ROUNDS`] rounds, then the
    /// connection drops its buffer and its timer stops; progress in between starts the count
    /// again.
    #[test]
    fn a_remote_that_never_answers_is_given_up_after_the_rounds() {
        let mut c = learned(7);
        c.handle_request(0, 7, true, Request::Write, &[0; 4], true);
        c.handle_request(0, 8, true, Request::Write, &[0; 6], true);
        let expire = |c: &mut Conn| {
            let now = c
                .deadline(100)
                .expect("the timer runs while frames are held");
            c.poll_timeout(now, 100)
        };
        for _ in 0..MAX_STALLED_ROUNDS - 1 {
            assert_eq!(expire(&mut c), Some(Expiry::Round(7)));
        }
        // Remote acknowledges PSN 7: progress, the count starts again.
        let now = c.deadline(100).unwrap() - 1;
        c.handle_response(now, 0x11, Answer::Ack { psn: 7 });
        for _ in 0..MAX_STALLED_ROUNDS {
            assert_eq!(expire(&mut c), Some(Expiry::Round(8)));
        }
        assert_eq!(
            expire(&mut c),
            Some(Expiry::GaveUp {
                frames: 1,
                bytes: 6
            })
        );
        assert_eq!((c.held_bytes(), c.deadline(100)), (0, None));
    }

    #[test]
    fn unlearned_connections_pass_through() {
        let mut c = Conn::new(0);
        assert_eq!(
            c.handle_request(0, 0, true, Request::Write, &[0; 4], true),
            RequestAction::Forward
        );
        assert_eq!(
            c.handle_response(1, 0x22, Answer::Ack { psn: 0 }),
            ResponseAction::Forward
        );
        assert_eq!(
            c.handle_request(2, 1, true, Request::Write, &[0; 4], true),
            RequestAction::ForwardAndAck { psn: 1, msn: 2 }
        );
    }
}
