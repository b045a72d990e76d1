"""The specs' ABNF rules for a field's `rule`, and the spec section that defines it.

The tables are `abnf.json`, generated with the pages' `frontend/js/core/abnf.js` from the specs' text
by `scripts/abnf-tables.mjs` (one source, two files; a node test keeps both equal to the specs).
Which spec a rule is looked up in first follows the pages' `specFor` (`frontend/js/core/rules.js`):
the connection's version, then its mechanism.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

# Rules the specs describe in prose rather than in a grammar line (23/ZMTP and 37/ZMTP, "Framing").
PROSE_SECTIONS = {"flags": "Framing", "size": "Framing", "body": "Framing"}
BASE_SPECS = ("23", "37", "13", "15")


@dataclass(frozen=True)
class RuleRef:
    """Where a rule is defined: the spec, its section, the ABNF text (None: the spec says it in prose)."""

    spec: str
    title: str
    rule: str
    definition: str | None
    section: str | None

    @property
    def url(self) -> str:
        """The rule's spec section on rfc.zeromq.org."""
        return f"https://rfc.zeromq.org/spec/{self.spec}/" + (f"#{section_slug(self.section)}" if self.section else "")


@cache
def _tables() -> dict:
    return json.loads(resources.files(__package__).joinpath("abnf.json").read_text(encoding="utf-8"))


def section_slug(heading: str) -> str:
    """The anchor rfc.zeromq.org gives a heading."""
    text = re.sub(r"[^a-z0-9\s-]", "", heading.lower()).strip()
    return re.sub(r"\s+", "-", text)


def _order(version: str, mechanism: str) -> list[str]:
    if version.startswith("1"):
        order = ["13", "23"]
    elif version.startswith("2"):
        order = ["15", "23"]
    elif version == "3.1":
        order = ["37", "23"]
    else:
        order = ["23", "37"]
    mech = mechanism.upper()
    if mech == "PLAIN":
        order.insert(0, "24")
    elif mech == "CURVE":
        order.insert(0, "26")
    return order


def spec_for(rule: str, *, version: str = "", mechanism: str = "") -> RuleRef:
    """Where `rule` is defined for a connection of this version and mechanism."""
    grammars = _tables()["grammars"]
    key = (rule or "").lower()
    order = _order(version, mechanism)

    def hit(spec: str) -> RuleRef | None:
        found = grammars[spec]["rules"].get(key)
        if found is None:
            return None
        section = PROSE_SECTIONS[key] if key in PROSE_SECTIONS and spec in ("23", "37") else found[1]
        return RuleRef(spec, grammars[spec]["title"], key, found[0], section)

    for spec in order:
        if ref := hit(spec):
            return ref
    base = next(s for s in order if s in BASE_SPECS)
    if key in PROSE_SECTIONS:
        return RuleRef(base, grammars[base]["title"], key, None, PROSE_SECTIONS[key])
    for spec in grammars:  # (the JSON keeps the pages' order: ascending spec numbers)
        if ref := hit(spec):
            return ref
    return RuleRef(base, grammars[base]["title"], key, None, None)
