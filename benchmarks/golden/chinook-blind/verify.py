#!/usr/bin/env python3
"""Re-run every gold_sql of the blind25 sets (dev.jsonl, paraphrases.jsonl, paraphrases_heldout.jsonl,
paraphrases_sealed.jsonl) read-only
on chinook.sqlite and check the stored answers.

Usage: python3 verify.py [path/to/chinook.sqlite]
Exit status 0 when every check passes, 1 otherwise.

Checks
- every row has exactly the required keys, valid enums, unique ids
- gold_sql is one SELECT/WITH statement; it runs read-only (10 s limit) and returns >= 1 row
- gold_columns, result_rows and gold_result equal what the query returns now
  (values compared after the bench normalisation: floats rounded to 2 places, integral floats -> int)
- ordered items: the sort key is well defined (first column strictly monotonic, or last column
  strictly monotonic), unless the item is listed in KNOWN_ORDER_TIES
- top-N items (LIMIT n with n > 1 result rows): the row after the cut-off does not tie with the last row
  on the last column (the ranking metric in all items here)
- paraphrase / near-miss bookkeeping and the minimum counts of the brief
- paraphrases_heldout.jsonl (h25-*, hn25-*): the same item checks, except that an ordered result may also
  be strictly sorted by (last column descending, first column ascending), i.e. a count/revenue ranking
  with ties broken by name; plus the held-out minimum counts
- paraphrases_sealed.jsonl (s25-*, sn25-*): the same checks as the held-out file, with the sealed minimum counts;
  no sealed question repeats a question of the other files verbatim, and ids are unique across all files
"""
import json
import os
import re
import sqlite3
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DB = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'examples', 'chinook', 'chinook.sqlite')
DB = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_DB

DEV_KEYS = {"id", "question", "gold_sql", "difficulty", "lang", "result_rows", "order_matters",
            "gold_columns", "gold_result"}
PARA_KEYS = DEV_KEYS | {"template", "slots"}
NEAR_KEYS = DEV_KEYS | {"template", "near_miss_of", "slots", "why"}
TEMPLATES = {f"V{i}" for i in range(1, 10)}

# Ordered items whose gold ordering has a tie on the sort key. Gold breaks the tie by name;
# a scorer should treat the tied rows as interchangeable.
KNOWN_ORDER_TIES = {
    "p25-32": "Heavy Metal and World both have 28 tracks",
    "p25-33": "Heavy Metal and World both have 28 tracks",
    "p25-34": "Heavy Metal and World both have 28 tracks",
    "p25-35": "Heavy Metal and World both have 28 tracks",
}

errors = []


def err(msg):
    errors.append(msg)


def norm(v):
    if isinstance(v, float):
        v = round(v, 2)
        if v == int(v):
            return int(v)
    return v


def norm_rows(rows):
    return [tuple(norm(v) for v in r) for r in rows]


def connect():
    con = sqlite3.connect(f'file:{DB}?mode=ro', uri=True)
    con.execute('PRAGMA query_only = 1')
    return con


def run(con, sql, limit_s=10.0):
    start = time.monotonic()
    con.set_progress_handler(lambda: 1 if time.monotonic() - start > limit_s else 0, 10000)
    try:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description]
        return cols, [list(r) for r in cur.fetchall()]
    finally:
        con.set_progress_handler(None, 0)


def strictly_monotonic(vals):
    try:
        inc = all(a < b for a, b in zip(vals, vals[1:]))
        dec = all(a > b for a, b in zip(vals, vals[1:]))
    except TypeError:  # NULL or mixed types
        return False
    return inc or dec


def strictly_ranked(rows):
    """Rows strictly sorted by (last column descending, first column ascending)."""
    try:
        return all((a[-1] > b[-1]) or (a[-1] == b[-1] and a[0] < b[0]) for a, b in zip(rows, rows[1:]))
    except TypeError:
        return False


