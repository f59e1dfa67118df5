#!/usr/bin/env python3
"""Independent ICRC judge: recomputes the RoCEv2 ICRC of every UDP/4791 frame in a pcap with
scapy.contrib.roce and compares it with the ICRC the frame carries.

Usage: check_icrc.py FILE.pcap   -> prints 'checked N frames' and exits 0 if all are valid,
                                    exits 1 and names each bad frame otherwise.
"""
import sys

from scapy.all import rdpcap, raw
from scapy.contrib.roce import BTH  # noqa: F401  (binds UDP/4791 to BTH)
from scapy.layers.inet import IP, UDP


def main(path: str) -> int:
    frames = rdpcap(path)
    checked = 0
    bad = 0
    for n, pkt in enumerate(frames, start=1):
        if UDP not in pkt or pkt[UDP].dport != 4791:
            continue
        ip = pkt[IP]
        # The ICRC sits at the end of the IP datagram (Ethernet padding may follow it).
        datagram = raw(ip)[: ip.len]
        # scapy exposes the four ICRC bytes as a big-endian field value.
        stated = int.from_bytes(datagram[-4:], "big")
        rebuilt = IP(datagram)
        bth = rebuilt[BTH]
        del bth.icrc
        recomputed_pkt = IP(raw(rebuilt))
        computed = recomputed_pkt[BTH].icrc
        checked += 1
        if computed != stated:
            bad += 1
            print(f"frame {n}: ICRC stated {stated:#010x} computed by scapy {computed:#010x}")
    print(f"checked {checked} frames, {bad} bad")
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
