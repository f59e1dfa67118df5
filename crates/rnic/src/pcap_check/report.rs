//! The check's result as one value, written as text for people and as JSON (the same content;
//! keys in a fixed order, units in their names) for scripts.

use super::flows::rtt::{self, Pairing, RttSummary};
use super::flows::{Flow, FlowKey, Messages, Naks};
use super::read::ReadSummary;
use super::{Analysis, FailedFrame};
use rnic_model::words::{agree, counted};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Failed frames shown in the text (the JSON lists every one kept).
const TEXT_FAILURES: usize = 50;
/// The status of a capture read to its end that holds no RoCEv2 frame.
const NO_ROCE: &str = "no_roce_frames";
/// The status of a capture read to its end whose RoCEv2 frames could none be checked (all cut
/// by the snap length or over IPv6): passing it would vouch for nothing.
const NONE_CHECKED: &str = "no_roce_frame_checked";

/// The whole result of `rnic pcap check`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Report {
    pub file: String,
    pub format: String,
    /// `ok` when every RoCEv2 frame parsed and passed its ICRC and the file was read to its
    /// end; `failed` when one did not or the file is damaged; `no_roce_frames` when the file
    /// was read to its end and holds no RoCEv2 frame, so nothing was checked;
    /// `no_roce_frame_checked` when it holds some but none could be checked (every one cut by
    /// the snap length or over IPv6).
    pub status: &'static str,
    /// Every packet record of the file.
    pub frames: u64,
    /// RoCEv2 frames: verified + failed + cut by the snap length + IPv6.
    pub roce_frames: u64,
    /// Parsed, ICRC verified.
    pub roce_frames_verified: u64,
    /// Failed to parse or failed the ICRC (listed in `failures`).
    pub roce_frames_failed: u64,
    /// Cut by the capture's snap length: headers read, ICRC not checked.
    pub roce_frames_cut_by_snaplen: u64,
    /// Verified RoCEv2 frames sent to a UDP port other than 4791 (counted in verified).
    pub roce_frames_on_other_udp_ports: u64,
    /// RoCEv2 over IPv6: recognised, not decoded.
    pub roce_ipv6_frames_not_decoded: u64,
    /// Verified or cut RoCEv2 frames to QP1: connection management MADs (RDMA CM REQ, REP,
    /// RTU), counted in no flow.
    pub roce_cm_mads: u64,
    /// Ethernet frames that are not RoCEv2.
    pub non_roce_frames: u64,
    /// Those frames by kind ("TCP", "ARP", "IPv6", "EtherType 0x88e5", ...).
    pub non_roce_frames_by_type: BTreeMap<String, u64>,
    /// Frames whose timestamp is earlier than the frame's before them (the capture is not in
    /// time order: durations and round trips may be wrong).
    pub frames_earlier_than_the_one_before: u64,
    /// Of those, IEEE 802.1Qbb priority flow control frames that pause a priority (XOFF).
    pub pfc_pause_frames: u64,
    /// Of those, priority flow control frames that resume (XON: every pause time zero).
    pub pfc_resume_frames: u64,
    /// Frames of interfaces whose link type is not Ethernet, or of no described interface.
    pub skipped_frames: u64,
    pub flows: Vec<FlowReport>,
    /// Failed frames (at most [`super::MAX_LISTED_FAILURES`]) and damage to the file.
    pub failures: Vec<FailedFrame>,
    pub notes: Vec<String>,
    /// The last line of the text output.
    pub verdict: String,
}

