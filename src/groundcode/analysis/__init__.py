"""Analyzers: static analysis that answers "what may come here" (Jedi; later LSP, SDK models)."""
