//! PCIe between host and NIC: one bandwidth-limited channel per direction, TLP overhead per
//! MPS-sized write/completion chunk and per MRRS-sized read request, a read round trip, a
//! posted-write latency. Counts bytes and TLPs each way.
//!
//! Directions: *upstream* is NIC → host (read requests, DMA writes of payload and CQEs, QPC
//! write-backs); *downstream* is host → NIC (read completions carrying data, MMIO doorbells).

use rnic_sim::{bytes_time_ps_mbps, ser_ps, TimePs};

use crate::params::{data_tlps_wire_bytes, PcieParams};

/// One direction of a serial link: a FIFO server at a fixed rate.
#[derive(Debug, Clone, Default)]
pub struct Lane {
    mbps: u64,
    free_at: TimePs,
    /// Bytes carried including TLP overhead.
    pub wire_bytes: u64,
    /// Payload bytes carried (data only).
    pub payload_bytes: u64,
    /// TLPs carried.
    pub tlps: u64,
    /// Time spent transmitting, ps.
    pub busy_ps: u64,
}

impl Lane {
    /// A lane of `mbps`.
    pub fn new(mbps: u64) -> Self {
        Lane {
            mbps,
            ..Lane::default()
        }
    }

    /// Sends `bytes` (payload `payload`, in `tlps` TLPs) no earlier than `at`; returns the
    /// time its last byte is out.
    pub fn reserve(&mut self, at: TimePs, bytes: u64, payload: u64, tlps: u64) -> TimePs {
        let start = at.max(self.free_at);
        let d = ser_ps(bytes, self.mbps);
        self.free_at = start + d;
        self.wire_bytes += bytes;
        self.payload_bytes += payload;
        self.tlps += tlps;
        self.busy_ps += d;
        self.free_at
    }
}

/// Byte counters of the PCIe link (for results).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PcieStats {
    /// NIC → host bytes including TLP overhead.
    pub up_bytes: u64,
    /// NIC → host payload bytes.
    pub up_payload_bytes: u64,
    /// Host → NIC bytes including TLP overhead.
    pub down_bytes: u64,
    /// Host → NIC payload bytes.
    pub down_payload_bytes: u64,
    /// Read requests (MRRS-sized TLPs) issued.
    pub read_requests: u64,
    /// Posted write TLPs NIC → host.
    pub write_tlps: u64,
}

/// The PCIe link.
#[derive(Debug, Clone)]
pub struct Pcie {
    /// Parameters.
    pub p: PcieParams,
    /// NIC → host.
    pub up: Lane,
    /// Host → NIC.
    pub down: Lane,
    read_requests: u64,
    write_tlps: u64,
}

fn chunks(len: u64, size: u64) -> u64 {
    len.div_ceil(size).max(1)
}

impl Pcie {
    /// A link with parameters `p`.
    pub fn new(p: PcieParams) -> Self {
        Pcie {
            up: Lane::new(p.mbps),
            down: Lane::new(p.mbps),
            p,
            read_requests: 0,
            write_tlps: 0,
        }
    }

    /// Read tags a read of `len` bytes occupies (one per MRRS request, at most all tags).
    pub fn tags_for(&self, len: u64) -> u32 {
        chunks(len, self.p.mrrs_bytes).min(u64::from(self.p.max_read_tags)) as u32
    }

    /// Issues the read requests for `len` bytes at `at`; returns when the first completion
    /// byte reaches the NIC (last request out + round trip).
    pub fn read_request(&mut self, at: TimePs, len: u64) -> TimePs {
        let n = chunks(len, self.p.mrrs_bytes);
        self.read_requests += n;
        let end = self.up.reserve(at, n * self.p.tlp_header_bytes, 0, n);
        end + self.p.read_rtt_ps
    }

    /// The completions of a `len`-byte read start arriving at `at`; returns when the last
    /// byte is in the NIC.
    pub fn read_completion(&mut self, at: TimePs, len: u64) -> TimePs {
        let n = chunks(len, self.p.mps_bytes);
        let wire = data_tlps_wire_bytes(len, self.p.mps_bytes, self.p.tlp_header_bytes);
        self.down.reserve(at, wire, len, n)
    }

    /// A DMA write of `len` bytes NIC → host issued at `at`; returns when it is visible in
    /// host memory.
    pub fn posted_write(&mut self, at: TimePs, len: u64) -> TimePs {
        let n = chunks(len, self.p.mps_bytes);
        self.write_tlps += n;
        let wire = data_tlps_wire_bytes(len, self.p.mps_bytes, self.p.tlp_header_bytes);
        self.up.reserve(at, wire, len, n) + self.p.posted_write_ps
    }

    /// An MMIO write (doorbell) host → NIC at `at`; returns when the NIC sees it.
    pub fn mmio_write(&mut self, at: TimePs, len: u64) -> TimePs {
        self.down.reserve(at, len + self.p.tlp_header_bytes, len, 1) + self.p.posted_write_ps
    }

    /// Uncontended time of a `len`-byte read from issue to last byte (for breakdowns).
    pub fn read_latency(&self, len: u64) -> TimePs {
        let n = chunks(len, self.p.mrrs_bytes);
        let completions = data_tlps_wire_bytes(len, self.p.mps_bytes, self.p.tlp_header_bytes);
        bytes_time_ps_mbps(n * self.p.tlp_header_bytes, self.p.mbps)
            + self.p.read_rtt_ps
            + bytes_time_ps_mbps(completions, self.p.mbps)
    }

    /// Uncontended time of a `len`-byte posted write until visible.
    pub fn write_latency(&self, len: u64) -> TimePs {
        let wire = data_tlps_wire_bytes(len, self.p.mps_bytes, self.p.tlp_header_bytes);
        bytes_time_ps_mbps(wire, self.p.mbps) + self.p.posted_write_ps
    }

    /// Uncontended time of a doorbell MMIO write until the NIC sees it.
    pub fn mmio_latency(&self) -> TimePs {
        bytes_time_ps_mbps(self.p.doorbell_bytes + self.p.tlp_header_bytes, self.p.mbps)
            + self.p.posted_write_ps
    }

    /// Counters.
    pub fn stats(&self) -> PcieStats {
        PcieStats {
            up_bytes: self.up.wire_bytes,
            up_payload_bytes: self.up.payload_bytes,
            down_bytes: self.down.wire_bytes,
            down_payload_bytes: self.down.payload_bytes,
            read_requests: self.read_requests,
            write_tlps: self.write_tlps,
        }
    }
}

impl crate::stats::Report for Pcie {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        reg.record(prefix, &self.stats());
        reg.set(&format!("{prefix}.up_busy_ps"), self.up.busy_ps);
        reg.set(&format!("{prefix}.down_busy_ps"), self.down.busy_ps);
    }
}
