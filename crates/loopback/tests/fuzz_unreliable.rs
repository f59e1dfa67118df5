//! Acceptance: hostile-but-well-formed UC and UD packets (every UC SEND/WRITE opcode, UD
//! SENDs with right and wrong Q_Keys, PSNs in and out of sequence, hostile RETHs) against
//! live UC and UD QPs carrying real traffic: no panic, nothing outside a registered region
//! touched, the QPs stay in RTS.

use rnic_loopback::fuzz::fuzz_unreliable_qps;
use rnic_transport::ServiceType;

#[test]
fn hostile_packets_against_live_uc_and_ud_qps() {
    for service in [ServiceType::Uc, ServiceType::Ud] {
        let report =
            fuzz_unreliable_qps(0xbad, 1_000_000, service).unwrap_or_else(|e| panic!("{e}"));
        println!("{service:?}: {report:?}");
        assert_eq!(report.inputs, 1_000_000);
        assert!(report.frames_exchanged > 50_000, "{service:?}: {report:?}");
        assert!(report.messages_received > 25_000, "{service:?}: {report:?}");
    }
}
