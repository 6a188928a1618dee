"""llama.cpp behind one adapter (the only module that imports llama_cpp): a GGUF file's quantized
blocks run by llama.cpp's CPU kernels, as a KV cache of numbered sequences the engine drives one
token at a time (decoding/llama_engine.py).

    runner = LlamaRunner(path, n_ctx=8192, n_seq=17, threads=2)
    logits = runner.decode(tokens, positions, seqs, wanted)   # one llama_decode; [k, V] float32
                                                              # of the k entries wanted
    runner.seq_rm(seq, p0)          # forget positions >= p0 of a sequence (a cut; -1: all)
    runner.seq_cp(src, dst, p1)     # dst shares src's positions [0, p1) (prompts, n samples)
    runner.close()
    requantize(src, dst, "q8_0")    # a GGUF file's weights in another block type (once, at load)

The cache is unified (one buffer shared by every sequence), so a copy shares cells instead of
copying them: rows of one prompt and the kept prompt of the last request cost one prompt's cells.
llama-cpp-python is an optional dependency (`pip install 'groundcode[gguf]'`, built from its
sdist with the machine's compiler); without it `--dtype gguf` is a one-line error.
Test: tests/test_llama_engine.py (a runner double with the same four calls).
"""
from __future__ import annotations

import ctypes
import logging
import threading

import numpy as np

from ..errors import GroundcodeError

BATCH = 512           # tokens per llama_decode (a longer prompt is fed in chunks of this)
_INIT = threading.Lock()
_BACKEND = False
_LOG_CB = None
log = logging.getLogger("groundcode.llama_cpp")


def _lib():
    global _LOG_CB
    try:
        import llama_cpp
    except ImportError:
        raise GroundcodeError("--dtype gguf runs the model's GGUF file with llama.cpp, which is not "
                              "installed: pip install 'groundcode[gguf]' (llama-cpp-python, built "
                              "from source with the machine's C++ compiler and cmake)") from None
    if _LOG_CB is None:      # llama.cpp's messages go to this logger at debug level, not stderr
        @llama_cpp.llama_log_callback      # (loading qwen's file logs a harmless "error" about
        def _log(level, text, user_data):  # its '</s>' token); failures raise GroundcodeError
            log.debug("%s", text.decode("utf-8", "replace").rstrip())
        _LOG_CB = _log                     # kept: llama.cpp calls it for the process's life
        llama_cpp.llama_log_set(_LOG_CB, ctypes.c_void_p(0))
    return llama_cpp


class LlamaRunner:
    def __init__(self, path: str, n_ctx: int, n_seq: int, threads: int):
        global _BACKEND
        lib = self.lib = _lib()
        with _INIT:
            if not _BACKEND:
                lib.llama_backend_init()
                _BACKEND = True
        mp = lib.llama_model_default_params()
        mp.n_gpu_layers = 0
        self.model = lib.llama_model_load_from_file(str(path).encode(), mp)
        if not self.model:
            raise GroundcodeError(f"llama.cpp could not load {path}")
        cp = lib.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_ubatch = int(n_ctx), BATCH, BATCH
        cp.n_seq_max = int(n_seq)
        cp.n_threads = cp.n_threads_batch = int(threads)
        cp.kv_unified = True
        # flash attention off: on a CPU its kernel made a keystroke's few new tokens slower
        # (16 tokens after 1,200 cached: 98 ms with it, 68 ms without, smollm2-135m, 2 cores);
        # one token per row costs the same either way
        cp.flash_attn_type = lib.LLAMA_FLASH_ATTN_TYPE_DISABLED
        cp.no_perf = True
        self.ctx = lib.llama_init_from_model(self.model, cp)
        if not self.ctx:
            lib.llama_model_free(self.model)
            raise GroundcodeError(f"llama.cpp could not make a context of {n_ctx} tokens for {path}")
        self.n_ctx, self.n_seq, self.threads = int(n_ctx), int(n_seq), int(threads)
        self.n_vocab = int(lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(self.model)))
        self.mem = lib.llama_get_memory(self.ctx)
        self.batch = lib.llama_batch_init(BATCH, 0, 1)

    def set_threads(self, threads: int) -> None:
        self.lib.llama_set_n_threads(self.ctx, int(threads), int(threads))
        self.threads = int(threads)

    def decode(self, tokens, positions, seqs, wanted) -> np.ndarray:
        """Feed up to BATCH entries (token, position, sequence) in one llama_decode; the logits of
        the entries whose `wanted` is true, in order, as a [k, n_vocab] float32 array."""
        n = len(tokens)
        if not 0 < n <= BATCH:
            raise ValueError(f"decode takes 1..{BATCH} tokens, got {n}")
        b = self.batch
        b.n_tokens = n
        for i, (t, p, s, w) in enumerate(zip(tokens, positions, seqs, wanted)):
            b.token[i], b.pos[i] = int(t), int(p)
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = int(s)
            b.logits[i] = 1 if w else 0
        rc = self.lib.llama_decode(self.ctx, b)
        if rc != 0:
            why = "no room left in its KV cache" if rc == 1 else f"error {rc}"
            raise GroundcodeError(f"llama.cpp could not decode {n} tokens: {why} "
                                  f"(a context of {self.n_ctx} tokens shared by {self.n_seq} sequences)")
        out = np.empty((sum(1 for w in wanted if w), self.n_vocab), dtype=np.float32)
        k = 0
        for i, w in enumerate(wanted):
            if w:
                ptr = self.lib.llama_get_logits_ith(self.ctx, i)
                out[k] = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)),
                                               shape=(self.n_vocab,))
                k += 1
        return out

    def seq_rm(self, seq: int, p0: int = -1) -> None:
        """Forget the sequence's positions from p0 on (-1: all of them)."""
        self.lib.llama_memory_seq_rm(self.mem, int(seq), int(p0), -1)

    def clear(self) -> None:
        """Forget every sequence: the cache's cells are empty, the next ones are taken from the
        start."""
        self.lib.llama_memory_clear(self.mem, True)

    def seq_cp(self, src: int, dst: int, p1: int) -> None:
        """dst shares src's positions [0, p1)."""
        self.lib.llama_memory_seq_cp(self.mem, int(src), int(dst), 0, int(p1))

    def close(self) -> None:
        lib = self.lib
        if getattr(self, "ctx", None):
            lib.llama_batch_free(self.batch)
            lib.llama_free(self.ctx)
            lib.llama_model_free(self.model)
            self.ctx = None


FTYPES = {"q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0"}


def requantize(src, dst, ftype: str, threads: int = 2) -> None:
    """Write `src`'s weights in block type `ftype` to `dst` (llama.cpp's quantize; tensors kept
    as they are where the type does not apply). From a 4-bit file to Q8_0 nothing is lost but
    the rounding of values already on a coarser grid; the file is read and written once."""
    lib = _lib()
    p = lib.llama_model_quantize_default_params()
    p.ftype = getattr(lib, FTYPES[ftype])
    p.allow_requantize = True
    p.nthread = int(threads)
    rc = lib.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(p))
    if rc != 0:
        raise GroundcodeError(f"llama.cpp could not write {src} as {ftype} to {dst} (error {rc})")


def version() -> str:
    import llama_cpp
    return llama_cpp.__version__
