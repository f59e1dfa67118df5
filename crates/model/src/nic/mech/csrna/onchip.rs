//! On-chip memory of csRNA's structures, computed from their sizes (csRNA §4.7, Formula 2;
//! §5.1, Table 1).
//!
//! # Formula 2 and why it cannot be met exactly
//!
//! The paper states `mem_T = 3·mem_QR + mem_PF + mem_PRT = 40·ooo_cap` bytes. With its own
//! sizes — an index FIFO of `ooo_cap` entries per requester, a PF of `2·3·ooo_cap` elements,
//! a PRT of `3·ooo_cap` entries — every term is `3·ooo_cap` times a whole number of bits,
//! so the total per `ooo_cap` is a multiple of 3 bits; 40 bytes (320 bits) is not. No choice
//! of integral field widths gives exactly 40 B, so the paper's figure is rounded. We count
//! the fields the structures need, bit-exact, and report the result next to the paper's 40 B
//! ([`FORMULA2_PAPER_BYTES_PER_OOO_CAP`]).
//!
//! Field widths (defaults of [`FieldWidths`]):
//!
//! | structure | entries | fields | bits |
//! |---|---|---|---|
//! | QR index FIFO (per channel) | `ooo_cap` | index (8-bit, §4.4) | 8 |
//! | PF element | `2·3·ooo_cap` | QPN 24 (IB QPNs are 24-bit, §2.2) + channel 2 + index 8 + `dma_posted` 1 + read/write 1 (ours) | 36 |
//! | PRT entry | `3·ooo_cap` | `is_vld` 1 + QPN tag 24 + `pnd_cnt` ⌈log2(3·ooo_cap+1)⌉ + `dma_rtn` 1 + `blocked` 1 (ours) | 27 + ⌈log2(3·ooo_cap+1)⌉ |
//!
//! At `ooo_cap = 16` (`pnd_cnt` 6 bits): 3·16·8 + 96·36 + 48·33 = 384 + 3456 + 1584 =
//! 5424 bits = **678 B = 42.375 B per `ooo_cap`** (paper: 40 B, 640 B). With the paper's
//! fields only (no read/write bit, no `blocked` bit): 384 + 3360 + 1536 = 5280 bits = 660 B
//! = 41.25 B per `ooo_cap`.
//!
//! The waiting SRAM is not part of the increment: it replaces the baseline's waiting FIFO of
//! the same depth and width (§4.4), so it is reported per channel as absolute memory only.
//!
//! # Table 1
//!
//! csRNA's connection state for 128K QPs with a 300-entry cache (§5.1, §5.2):
//! * QPC cache: 300 × 256 B = 76,800 B (context data; tags, about 25 bits per entry, are not
//!   counted, as in the paper);
//! * SQ address table: 131,072 QPs × 10 B (§4.7; 8 B SQ base address + 2 B WQE offset) =
//!   1,310,720 B;
//! * pending structures at `ooo_cap = 16`: 678 B;
//! * total 1,388,198 B = 1.39 MB (decimal) = 1.32 MiB; the paper's "1.4MB" is the decimal
//!   reading. The other rows are the paper's cited figures.

use super::pending_fifo::PendingFifo;
use super::pending_record_table::PendingRecordTable;
use super::requester::NonBlockingRequester;
use super::types::{ConfigError, NUM_CHANNELS};

/// The paper's Formula 2 coefficient: bytes added per unit of `ooo_cap` (§4.7).
pub const FORMULA2_PAPER_BYTES_PER_OOO_CAP: u64 = 40;

/// The paper's Formula 2: `40 × ooo_cap` bytes.
pub fn formula2_paper_bytes(ooo_cap: usize) -> u64 {
    FORMULA2_PAPER_BYTES_PER_OOO_CAP.saturating_mul(ooo_cap as u64)
}

/// Field widths of the pending structures, in bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldWidths {
    /// QPN width (24: InfiniBand QPNs).
    pub qpn_bits: u64,
    /// Requester index width (8, §4.4).
    pub index_bits: u64,
    /// Channel number width (2 for three channels).
    pub channel_bits: u64,
    /// Bits a PF element carries beyond QPN, channel, index and `dma_posted` (1: the
    /// read/write flag of the request; 0 for the paper's fields only).
    pub pf_extra_bits: u64,
    /// Bits a PRT entry carries beyond `is_vld`, tag, `pnd_cnt`, `dma_rtn` (1: the per-pass
    /// `blocked` flag; 0 for the paper's fields only).
    pub prt_extra_bits: u64,
}

impl Default for FieldWidths {
    fn default() -> Self {
        FieldWidths {
            qpn_bits: 24,
            index_bits: 8,
            channel_bits: 2,
            pf_extra_bits: 1,
            prt_extra_bits: 1,
        }
    }
}

impl FieldWidths {
    /// The paper's fields only (Fig. 4a/4c), no additions.
    pub fn paper_fields_only() -> Self {
        FieldWidths {
            pf_extra_bits: 0,
            prt_extra_bits: 0,
            ..FieldWidths::default()
        }
    }
}

