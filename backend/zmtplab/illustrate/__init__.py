"""Illustrated pages: one connection's (or a session's, or a range of a capture's) elements as one
self-contained HTML file, every octet explained, and the pyzmq script that reproduces the conversation.

The page is what "The Illustrated TLS Connection" is for TLS, made for any ZMTP source: the sequence
(inline SVG), then for each element its octet table drawn like the specs' box diagrams, its hex dump,
and each field with its value, its explanation and the ABNF rule it comes from. No script, no server:
inline CSS and SVG only; an anchor per element (`#e12`) and per field (`#e12.size`); a print
stylesheet for A4 and Letter. Payload bytes are text, escaped, never markup.

- `document`: the page's content, read from a capture, a session export or a list of events.
- `page`: the HTML.
- `grammar`: the specs' ABNF rules (the same generated tables the pages use).
- `reproduce`: the pyzmq script that makes the same conversation (one connection's, or a whole topology's).
"""

from .document import Document, Section, from_capture, from_events, from_session, load
from .page import render
from .reproduce import reproduce_script, topology_script

__all__ = ["Document", "Section", "from_capture", "from_events", "from_session", "load", "render",
           "reproduce_script", "topology_script"]
