//! Acceptance of csRNA's on-chip memory accounting: Formula 2 (§4.7) and Table 1 (§5.1),
//! computed from the csRNA structures' sizes.

use rnic_model::nic::mech::csrna::onchip::*;

#[test]
fn formula2_increment_is_close_to_40_bytes_per_ooo_cap() {
    for ooo_cap in [1usize, 2, 4, 8, 16, 32, 64, 128, 256] {
        let ours = PendingStructuresMemory::new(ooo_cap, FieldWidths::default()).unwrap();
        let paper_fields =
            PendingStructuresMemory::new(ooo_cap, FieldWidths::paper_fields_only()).unwrap();
        for m in [&ours, &paper_fields] {
            let per = m.bytes_per_ooo_cap();
            assert!(
                (per - 40.0).abs() / 40.0 < 0.10,
                "ooo_cap {ooo_cap}: {per} B per ooo_cap"
            );
        }
        // The paper's fields alone never cost more than ours.
        assert!(paper_fields.bits() < ours.bits());
        assert_eq!(formula2_paper_bytes(ooo_cap), 40 * ooo_cap as u64);
    }
}

#[test]
fn formula2_terms_at_ooo_cap_16() {
    let m = PendingStructuresMemory::new(16, FieldWidths::default()).unwrap();
    let names: Vec<&str> = m.items.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "QR0 index FIFO",
            "QR1 index FIFO",
            "QR2 index FIFO",
            "pending FIFO (2 FIFOs)",
            "pending record table"
        ]
    );
    let shape: Vec<(u64, u64, u64)> = m
        .items
        .iter()
        .map(|i| (i.entries, i.bits_per_entry, i.bytes()))
        .collect();
    assert_eq!(
        shape,
        vec![
            (16, 8, 16),
            (16, 8, 16),
            (16, 8, 16),
            (96, 36, 432),
            (48, 33, 198)
        ]
    );
    assert_eq!(m.bytes(), 678);
    // The waiting SRAM replaces the baseline's waiting FIFO: absolute, not an increment.
    assert_eq!(waiting_sram(1, 16, 64).bytes(), 1024);
}

#[test]
fn table1_rows() {
    let cfg = CsrnaMemoryConfig::default();
    let items = csrna_memory(&cfg).unwrap();
    assert_eq!(items[0].bytes(), 300 * 256);
    assert_eq!(items[1].bytes(), 131_072 * 10);
    let rows = table1(&cfg).unwrap();
    let get = |n: &str| *rows.iter().find(|r| r.rnic == n).unwrap();
    assert_eq!(get("eRNIC").max_qps, 127);
    assert_eq!(get("SRNIC").max_qps, 10_000);
    assert_eq!(get("ConnectX-5").max_qps, 131_072);
    let cs = get("csRNA");
    assert_eq!(cs.source, Source::Computed);
    assert_eq!(cs.on_chip_bytes, 1_388_198);
    assert_eq!(format!("{:.1}", cs.megabytes()), "1.4");
    // "Despite maintaining more active connections, csRNA occupies less memory" (§5.2).
    assert!(cs.on_chip_bytes < get("ConnectX-5").on_chip_bytes);
    assert!(cs.on_chip_bytes < get("SRNIC").on_chip_bytes);
    let text = render(&items);
    assert!(text.contains("SQ address table"));
    assert!(text.lines().last().unwrap().trim_end().ends_with("1388198"));
}
