"""The capture writer: correct TCP/IP on the wire, and tshark reads every variant it writes."""

from __future__ import annotations

import io
import struct
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from zmtplab.capture.pcapfile import CaptureReader, TcpPacket, read_tcp_packets
from zmtplab.capture.pcapwriter import (
    ACK,
    FIN,
    PSH,
    RST,
    SYN,
    PcapngWriter,
    internet_checksum,
    ipv4_packet,
    ipv6_packet,
    tcp_segment,
)

CLIENT4 = ("192.0.2.10", 40001)
SERVER4 = ("192.0.2.20", 16000)
CLIENT6 = ("2001:db8::10", 40001)
SERVER6 = ("2001:db8::20", 16000)
GREETING = bytes.fromhex("FF00000000000000017F") + b"\x03" + b"\x01NULL" + bytes(48) + b"\x00" + bytes(31)
MESSAGE = bytes(range(256)) * 12  # 3072 bytes: three segments at MSS 1460


def write(**options) -> tuple[bytes, list[TcpPacket]]:
    buf = io.BytesIO()
    v6 = options.pop("v6", False)
    vlans = options.pop("vlans", ())
    w = PcapngWriter(buf, **options)
    c = w.add_connection(CLIENT6 if v6 else CLIENT4, SERVER6 if v6 else SERVER4, vlans=vlans)
    c.handshake(1000.000000123)
    c.send("s2c", GREETING, 1000.5)
    c.send("c2s", GREETING, 1000.6)
    c.send("c2s", MESSAGE, 1001.0)
    c.close(1002.0)
    data = buf.getvalue()
    return data, list(read_tcp_packets(data))


# ------------------------------------------------------------------ checksums and TCP numbers


def test_internet_checksum_matches_rfc_1071():
    assert internet_checksum(bytes.fromhex("0001f203f4f5f6f7")) == 0x220D
    assert internet_checksum(bytes.fromhex("0001f203f4f5f6")) == internet_checksum(bytes.fromhex("0001f203f4f5f600"))
    assert internet_checksum(b"") == 0xFFFF


def test_ipv4_header_and_tcp_checksums_verify():
    tcp = tcp_segment(CLIENT4[0], SERVER4[0], 1, 2, 3, 4, PSH | ACK, b"odd!!")
    ip = ipv4_packet(CLIENT4[0], SERVER4[0], 6, tcp, options=b"\x01\x01\x01")
    assert ip[0] == 0x46 and internet_checksum(ip[:24]) == 0
    pseudo = bytes([192, 0, 2, 10, 192, 0, 2, 20, 0, 6]) + struct.pack("!H", len(tcp))
    assert internet_checksum(pseudo + tcp) == 0


def test_ipv6_tcp_checksum_verifies():
    import ipaddress

    tcp = tcp_segment(CLIENT6[0], SERVER6[0], 1, 2, 3, 4, PSH | ACK, b"v6 payload")
    ip = ipv6_packet(CLIENT6[0], SERVER6[0], 6, tcp)
    assert len(ip) == 40 + len(tcp) and ip[6] == 6
    pseudo = (ipaddress.ip_address(CLIENT6[0]).packed + ipaddress.ip_address(SERVER6[0]).packed
              + struct.pack("!IxxxB", len(tcp), 6))
    assert internet_checksum(pseudo + tcp) == 0


