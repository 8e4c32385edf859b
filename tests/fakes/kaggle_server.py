"""A fake Kaggle API on loopback, for running the official `kaggle` client unchanged.

The client is pointed here with KAGGLE_API_ENVIRONMENT=LOCALHOST (requests go to http://localhost/api/v1/...)
and HTTP_PROXY=http://127.0.0.1:<port>, so the request line carries the absolute URL. Each API call is a JSON
POST to /api/v1/<service>/<Method>; the server records it and answers from a per-method queue of scripted
responses, or a default."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse


@dataclass
class Call:
    method: str  # the API method, e.g. SaveKernel; GET downloads are "GET <path>"
    body: Any
    headers: dict[str, str]


@dataclass
class FakeKaggle:
    calls: list[Call] = field(default_factory=list)
    scripted: dict[str, list[tuple]] = field(default_factory=dict)  # (status, body[, seconds to stall])
    defaults: dict[str, tuple[int, Any]] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # GET path -> bytes
    leaked_auth: bool = False

    def __post_init__(self):
        self.defaults.setdefault(
            "SaveKernel",
            (200, {"ref": "/code/tester/kernel", "url": "https://www.kaggle.com/code/tester/kernel", "versionNumber": 1}),
        )
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                method = urlparse(self.path).path.rstrip("/").rsplit("/", 1)[-1]
                body = json.loads(raw) if raw else None
                fake.calls.append(Call(method, body, dict(self.headers)))
                queue = fake.scripted.get(method)
                status, answer, *delay = queue.pop(0) if queue else fake.defaults.get(method, (404, {"code": 404, "message": "Not found"}))
                if delay:
                    time.sleep(delay[0])  # a server that does not answer in time
                self._send(status, answer)

            def do_GET(self):
                path = urlparse(self.path).path
                if path in fake.files and self.headers.get("Authorization"):
                    fake.leaked_auth = True  # download URLs are pre-signed: credentials must not be sent
                fake.calls.append(Call(f"GET {path}", None, dict(self.headers)))
                if path in fake.files:
                    self._send(200, fake.files[path], "application/octet-stream")
                else:
                    self._send(404, {"code": 404, "message": "Not found"})

            def _send(self, status: int, answer: Any, content_type: str = "application/json"):
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def proxy(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def env(self) -> dict[str, str]:
        """Environment that sends the kaggle client (in this process or a child) here."""
        return {
            "KAGGLE_API_ENVIRONMENT": "LOCALHOST",
            "HTTP_PROXY": self.proxy,
            "http_proxy": self.proxy,
            "NO_PROXY": "",
            "no_proxy": "",
        }

    def script(self, method: str, *responses: tuple) -> None:
        self.scripted.setdefault(method, []).extend(responses)

    def called(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