/// One QP's traffic from one host.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FlowReport {
    pub src_ip: String,
    pub dst_ip: String,
    /// Destination QPN from the BTH.
    pub dest_qp: u32,
    pub udp_src_ports: Vec<u16>,
    /// UDP destination ports other than 4791 the flow's frames used.
    pub other_udp_dst_ports: Vec<u16>,
    pub frames: u64,
    /// Time from the flow's first frame to its last.
    pub duration_us: f64,
    /// Frames per opcode, keyed by opcode byte and name ("0x04 RC SEND_ONLY").
    pub opcodes: BTreeMap<String, u64>,
    pub messages: Messages,
    pub messages_total: u64,
    /// SEND, WRITE and READ response payload, each PSN counted once.
    pub payload_bytes: u64,
    /// Payload of packets seen again (retransmitted or replayed).
    pub repeated_payload_bytes: u64,
    /// Forward PSN jumps of request packets, and the PSNs they skipped.
    pub psn_gaps: u64,
    pub psns_skipped: u64,
    /// Request packets with a repeated or backward PSN.
    pub retransmitted_packets: u64,
    /// READ responses and atomic ACKs seen again.
    pub repeated_responses: u64,
    pub acks: u64,
    pub naks: Naks,
    pub naks_total: u64,
    pub cnps: u64,
    pub ecn_ce_frames: u64,
    pub fecn_frames: u64,
    /// Largest FIRST/MIDDLE payload: the path MTU, when such packets were seen.
    pub pmtu_bytes: Option<u64>,
    /// ACK round trips of this flow's requests, when measured.
    pub rtt_us: Option<RttSummary>,
    /// The flow whose ACKs and responses answer this one's requests.
    pub rtt_answered_by: Option<String>,
    /// Why round trips were not measured, when the flow has requests that ask for answers.
    pub rtt_note: Option<String>,
}

/// `10.0.0.1 -> 10.0.0.2 QP 0x000011`.
pub fn flow_name(k: &FlowKey) -> String {
    format!("{} -> {} QP {:#08x}", ip(k.src_ip), ip(k.dst_ip), k.dest_qp)
}

fn ip(a: [u8; 4]) -> String {
    std::net::Ipv4Addr::from(a).to_string()
}

/// IBTA-style name of an opcode byte, with its transport: "RC RDMA_WRITE_ONLY".
pub fn opcode_name(op: u8) -> String {
    if op == 0x81 {
        return "CNP".to_string();
    }
    // rnic's vendor opcodes: ORNIC's out-of-order WRITE (see rnic_wire::ooo_eth).
    let ooo = match op {
        0xC0 => Some("OOO_WRITE_FSPOT"),
        0xC1 => Some("OOO_WRITE_SPOT"),
        0xC2 => Some("OOO_WRITE_LAST_FSPOT"),
        0xC3 => Some("OOO_WRITE_LAST"),
        0xC4 => Some("OOO_ACKNOWLEDGE"),
        0xC5 => Some("OOO_BITMAP_NAK"),
        0xC6 => Some("OOO_READ_REQUEST"),
        0xC7 => Some("OOO_READ_RESPONSE"),
        _ => None,
    };
    if let Some(name) = ooo {
        return format!("ORNIC {name}");
    }
    let transport = match op >> 5 {
        0 => "RC",
        1 => "UC",
        2 => "RD",
        3 => "UD",
        _ => "?",
    };
    let name = match op & 0x1F {
        0x00 => "SEND_FIRST",
        0x01 => "SEND_MIDDLE",
        0x02 => "SEND_LAST",
        0x03 => "SEND_LAST_WITH_IMMEDIATE",
        0x04 => "SEND_ONLY",
        0x05 => "SEND_ONLY_WITH_IMMEDIATE",
        0x06 => "RDMA_WRITE_FIRST",
        0x07 => "RDMA_WRITE_MIDDLE",
        0x08 => "RDMA_WRITE_LAST",
        0x09 => "RDMA_WRITE_LAST_WITH_IMMEDIATE",
        0x0A => "RDMA_WRITE_ONLY",
        0x0B => "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        0x0C => "RDMA_READ_REQUEST",
        0x0D => "RDMA_READ_RESPONSE_FIRST",
        0x0E => "RDMA_READ_RESPONSE_MIDDLE",
        0x0F => "RDMA_READ_RESPONSE_LAST",
        0x10 => "RDMA_READ_RESPONSE_ONLY",
        0x11 => "ACKNOWLEDGE",
        0x12 => "ATOMIC_ACKNOWLEDGE",
        0x13 => "COMPARE_SWAP",
        0x14 => "FETCH_ADD",
        0x16 => "SEND_LAST_WITH_INVALIDATE",
        0x17 => "SEND_ONLY_WITH_INVALIDATE",
        _ => "UNKNOWN",
    };
    format!("{transport} {name}")
}