def test_handshake_data_and_close_have_correct_sequence_numbers():
    buf = io.BytesIO()
    w = PcapngWriter(buf, mss=1000)
    c = w.add_connection(CLIENT4, SERVER4, isn_client=100, isn_server=5000)
    assert c.handshake(1.0) == [1, 2, 3]
    assert c.send("c2s", b"a" * 2500, 2.0) == [4, 5, 6, 7]
    assert c.send("s2c", b"reply", 3.0) == [8, 9]
    assert c.close(4.0) == [10, 11, 12]
    p = list(read_tcp_packets(buf.getvalue()))
    assert [(x.flags, x.seq, x.ack) for x in p[:3]] == [(SYN, 100, 0), (SYN | ACK, 5000, 101), (ACK, 101, 5001)]
    assert [(x.seq, len(x.payload), x.flags) for x in p[3:6]] == [
        (101, 1000, ACK), (1101, 1000, ACK), (2101, 500, ACK | PSH)]
    assert (p[6].sport, p[6].flags, p[6].ack) == (16000, ACK, 2601)  # the receiver's ACK
    assert (p[7].seq, p[7].payload, p[7].ack) == (5001, b"reply", 2601)
    assert (p[8].sport, p[8].ack) == (40001, 5006)
    assert [(x.flags, x.seq, x.ack) for x in p[9:]] == [
        (FIN | ACK, 2601, 5006), (FIN | ACK, 5006, 2602), (ACK, 2602, 5007)]
    assert [x.ts for x in p[3:7]] == pytest.approx([2.0, 2.000001, 2.000002, 2.000003])


def test_sequence_numbers_wrap_and_reset_does_not_advance():
    buf = io.BytesIO()
    w = PcapngWriter(buf, mss=100)
    c = w.add_connection(CLIENT4, SERVER4, isn_client=0xFFFFFFF0, isn_server=1)
    c.handshake(1.0)
    c.send("c2s", b"z" * 250, 2.0, ack=False)
    c.reset("s2c", 3.0)
    p = list(read_tcp_packets(buf.getvalue()))
    assert [x.seq for x in p[3:6]] == [0xFFFFFFF1, (0xFFFFFFF1 + 100) & 0xFFFFFFFF, (0xFFFFFFF1 + 200) & 0xFFFFFFFF]
    assert p[-1].flags == RST | ACK and p[-1].seq == 2 and p[-1].ack == (0xFFFFFFF1 + 250) & 0xFFFFFFFF


def test_syn_advertises_the_mss():
    data, _ = write()
    frame = next(iter(CaptureReader(data).frames())).data
    tcp = frame[14 + 20:]
    assert tcp[12] >> 4 == 6 and tcp[20:24] == b"\x02\x04" + struct.pack("!H", 1460)


def test_snaplen_truncates_frames_but_keeps_the_original_length():
    buf = io.BytesIO()
    w = PcapngWriter(buf, snaplen=60)
    c = w.add_connection(CLIENT4, SERVER4)
    c.send("c2s", b"q" * 500, 1.0, ack=False)
    [frame] = CaptureReader(buf.getvalue()).frames()
    assert len(frame.data) == 60 and frame.orig_len == 14 + 20 + 20 + 500


def test_writer_rejects_impossible_requests():
    with pytest.raises(ValueError):
        PcapngWriter(io.BytesIO(), format="erf")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        PcapngWriter(io.BytesIO(), resolution="ms")  # type: ignore[arg-type]
    pcap = PcapngWriter(io.BytesIO(), format="pcap")
    with pytest.raises(ValueError):
        pcap.new_section()
    with pytest.raises(ValueError):
        pcap.add_interface(1)
    v4_only = PcapngWriter(io.BytesIO(), linktype=228)
    with pytest.raises(ValueError):
        v4_only.add_connection(CLIENT6, SERVER6).handshake(1.0)
    with pytest.raises(ValueError):
        v4_only.add_connection(CLIENT4, SERVER6)
    with pytest.raises(ValueError):
        v4_only.add_connection(CLIENT4, SERVER4).send("up", b"x", 1.0)  # type: ignore[arg-type]


# ------------------------------------------------------------------ tshark reads what we write

