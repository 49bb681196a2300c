"""The contextual bandit on whole dev sets: SciFact test, ja-qa dev, and both in one mixed collection.

Runs `relayrag eval beir` (relayrag.evaluation.retrieval.evaluate_beir) per set — fixed arms, the bandit replayed
online with the no-LLM judge's rewards (and, with --oracle, with the qrels' nDCG@10 as reward), optionally
the full pipeline — writes benchmarks/results/bandit_<set>.json, and plots the learning curves (nDCG@10 per
block of 50 queries, bandit vs each fixed arm, per query script; below, the cumulative regret against the
script's best fixed arm) to benchmarks/bandit_learning_curve.png.
The machine's load average is recorded with each result.

The mixed set is built as a BEIR folder (both corpora, both query sets, both qrels interleaved one by one;
the ids do not collide) in --work. Its collection is seeded from the already ingested single-set collections (their chunks and
vectors copied into one snapshot, so nothing is embedded twice), then the merged corpus is ingested (every
vector reused by content hash) and the seed sources are removed — the result is what ingesting the merged
corpus from scratch gives, for a fraction of the CPU.

    RELAYRAG_HOME=/tmp/h python benchmarks/bench_bandit.py --sets scifact ja mixed [--pipeline] [--oracle]
        [--feedback 0.1 0.3]   # + replays where a simulated person rates 10 % / 30 % of the answers
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BENCH = Path(os.environ.get("RELAYRAG_BENCH_DATA", HERE.parent.parent / "shared" / "bench"))
SETS = {"scifact": (BENCH / "scifact", "scifact"), "ja": (BENCH / "ja-qa", "ja")}


def build_mixed_folder(out: Path) -> Path:
    """Write out/{corpus.jsonl, queries.jsonl, qrels/test.tsv} = SciFact + ja-qa (unchanged if present)."""
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    for name in ("corpus.jsonl", "queries.jsonl"):
        data = b"".join((d / name).read_bytes().rstrip(b"\n") + b"\n" for d, _ in SETS.values())
        if not (out / name).is_file() or (out / name).read_bytes() != data:
            (out / name).write_bytes(data)
    per_set = [[line + "\n" for i, line in enumerate((d / "qrels" / "test.tsv").read_text().splitlines())
                if i > 0 and line.strip()] for d, _ in SETS.values()]
    rows = ["query-id\tcorpus-id\tscore\n"]
    for i in range(max(map(len, per_set))):  # interleaved, so the stream mixes the languages throughout
        rows += [s[i] for s in per_set if i < len(s)]
    data = "".join(rows)
    if not (out / "qrels" / "test.tsv").is_file() or (out / "qrels" / "test.tsv").read_text() != data:
        (out / "qrels" / "test.tsv").write_text(data)
    return out


def seed_collection(ctx, target: str, sources: list[str]) -> bool:
    """Copy the current snapshots of `sources` into a new collection `target` (chunks, vectors, records)
    so a later ingest reuses their vectors by content hash. False if `target` exists already."""
    from relayrag.ingest.snapshot import new_version, read_chunks, read_vectors, write_snapshot
    if ctx.docstore.get_collection(target) is not None:
        return False
    chunks, vectors, records = [], [], []
    for name in sources:
        meta = ctx.docstore.get_collection(name)
        if meta is None:
            raise SystemExit(f"collection {name!r} is not ingested; run the single sets first")
        v = meta["current_version"]
        chunks += read_chunks(ctx.blobstore, name, v)
        vectors.append(read_vectors(ctx.blobstore, name, v))
        records += ctx.docstore.list_files(name)
    version = new_version()
    write_snapshot(ctx.blobstore, target, version, chunks, np.concatenate(vectors),
                   {"embedder": getattr(ctx.embedder, "model_id", "unknown"), "created_at": time.time(),
                    "seeded_from": sources})
    ctx.docstore.commit_ingest(target, version, {"n_chunks": len(chunks)}, records, [], expected_version=None)
    return True


def prepare_mixed(ctx, work: Path, collection: str = "mixed") -> Path:
    from relayrag.ingest.pipeline import ingest, remove_source
    folder = build_mixed_folder(work / "mixed")
    if seed_collection(ctx, collection, [c for _, c in SETS.values()]):
        seeds = [r["path"] for r in ctx.docstore.list_files(collection)]
        s = ingest(ctx, folder / "corpus.jsonl", collection)
        print(f"mixed: ingested, {s.chunks_embedded} chunks embedded (vectors reused)", file=sys.stderr)
        for key in seeds:
            remove_source(ctx, collection, key)
    return folder


def plot(results: dict[str, dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [(name, c, m) for name, rep in results.items()
              for c, m in rep["arms"]["bandit"]["contexts"].items()]
    fig, axes = plt.subplots(2, len(panels), figsize=(4.2 * len(panels), 6.4), squeeze=False)
    for ax, (name, c, m) in zip(axes[1], panels):
        x = [min(m["queries"], (i + 1) * 50) for i in range(len(m["regret_per_block"]))]
        ax.plot(x, m["regret_per_block"], "-o", color="tab:blue", label="bandit (judge reward)")
        oracle = results[name]["arms"].get("bandit_oracle", {}).get("contexts", {}).get(c)
        if oracle:
            ax.plot(x, oracle["regret_per_block"], "-x", color="tab:orange", linewidth=1,
                    label="bandit (qrels reward)")
        ax.axhline(0, color="black", linewidth=0.5)
        ax.set_xlabel("queries seen", fontsize=8)
        ax.set_ylabel(f"cumulative regret vs {m['best_fixed']} (nDCG@10 sum)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax, (name, c, m) in zip(axes[0], panels):
        x = [int(r["queries"].split("-")[1]) for r in m["curve"]]
        for arm, style in (("dense", ":"), ("bm25", "--"), ("hybrid", "-.")):
            ax.plot(x, [r[arm] for r in m["curve"]], style, label=f"{arm} (fixed)", color="grey" if arm != "bm25"
                    else "black", linewidth=1)
        ax.plot(x, [r["bandit"] for r in m["curve"]], "-o", label="bandit (judge reward)", color="tab:blue")
        oracle = results[name]["arms"].get("bandit_oracle", {}).get("contexts", {}).get(c)
        if oracle:
            ax.plot(x, [r["bandit"] for r in oracle["curve"]], "-x", label="bandit (qrels reward)",
                    color="tab:orange", linewidth=1)
        ax.set_title(f"{name}: {c} queries ({m['queries']})", fontsize=9)
        ax.set_xlabel("queries seen (end of block of 50)", fontsize=8)
        ax.set_ylabel("nDCG@10 in the block", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", default=["scifact", "ja", "mixed"], choices=["scifact", "ja", "mixed"])
    ap.add_argument("--pipeline", action="store_true", help="also run the full pipeline (~2 s per query)")
    ap.add_argument("--oracle", action="store_true", help="also replay the bandit with qrels rewards")
    ap.add_argument("--feedback", nargs="*", type=float, default=[],
                    help="also replay with simulated people's verdicts (from the qrels) on these shares of the "
                         "queries, e.g. 0.1 0.3 (relayrag.feedback; judge-only bandit in the same run)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/relayrag-bench-bandit"))
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--plot-only", action="store_true", help="re-plot from the saved results")
    a = ap.parse_args()
    from relayrag.context import default_context
    from relayrag.evaluation.retrieval import evaluate_beir

    a.out.mkdir(parents=True, exist_ok=True)
    results = {}
    ctx = None if a.plot_only else default_context()
    for name in a.sets:
        path = a.out / f"bandit_{name}.json"
        if a.plot_only:
            results[name] = json.loads(path.read_text())
            continue
        load0 = os.getloadavg()
        if name == "mixed":
            folder, coll = prepare_mixed(ctx, a.work), "mixed"
        else:
            folder, coll = SETS[name]
        t = time.perf_counter()
        rep = evaluate_beir(ctx, folder, coll, pipeline=a.pipeline, oracle=a.oracle, feedback=tuple(a.feedback))
        rep["machine"] = {"cpus": os.cpu_count(), "loadavg_start": [round(x, 2) for x in load0],
                          "loadavg_end": [round(x, 2) for x in os.getloadavg()],
                          "seconds": round(time.perf_counter() - t, 1), "date": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                             time.gmtime())}
        path.write_text(json.dumps(rep, indent=1, ensure_ascii=False) + "\n")
        results[name] = rep
        b = rep["arms"]["bandit"]
        print(f"{name}: " + ", ".join(f"{k} {v['ndcg@10']:.4f}" for k, v in rep["arms"].items())
              + (f", pipeline {rep['pipeline']['ndcg@10']:.4f}" if rep.get("pipeline") else ""), file=sys.stderr)
        for c, m in b["contexts"].items():
            print(f"  {c}: after 50 {m['ndcg@10_after_first_block']} vs best fixed ({m['best_fixed']}) "
                  f"{m['best_fixed_after_first_block']}; picks {m['picks']}", file=sys.stderr)
    plot(results, HERE / "bandit_learning_curve.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