fn sat_sum(parts: &[u64]) -> u64 {
    parts.iter().fold(0, |a, &b| a.saturating_add(b))
}

/// Bits needed to count 0..=`max`.
pub fn counter_bits(max: u64) -> u64 {
    u64::from(u64::BITS - max.leading_zeros()).max(1)
}

/// One on-chip structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryItem {
    /// Name.
    pub name: String,
    /// Number of entries.
    pub entries: u64,
    /// Width of one entry, bits.
    pub bits_per_entry: u64,
}

impl MemoryItem {
    /// Total bits.
    pub fn bits(&self) -> u64 {
        self.entries.saturating_mul(self.bits_per_entry)
    }

    /// Total bytes, rounded up.
    pub fn bytes(&self) -> u64 {
        self.bits().div_ceil(8)
    }
}

/// The structures csRNA adds for non-blocking QPC management (Formula 2's terms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingStructuresMemory {
    /// Out-of-order capacity.
    pub ooo_cap: usize,
    /// Field widths used.
    pub widths: FieldWidths,
    /// The three requesters' index FIFOs, the PF, the PRT.
    pub items: Vec<MemoryItem>,
}

impl PendingStructuresMemory {
    /// Sizes taken from the structures themselves, built for `ooo_cap`.
    pub fn new(ooo_cap: usize, widths: FieldWidths) -> Result<Self, ConfigError> {
        let qr = NonBlockingRequester::<()>::new(ooo_cap)?;
        let pf = PendingFifo::new(ooo_cap);
        let prt = PendingRecordTable::new(ooo_cap);
        let mut items: Vec<MemoryItem> = (0..NUM_CHANNELS)
            .map(|c| MemoryItem {
                name: format!("QR{c} index FIFO"),
                entries: qr.ooo_cap() as u64,
                bits_per_entry: widths.index_bits,
            })
            .collect();
        let pnd_cnt_bits = counter_bits(prt.size() as u64);
        items.push(MemoryItem {
            name: "pending FIFO (2 FIFOs)".into(),
            entries: pf.capacity() as u64,
            bits_per_entry: sat_sum(&[
                widths.qpn_bits,
                widths.channel_bits,
                widths.index_bits,
                1, // dma_posted
                widths.pf_extra_bits,
            ]),
        });
        items.push(MemoryItem {
            name: "pending record table".into(),
            entries: prt.size() as u64,
            bits_per_entry: sat_sum(&[
                1, // is_vld
                widths.qpn_bits,
                pnd_cnt_bits,
                1, // dma_rtn
                widths.prt_extra_bits,
            ]),
        });
        Ok(PendingStructuresMemory {
            ooo_cap,
            widths,
            items,
        })
    }

    /// Total bits.
    pub fn bits(&self) -> u64 {
        self.items
            .iter()
            .map(MemoryItem::bits)
            .fold(0, u64::saturating_add)
    }

    /// Total bytes (each structure rounded up to whole bytes).
    pub fn bytes(&self) -> u64 {
        self.items
            .iter()
            .map(MemoryItem::bytes)
            .fold(0, u64::saturating_add)
    }

    /// Bytes per unit of `ooo_cap` (the paper's 40, §4.7).
    pub fn bytes_per_ooo_cap(&self) -> f64 {
        self.bits() as f64 / 8.0 / self.ooo_cap as f64
    }
}

/// Waiting SRAM of one requester: `ooo_cap` entries of `info_bytes` (absolute memory; not an
/// increment over the baseline's waiting FIFO of equal depth).
pub fn waiting_sram(channel: usize, ooo_cap: usize, info_bytes: u64) -> MemoryItem {
    MemoryItem {
        name: format!("QR{channel} waiting SRAM"),
        entries: ooo_cap as u64,
        bits_per_entry: info_bytes.saturating_mul(8),
    }
}

/// csRNA's on-chip connection state (Table 1's csRNA column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsrnaMemoryConfig {
    /// Connections supported (SQ address table rows).
    pub qps: u64,
    /// QPC cache entries.
    pub qpc_cache_entries: u64,
    /// Bytes of one QPC (256, §2.1).
    pub qpc_entry_bytes: u64,
    /// Bytes per QP of the SQ address table (10, §4.7).
    pub sq_entry_bytes: u64,
    /// Out-of-order capacity.
    pub ooo_cap: usize,
    /// Field widths of the pending structures.
    pub widths: FieldWidths,
}

impl Default for CsrnaMemoryConfig {
    /// Table 1's configuration: 128K QPs, 300-entry cache, 256 B QPCs, ooo_cap 16.
    fn default() -> Self {
        CsrnaMemoryConfig {
            qps: 128 * 1024,
            qpc_cache_entries: 300,
            qpc_entry_bytes: 256,
            sq_entry_bytes: 10,
            ooo_cap: 16,
            widths: FieldWidths::default(),
        }
    }
}