VARIANTS = {
    "pcapng-ethernet-ns": {},
    "pcapng-ethernet-us-bigendian": {"resolution": "us", "byteorder": ">"},
    "pcapng-ethernet-ipv6": {"v6": True},
    "pcapng-ethernet-vlan": {"vlans": [42]},
    "pcapng-ethernet-qinq": {"vlans": [100, 200]},
    "pcap-ethernet-us": {"format": "pcap", "resolution": "us"},
    "pcap-ethernet-ns-bigendian": {"format": "pcap", "byteorder": ">"},
    "pcap-sll": {"format": "pcap", "linktype": 113},
    "pcap-sll2-ipv6": {"format": "pcap", "linktype": 276, "v6": True},
    "pcap-null": {"format": "pcap", "linktype": 0},
    "pcap-null-bigendian-ipv6": {"format": "pcap", "linktype": 0, "byteorder": ">", "v6": True},
    "pcap-loop": {"format": "pcap", "linktype": 108},
    "pcap-raw": {"format": "pcap", "linktype": 101},
    "pcap-raw-ipv6": {"format": "pcap", "linktype": 101, "v6": True},
    "pcapng-ipv4": {"linktype": 228},
    "pcapng-ipv6": {"linktype": 229, "v6": True},
}
ERROR_SEVERITY = 0x00800000
WARN_SEVERITY = 0x00600000


def _tshark_check(name: str, options: dict, directory: Path) -> None:
    data, packets = write(**options)
    path = directory / f"{name}.{options.get('format', 'pcapng')}"
    path.write_bytes(data)
    prefs = ["-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE"]
    out = subprocess.run(
        ["tshark", "-n", "-r", str(path), *prefs, "-T", "fields", "-e", "frame.number", "-e", "tcp.stream",
         "-e", "tcp.srcport", "-e", "tcp.payload", "-e", "_ws.expert.severity", "-e", "_ws.malformed",
         "-e", "frame.time_epoch"],
        capture_output=True, text=True, check=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    assert len(rows) == len(packets) == 14, name
    streams: dict[str, bytes] = {"40001": b"", "16000": b""}
    for row in rows:
        number, stream, sport, payload, severities, malformed, _epoch = row
        assert stream == "0", name
        assert not malformed, f"{name}: frame {number} malformed"
        for severity in filter(None, severities.split(",")):
            assert int(severity) < WARN_SEVERITY, f"{name}: frame {number} has an expert warning or error"
        streams[sport] += bytes.fromhex(payload)
    assert streams == {"40001": GREETING + MESSAGE, "16000": GREETING}, name
    expected_first = "1000.000000123" if options.get("resolution", "ns") == "ns" else "1000.000000000"
    assert rows[0][6] == expected_first, name


@pytest.mark.capture
def test_tshark_reads_every_variant_cleanly(tmp_path):
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(_tshark_check, name, dict(options), tmp_path) for name, options in VARIANTS.items()]
        for future in futures:
            future.result()


@pytest.mark.capture
def test_tshark_expert_summary_is_clean_and_streams_are_separate(tmp_path):
    buf = io.BytesIO()
    w = PcapngWriter(buf)
    first = w.add_connection(CLIENT4, SERVER4)
    second = w.add_connection(("192.0.2.11", 40002), SERVER4)
    first.handshake(1.0)
    second.handshake(1.1)
    first.send("c2s", b"one" * 1000, 2.0)
    second.send("s2c", b"two", 2.1)
    second.close(3.0)
    first.close(3.1, first="s2c")
    path = tmp_path / "two.pcapng"
    path.write_bytes(buf.getvalue())
    expert = subprocess.run(["tshark", "-r", str(path), "-o", "tcp.check_checksum:TRUE", "-o",
                             "ip.check_checksum:TRUE", "-z", "expert,note", "-q"],
                            capture_output=True, text=True, check=True).stdout
    assert "Errors" not in expert and "Warns" not in expert and "Malformed" not in expert
    fields = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "tcp.stream", "-e", "tcp.payload"],
                            capture_output=True, text=True, check=True).stdout
    payloads: dict[str, bytes] = {"0": b"", "1": b""}
    for line in fields.splitlines():
        stream, _, payload = line.partition("\t")
        payloads[stream] += bytes.fromhex(payload)
    assert payloads == {"0": b"one" * 1000, "1": b"two"}
