"""The fixed texts of generate's answers, in the question's language: "not found" with the related passages,
why the tables could not answer, which expired documents were left out, and the small-talk template."""
from __future__ import annotations

import re
import weakref

from relayrag.stages.page_answer import page_search_note
from relayrag.text import has_cjk, language_code


def sql_fallback_note(run_rec: dict) -> str:
    """A separator + why the tables could not answer, when the sql stage sent the question on to the documents
    (no LLM, no verified query), in the question's language; "" otherwise. Appended to a not-found text, which
    may end without a full stop ("… p. 2"), so the Japanese note starts a new line."""
    note = run_rec.get("sql_fallback")
    if not note:
        return ""
    if has_cjk(run_rec.get("question") or ""):
        return f"\nこのコレクションの表からも答えられませんでした: {note}"
    return f" The collection's tables could not answer either: {note}"


NOT_FOUND_TEXT = {  # language → ("not found" sentence, the related passages' label); {c}: the collection
    "en": ("I could not find an answer to this in the documents of collection '{c}'.",
           " Related passages (not an answer): {w}."),
    "ja": ("コレクション「{c}」の文書には、この質問への答えが見つかりませんでした。", " 関連する箇所（答えではありません）: {w}"),
    "zh": ("在集合「{c}」的文档中没有找到这个问题的答案。", " 相关段落（不是答案）: {w}"),
    "ko": ("컬렉션 '{c}'의 문서에서 이 질문에 대한 답을 찾지 못했습니다.", " 관련 구절(답이 아님): {w}"),
    "es": ("No encontré una respuesta a esto en los documentos de la colección '{c}'.",
           " Pasajes relacionados (no son una respuesta): {w}."),
    "fr": ("Je n'ai pas trouvé de réponse à cette question dans les documents de la collection '{c}'.",
           " Passages liés (pas une réponse) : {w}."),
    "de": ("Ich habe in den Dokumenten der Sammlung '{c}' keine Antwort darauf gefunden.",
           " Verwandte Stellen (keine Antwort): {w}."),
    "pt": ("Não encontrei uma resposta para isso nos documentos da coleção '{c}'.",
           " Trechos relacionados (não são uma resposta): {w}."),
    "it": ("Non ho trovato una risposta a questa domanda nei documenti della collezione '{c}'.",
           " Passaggi correlati (non una risposta): {w}."),
}


def not_found_text(question: str, collection: str, related: list[dict] | None = None) -> str:
    """An honest "not found" in the question's language (relayrag.text.language_code: English, Japanese,
    Chinese, Korean, Spanish, French, German, Portuguese, Italian; else English), naming the closest passages
    (related, not an answer) by document and page."""
    where = "; ".join(dict.fromkeys(f"{r['doc']} p. {r['page']}" for r in (related or [])))  # each page once
    head, rel = NOT_FOUND_TEXT[language_code(question)]
    return head.format(c=collection) + (rel.format(w=where) if where else "")


EXPIRED_TEXT = {  # language → note; {d}: the expired documents with their end dates
    "en": " Expired documents were left out and may hold the answer: {d}; ask with the filter include_expired=true "
          "to include them.",
    "ja": "\n期限切れの文書は除外されましたが、答えが含まれている可能性があります: {d}。含めるにはフィルター "
          "include_expired=true を付けて質問してください。",
    "zh": " 已过期的文档被排除在外，其中可能有答案: {d}。如需包含，请使用过滤条件 include_expired=true 提问。",
    "ko": " 만료된 문서는 제외되었으며 답이 있을 수 있습니다: {d}. 포함하려면 필터 include_expired=true로 질문하세요.",
    "es": " Se omitieron documentos vencidos que pueden contener la respuesta: {d}; pregunte con el filtro "
          "include_expired=true para incluirlos.",
    "fr": " Des documents expirés ont été écartés et peuvent contenir la réponse : {d} ; posez la question avec le "
          "filtre include_expired=true pour les inclure.",
    "de": " Abgelaufene Dokumente wurden ausgelassen und könnten die Antwort enthalten: {d}; fragen Sie mit dem "
          "Filter include_expired=true, um sie einzubeziehen.",
    "pt": " Documentos expirados foram deixados de fora e podem conter a resposta: {d}; pergunte com o filtro "
          "include_expired=true para incluí-los.",
    "it": " Documenti scaduti sono stati esclusi e potrebbero contenere la risposta: {d}; chiedi con il filtro "
          "include_expired=true per includerli.",
}


VALID_UNTIL = {"en": "valid until", "ja": "有効期限", "zh": "有效期至", "ko": "유효 기간", "es": "válido hasta",
               "fr": "valable jusqu'au", "de": "gültig bis", "pt": "válido até", "it": "valido fino al"}


