"""`groundcode serve`: groundcode over HTTP for editors and completion clients.

    options.py    ServeOptions: the flags of `groundcode serve`
    schemas.py    request bodies (pydantic; unknown fields refused)
    guard.py      what a request may name: files inside a workspace, text that is text, positions
    admission.py  the concurrency limit with a bounded queue (429 beyond it)
    service.py    requests -> session Requests, and the warm state (Generator, Session, Workspace)
    wire.py       answers in each client's shape (OpenAI, llama.cpp /infill, the structured one)
    app.py        the FastAPI app (the only module that imports fastapi)
    cli.py        the typer command (imports uvicorn when it runs)

Not here: decoding (session.py, decoding/), buffers and path resolution (workspace.py), the
LSP server. Tested by tests/test_server_http.py (TestClient, a real uvicorn, the openai client).
"""