/// Line items of csRNA's connection-state memory.
pub fn csrna_memory(cfg: &CsrnaMemoryConfig) -> Result<Vec<MemoryItem>, ConfigError> {
    let mut items = vec![
        MemoryItem {
            name: "QPC cache".into(),
            entries: cfg.qpc_cache_entries,
            bits_per_entry: cfg.qpc_entry_bytes.saturating_mul(8),
        },
        MemoryItem {
            name: "SQ address table".into(),
            entries: cfg.qps,
            bits_per_entry: cfg.sq_entry_bytes.saturating_mul(8),
        },
    ];
    items.extend(PendingStructuresMemory::new(cfg.ooo_cap, cfg.widths)?.items);
    Ok(items)
}

/// A plain-text table of `items` (name, entries, bits per entry, bytes) and their total.
pub fn render(items: &[MemoryItem]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<28} {:>10} {:>10} {:>12}",
        "structure", "entries", "bits/entry", "bytes"
    );
    for it in items {
        let _ = writeln!(
            out,
            "{:<28} {:>10} {:>10} {:>12}",
            it.name,
            it.entries,
            it.bits_per_entry,
            it.bytes()
        );
    }
    let total = items
        .iter()
        .map(MemoryItem::bytes)
        .fold(0, u64::saturating_add);
    let _ = writeln!(out, "{:<28} {:>10} {:>10} {:>12}", "total", "", "", total);
    out
}

/// Where a Table 1 figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Quoted from the paper (with the paper's own citation).
    Paper(&'static str),
    /// Computed from our structures.
    Computed,
}

/// One column of Table 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table1Row {
    /// RNIC.
    pub rnic: &'static str,
    /// On-chip memory for connection state, bytes (decimal units for the paper's figures:
    /// 1 KB = 1000 B, 1 MB = 10^6 B).
    pub on_chip_bytes: u64,
    /// Maximum number of QPs.
    pub max_qps: u64,
    /// Provenance.
    pub source: Source,
}

impl Table1Row {
    /// On-chip memory in decimal megabytes.
    pub fn megabytes(&self) -> f64 {
        self.on_chip_bytes as f64 / 1e6
    }
}

/// Table 1 (csRNA §5.1): eRNIC, SRNIC, ConnectX-5 as printed in the paper; csRNA computed
/// from `cfg`.
pub fn table1(cfg: &CsrnaMemoryConfig) -> Result<Vec<Table1Row>, ConfigError> {
    let csrna = csrna_memory(cfg)?
        .iter()
        .map(MemoryItem::bytes)
        .fold(0, u64::saturating_add);
    Ok(vec![
        Table1Row {
            rnic: "eRNIC",
            on_chip_bytes: 32_000,
            max_qps: 127,
            source: Source::Paper("Table 1; max QPs from [4] Xilinx ERNIC"),
        },
        Table1Row {
            rnic: "SRNIC",
            on_chip_bytes: 2_500_000,
            max_qps: 10_000,
            source: Source::Paper("Table 1; max QPs from [28] SRNIC"),
        },
        Table1Row {
            rnic: "ConnectX-5",
            on_chip_bytes: 2_000_000,
            max_qps: 128 * 1024,
            source: Source::Paper("Table 1; memory from [18], max QPs from [23] mlx5 driver"),
        },
        Table1Row {
            rnic: "csRNA",
            on_chip_bytes: csrna,
            max_qps: cfg.qps,
            source: Source::Computed,
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_bits_values() {
        assert_eq!(counter_bits(0), 1);
        assert_eq!(counter_bits(1), 1);
        assert_eq!(counter_bits(3), 2);
        assert_eq!(counter_bits(48), 6);
        assert_eq!(counter_bits(768), 10);
    }

    #[test]
    fn pending_structures_at_ooo_cap_16() {
        let m = PendingStructuresMemory::new(16, FieldWidths::default()).unwrap();
        let bits: Vec<u64> = m.items.iter().map(MemoryItem::bits).collect();
        assert_eq!(bits, vec![128, 128, 128, 3456, 1584]);
        assert_eq!(m.bytes(), 678);
        assert!((m.bytes_per_ooo_cap() - 42.375).abs() < 1e-9);
        let p = PendingStructuresMemory::new(16, FieldWidths::paper_fields_only()).unwrap();
        assert_eq!(p.bytes(), 660);
        assert_eq!(formula2_paper_bytes(16), 640);
    }

    #[test]
    fn table1_csrna_is_about_1_4_mb() {
        let rows = table1(&CsrnaMemoryConfig::default()).unwrap();
        let cs = rows.iter().find(|r| r.rnic == "csRNA").unwrap();
        assert_eq!(cs.on_chip_bytes, 76_800 + 1_310_720 + 678);
        assert!((cs.megabytes() - 1.4).abs() < 0.05);
        assert_eq!(cs.max_qps, 131_072);
        assert!(rows.iter().all(|r| r.on_chip_bytes > 0));
    }
}