def check_item(con, d, keys, name_tiebreak=False):
    i = d.get("id", "?")
    if set(d) != keys:
        err(f"{i}: keys {sorted(set(d) ^ keys)} wrong")
        return
    if d["difficulty"] not in ("easy", "medium", "hard"):
        err(f"{i}: difficulty {d['difficulty']!r}")
    if d["lang"] not in ("en", "ja"):
        err(f"{i}: lang {d['lang']!r}")
    if not isinstance(d["order_matters"], bool):
        err(f"{i}: order_matters not bool")
    has_ja = re.search(r'[\u3040-\u30ff\u4e00-\u9fff]', d["question"]) is not None
    if has_ja != (d["lang"] == "ja"):
        err(f"{i}: lang {d['lang']} does not fit the question text")
    sql = d["gold_sql"].strip()
    if not re.match(r'(?is)^(select|with)\b', sql) or ';' in sql.rstrip(';'):
        err(f"{i}: gold_sql is not a single SELECT")
        return
    try:
        cols, rows = run(con, sql)
    except Exception as e:  # noqa: BLE001
        err(f"{i}: gold_sql failed: {e}")
        return
    if not rows:
        err(f"{i}: gold_sql returns no rows")
    if cols != d["gold_columns"]:
        err(f"{i}: columns {cols} != stored {d['gold_columns']}")
    if len(rows) != d["result_rows"] or len(d["gold_result"]) != d["result_rows"]:
        err(f"{i}: result_rows {d['result_rows']} vs query {len(rows)} vs stored {len(d['gold_result'])}")
    got, want = norm_rows(rows), norm_rows(d["gold_result"])
    if d["order_matters"]:
        if got != want:
            err(f"{i}: ordered result differs")
    elif Counter(got) != Counter(want):
        err(f"{i}: result multiset differs")
    # raw equality as well (stored values are exactly what SQLite returned)
    if [list(r) for r in rows] != d["gold_result"]:
        err(f"{i}: stored gold_result is not byte-identical to the query output")
    # ordering well defined
    if d["order_matters"] and len(rows) > 1 and i not in KNOWN_ORDER_TIES:
        first = [r[0] for r in rows]
        last = [r[-1] for r in rows]
        if not (strictly_monotonic(first) or strictly_monotonic(last)
                or (name_tiebreak and strictly_ranked(rows))):
            err(f"{i}: ordered result has a tie on its sort key")
    # no tie at a top-N cut-off
    m = re.search(r'(?is)\bLIMIT\s+(\d+)\s*$', sql)
    if m:
        n = int(m.group(1))
        _, more = run(con, sql[:m.start()] + f"LIMIT {n + 1}")
        if len(more) > n and norm(more[n][-1]) == norm(more[n - 1][-1]):
            err(f"{i}: tie at the LIMIT {n} cut-off")


def load(path):
    with open(path, encoding='utf-8') as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    con = connect()
    dev = load(os.path.join(HERE, 'dev.jsonl'))
    para_all = load(os.path.join(HERE, 'paraphrases.jsonl'))

    ids = [d.get("id") for d in dev + para_all]
    for k, c in Counter(ids).items():
        if c > 1:
            err(f"duplicate id {k}")

    for d in dev:
        check_item(con, d, DEV_KEYS)

    para = [d for d in para_all if d.get("template") is not None]
    near = [d for d in para_all if d.get("template") is None]
    for d in para:
        check_item(con, d, PARA_KEYS)
        if d["template"] not in TEMPLATES:
            err(f"{d['id']}: template {d['template']!r}")
        if not isinstance(d["slots"], dict):
            err(f"{d['id']}: slots not an object")
    for d in near:
        check_item(con, d, NEAR_KEYS)
        if d.get("near_miss_of") not in TEMPLATES:
            err(f"{d['id']}: near_miss_of {d.get('near_miss_of')!r}")

    # required counts
    diff = Counter(d["difficulty"] for d in dev)
    lang = Counter(d["lang"] for d in dev)
    ja_by_diff = Counter(d["difficulty"] for d in dev if d["lang"] == "ja")
    need = [("dev total", len(dev), 64), ("dev easy", diff["easy"], 12), ("dev medium", diff["medium"], 22),
            ("dev hard", diff["hard"], 22), ("dev ja", lang["ja"], 12),
            ("paraphrases", len(para), 36), ("paraphrases ja", sum(d["lang"] == "ja" for d in para), 12),
            ("near-misses", len(near), 12)]
    for name, have, want in need:
        if have < want:
            err(f"count {name}: {have} < {want}")
    for dd in ("easy", "medium", "hard"):
        if ja_by_diff[dd] == 0:
            err(f"no Japanese {dd} question in dev")
    tpl = Counter(d["template"] for d in para)
    for t in sorted(TEMPLATES):
        if tpl[t] == 0:
            err(f"no paraphrase of {t}")
    changed = sum(1 for d in para if d["slots"])
    if changed * 2 <= len(para):
        err(f"only {changed} of {len(para)} paraphrases change a slot value")

    print(f"dev.jsonl: {len(dev)} items; difficulty {dict(diff)}; lang {dict(lang)}; ja by difficulty {dict(ja_by_diff)}")
    print(f"paraphrases.jsonl: {len(para)} paraphrases (ja {sum(d['lang'] == 'ja' for d in para)}, "
          f"{changed} with changed slots; per template {dict(sorted(tpl.items()))}); "
          f"{len(near)} near-misses (ja {sum(d['lang'] == 'ja' for d in near)}; "
          f"per template {dict(sorted(Counter(d['near_miss_of'] for d in near).items()))})")
    check_heldout(con)
    check_sealed(con)
    for k, why in KNOWN_ORDER_TIES.items():
        print(f"note: {k} ordered result has a documented tie: {why}")
    if errors:
        print(f"FAIL: {len(errors)} problem(s)")
        for e in errors:
            print("  " + e)
        return 1
    print("PASS")
    return 0


