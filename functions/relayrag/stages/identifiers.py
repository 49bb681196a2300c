"""Identifiers in a question and in a sentence: codes of records (AY-1043, K1, RX-7), bare numbers and lone capitals
(Category B), as written; whether a sentence names the question's record codes exactly, or another record of
the same series. Split out of stages/answer_shape.py (issue 31), which re-exports these names."""

from __future__ import annotations

import re

from relayrag.text import normalize

# --- identifiers -------------------------------------------------------------------------------------------

# the characters of one identifier: letters and digits of Latin script, not kana or kanji. `\w` matches those too,
# so in Japanese text "2004年に発見されたDNA" or "RKBラジオの福岡本局のみ1992" was read as one identifier holding a
# digit and a capital, which no sentence repeats verbatim (issue 31: names_codes refused answers to such questions)
_ID_CHAR = r"[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\uac00-\ud7af]"
_IDENT = re.compile(rf"(?<!{_ID_CHAR})(?<!-)(?=(?:{_ID_CHAR}|-)*\d)[A-Za-z0-9](?:{_ID_CHAR}|-)*[A-Za-z0-9]"
                    rf"|(?<!{_ID_CHAR})(?<!-)[0-9](?!{_ID_CHAR}|-)"
                    rf"|(?<!{_ID_CHAR})(?<!-)[A-Z]{{1,2}}(?:-[A-Z0-9]+)?(?!{_ID_CHAR}|-)")


def identifiers(text: str) -> frozenset[str]:
    """The identifiers `text` names, as written (case kept, NFKC): tokens with a digit ("K1", "1234", "RX-7",
    "B-200", "2015") and standalone one- or two-letter capitals ("Category B", "Plan A"; not the pronoun "I" or
    the article "A" opening a sentence)."""
    t = re.sub(r"[‐‑‒–—]", "-", normalize(text))  # "PC–12/47E" as typeset is "PC-12/47E"
    out = set()
    for m in _IDENT.finditer(t):
        tok = m.group(0).strip(",.")
        if tok in ("I", "A") or (len(tok) <= 2 and tok.isalpha() and m.start() == 0):
            continue
        out.add(tok)
    return frozenset(out)


def record_codes(text: str) -> frozenset[str]:
    """The identifiers of `text` that name one record by letters and digits together ("AY-1043", "K1", "RX-7"), the
    kind a near-identical record differs in by one character; bare numbers and lone capitals are left to the
    entity checks (a band or a total holds a number without naming it)."""
    return frozenset(i for i in identifiers(text) if re.search(r"\d", i) and re.search(r"[A-Z]", i))  # not "12-year-old"


def names_codes(codes_: frozenset[str] | set[str], text: str) -> bool:
    """Does `text` (a sentence with its local context) name every record code of the question exactly? "Asset
    AY-1042 …" does not answer a question about AY-1043, however close its tokens."""
    if not codes_:
        return True
    have = identifiers(text)
    return all(c in have for c in codes_)


def names_other_code(codes_: frozenset[str] | set[str], text: str) -> bool:
    """Does the sentence `text` itself name another record of the same series as the question's codes
    ("The RT-20 cab heater …" for a question about the RT-16; "Asset AY-1042" for AY-1043) without naming the
    question's own? Its heading may name both records ("Manual: RT-16 and RT-20"): the sentence's own code says
    which one it is about."""
    if not codes_:
        return False
    own = record_codes(text)
    if not own or any(c in own for c in codes_):
        return False
    series = {m.group(0).upper() for c in codes_ for m in [re.match(r"[A-Za-z]+", c)] if m}
    return any((m := re.match(r"[A-Za-z]+", c)) is not None and m.group(0).upper() in series for c in own)


def names_identifiers(question_ids: frozenset[str] | set[str], text: str) -> bool:
    """Does `text` name every one of the question's identifiers exactly (not "123" for "1234", not "K2" for
    "K1")? True when the question names none."""
    if not question_ids:
        return True
    have = identifiers(text)
    return all(i in have for i in question_ids)
