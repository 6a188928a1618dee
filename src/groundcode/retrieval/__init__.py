"""Retrieval: indexes of API documentation (api_index.py), BM25 (bm25.py, the only bm25s import),
when and how to augment a prompt with what was found (dag.py, augmentation.py); code snippets
(snippet.py records, snippet_sources.py corpora, contamination.py, snippet_index.py on disk,
snippet_retriever.py ranking, snippet_queries.py held-out queries, snippet_prompt.py prompt
blocks) with dense embeddings (dense.py, the only sentence-transformers import).
CLI: cli.py (`groundcode index api|api-search|snippets|snippets-search`)."""
