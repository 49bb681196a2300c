"""Review rules about which entity a result shows and how (relayrag.sql.checks): the grouped entity, names
instead of ids, last names, joins nothing uses, a nameless row's key."""

from __future__ import annotations

import re

from relayrag.sql.checks.facts import (_ASKS_IDS, _FIRST_ONLY, _FULL_NAME, _GROUP_NOUN, _I, _WHICH_NOUN, Issue,
                                       _aggregates, _alias_case, _bare, _col, _resolve, _Schema, _sources)


_RELATION_WORDS = re.compile(r"\b(bought|buy|buys|purchas\w*|sold|sell\w*|order\w*|made|placed|played|"
                             r"listened|with|without|any|at\s+least|never|no|ha(?:ve|s|d)\s+(?:a|an|some|one|their\s+own))\b", _I)


def _drop_unused_joins(select, schema: _Schema, question: str) -> bool:
    """Drop an inner join whose table no column uses outside its own ON clause, when the question neither
    names that table nor asks about a relation (bought, with, without, any, never ...): such a join only
    removes rows (artists without albums) or repeats them."""
    from sqlglot import exp
    stars = [p for key in ("expressions", "having", "order") for p in (
        select.args.get(key) if isinstance(select.args.get(key), list) else [select.args.get(key)]) if p is not None]
    if any(isinstance(p, exp.Star) or p.find(exp.Star) is not None for p in stars):
        return False  # SELECT * or COUNT(*) (also in HAVING / ORDER BY) uses every joined row
    sources = _sources(select, schema)
    changed = False
    for join in list(select.args.get("joins") or []):
        t = join.this
        if not isinstance(t, exp.Table) or join.side or (join.kind or "").upper() not in ("", "INNER"):
            continue
        alias = t.alias_or_name.lower()
        if alias not in sources:
            continue
        on = join.args.get("on")
        if on is not None and any(_resolve(c, sources, schema) is None for c in on.find_all(exp.Column)):
            continue  # a join on a column that does not exist: the database's error and the repair round say so
        # a self-join on the same non-key column only repeats rows, whatever the question says; any other
        # join is kept when the relation is asked for, or when it is a self-join on a key (an employee's manager)
        if not _self_join_on_same_column(join, alias, sources, schema) and (
                _RELATION_WORDS.search(question) or schema.mentioned(sources[alias], question)
                or sum(t == sources[alias] for t in sources.values()) > 1):
            continue
        used = False
        for col in select.find_all(exp.Column):
            if col.find_ancestor(exp.Join) is join and col.find_ancestor(exp.Select) is select:
                continue
            r = _resolve(col, sources, schema) if col.find_ancestor(exp.Select) is select else None
            if col.table.lower() == alias or (r is not None and r[0] == alias):
                used = True
                break
        if not used:
            join.pop()
            changed = True
    return changed


def _self_join_on_same_column(join, alias: str, sources: dict[str, str], schema: _Schema) -> bool:
    """Whether `join` joins a table to another alias of itself on the same non-key column(s) (`Customer b ON
    a.City = b.City`): every row matches itself, so the join only repeats rows."""
    from sqlglot import exp
    on = join.args.get("on")
    if on is None:
        return False
    eqs = list(on.find_all(exp.EQ))
    if not eqs or any(not isinstance(n, (exp.EQ, exp.And, exp.Column, exp.Identifier, exp.Paren))
                      for n in on.walk()):
        return False
    for eq in eqs:
        a, b = eq.this, eq.expression
        if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)):
            return False
        ra, rb = _resolve(a, sources, schema), _resolve(b, sources, schema)
        if ra is None or rb is None or ra[1] != rb[1] or ra[2] != rb[2] or ra[0] == rb[0] \
                or alias not in (ra[0], rb[0]) or schema.is_key(ra[1], ra[2]):
            return False
    return True


