"""Small talk: which courtesy a message is (greeting, thanks, goodbye) and the reply to it, in the message's
language (Japanese for CJK text, else English). Standard library only: classify routes with it, generate and the
assistant reply with it."""

from __future__ import annotations

import re

from relayrag.text import has_cjk


# Courtesy phrases that make a whole message small talk, by kind. A message is small talk of these kinds only when
# every part of it (split at punctuation) is one of them: "thanks, and what does it cost?" is a question.
_COURTESY_EN = {
    "thanks": r"(?:(?:ok(?:ay)?|great|perfect|awesome|cool|nice|brilliant|wonderful|excellent)\s+)?"
              r"(?:many\s+)?(?:thanks|thank\s*(?:you|u|ya)|thx|ty|cheers|much\s+appreciated|(?:i\s+)?appreciate\s+it)"
              r"(?:\s+(?:so|very)\s+much|\s+a\s+(?:lot|bunch|ton)|\s+again|\s+(?:for\s+)?(?:everything|all)"
              r"|\s+for\s+(?:(?:your|the|all\s+the|all\s+your)\s+)?help(?:ing)?|\s+for\s+that|\s+very\s+much\s+indeed)*",
    "goodbye": r"(?:(?:ok(?:ay)?|well|alright)\s+)?(?:bye(?:\s*bye)?|good\s*bye|farewell|cya|see\s+(?:you|ya)"
               r"(?:\s+(?:later|soon|tomorrow|around))?|good\s*night|take\s+care|have\s+a\s+(?:nice|good|great)\s+day"
               r"|talk\s+(?:to\s+you\s+)?later|later)",
    "greeting": r"(?:hi|hello|hey|hiya|howdy|yo|greetings|good\s+(?:morning|afternoon|evening|day)|hello\s+there"
                r"|hi\s+there|hey\s+there|nice\s+to\s+meet\s+you|how\s+are\s+you(?:\s+doing)?(?:\s+today)?"
                r"|how'?s\s+it\s+going)",
}
_COURTESY_JA = {
    "thanks": r"(?:どうも)?(?:ありがとう|有難う|有り難う)(?:ございます|ございました)?|どうも|感謝します|サンキュー"
              r"|助かりました|助かります|お世話になりました",
    "goodbye": r"さようなら|さよなら|またね|また今度|ではまた|じゃあね|じゃね|失礼します|失礼しました|バイバイ"
               r"|おやすみ(?:なさい)?",
    "greeting": r"こんにちは|こんばんは|おはよう(?:ございます)?|はじめまして|初めまして"
                r"|よろしく(?:お願いします|おねがいします|お願いいたします)?|もしもし|元気ですか|お元気ですか",
}
_COURTESY_PART = {kind: re.compile(rf"(?:{_COURTESY_EN[kind]}|{_COURTESY_JA[kind]})", re.IGNORECASE)
                  for kind in _COURTESY_EN}
_COURTESY_SPLIT = re.compile(r"[,.!?;:~…、。！？，．〜\n]+")
_NOT_WORD = re.compile(r"[^\w\s']+")


def courtesy_kinds(text: str) -> tuple[str, ...]:
    """The kinds of courtesy a message is made of — "greeting", "thanks", "goodbye", in the order they appear —
    when the whole message is courtesy phrases (English or Japanese: "Thank you very much!", "thanks, bye",
    "ありがとうございます", "さようなら", "おはよう"); () when any part of it is something else (a question with
    content words is never small talk). Emoji, punctuation and case are ignored; at most 80 characters."""
    if not text or len(text) > 80:
        return ()
    kinds: list[str] = []
    for part in _COURTESY_SPLIT.split(text.strip()):
        part = " ".join(_NOT_WORD.sub(" ", part).split())
        if not part:
            continue
        kind = next((k for k, rx in _COURTESY_PART.items() if rx.fullmatch(part)), None)
        if kind is None:
            return ()
        if kind not in kinds:
            kinds.append(kind)
    return tuple(kinds)


_TABLES_SHOWN = 6


def _tables(tables: list[str] | tuple[str, ...]) -> str:
    shown = ", ".join(tables[:_TABLES_SHOWN])
    return shown + (f" and {len(tables) - _TABLES_SHOWN} more" if len(tables) > _TABLES_SHOWN else "")


def small_talk_reply(message: str, collection: str, *, has_documents: bool = True, has_tables: bool = False,
                     tables: list[str] | tuple[str, ...] = ()) -> str:
    """The reply to a small-talk message (a template: it states no facts about the documents): "you're welcome"
    to thanks, a goodbye to a goodbye, else a greeting that says what the collection can answer — its documents
    (with citations to document and page), its tables (`has_tables`; `tables` named when given: answered by
    querying them, with the SQL shown), or both. Japanese when the message has CJK text, else English."""
    kinds = courtesy_kinds(message)
    ja = has_cjk(message)
    docs = has_documents or not has_tables
    if ja:
        what = ("文書" if docs else "") + ("と表" if docs and has_tables else "表" if has_tables else "")
        if "goodbye" in kinds:
            return ("どういたしまして。" if "thanks" in kinds else "") + \
                f"さようなら。またいつでもコレクション「{collection}」について聞いてください。"
        if "thanks" in kinds:
            return f"どういたしまして。ほかにもコレクション「{collection}」の{what}について何でも聞いてください。"
        how = ("文書は出典（文書とページ）付きで、表はSQLで調べて使ったSQLと一緒に答えます。" if docs and has_tables
               else "出典（文書とページ）付きで答えます。" if docs else "表はSQLで調べ、使ったSQLと一緒に答えます。")
        named = f"（{'、'.join(tables[:_TABLES_SHOWN])}{' など' if len(tables) > _TABLES_SHOWN else ''}）" \
            if has_tables and tables else ""
        return f"こんにちは。コレクション「{collection}」の{what}{named}について質問してください。{how}"
    what = ("documents" if docs else "") + (" and tables" if docs and has_tables else "tables" if has_tables else "")
    if "goodbye" in kinds:
        return ("You're welcome. " if "thanks" in kinds else "") + \
            f"Goodbye! Come back any time with questions about collection '{collection}'."
    if "thanks" in kinds:
        return f"You're welcome! Ask me anything else about the {what} in collection '{collection}'."
    if not has_tables:
        return (f"Hello! I answer questions about the documents in collection '{collection}', "
                "with citations to document and page. What would you like to know?")
    named = f" ({_tables(list(tables))})" if tables else ""
    if not docs:
        return (f"Hello! I answer questions about the tables in collection '{collection}'{named} by querying "
                "them, and show the SQL each answer comes from. What would you like to know?")
    return (f"Hello! I answer questions about the documents in collection '{collection}', with citations to "
            f"document and page, and about its tables{named}, showing the SQL each answer comes from. "
            "What would you like to know?")