impl Report {
    /// Builds the report of `analysis`, read from `file` as `summary` says.
    pub fn new(file: &str, summary: &ReadSummary, analysis: Analysis) -> Report {
        let a = analysis;
        let pairing = rtt::pair(&a.flows.flows);
        let flows: Vec<FlowReport> = a
            .flows
            .flows
            .iter()
            .map(|(k, f)| flow_report(k, f, pairing.get(k), &a.flows.flows))
            .collect();
        let mut failures = a.failures.clone();
        if let Some(d) = &summary.damage {
            failures.push(FailedFrame {
                frame: summary.records + 1,
                reason: d.clone(),
            });
        }
        let notes = notes(summary, &a);
        let roce_frames = a.verified + a.failed + a.cut + a.ipv6;
        let failed = a.failed > 0 || summary.damage.is_some();
        let verdict = verdict(&a, roce_frames, summary, &failures);
        let status = if failed {
            "failed"
        } else if roce_frames == 0 {
            NO_ROCE
        } else if a.verified == 0 {
            NONE_CHECKED
        } else {
            "ok"
        };
        Report {
            file: file.to_string(),
            format: summary.format.clone(),
            status,
            frames: a.frames.max(summary.records),
            roce_frames,
            roce_frames_verified: a.verified,
            roce_frames_failed: a.failed,
            roce_frames_cut_by_snaplen: a.cut,
            roce_frames_on_other_udp_ports: a.other_ports.values().sum(),
            roce_ipv6_frames_not_decoded: a.ipv6,
            roce_cm_mads: a.cm_mads,
            non_roce_frames: a.non_roce,
            non_roce_frames_by_type: a.other_kinds.clone(),
            frames_earlier_than_the_one_before: a.time_backwards,
            pfc_pause_frames: a.pfc_pauses,
            pfc_resume_frames: a.pfc_resumes,
            skipped_frames: a.other_link_types.values().sum::<u64>()
                + summary.unknown_interface_records,
            flows,
            failures,
            notes,
            verdict,
        }
    }

    /// Whether the check passed (exit status 0).
    pub fn passed(&self) -> bool {
        self.status == "ok"
    }

    /// Whether the capture was read to its end and no RoCEv2 frame was checked: it holds none,
    /// or none that could be (exit status 3).
    pub fn found_no_roce(&self) -> bool {
        self.status == NO_ROCE || self.status == NONE_CHECKED
    }

    /// The JSON form, pretty-printed, with a final newline.
    pub fn to_json(&self) -> serde_json::Result<String> {
        let mut s = serde_json::to_string_pretty(self)?;
        s.push('\n');
        Ok(s)
    }

