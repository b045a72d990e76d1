"""ZMTP Lab: every byte of a ZMTP connection, explained."""
