"""Builds dev.jsonl, paraphrases.jsonl, paraphrases_heldout.jsonl and paraphrases_sealed.jsonl from items_dev.py /
items_para.py / items_heldout.py / items_sealed.py by running gold SQL read-only."""
import json
import sqlite3
import os
from items_dev import DEV
from items_para import PARA, NEAR
from items_heldout import PARA_H, NEAR_H
from items_sealed import PARA_S, NEAR_S

DB = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'examples', 'chinook', 'chinook.sqlite')
con = sqlite3.connect(f'file:{DB}?mode=ro', uri=True)

def run(sql):
    cur = con.execute(sql)
    cols = [d[0] for d in cur.description]
    rows = [list(r) for r in cur.fetchall()]
    return cols, rows

def row(id_, q, sql, diff, lang, om, **extra):
    cols, rows = run(sql)
    assert rows, (id_, 'empty result')
    d = {"id": id_, "question": q, "gold_sql": sql, "difficulty": diff, "lang": lang,
         "result_rows": len(rows), "order_matters": om, "gold_columns": cols, "gold_result": rows}
    d.update(extra)
    return d

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, 'dev.jsonl'), 'w', encoding='utf-8') as f:
    for k, (q, sql, diff, lang, om) in enumerate(DEV, 1):
        f.write(json.dumps(row(f'b25-{k:02d}', q, sql, diff, lang, om), ensure_ascii=False) + '\n')
with open(os.path.join(here, 'paraphrases.jsonl'), 'w', encoding='utf-8') as f:
    for k, (t, q, sql, diff, lang, om, slots) in enumerate(PARA, 1):
        f.write(json.dumps(row(f'p25-{k:02d}', q, sql, diff, lang, om, template=t, slots=slots), ensure_ascii=False) + '\n')
    for k, (t, q, sql, diff, lang, om, why) in enumerate(NEAR, 1):
        f.write(json.dumps(row(f'n25-{k:02d}', q, sql, diff, lang, om, template=None, near_miss_of=t, slots={}, why=why),
                           ensure_ascii=False) + '\n')
with open(os.path.join(here, 'paraphrases_heldout.jsonl'), 'w', encoding='utf-8') as f:
    for k, (t, q, sql, diff, lang, om, slots) in enumerate(PARA_H, 1):
        f.write(json.dumps(row(f'h25-{k:02d}', q, sql, diff, lang, om, template=t, slots=slots), ensure_ascii=False) + '\n')
    for k, (t, q, sql, diff, lang, om, why) in enumerate(NEAR_H, 1):
        f.write(json.dumps(row(f'hn25-{k:02d}', q, sql, diff, lang, om, template=None, near_miss_of=t, slots={}, why=why),
                           ensure_ascii=False) + '\n')
with open(os.path.join(here, 'paraphrases_sealed.jsonl'), 'w', encoding='utf-8') as f:
    for k, (t, q, sql, diff, lang, om, slots) in enumerate(PARA_S, 1):
        f.write(json.dumps(row(f's25-{k:02d}', q, sql, diff, lang, om, template=t, slots=slots), ensure_ascii=False) + '\n')
    for k, (t, q, sql, diff, lang, om, why) in enumerate(NEAR_S, 1):
        f.write(json.dumps(row(f'sn25-{k:02d}', q, sql, diff, lang, om, template=None, near_miss_of=t, slots={}, why=why),
                           ensure_ascii=False) + '\n')
print('ok', len(DEV), len(PARA), len(NEAR), len(PARA_H), len(NEAR_H), len(PARA_S), len(NEAR_S))