def expired_note(run_rec: dict) -> str:
    """A separator + which expired documents the default validity filter left out of a run whose question
    they match (retrieve.expired_matches: among the unfiltered BM25 top hits), in the question's language,
    and how to include them; "" when there are none."""
    matches = run_rec.get("expired_matches") or []
    if not matches:
        return ""
    lang = language_code(run_rec.get("question") or "")
    until = VALID_UNTIL.get(lang, VALID_UNTIL["en"])
    docs = ", ".join(f"{m['doc']}" + (f" ({until} {m['valid_until']})" if m.get("valid_until") else "")
                     for m in matches[:3])
    return EXPIRED_TEXT[lang].format(d=docs)


_SCRIPT: "weakref.WeakKeyDictionary[object, str]" = weakref.WeakKeyDictionary()  # per snapshot, like spelling's


def corpus_script(snap) -> str:
    """"cjk" when at least 80 % of the non-space characters of a collection's first chunks (up to ~100,000
    characters) are Japanese, Chinese or Korean (relayrag.text.has_cjk), "latin" when under 5 % are, else "mixed";
    cached per snapshot."""
    try:
        return _SCRIPT[snap]
    except (KeyError, TypeError):
        pass
    sample, n = [], 0
    for ch in getattr(snap, "chunks", None) or []:
        sample.append(ch.get("text") or "")
        n += len(sample[-1])
        if n >= 100_000:
            break
    text = "\n".join(sample)
    out = "mixed" if not text.strip() else "cjk" if has_cjk(text, 0.8) else "mixed" if has_cjk(text, 0.05) \
        else "latin"
    try:
        _SCRIPT[snap] = out
    except TypeError:  # an object without weak references: computed again next time
        pass
    return out


def language_note(question: str, script: str | None) -> str:
    """Why a "not found" may come from the question's language, in that language: a Japanese / Chinese / Korean
    question over a collection written in a Latin script (its BM25 words and an English embedder cannot meet the
    question's), or a question in a Latin script over a CJK collection; "" when they agree, when the collection
    mixes both (`script` from corpus_script) or when it is unknown."""
    q_cjk = has_cjk(question)
    if q_cjk and script == "latin":
        if language_code(question) == "ja":
            return ("\nこのコレクションの文書は日本語以外の言語（英語など）で書かれているため、日本語の質問では見つけにくい"
                    "ことがあります。文書の言語で質問してみてください。")
        return (" This collection's documents are not in the question's language; asking in their language "
                "(e.g. English) may find the answer.")
    if script == "cjk" and not q_cjk and re.search(r"[A-Za-z]{3,}", question):
        return (" This collection's documents are in Japanese, Chinese or Korean; asking in their language "
                "may find the answer.")
    return ""


def not_found_answer(run_rec: dict, related: list[dict], script: str | None = None) -> str:
    """A run's whole "not found" answer: not_found_text, then why the tables could not answer
    (sql_fallback_note), which expired documents the validity filter left out (expired_note), for a visual
    question answered from text, that page-image search did not run and why (page_search_note), and whether
    the question's language differs from the documents' (language_note; `script` from corpus_script)."""
    return (not_found_text(run_rec["question"], run_rec["collection"], related) + sql_fallback_note(run_rec)
            + expired_note(run_rec) + page_search_note(run_rec) + language_note(run_rec["question"], script))


def chitchat_text(question: str, collection: str, holds: dict | None = None) -> str:
    """The small-talk template (relayrag.smalltalk.small_talk_reply): "you're welcome" to thanks, a goodbye to a
    goodbye, else a greeting saying what the collection answers; `holds` is what classify recorded the
    collection holds ({has_documents, has_tables, tables}; None: documents only)."""
    from relayrag.smalltalk import small_talk_reply
    h = holds or {}
    return small_talk_reply(question, collection, has_documents=bool(h.get("has_documents", True)),
                            has_tables=bool(h.get("has_tables")), tables=list(h.get("tables") or []))


_FACT_MARK = re.compile(r"[0-9０-９]|https?://|www\.|@|\b(?:step|first|then|next|yes|no|you can|you should|you must|"
                        r"must|should|allowed|required|policy|rule|law|according)\b|^\s*[-*•]|\n\s*(?:[-*•]|\d+[.)])"
                        r"|はい|いいえ|できます|必要|手順|規定", re.I | re.M)


def states_no_facts(reply: str) -> bool:
    """Is a small-talk reply free of facts: at most three sentences and 300 characters, no number, link,
    list, steps, yes/no or rule ("you can", "must", "policy")? A reply that states any is replaced by the
    template: facts come only from the documents, with citations."""
    from relayrag.text import sentences
    return len(reply) <= 300 and len(sentences(reply)) <= 3 and not _FACT_MARK.search(reply)