def _fix_row_id(select, schema: _Schema, question: str) -> bool:
    """A listing of a table the question names whose rows have no name (an invoice) shows each row's key
    first: the key is how such a row is told apart ("the 5 most recent invoices with date and total")."""
    from sqlglot import exp
    froms = select.args.get("from_")
    if froms is None or not isinstance(froms.this, exp.Table) or select.args.get("group") is not None \
            or select.args.get("distinct") is not None or _aggregates(select) \
            or any(p.find(exp.Star) is not None for p in select.expressions):
        return False
    sources = _sources(select, schema)
    alias = froms.this.alias_or_name.lower()
    table = sources.get(alias)
    if table is None or schema.name_columns(table) or len(schema.pk.get(table, ())) != 1 \
            or not schema.mentioned(table, question):
        return False
    key = next(iter(schema.pk[table]))
    for p in select.expressions:
        for c in p.find_all(exp.Column):
            r = _resolve(c, sources, schema)
            if r is not None and r[1] == table and r[2] == key:
                return False
    select.set("expressions", [_col(froms.this.alias_or_name, schema.cols[table][key])] + list(select.expressions))
    return True


def _group_entities(question: str, schema: _Schema) -> set[str]:
    out = set()
    for m in _GROUP_NOUN.finditer(question):
        for g in (m.group(1), m.group(2)):
            t = schema.table_for(g) if g else None
            if t:
                out.add(t)
    for m in _WHICH_NOUN.finditer(question):
        t = schema.table_for(m.group(2))
        if t:
            out.add(t)
    return out


def _fix_group_entity(select, schema: _Schema, entities: set[str]) -> tuple[bool, list[Issue]]:
    from sqlglot import exp
    group = select.args.get("group")
    if not entities or group is None:
        return False, []
    sources = _sources(select, schema)
    in_from = {t: a for a, t in sources.items() if t in entities}
    if not in_from:
        return False, []
    changed, issues = False, []
    projected = {p.sql().lower() for p in select.expressions} | {_bare(p).sql().lower() for p in select.expressions}
    named = {p.alias.lower(): p.this for p in select.expressions
             if isinstance(p, exp.Alias) and isinstance(p.this, exp.Column)}
    for g in list(group.expressions):
        if not isinstance(g, exp.Column):
            continue
        # GROUP BY an output alias (`GROUP BY media_type`) groups by the column it names
        r = _resolve(g, sources, schema) or (_resolve(named[g.name.lower()], sources, schema)
                                             if not g.table and g.name.lower() in named else None)
        if r is None or r[1] in entities:
            continue
        target = schema.fk_target(r[1], r[2])
        if target and target[0] in entities:
            continue  # grouping by the entity's key held in the other table is the same grouping
        if any(r[1] in schema.referenced(t) for t in in_from):
            continue  # a table the entity references (an album's artist): one value per entity, no split
        ent, ent_alias = next(iter(in_from.items()))
        ent_alias = _alias_case(select).get(ent_alias, ent_alias)
        if r[2] in schema.cols[ent] and not schema.is_key(ent, r[2]):
            # the same column name on the entity's table: alias confusion (T2.Name of Track for MediaType)
            for col in list(select.find_all(exp.Column)):
                if col.find_ancestor(exp.Select) is select and col.find_ancestor(exp.AggFunc) is None \
                        and _resolve(col, sources, schema) == r:
                    col.set("table", exp.to_identifier(ent_alias))
            changed = True
        elif g.sql().lower() not in projected:
            g.pop()
            changed = True
        else:
            issues.append(Issue("group_entity", (
                f"The question asks for one row per {schema.names[ent]}, but it groups by "
                f"{schema.names[r[1]]}.{schema.cols[r[1]][r[2]]}: GROUP BY only {schema.names[ent]}'s key and "
                "name columns.")))
    if changed and not group.expressions:
        select.set("group", None)
    return changed, issues


