#!/usr/bin/env python3
"""Seeds fuzz corpora from the recorded SDK transcripts (tests/transcripts/*.jsonl).

What a real server wrote, as each transcript recorded it: a stdio server's output goes to
`client_server_bytes` (raw server bytes), each HTTP connection's bytes to `http_response`.
The seeds are named after the transcript, so running this again replaces them.
"""
import base64
import json
import pathlib

root = pathlib.Path(__file__).resolve().parent.parent
corpus = root / "fuzz" / "corpus"
for path in sorted((root / "tests" / "transcripts").glob("*.jsonl")):
    reads = {}
    stdio = False
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if "transcript" in entry:
            stdio = entry.get("transport") == "stdio"
            continue
        if entry.get("in") != "read":
            continue
        if "text" in entry:
            data = entry["text"].encode()
        else:
            data = base64.b64decode(entry["base64"])
        reads.setdefault(entry["conn"], bytearray()).extend(data)
    for conn, data in reads.items():
        if stdio:
            target, name = "client_server_bytes", f"transcript-{path.stem}"
        else:
            target, name = "http_response", f"transcript-{path.stem}-conn{conn}"
        (corpus / target).mkdir(parents=True, exist_ok=True)
        (corpus / target / name).write_bytes(bytes(data))
        print(f"{target}/{name}: {len(data)} bytes")
