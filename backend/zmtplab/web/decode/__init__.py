"""`POST /api/decode`: one direction's bytes, given as hex, to annotated events."""