    /// The text form.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = self.write_text(&mut s);
        s
    }

    fn write_text(&self, s: &mut String) -> std::fmt::Result {
        writeln!(s, "{}: {}", self.file, self.format)?;
        writeln!(
            s,
            "frames {}: RoCEv2 {} (verified {}, failed {}, cut by snaplen {}, IPv6 not decoded {}), \
             not RoCEv2 {}{}, skipped {}",
            self.frames,
            self.roce_frames,
            self.roce_frames_verified,
            self.roce_frames_failed,
            self.roce_frames_cut_by_snaplen,
            self.roce_ipv6_frames_not_decoded,
            self.non_roce_frames,
            by_type(&self.non_roce_frames_by_type)
                .map(|t| format!(" ({t})"))
                .unwrap_or_default(),
            self.skipped_frames
        )?;
        if self.pfc_pause_frames + self.pfc_resume_frames > 0 {
            writeln!(
                s,
                "priority flow control: {} PAUSE frames (XOFF), {} resumes (XON), among the \
                 frames not RoCEv2",
                self.pfc_pause_frames, self.pfc_resume_frames
            )?;
        }
        if self.roce_cm_mads > 0 {
            writeln!(
                s,
                "connection management: {} MADs to QP1 (RDMA CM), in no flow",
                self.roce_cm_mads
            )?;
        }
        for f in &self.flows {
            write_flow(s, f)?;
        }
        if !self.failures.is_empty() {
            writeln!(s, "\nfailed frames:")?;
            for f in self.failures.iter().take(TEXT_FAILURES) {
                writeln!(s, "  frame {}: {}", f.frame, f.reason)?;
            }
            if self.failures.len() > TEXT_FAILURES {
                writeln!(
                    s,
                    "  ... and {} more (--json lists them)",
                    self.failures.len() - TEXT_FAILURES
                )?;
            }
        }
        if !self.notes.is_empty() {
            writeln!(s)?;
            for n in &self.notes {
                writeln!(s, "note: {n}")?;
            }
        }
        writeln!(s, "\n{}", self.verdict)
    }
}

