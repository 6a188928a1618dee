"""The CPU engines on the registry's own GGUF files: groundcode bfloat16, int8 and gguf, and llama.cpp.

    .venv/bin/python benchmarks/cpu_engines.py                       # both registry models
    .venv/bin/python benchmarks/cpu_engines.py --models smollm2-135m --engines bfloat16,int8

llama.cpp is llama-cpp-python: this interpreter's where it has it (`pip install
'groundcode[gguf]'`, the build groundcode's gguf engine runs on), else the venv of
recipes/llama_cpp_server.sh (--llama-python); it runs the GGUF the pull verified (assembled
from the model's wheels), as shipped. groundcode runs the HF directory the pull converted from
that same file, in bfloat16 or with int8 linear layers (models/quantize.py), or the GGUF file
itself on llama.cpp (`--dtype gguf`, decoding/llama_engine.py: groundcode's row step on llama.cpp's
logits). Each (model, engine) is one process, one at a time, --threads each
(benchmarks/_engine_probe.py): load seconds and resident memory; for prompts of 64, 1,024 and
2,048 tokens (the tail of real code) prefill ms and decode ms per token (greedy, the KV cache);
an editor line (a 1,024-token prompt cut at a line start inside a function; greedy to the end
of the line): first token and full line ms. Quality (groundcode's engines): bits per character
on the model-quality set (benchmarks/model_quality.py's held-out packages), per file, so each
dtype against bfloat16 is paired (a bootstrap interval of the relative difference).
Prints a table, writes benchmarks/results/cpu_engines.json (or --out) with the machine and the
load average before and after. Not a test: nothing asserts.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
CACHE = Path(os.environ.get("GROUNDCODE_CACHE", Path.home() / ".cache" / "groundcode"))
LLAMA_PY = CACHE / "llama-cpp-env" / "bin" / "python"


def llama_python() -> str:
    """This interpreter where it has llama-cpp-python (`pip install 'groundcode[gguf]'`: the same
    build groundcode's gguf engine runs on), else the recipe's venv."""
    import importlib.util
    return sys.executable if importlib.util.find_spec("llama_cpp") else str(LLAMA_PY)


def gguf_for(name: str) -> Path:
    """The file `--dtype gguf` runs (models/load.engine_gguf: the registry model's GGUF, assembled
    once from its pulled, hash-checked wheels, requantized once where the registry says so), so
    llama.cpp runs the same file."""
    from groundcode.errors import GroundcodeError
    from groundcode.models.load import engine_gguf
    try:
        return engine_gguf(name)
    except GroundcodeError as exc:
        sys.exit(str(exc))


def corpus(chars: int) -> list[tuple[str, str]]:
    """(name, text) of the model-quality set's .py files (held-out packages), round robin, up to `chars`."""
    from model_quality import HELDOUT, fetch
    queues = [[(f"{spec}:{p}", t) for p, t in sorted(fetch(spec, ROOT / ".cache" / "heldout").items())
               if 400 <= len(t) <= 40_000] for spec in HELDOUT]
    out, total = [], 0
    while total < chars and any(queues):
        for q in queues:
            if q and total < chars:
                out.append(q.pop(0))
                total += len(out[-1][1])
    return out


def line_prompts(files: list[tuple[str, str]], k: int, seed: int = 0) -> list[str]:
    """`k` prompts cut before an indented code line (inside a function), a long way in: the
    model writes the line, its indentation first."""
    rng = random.Random(seed)
    cands = []
    for _, text in files:
        lines = text.split("\n")
        at = 0
        for i, ln in enumerate(lines):
            if i > 20 and ln.startswith("        ") and ln.strip() and not ln.strip().startswith(("#", '"', "'")):
                cands.append(text[:at])
            at += len(ln) + 1
    rng.shuffle(cands)
    return cands[:k]


def probe(python: str, spec: dict, timeout: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="gc-engines-") as tmp:
        sp, op = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        sp.write_text(json.dumps(spec))
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": str(spec["threads"]),
               "TOKENIZERS_PARALLELISM": "false"}
        p = subprocess.run([python, str(ROOT / "benchmarks" / "_engine_probe.py"), str(sp), str(op)],
                           capture_output=True, text=True, timeout=timeout, env=env)
        if p.returncode != 0 or not op.is_file():
            return {"error": (p.stderr or p.stdout).strip().splitlines()[-1:] or [f"exit {p.returncode}"]}
        return json.loads(op.read_text())


