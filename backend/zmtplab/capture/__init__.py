"""Capture files and live traffic to ZMTP events: pcap/pcapng reading, TCP reassembly, dissection."""
