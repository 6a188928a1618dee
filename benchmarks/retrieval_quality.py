"""Snippet retrieval quality and speed: MRR and recall@k of every retriever on the held-out
query set (retrieval/snippet_queries.py), the ensemble weight tuned on its dev split, query
latency per method, and the index's build timings. Prints a table, writes
benchmarks/results/retrieval_quality.json.

    groundcode index snippets --python ~/.cache/groundcode/ds1000-env/bin/python \
        --ds1000 ../shared/data/ds1000.jsonl.gz
    OMP_NUM_THREADS=1 python benchmarks/retrieval_quality.py [--index DIR] [--queries 600]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from groundcode.evaluation.metrics import recall_at_k, reciprocal_rank
from groundcode.retrieval.snippet_index import SnippetIndex
from groundcode.retrieval.snippet_queries import held_out_queries
from groundcode.retrieval.snippet_retriever import METHODS, RetrieverConfig, SnippetRetriever

KS = (1, 3, 5, 10)
DEPTH = 100          # MRR looks this deep (a first relevant hit further down counts 0)


def evaluate(index, queries, vecs, method, weight=0.4):
    r = SnippetRetriever(index, RetrieverConfig(method=method, weight=weight))
    rr, rec, lat = [], {k: [] for k in KS}, []
    for q, v in zip(queries, vecs):
        t = time.perf_counter()
        ranked = [i for i, _ in r.rank(q["query"], DEPTH, query_vec=v)]
        lat.append(time.perf_counter() - t)
        rr.append(reciprocal_rank(ranked, q["relevant"]))
        for k in KS:
            rec[k].append(recall_at_k(ranked, q["relevant"], k))
    out = {"queries": len(queries), "mrr": round(float(np.mean(rr)), 4)}
    out.update({f"recall@{k}": round(float(np.mean(v)), 4) for k, v in rec.items()})
    out["query_ms_p50"] = round(1000 * statistics.median(lat), 2)
    out["query_ms_mean"] = round(1000 * float(np.mean(lat)), 2)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", type=Path, default=None)
    ap.add_argument("--queries", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "retrieval_quality.json")
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    index = SnippetIndex.open(a.index)
    qs = held_out_queries(index, n=a.queries, seed=a.seed)
    dev = [q for q in qs if q["split"] == "dev"]
    test = [q for q in qs if q["split"] == "test"]
    t = time.perf_counter()
    vecs = index.encode_queries([q["query"] for q in qs])
    encode_ms = 1000 * (time.perf_counter() - t) / max(1, len(qs))
    vec = {id(q): v for q, v in zip(qs, vecs)}
    dv, tv = [vec[id(q)] for q in dev], [vec[id(q)] for q in test]
    # the paper's weight, tuned on dev
    sweep = {}
    for w in [round(x, 1) for x in np.arange(0.0, 1.01, 0.1)]:
        sweep[w] = evaluate(index, dev, dv, "ensemble", w)["mrr"]
    best_w = max(sweep, key=lambda w: (sweep[w], -abs(w - 0.4)))
    rows = {}
    for m in METHODS:
        if m == "ensemble":
            rows["ensemble (w=0.4)"] = evaluate(index, test, tv, m, 0.4)
            rows[f"ensemble (w={best_w}, dev-tuned)"] = evaluate(index, test, tv, m, best_w)
        else:
            rows[m] = evaluate(index, test, tv, m)
    result = {"index": str(index.directory), "snippets": len(index),
              "index_manifest": {k: index.manifest.get(k) for k in ("sources", "extracted", "duplicates_dropped",
                                                                    "build_timings", "dense_model")},
              "decontamination": index.manifest.get("decontamination"),
              "queries": {"total": len(qs), "dev": len(dev), "test": len(test), "seed": a.seed,
                          "built_from": "docstring summary lines of documented objects; relevant = their examples"},
              "query_encode_ms_per_query": round(encode_ms, 2),
              "ensemble_weight_sweep_dev_mrr": sweep, "ensemble_weight_tuned": best_w,
              "test": rows, "loadavg": os.getloadavg(), "threads": torch.get_num_threads(),
              "note": "dense query_ms excludes the query encoding (query_encode_ms_per_query)"}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{len(index)} snippets; {len(test)} test queries ({len(dev)} dev); load {os.getloadavg()}")
    print("| retriever | MRR | recall@1 | recall@3 | recall@5 | recall@10 | query ms (p50) |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['mrr']:.3f} | {r['recall@1']:.3f} | {r['recall@3']:.3f} | {r['recall@5']:.3f} "
              f"| {r['recall@10']:.3f} | {r['query_ms_p50']} |")
    print(f"query encoding: {encode_ms:.1f} ms/query; build timings: {index.manifest.get('build_timings')}")
    print(f"ensemble weight sweep (dev MRR): {sweep}")


if __name__ == "__main__":
    main()