def _fix_id_for_name(select, schema: _Schema, question: str) -> tuple[bool, list[Issue]]:
    from sqlglot import exp
    if _ASKS_IDS.search(question):
        return False, []
    sources = _sources(select, schema)
    grouped = select.args.get("group") is not None
    if not sources or (not grouped and (_aggregates(select) or any(p.find(exp.Star) for p in select.expressions))):
        return False, []
    projs = list(select.expressions)
    resolved = []
    for p in projs:
        b = _bare(p)
        resolved.append(_resolve(b, sources, schema) if isinstance(b, exp.Column) else None)
    shown = {r[:1] + r[2:] for r in (_resolve(c, sources, schema) for p in projs for c in p.find_all(exp.Column)) if r}
    # a listing that shows some row's name (an invoice line's track) is told apart by it: an id there is not asked
    # to be joined away; one that shows nothing but ids (`SELECT TrackId ...` for "the songs of ...") is
    names_shown = any(r is not None and r[2] in schema.name_columns(r[1]) for r in resolved)
    referenced = set()
    for key in ("order", "group", "having"):
        part = select.args.get(key)
        referenced |= {c.name.lower() for c in (part.find_all(exp.Column) if part is not None else []) if not c.table}
    changed, issues, out, added = False, [], [], []
    for p, r in zip(projs, resolved):
        if r is None or (isinstance(p, exp.Alias) and p.alias.lower() in referenced):
            out.append(p)
            continue
        alias, table, col = r
        if schema.is_key(table, col):
            ent, ent_aliases = table, [alias]
        else:
            target = schema.fk_target(table, col)
            if target is None or not schema.is_key(*target):
                out.append(p)
                continue
            ent = target[0]
            # the referenced row's alias (for a self reference such as ReportsTo: the other alias)
            ent_aliases = [a for a, t in sources.items() if t == ent and a != alias]
        names = schema.name_columns(ent)
        if not names or len(ent_aliases) != 1 or (not grouped and all((ent_aliases[0], n) in shown for n in names)):
            out.append(p)  # (a listing keeps an id next to its own row's name: "list all tracks")
            if names and not ent_aliases and (grouped or not names_shown):
                issues.append(Issue("id_for_name", (
                    f"It shows {schema.names[table]}.{schema.cols[table][col]}, an id: show the "
                    f"{schema.names[ent]}'s {' and '.join(schema.cols[ent][n] for n in names)} instead (join "
                    f"{schema.names[ent]} on its key).")))
            continue  # an entity without a name (an invoice): the id is how it is shown
        ea = ent_aliases[0]
        written = _alias_case(select).get(ea, ea)
        changed = True
        for n in names:
            if (ea, n) not in shown:
                c = _col(written, schema.cols[ent][n])
                out.append(c)
                added.append(c)
                shown.add((ea, n))
    if changed:
        select.set("expressions", out)
        group = select.args.get("group")
        if group is not None:
            for c in added:
                group.append("expressions", c.copy())
    return changed, issues


_LABEL_WORDS = re.compile(r"\b(each|every|per|by|which|who|whose|for\s+all)\b|ごと|毎|別|各|どの|誰|それぞれ", _I)


def _fix_group_shown(select, question: str) -> bool:
    """A grouped result that shows nothing but aggregates (one count per customer, not which customer) shows
    its GROUP BY columns first, when the question names the groups ("each / every / per / by / which / who",
    ごと・別・各・どの・誰). A value asked of all groups together ("the largest number of tracks on any album")
    names none and is left alone; so is a positional GROUP BY 1."""
    from sqlglot import exp
    group = select.args.get("group")
    if group is None or not group.expressions or not _LABEL_WORDS.search(question):
        return False
    if any(_bare(p).find(exp.AggFunc) is None for p in select.expressions):
        return False
    if any(not isinstance(g, exp.Column) for g in group.expressions):
        return False
    select.set("expressions", [g.copy() for g in group.expressions] + list(select.expressions))
    return True


def _fix_last_name(select, schema: _Schema, question: str) -> bool:
    from sqlglot import exp
    if _FIRST_ONLY.search(question) and not _FULL_NAME.search(question):
        return False
    sources = _sources(select, schema)
    projs = list(select.expressions)
    shown = set()
    for p in projs:
        b = _bare(p)
        r = _resolve(b, sources, schema) if isinstance(b, exp.Column) else None
        if r:
            shown.add((r[0], r[2]))
    changed, out = False, []
    group = select.args.get("group")
    for p in projs:
        out.append(p)
        b = _bare(p)
        r = _resolve(b, sources, schema) if isinstance(b, exp.Column) else None
        if r is None or not re.fullmatch(r"first_?name", r[2]):
            continue
        names = schema.name_columns(r[1])
        if len(names) != 2 or (r[0], names[1]) in shown:
            continue
        last = _col(_alias_case(select).get(r[0], r[0]), schema.cols[r[1]][names[1]])
        out.append(exp.alias_(last, p.alias + "_last") if isinstance(p, exp.Alias) else last)
        if group is not None and any(g.sql().lower() == b.sql().lower() for g in group.expressions):
            group.append("expressions", last.copy())
        shown.add((r[0], names[1]))
        changed = True
    if changed:
        select.set("expressions", out)
    return changed

