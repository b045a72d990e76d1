"""Recognising English texts that nest other texts: the inner text's free placeholders must not swallow the outer
text's fixed words ("not hex: {text_error}" around "'{char}' is not a hex digit" once read as a hex-digit text
whose character was "not hex: 'z'", and was left half in English)."""

from __future__ import annotations

import pytest

from zmtplab.i18n import HEX, NUMBERS, PLACEHOLDER, TRANSLATED_PREFIXES, catalog, placeholders, recognise, translate

ENGLISH = {k: v for k, v in catalog("en").items() if k.startswith(TRANSLATED_PREFIXES)}


def free(name: str) -> bool:
    return name not in NUMBERS and name not in HEX


def render(template: str, **given: str) -> str:
    values = {n: given.get(n, "7" if n in NUMBERS else "ff" if n in HEX else "word") for n in placeholders(template)}
    return template.format(**values)


def slot_of(template: str) -> str:
    return sorted(n for n in placeholders(template) if n.startswith("text"))[0]


OUTER = sorted(k for k, v in ENGLISH.items() if any(n.startswith("text") for n in placeholders(v)))


def free_edge(template: str) -> bool:
    """Whether the template starts or ends with a placeholder that may hold any text."""
    first = PLACEHOLDER.match(template)
    return bool(first and free(first.group(1))) or (template.endswith("}") and free(PLACEHOLDER.findall(template)[-1]))


INNER = sorted(k for k, v in ENGLISH.items() if free_edge(v))


def ambiguous(outer: str, inner: str) -> bool:
    """Compositions two readings explain equally well: "A: {text}" around "{text}; C" reads as "(A: B); C" as
    well as "A: (B; C)", and so on the other side; and an inner text holding the outer's words after its slot
    (a placeholder matches as little as it can). A free placeholder that is not itself a text explains nothing,
    so otherwise the reading that leaves the outer text's words to it must never win."""
    o, i = ENGLISH[outer], ENGLISH[inner]
    before, _, after = o.partition("{" + slot_of(o) + "}")
    first, names = PLACEHOLDER.match(i), PLACEHOLDER.findall(i)
    starts_text = first is not None and first.group(1).startswith("text")
    ends_text = i.endswith("}") and names[-1].startswith("text")
    # a placeholder's match is the shortest one: the outer's words after the slot must not occur in the inner
    glue = PLACEHOLDER.split(after)[0]
    return (starts_text and bool(before)) or (ends_text and bool(after)) or (bool(glue) and glue in render(i))


@pytest.mark.parametrize("outer", OUTER)
def test_an_outer_text_is_recognised_around_any_inner_text(outer):
    misread = []
    for inner in INNER:
        if ambiguous(outer, inner):
            continue
        nested = render(ENGLISH[inner])
        whole = render(ENGLISH[outer], **{slot_of(ENGLISH[outer]): nested})
        found = recognise(whole)
        if found is None or found[0] != outer:
            misread.append((inner, found and found[0]))
    assert misread == []


def test_not_hex_is_translated_whole():
    assert translate("not hex: 'z' is not a hex digit", "zh-CN") == translate("not hex: {x}", "zh-CN").replace(
        "{x}", translate("'z' is not a hex digit", "zh-CN"))
    assert "not hex" not in translate("not hex: word sent by a PUB socket", "zh-CN")
