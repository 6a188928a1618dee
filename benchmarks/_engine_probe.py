"""One engine in one process, measured (benchmarks/cpu_engines.py runs this once per model and engine).

    python _engine_probe.py SPEC.json OUT.json

SPEC: {"engine": "groundcode" | "llama.cpp" (dtype gguf: groundcode on llama.cpp), "model": registry name or GGUF path, "dtype": ...,
"threads": 2, "lengths": [64, 1024, 2048], "steps": 32, "reps": 3, "text": code,
"lines": [[prompt text, ...]], "quality": [texts] or null, "window": 1024}.
Runs with groundcode's venv (engine groundcode: models/load.py, torch) or with llama-cpp-python's
(engine llama.cpp: only llama_cpp and the standard library). groundcode: its Engine as
shipped, no monitors (prefill of the prompt alone; decode = generate's time from its first
token to its end, per token after the first; the line with the engine's line stop). llama.cpp: eval() of the prompt from an empty
cache, then one token per eval(), the argmax of the last logits picks; the line ends at its
newline. Resident memory from /proc/self/status.
"""
from __future__ import annotations

import json
import math
import statistics
import sys
import time


def memory_mb() -> dict:
    out = {}
    with open("/proc/self/status") as fh:
        for ln in fh:
            if ln.startswith(("VmRSS:", "VmHWM:")):
                out[ln.split(":")[0]] = round(int(ln.split()[1]) / 1024, 1)
    return {"rss_mb": out.get("VmRSS"), "peak_rss_mb": out.get("VmHWM")}


class Torch:
    """groundcode's engine as shipped (decoding/engine.py: its attention, its growing KV cache,
    its sampler and detokenizer), no monitors; the model from models/load.py."""

    def __init__(self, model: str, dtype: str, threads: int):
        import torch
        torch.set_num_threads(threads)
        from groundcode.decoding.engine import Engine
        from groundcode.decoding.vocab.index import VocabIndex
        from groundcode.models.load import load_model
        self.lm = load_model(model, "cpu", dtype)
        self.tok = self.lm.tokenizer
        self.eng = Engine(self.lm.model, self.tok, VocabIndex.for_tokenizer(self.tok))

    def ids(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def prefill_ms(self, ids: list[int]) -> float:
        return ms(lambda: self.eng.prefill(ids))

    def decode_ms(self, ids: list[int], steps: int, prefill: float) -> float:
        """Generate `steps` greedy tokens: ms from the first token's event to the row's end, per
        token after the first (the prefill's own time, and its noise, left out)."""
        from groundcode.config import SamplingConfig
        from groundcode.decoding.engine import RowSpec
        first = []
        out = self.eng.generate([RowSpec(ids)], SamplingConfig(max_new_tokens=steps),
                                on_event=lambda ev: first or ev.kind != "token" or first.append(time.perf_counter()))
        return (time.perf_counter() - first[0]) * 1e3 / max(1, len(out[0].tokens) - 1)

    def line(self, text: str, n: int, cap: int) -> tuple[float, float, str]:
        """(first token ms, full line ms, the line): the engine's own line stop (`--stop line`)."""
        from pathlib import Path
        from groundcode.config import SamplingConfig
        from groundcode.context import CodeContext
        from groundcode.decoding.engine import RowSpec
        from groundcode.decoding.guides.stop_at import StopAt
        ids = self.ids(text)[-n:]
        ctx = CodeContext(path=Path("probe.py"), repo=Path("."), before=self.tok.decode(ids))
        t, first = time.perf_counter(), []
        out = self.eng.generate([RowSpec(ids, context=ctx, guides=[StopAt("line")])],
                                SamplingConfig(max_new_tokens=cap, stop="line"),
                                on_event=lambda ev: first or ev.kind != "token" or first.append(time.perf_counter()))
        return (first[0] - t) * 1e3, (time.perf_counter() - t) * 1e3, out[0].completion

    def nll(self, text: str, window: int) -> tuple[float, int]:
        """(summed NLL in nats, tokens scored) of one text: model_quality.bits_per_char's scoring."""
        from model_quality import bits_per_char         # benchmarks/ (this script's directory)
        bpc, n_tokens, n_chars = bits_per_char(self.lm.model, self.tok, [text], window)
        return bpc * math.log(2) * n_chars, n_tokens


class Gguf(Torch):
    """groundcode's engine on llama.cpp (`--dtype gguf`, decoding/llama_engine.py): the same
    GGUF file as the llama.cpp row, the engine's row step, sampler and detokenizer; the kept
    prompt dropped before every prefill (no prefix reuse, as the other rows)."""

    def __init__(self, model: str, dtype: str, threads: int):
        import torch
        torch.set_num_threads(threads)
        from groundcode.decoding.llama_engine import LlamaEngine
        from groundcode.decoding.vocab.index import VocabIndex
        from groundcode.models.load import load_model
        self.lm = load_model(model, "cpu", "gguf")
        self.tok = self.lm.tokenizer
        self.eng = LlamaEngine(self.lm, VocabIndex.for_tokenizer(self.tok), max_rows=1)

    def prefill_ms(self, ids):
        self.eng.forget_prompt()
        return super().prefill_ms(ids)

    def decode_ms(self, ids, steps, prefill):
        self.eng.forget_prompt()
        return super().decode_ms(ids, steps, prefill)

    def line(self, text, n, cap):
        self.eng.forget_prompt()
        return super().line(text, n, cap)

    def nll(self, text: str, window: int) -> tuple[float, int]:
        """model_quality.bits_per_char's scoring on llama.cpp's logits (every position)."""
        import numpy as np
        eos, nll, n_tokens = self.tok.eos_token_id, 0.0, 0
        ids = [eos] + self.tok(text, add_special_tokens=False)["input_ids"]
        run, seq = self.eng.runner, 1
        for start in range(0, len(ids) - 1, window):
            chunk = ids[start:start + window + 1]
            inp, tgt = chunk[:-1], chunk[1:]
            run.seq_rm(seq, -1)
            for a in range(0, len(inp), 256):
                part = inp[a:a + 256]
                lg = run.decode(part, range(a, a + len(part)), [seq] * len(part), [True] * len(part)).astype(np.float64)
                m = lg.max(1, keepdims=True)
                lse = (m[:, 0] + np.log(np.exp(lg - m).sum(1)))
                nll += float((lse - lg[np.arange(len(part)), tgt[a:a + len(part)]]).sum())
            n_tokens += len(inp)
        run.seq_rm(seq, -1)
        return nll, n_tokens


class Llama:
    """llama-cpp-python's low-level loop: eval() the prompt, then one token per eval()."""

    def __init__(self, model: str, dtype: str, threads: int):
        from llama_cpp import Llama as L
        self.llm = L(model_path=model, n_ctx=4096, n_batch=512, n_threads=threads, n_threads_batch=threads,
                     verbose=False, logits_all=False)
        self.vocab = self.llm.n_vocab()
        import llama_cpp
        self.info = {"llama_cpp": llama_cpp.__version__,
                     "system_info": llama_cpp.llama_print_system_info().decode().strip()}

    def ids(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def piece(self, tid: int) -> str:
        return self.llm.detokenize([tid]).decode("utf-8", errors="replace")

    def _pick(self) -> int:
        import numpy as np                  # the last token's logits (logits_all=False keeps no rows)
        row = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.vocab,))
        return int(row.argmax())

    def prefill(self, ids: list[int]) -> int:
        self.llm.reset()
        self.llm.eval(ids)
        return self._pick()

    def step(self, tid: int) -> int:
        self.llm.eval([tid])
        return self._pick()

    def prefill_ms(self, ids: list[int]) -> float:
        return ms(lambda: self.prefill(ids))

    def decode_ms(self, ids: list[int], steps: int, prefill: float) -> float:
        tid = self.prefill(ids)
        t = time.perf_counter()
        for _ in range(steps):
            tid = self.step(tid)
        return (time.perf_counter() - t) * 1e3 / steps

    def line(self, text: str, n: int, cap: int) -> tuple[float, float, str]:
        """(first token ms, full line ms, the line): greedy until the line's newline."""
        p = self.ids(text)[-n:]
        t = time.perf_counter()
        tid = self.prefill(p)
        first = (time.perf_counter() - t) * 1e3
        out, k = self.piece(tid), 1
        while "\n" not in out.lstrip() and k < cap and tid != self.llm.token_eos():
            tid = self.step(tid)
            out += self.piece(tid)
            k += 1
        return first, (time.perf_counter() - t) * 1e3, out


