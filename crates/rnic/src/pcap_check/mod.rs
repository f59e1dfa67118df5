//! `rnic pcap check`: reads a capture from a real NIC (or from rnic), decodes every RoCEv2
//! frame with `rnic-wire`, verifies each ICRC and analyses each QP's traffic.
//!
//! [`check_path`] and [`check_reader`] are the whole check without the command line; the
//! parts are [`read`] (pcap and pcapng records), [`decode`] (what a frame is, which frames
//! count as RoCEv2), [`flows`] (per-QP figures and round trips) and [`report`] (text and
//! JSON). Bad input never panics: a file that is not a capture is a [`read::NotACapture`]
//! (exit status 2); damage inside one ends the reading, is listed like a failed frame and
//! fails the check (exit status 1).

pub mod decode;
pub mod flows;
pub mod kinds;
pub mod read;
pub mod report;

use decode::Decoded;
use flows::Flows;
use read::{read_capture, NotACapture, Record, LINKTYPE_ETHERNET};
pub use report::Report;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// Failed frames kept in full; past this only their count grows (a capture of a broken link
/// can fail millions of frames, and the first ones tell the story).
pub const MAX_LISTED_FAILURES: usize = 10_000;

/// A RoCEv2 frame that failed to parse or failed its ICRC, or a damaged record.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FailedFrame {
    /// 1-based frame number, as Wireshark shows it.
    pub frame: u64,
    pub reason: String,
}

/// Everything counted while the capture is read.
#[derive(Debug, Default)]
pub struct Analysis {
    pub frames: u64,
    pub verified: u64,
    pub failed: u64,
    pub cut: u64,
    /// Cut frames whose BTH was not even captured (not analysed).
    pub cut_unreadable: u64,
    pub ipv6: u64,
    pub non_roce: u64,
    /// The frames not RoCEv2, by kind ([`kinds::other_kind`]).
    pub other_kinds: BTreeMap<String, u64>,
    /// Frames whose timestamp is earlier than the frame's before them, and the first such.
    pub time_backwards: u64,
    pub first_time_backwards: Option<u64>,
    /// The timestamp of the last frame that had one, ns.
    last_time_ns: Option<u64>,
    /// Verified frames to a UDP port other than 4791, by port.
    pub other_ports: BTreeMap<u16, u64>,
    /// Frames of interfaces whose link type is not Ethernet, by link type.
    pub other_link_types: BTreeMap<u16, u64>,
    pub failures: Vec<FailedFrame>,
    pub flows: Flows,
    /// Frames to QP1: connection management MADs (RDMA CM REQ, REP, RTU), in no flow.
    pub cm_mads: u64,
    /// Priority flow control frames that pause (XOFF), counted in `non_roce` too.
    pub pfc_pauses: u64,
    /// Priority flow control frames that resume (XON), counted in `non_roce` too.
    pub pfc_resumes: u64,
}

impl Analysis {
    /// Counts a frame that is not RoCEv2, by its kind.
    fn add_other(&mut self, data: &[u8]) {
        self.non_roce += 1;
        *self.other_kinds.entry(kinds::other_kind(data)).or_default() += 1;
    }

    /// Adds a parsed frame to its flow, or counts it as a MAD to QP1.
    fn add_packet(&mut self, number: u64, time_ns: Option<u64>, p: &decode::RocePacket) {
        if p.bth.dest_qp == rnic_wire::cm::GSI_QPN {
            self.cm_mads += 1;
        } else {
            self.flows.add(number, time_ns, p);
        }
    }
}

impl Analysis {
    /// Takes one record.
    pub fn add(&mut self, r: Record<'_>) {
        self.frames += 1;
        let time_ns = r.timestamped.then_some(r.time_ns);
        if r.timestamped {
            if self.last_time_ns.is_some_and(|last| r.time_ns < last) {
                self.time_backwards += 1;
                self.first_time_backwards.get_or_insert(r.number);
            }
            self.last_time_ns = Some(r.time_ns);
        }
        if r.link_type != LINKTYPE_ETHERNET {
            *self.other_link_types.entry(r.link_type).or_default() += 1;
            return;
        }
        match decode::decode(r.data, r.orig_len) {
            Decoded::NotRoce => self.add_other(r.data),
            Decoded::Pfc { pausing } => {
                self.add_other(r.data);
                if pausing {
                    self.pfc_pauses += 1;
                } else {
                    self.pfc_resumes += 1;
                }
            }
            Decoded::RoceIpv6 => self.ipv6 += 1,
            Decoded::Verified(p) => {
                self.verified += 1;
                if p.udp_dst_port != rnic_wire::ROCE_PORT {
                    *self.other_ports.entry(p.udp_dst_port).or_default() += 1;
                }
                self.add_packet(r.number, time_ns, &p);
            }
            Decoded::Cut(p) => {
                self.cut += 1;
                match p {
                    Some(p) => self.add_packet(r.number, time_ns, &p),
                    None => self.cut_unreadable += 1,
                }
            }
            Decoded::Failed(reason) => {
                self.failed += 1;
                if self.failures.len() < MAX_LISTED_FAILURES {
                    self.failures.push(FailedFrame {
                        frame: r.number,
                        reason,
                    });
                }
            }
        }
    }
}

/// Checks the capture file at `path`.
pub fn check_path(path: &Path) -> Result<Report, NotACapture> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| {
        NotACapture(format!(
            "cannot open {name}: {e}; expected a pcap or pcapng capture file"
        ))
    })?;
    check_reader(file, &name)
}

/// Checks a capture read from `input`, named `name` in the report and messages.
pub fn check_reader<R: Read>(input: R, name: &str) -> Result<Report, NotACapture> {
    let mut a = Analysis::default();
    let summary = read_capture(input, name, |r| a.add(r))?;
    Ok(Report::new(name, &summary, a))
}

#[cfg(test)]
mod tests;