def check_heldout(con):
    """Held-out set written on 2026-12-03 (see README.md, "Held-out paraphrases")."""
    check_extra_set(con, 'paraphrases_heldout.jsonl', 'h25', 'hn25', 'held-out', 45, 20, 5, 25, 8, 2)


def check_sealed(con):
    """Sealed set written on 2026-12-03 (see README.md, "Sealed paraphrases"); measured once, at the end."""
    check_extra_set(con, 'paraphrases_sealed.jsonl', 's25', 'sn25', 'sealed', 45, 20, 5, 27, 9, 3)
    # no sealed question may repeat a question of the other sets verbatim (compared without printing them)
    sealed = load(os.path.join(HERE, 'paraphrases_sealed.jsonl'))
    others = set()
    for name in ('dev.jsonl', 'paraphrases.jsonl', 'paraphrases_heldout.jsonl'):
        others |= {re.sub(r'\s+', ' ', d.get("question", "")).strip().lower()
                   for d in load(os.path.join(HERE, name))}
    for d in sealed:
        if re.sub(r'\s+', ' ', d.get("question", "")).strip().lower() in others:
            err(f"{d.get('id')}: sealed question repeats a question of another set")
    ids = [d.get("id") for d in sealed]
    for name in ('dev.jsonl', 'paraphrases.jsonl', 'paraphrases_heldout.jsonl'):
        ids += [d.get("id") for d in load(os.path.join(HERE, name))]
    for k, c in Counter(ids).items():
        if c > 1:
            err(f"duplicate id {k} across files")


def check_extra_set(con, fname, pfx, npfx, label, n_para, n_para_ja, n_para_tpl, n_near, n_near_ja, n_near_tpl):
    """Paraphrase files checked with name-tiebreak ordering, id patterns and minimum counts."""
    path = os.path.join(HERE, fname)
    items = load(path)
    for k, c in Counter(d.get("id") for d in items).items():
        if c > 1:
            err(f"duplicate id {k}")
    para = [d for d in items if d.get("template") is not None]
    near = [d for d in items if d.get("template") is None]
    for d in para:
        if not re.fullmatch(pfx + r'-\d\d', d.get("id", "")):
            err(f"{d.get('id')}: {label} paraphrase id must be {pfx}-NN")
        check_item(con, d, PARA_KEYS, name_tiebreak=True)
        if d.get("template") not in TEMPLATES:
            err(f"{d.get('id')}: template {d.get('template')!r}")
        if not isinstance(d.get("slots"), dict):
            err(f"{d.get('id')}: slots not an object")
    for d in near:
        if not re.fullmatch(npfx + r'-\d\d', d.get("id", "")):
            err(f"{d.get('id')}: {label} near-miss id must be {npfx}-NN")
        check_item(con, d, NEAR_KEYS, name_tiebreak=True)
        if d.get("near_miss_of") not in TEMPLATES:
            err(f"{d.get('id')}: near_miss_of {d.get('near_miss_of')!r}")
        if d.get("slots") != {}:
            err(f"{d.get('id')}: near-miss slots must be {{}}")
    tpl = Counter(d.get("template") for d in para)
    ntpl = Counter(d.get("near_miss_of") for d in near)
    pja = sum(d.get("lang") == "ja" for d in para)
    nja = sum(d.get("lang") == "ja" for d in near)
    changed = sum(1 for d in para if d.get("slots"))
    need = [(f"{label} paraphrases", len(para), n_para), (f"{label} paraphrases ja", pja, n_para_ja),
            (f"{label} near-misses", len(near), n_near), (f"{label} near-misses ja", nja, n_near_ja)]
    need += [(f"{label} paraphrases of {t}", tpl[t], n_para_tpl) for t in sorted(TEMPLATES)]
    need += [(f"{label} near-misses of {t}", ntpl[t], n_near_tpl) for t in sorted(TEMPLATES)]
    for name, have, want in need:
        if have < want:
            err(f"count {name}: {have} < {want}")
    if changed * 2 <= len(para):
        err(f"{label}: only {changed} of {len(para)} paraphrases change a slot value")
    print(f"{fname}: {len(para)} paraphrases (ja {pja}, {changed} with slots; "
          f"per template {dict(sorted(tpl.items()))}); {len(near)} near-misses (ja {nja}; "
          f"per template {dict(sorted(ntpl.items()))})")

if __name__ == '__main__':
    sys.exit(main())
