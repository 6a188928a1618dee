"""Repository-level benchmark: build tasks from real packages, generate, score, report.

Stages (JSONL between them, keyed by task_id): sources.py + builder.py -> tasks.jsonl + manifest;
harness.py -> samples.jsonl; scoring.py (metrics.py, lint.py, codebleu_adapter.py) -> results.jsonl
+ summary.json; report.py -> Markdown/HTML. CLI: cli.py (`groundcode bench build|run|score|report`).
Nothing here imports the package facade; heavy deps (pylint, codebleu, matplotlib) load lazily.
"""
