"""Contact details a question asks for and an answer must state: an e-mail address, a web address, a postal or
street address (issue 31; split from answer_shape.py, which reads the question's wh-type through contact_kinds)."""
from __future__ import annotations

import re

from relayrag.text import has_cjk, normalize

# --- contact details: an e-mail address, a web address, a postal address --------------------------------------
# "What is the help desk's e-mail address?" is answered by an address with an @, not by a sentence that says to
# e-mail the help desk; 「本社の住所は」 by a street address (〒, 丁目, 番地), not by the office's name.
_WHAT_IS = (r"^\s*(?:(?:to|at|on|for)\s+)?(?:what|which)(?:'s|\s+is|\s+are|\s+was)?\s+(?:the\s+|its\s+|their\s+|our\s+|"
            r"your\s+|my\s+)?(?:(?!(?:do|does|did|can|could|should|must|will|would|is|are)\b)[\w'’-]+\s+){0,3}?")
_CONTACT_Q_EN = (
    ("email", re.compile(rf"\be-?mail\s+address(?:es)?\b|{_WHAT_IS}e-?mail\b(?!\s+(?:policy|rule|template|system))", re.I)),
    ("url", re.compile(rf"{_WHAT_IS}(?:website|web\s*site|web\s+address|url|home\s*page)\b|\bweb\s+address\b", re.I)),
    ("address", re.compile(rf"\b(?:postal|street|mailing|post|delivery|physical)\s+address\b|"
                           rf"{_WHAT_IS}address(?:es)?\b(?!\s+(?:field|book|bar|line|space|list))", re.I)),
)
_CONTACT_Q_JA = (("email", re.compile(r"メールアドレス|Eメールアドレス|e-?mail\s*address", re.I)),
                 ("url", re.compile(r"URL|ホームページ|ウェブサイト|webサイト", re.I)),
                 ("address", re.compile(r"(?:住所|所在地)(?:は|を教え|ってどこ|はどこ|[?？])")))
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"https?://|www\.|\b[\w-]+\.(?:com|org|net|gov|edu|io|info|co\.uk|co\.jp|ac\.jp|jp|de|fr|eu|uk)\b", re.I)
_STREET = (r"(?:Road|Rd|Street|St|Avenue|Ave|Lane|Ln|Way|Drive|Dr|Boulevard|Blvd|Place|Pl|Square|Sq|Court|Ct|Close|"
           r"Crescent|Terrace|Park|Quay|Dock|Wharf|Row|Hill|Gardens|Parade|Strasse|Straße|Rue|Via|Plaza|Highway|Hwy)")
_ADDRESS_EN = re.compile(
    rf"\b\d+[A-Za-z]?,?\s+(?:[A-Z][\w'’-]*\s+){{1,4}}{_STREET}\b|\b(?:Unit|Suite|Building|Floor|Flat|Apt\.?)\s+\d+"
    r"|\bP\.?\s?O\.?\s+Box\s+\d+|\b[A-Z]{1,2}\d[A-Z\d]?\s+\d[A-Z]{2}\b")
_ADDRESS_JA = re.compile(r"〒|丁目|番地|[0-9０-９]+\s*[-‐－―ー]\s*[0-9０-９]+\s*[-‐－―ー]?|"
                         r"[都道府県市区町村郡][^\s。、]{0,12}?[0-9０-９一二三四五六七八九十]+\s*(?:番|号|丁)")


def contact_kinds(question: str) -> tuple[str, ...]:
    """The kinds of contact detail the question asks for: "email" (its e-mail address), "url" (its website),
    "address" (its postal or street address; 住所, 所在地); () for other questions. "What is the address …?"
    without a qualifier is read as any of them."""
    q = normalize(question)
    found = tuple(k for k, rx in (_CONTACT_Q_JA if has_cjk(q) else _CONTACT_Q_EN) if rx.search(q))
    if found == ("address",) and not has_cjk(q) and not re.search(r"\b(?:postal|street|mailing|post|delivery|"
                                                                    r"physical)\s+address", q, re.I):
        return ("address", "email", "url")  # "what is the address for returns?": a street, e-mail or web address
    return found[:1] if found and found[0] in ("email", "url") else found


def states_contact(text: str, question: str) -> bool:
    """Does `text` state a contact detail of a kind the question asks for (contact_kinds): an e-mail address
    with an @, a web address, a street address (a number and a street word, Unit 4, a postcode; 〒, 丁目, 番地)?"""
    t = normalize(text)
    checks = {"email": _EMAIL, "url": _URL, "address": _ADDRESS_JA if has_cjk(t) else _ADDRESS_EN}
    return any(checks[k].search(t) for k in contact_kinds(question))