/// `TCP 10, IPv6 4, ARP 4`: the kinds by count, most first (`None` when there are none).
fn by_type(kinds: &BTreeMap<String, u64>) -> Option<String> {
    let mut v: Vec<(&String, &u64)> = kinds.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = v.iter().map(|(k, n)| format!("{k} {n}")).collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn write_flow(s: &mut String, f: &FlowReport) -> std::fmt::Result {
    let ports: Vec<String> = f.udp_src_ports.iter().map(|p| p.to_string()).collect();
    write!(
        s,
        "\n{} -> {} QP {:#08x}  (UDP source port {}",
        f.src_ip,
        f.dst_ip,
        f.dest_qp,
        ports.join(", ")
    )?;
    if !f.other_udp_dst_ports.is_empty() {
        let d: Vec<String> = f
            .other_udp_dst_ports
            .iter()
            .map(|p| p.to_string())
            .collect();
        write!(s, "; destination port {}", d.join(", "))?;
    }
    writeln!(s, ")")?;
    writeln!(
        s,
        "  frames       {} over {:.3} us",
        f.frames, f.duration_us
    )?;
    let ops: Vec<String> = f
        .opcodes
        .iter()
        .map(|(k, n)| format!("{} {n}", k.split_once(' ').map_or(k.as_str(), |x| x.1)))
        .collect();
    writeln!(s, "  opcodes      {}", ops.join(", "))?;
    let m = &f.messages;
    let kinds: Vec<String> = [
        ("send", m.send),
        ("write", m.write),
        ("read request", m.read_request),
        ("read response", m.read_response),
        ("atomic", m.atomic),
        ("atomic ack", m.atomic_ack),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(k, n)| format!("{k} {n}"))
    .collect();
    if f.messages_total + f.payload_bytes + f.repeated_payload_bytes > 0 {
        // No kind to list: data with no message end in it (out-of-order READ responses).
        let kinds = if kinds.is_empty() {
            String::new()
        } else {
            format!(" ({})", kinds.join(", "))
        };
        writeln!(
            s,
            "  messages     {}{kinds}; payload {} bytes, {} bytes repeated",
            f.messages_total, f.payload_bytes, f.repeated_payload_bytes
        )?;
    }
    let requests = m.send + m.write + m.read_request + m.atomic;
    if requests + f.psn_gaps + f.retransmitted_packets + f.repeated_responses > 0 {
        writeln!(
            s,
            "  PSN          {} gaps ({} PSNs skipped), {} retransmitted packets, {} repeated \
             responses",
            f.psn_gaps, f.psns_skipped, f.retransmitted_packets, f.repeated_responses
        )?;
    }
    if f.acks + f.naks_total > 0 {
        let n = &f.naks;
        let by: Vec<String> = [
            ("PSN sequence error", n.psn_sequence_error),
            ("RNR", n.rnr),
            ("remote access error", n.remote_access_error),
            ("invalid request", n.invalid_request),
            ("remote operational error", n.remote_operational_error),
            ("invalid RD request", n.invalid_rd_request),
        ]
        .iter()
        .filter(|(_, c)| *c > 0)
        .map(|(k, c)| format!("{k} {c}"))
        .collect();
        write!(s, "  ACK/NAK      {} ACKs, {} NAKs", f.acks, f.naks_total)?;
        if !by.is_empty() {
            write!(s, " ({})", by.join(", "))?;
        }
        writeln!(s)?;
    }
    if f.cnps + f.ecn_ce_frames + f.fecn_frames > 0 {
        writeln!(
            s,
            "  congestion   {} CNPs, {} ECN CE frames, {} FECN frames",
            f.cnps, f.ecn_ce_frames, f.fecn_frames
        )?;
    }
    match (&f.rtt_us, &f.rtt_answered_by, &f.rtt_note) {
        (Some(r), Some(by), _) => writeln!(
            s,
            "  ACK RTT us   min {:.3} avg {:.3} p50 {:.3} p99 {:.3} max {:.3} ({} samples; answered by {by})",
            r.min, r.avg, r.p50, r.p99, r.max, r.samples
        ),
        (_, _, Some(note)) => writeln!(s, "  ACK RTT      not measured: {note}"),
        _ => Ok(()),
    }
}

fn flow_report(
    k: &FlowKey,
    f: &Flow,
    pairing: Option<&Pairing>,
    all: &BTreeMap<FlowKey, Flow>,
) -> FlowReport {
    let (rtt_us, rtt_answered_by, rtt_note) = match pairing {
        None => (None, None, None),
        Some(Pairing::Paired(back)) => {
            let answers = all.get(back).map_or(&[][..], |b| &b.rtt_answers[..]);
            let samples = rtt::samples_us(&f.rtt_requests, answers);
            let note = samples.is_empty().then(|| {
                format!(
                    "no request of this flow was answered once by {} (answers missing from \
                     the capture, every request retransmitted, or no timestamps)",
                    flow_name(back)
                )
            });
            (rtt::summarize(&samples), Some(flow_name(back)), note)
        }
        Some(Pairing::NoReverse) => (
            None,
            None,
            Some(format!(
                "no ACKs or responses from {} to {} in the capture",
                ip(k.dst_ip),
                ip(k.src_ip)
            )),
        ),
        Some(Pairing::Shared(back, n)) => (
            None,
            None,
            Some(format!(
                "{} is the only candidate to answer {n} flows from {} to {}, so which of its \
                 answers are this flow's is unknown",
                flow_name(back),
                ip(k.src_ip),
                ip(k.dst_ip)
            )),
        ),
        Some(Pairing::Ambiguous(n)) => (
            None,
            None,
            Some(format!(
                "{n} flows from {} to {} carry ACKs and none shares this flow's UDP source \
                 port, so which one answers it is unknown",
                ip(k.dst_ip),
                ip(k.src_ip)
            )),
        ),
    };
    FlowReport {
        src_ip: ip(k.src_ip),
        dst_ip: ip(k.dst_ip),
        dest_qp: k.dest_qp,
        udp_src_ports: f.udp_src_ports.keys().copied().collect(),
        other_udp_dst_ports: f.other_udp_dst_ports.keys().copied().collect(),
        frames: f.frames,
        duration_us: f
            .first_ns
            .zip(f.last_ns)
            .map_or(0, |(a, b)| b.saturating_sub(a)) as f64
            / 1_000.0,
        opcodes: f
            .opcodes
            .iter()
            .map(|(op, n)| (format!("{op:#04x} {}", opcode_name(*op)), *n))
            .collect(),
        messages: f.messages,
        messages_total: f.messages.total(),
        payload_bytes: f.payload_bytes,
        repeated_payload_bytes: f.repeated_payload_bytes,
        psn_gaps: f.psn_gaps,
        psns_skipped: f.psns_skipped,
        retransmitted_packets: f.retransmitted_packets,
        repeated_responses: f.repeated_responses,
        acks: f.acks,
        naks: f.naks,
        naks_total: f.naks.total(),
        cnps: f.cnps,
        ecn_ce_frames: f.ecn_ce_frames,
        fecn_frames: f.fecn_frames,
        pmtu_bytes: f.pmtu_bytes,
        rtt_us,
        rtt_answered_by,
        rtt_note,
    }
}

fn notes(summary: &ReadSummary, a: &Analysis) -> Vec<String> {
    let mut notes = Vec::new();
    for (lt, n) in &a.other_link_types {
        notes.push(format!(
            "{} skipped: {} interface's link type is {lt}, not Ethernet (1); only Ethernet \
             captures are decoded",
            counted(*n, "frame"),
            agree(*n, "its", "their")
        ));
    }
    for (what, (n, first)) in &summary.oddities {
        let which = match (first, n) {
            (0, _) => "its file header has".to_string(),
            (f, 1) => format!("frame {f} has"),
            (f, n) => format!("{n} frames have (the first is frame {f})"),
        };
        notes.push(format!(
            "the container is odd but readable: {which} a {what}; the frames were read as \
             they stand"
        ));
    }
    if summary.unknown_interface_records > 0 {
        let n = summary.unknown_interface_records;
        notes.push(format!(
            "{} skipped: {} a pcapng interface that no interface description block describes",
            counted(n, "frame"),
            agree(n, "it names", "they name")
        ));
    }
    if !a.other_ports.is_empty() {
        let ports: Vec<String> = a
            .other_ports
            .iter()
            .map(|(p, n)| format!("{n} to port {p}"))
            .collect();
        notes.push(format!(
            "RoCEv2 frames on UDP ports other than 4791 ({}): each parsed as RoCEv2 on its port \
             and its ICRC, which covers the ports, verified; other UDP frames are not RoCEv2",
            ports.join(", ")
        ));
    }
    if a.cut > 0 {
        notes.push(format!(
            "{} {} cut by the capture's snap length: {} analysed ({} too short even for \
             the BTH), {} be checked",
            counted(a.cut, "RoCEv2 frame"),
            agree(a.cut, "was", "were"),
            agree(a.cut, "its headers are", "their headers are"),
            a.cut_unreadable,
            agree(a.cut, "its ICRC cannot", "their ICRCs cannot")
        ));
    }
    if a.ipv6 > 0 {
        notes.push(format!(
            "{} over IPv6 {} not decoded (rnic-wire reads RoCEv2 over IPv4)",
            counted(a.ipv6, "RoCEv2 frame"),
            agree(a.ipv6, "was", "were")
        ));
    }
    if let Some(first) = a.first_time_backwards {
        notes.push(format!(
            "{} {} a timestamp earlier than the frame before {} (the first: frame {first}): the \
             capture is not in time order, so flow durations and ACK round trips may be wrong",
            counted(a.time_backwards, "frame"),
            agree(a.time_backwards, "has", "have"),
            agree(a.time_backwards, "it", "them")
        ));
    }
    if a.failed as usize > a.failures.len() {
        notes.push(format!(
            "only the first {} failed frames are listed",
            a.failures.len()
        ));
    }
    notes
}

fn verdict(a: &Analysis, roce: u64, summary: &ReadSummary, failures: &[FailedFrame]) -> String {
    let unchecked = if a.cut + a.ipv6 > 0 {
        format!(
            " ({} not checked: cut by the snap length or IPv6)",
            a.cut + a.ipv6
        )
    } else {
        String::new()
    };
    if a.failed == 0 && summary.damage.is_none() {
        if roce == 0 {
            return no_roce_verdict(a, summary);
        }
        if a.verified == 0 {
            return none_checked_verdict(a);
        }
        return format!(
            "ok: every RoCEv2 frame parsed and passed its ICRC: {} of {roce}{unchecked}",
            a.verified
        );
    }
    let frames: Vec<String> = failures
        .iter()
        .take(10)
        .map(|f| f.frame.to_string())
        .collect();
    let more = if failures.len() > 10 { ", ..." } else { "" };
    let listed = format!("(frame {}{more})", frames.join(", "));
    let damaged = match summary.records {
        0 => "the file is damaged: reading stopped before its first frame".to_string(),
        n => format!("the file is damaged: reading stopped after frame {n}"),
    };
    match (a.failed, summary.damage.is_some()) {
        (0, _) if roce == 0 => {
            format!("FAILED: {damaged}, and no RoCEv2 frame came before it {listed}")
        }
        (0, _) => format!(
            "FAILED: {damaged}; the {roce} RoCEv2 frames before it parsed and passed their \
             ICRC{unchecked} {listed}"
        ),
        (failed, true) => format!(
            "FAILED: {failed} of {roce} RoCEv2 frames failed to parse or failed the ICRC, and \
             {damaged} {listed}"
        ),
        (failed, false) => format!(
            "FAILED: {failed} of {roce} RoCEv2 frames failed to parse or failed the ICRC {listed}"
        ),
    }
}

/// The verdict of a capture whose RoCEv2 frames were all cut by the snap length or IPv6:
/// why none could be checked.
fn none_checked_verdict(a: &Analysis) -> String {
    let why = match (a.cut, a.ipv6) {
        (1, 0) => "its 1 RoCEv2 frame was cut by the snap length before its ICRC".to_string(),
        (0, 1) => "its 1 RoCEv2 frame is over IPv6, which is not decoded".to_string(),
        (cut, 0) => {
            format!("its {cut} RoCEv2 frames were all cut by the snap length before their ICRC")
        }
        (0, v6) => format!("its {v6} RoCEv2 frames are all over IPv6, which is not decoded"),
        (cut, v6) => format!(
            "of its {} RoCEv2 frames, {cut} were cut by the snap length before their ICRC and \
             {v6} are over IPv6, which is not decoded",
            cut + v6
        ),
    };
    format!("no RoCEv2 frame could be checked, so nothing was: {why}")
}

/// The verdict of a capture read to its end with no RoCEv2 frame: what it holds instead.
fn no_roce_verdict(a: &Analysis, summary: &ReadSummary) -> String {
    let frames = a.frames.max(summary.records);
    let held = match by_type(&a.other_kinds) {
        _ if frames == 0 => "the capture holds no frames".to_string(),
        Some(_) if a.non_roce == 1 && frames == 1 => {
            let kind = a.other_kinds.keys().next().map_or("", String::as_str);
            format!("its one frame is {kind}")
        }
        // One kind: "all too short for Ethernet", not "too short for Ethernet 2".
        Some(_) if a.non_roce == frames && a.other_kinds.len() == 1 => {
            let kind = a.other_kinds.keys().next().map_or("", String::as_str);
            format!("its {frames} frames are all {kind}")
        }
        Some(kinds) if a.non_roce == frames => format!("its {frames} frames are {kinds}"),
        Some(kinds) => format!(
            "of its {frames} frames, {kinds}; the other {} skipped (see the notes)",
            frames - a.non_roce
        ),
        None if frames == 1 => "its one frame was skipped (see the notes)".to_string(),
        None => format!("its {frames} frames were all skipped (see the notes)"),
    };
    format!("no RoCEv2 frame found, so nothing was checked: {held}")
}