def ms(f) -> float:
    t = time.perf_counter()
    f()
    return (time.perf_counter() - t) * 1e3


def main() -> None:
    spec = json.loads(open(sys.argv[1]).read())
    t0 = time.perf_counter()
    kind = Llama if spec["engine"] == "llama.cpp" else Gguf if spec["dtype"] == "gguf" else Torch
    eng = kind(spec["model"], spec["dtype"], spec["threads"])
    res = {"load_s": round(time.perf_counter() - t0, 2), **memory_mb(), **getattr(eng, "info", {})}
    ids = eng.ids(spec["text"])
    eng.decode_ms(ids[:64], 2, eng.prefill_ms(ids[:64]))     # warm-up: kernels built on first use
    res["lengths"] = {}
    for n in spec["lengths"]:
        prompt = ids[-n:]
        pre, dec = [], []
        for _ in range(spec["reps"]):
            pre.append(eng.prefill_ms(prompt))
            dec.append(eng.decode_ms(prompt, spec["steps"], pre[-1]))
        res["lengths"][str(n)] = {"tokens": len(prompt), "prefill_ms": round(statistics.median(pre), 1),
                                  "decode_ms_per_token": round(statistics.median(dec), 2)}
    first, full, lines = [], [], []
    for text in spec["lines"]:                       # an editor line: greedy to the line's end
        a, b, out = eng.line(text, spec["line_prompt"], spec["line_tokens"])
        first.append(a)
        full.append(b)
        lines.append(out)
    q = sorted(full)
    res["line"] = {"prompts": len(first), "prompt_tokens": spec["line_prompt"],
                   "first_token_ms_p50": round(statistics.median(first), 1),
                   "full_line_ms_p50": round(statistics.median(full), 1),
                   "full_line_ms_p75": round(q[min(len(q) - 1, math.ceil(0.75 * len(q)) - 1)], 1),
                   "completions": lines}
    if spec.get("quality") and hasattr(eng, "nll"):
        res["quality"] = [list(eng.nll(t, spec["window"])) + [len(t)] for t in spec["quality"]]
    res.update({f"end_{k}": v for k, v in memory_mb().items()})
    with open(sys.argv[2], "w") as fh:
        json.dump(res, fh)


if __name__ == "__main__":
    main()
