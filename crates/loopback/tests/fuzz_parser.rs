//! Acceptance: at least a million fuzz inputs reach the parser without a panic.

use rnic_loopback::fuzz::fuzz_parser;

#[test]
fn a_million_mutated_frames_never_panic_the_parser() {
    let report = fuzz_parser(0x5eed, 1_000_000).expect("round trip of accepted frames");
    assert_eq!(report.inputs, 1_000_000);
    // The mutations must keep reaching both outcomes, or the fuzzer has gone blind.
    assert!(report.accepted > 50_000, "{report:?}");
    assert!(
        report.rejected.values().sum::<u64>() > 500_000,
        "{report:?}"
    );
    println!("{report:?}");
}
