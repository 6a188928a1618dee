"""The language layer (issue 32): what the engine, guides, contexts, prompts, server and benchmark
need to know about a language, one module per language. So far: typescript.py's lexical facts
(not wired in yet); Python's still live in pycode.py."""
