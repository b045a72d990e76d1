"""Uploaded captures: the upload, the store and its dissection workers, events read back, tshark's view of a
packet, the routes."""