def paired_bpc(a: list, b: list, seed: int = 0, n: int = 2000) -> dict:
    """Relative difference of bits per character b vs a over the same files, with a bootstrap 95% interval."""
    rng = random.Random(seed)

    def rel(idx):
        na, nb = sum(a[i][0] for i in idx), sum(b[i][0] for i in idx)
        return nb / na - 1.0
    idx = list(range(len(a)))
    boots = sorted(rel([rng.choice(idx) for _ in idx]) for _ in range(n))
    return {"relative": round(rel(idx), 4), "ci95": [round(boots[int(0.025 * n)], 4), round(boots[int(0.975 * n)], 4)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="*", default=["smollm2-135m", "qwen2.5-coder-0.5b"])
    ap.add_argument("--engines", default="bfloat16,int8,gguf,llama.cpp")
    ap.add_argument("--llama-python", default=None, help="the interpreter with llama-cpp-python "
                    "(default: this one if it has it, else recipes/llama_cpp_server.sh's venv)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lengths", default="64,1024,2048")
    ap.add_argument("--steps", type=int, default=32, help="decode steps per prompt length and round")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--lines", type=int, default=20, help="editor lines")
    ap.add_argument("--line-prompt", type=int, default=1024)
    ap.add_argument("--quality-chars", type=int, default=120_000, help="0: no bits per character")
    ap.add_argument("--window", type=int, default=1024)
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cpu_engines.json")
    args = ap.parse_args()
    args.llama_python = args.llama_python or llama_python()
    from editor_latency import machine
    files = corpus(max(args.quality_chars, 200_000))
    text = "\n\n".join(t for _, t in files[:60])
    lines = line_prompts(files, args.lines)
    quality, total = [], 0                  # the same round robin, cut at --quality-chars
    for _, t in files:
        if total >= args.quality_chars:
            break
        quality.append(t)
        total += len(t)
    quality = quality or None
    res = {"machine": machine(), "threads": args.threads, "llama_python": args.llama_python, "load_before": [round(x, 2) for x in os.getloadavg()],
           "quality_files": len(quality or []), "quality_chars": sum(map(len, quality or [])), "models": {}}
    for name in args.models:
        res["models"][name] = runs = {}
        for engine in args.engines.split(","):
            llama = engine == "llama.cpp"
            if llama and not Path(args.llama_python).is_file():
                runs[engine] = {"error": [f"no llama-cpp-python at {args.llama_python}: bash recipes/llama_cpp_server.sh"]}
                continue
            spec = {"engine": "llama.cpp" if llama else "groundcode", "model": str(gguf_for(name)) if llama else name,
                    "dtype": engine, "threads": args.threads, "lengths": [int(x) for x in args.lengths.split(",")],
                    "steps": args.steps, "reps": args.reps, "text": text, "lines": lines,
                    "line_prompt": args.line_prompt, "line_tokens": 48, "window": args.window,
                    "quality": None if llama else quality}
            t = time.perf_counter()
            runs[engine] = probe(args.llama_python if llama else sys.executable, spec, args.timeout)
            runs[engine]["wall_s"] = round(time.perf_counter() - t, 1)
            line = runs[engine].get("line", {})          # the model's lines continue third-party
            line["line_chars"] = [len(c) for c in line.pop("completions", [])]   # code: lengths only
            print(f"{name} {engine}: {json.dumps({k: v for k, v in runs[engine].items() if k != 'quality'})[:600]}",
                  file=sys.stderr, flush=True)
        base = runs.get("bfloat16", {}).get("quality")
        for engine, r in runs.items():
            if r.get("quality") and base and engine != "bfloat16":
                r["bits_per_char_vs_bfloat16"] = paired_bpc(base, r["quality"])
            if r.get("quality"):
                nll, chars = sum(x[0] for x in r["quality"]), sum(x[2] for x in r["quality"])
                r["bits_per_char"] = round(nll / 0.6931471805599453 / chars, 4)
    res["load_after"] = [round(x, 2) for x in os.getloadavg()]
    res["table"] = table(res)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print("\n".join(res["table"]))
    print(f"wrote {args.out}")


def table(res: dict) -> list[str]:
    m = res["machine"]
    out = [f"{m['cores']} cores ({m['cpu']}), {res['threads']} threads, load {res['load_before']} -> {res['load_after']}",
           f"{'model':<20} {'engine':<10} {'RSS MB':>7} {'prefill ms 64/1k/2k':>22} {'decode ms/tok 64/1k/2k':>24} "
           f"{'line: 1st p50':>13} {'full p50/p75':>14} {'bits/char':>10} {'vs bf16 [95%]':>24}"]
    for name, runs in res["models"].items():
        for engine, r in runs.items():
            if "error" in r:
                out.append(f"{name:<20} {engine:<10} error: {' '.join(r['error'])[:120]}")
                continue
            ls = r["lengths"].values()
            pre = "/".join(f"{x['prefill_ms']:.0f}" for x in ls)
            dec = "/".join(f"{x['decode_ms_per_token']:.1f}" for x in ls)
            vs = r.get("bits_per_char_vs_bfloat16")
            vs = f"{vs['relative']:+.2%} [{vs['ci95'][0]:+.2%}, {vs['ci95'][1]:+.2%}]" if vs else ""
            out.append(f"{name:<20} {engine:<10} {r['end_peak_rss_mb'] or 0:>7.0f} {pre:>22} {dec:>24} "
                       f"{r['line']['first_token_ms_p50']:>13.0f} "
                       f"{str(round(r['line']['full_line_ms_p50'])) + '/' + str(round(r['line']['full_line_ms_p75'])):>14} "
                       f"{r.get('bits_per_char', ''):>10} {vs:>24}")
    return out


if __name__ == "__main__":
    main()
