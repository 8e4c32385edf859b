"""A fake Kaggle API on loopback, for running the official `kaggle` client unchanged.

The client is pointed here with KAGGLE_API_ENVIRONMENT=LOCALHOST (requests go to http://localhost/api/v1/...)
and HTTP_PROXY=http://127.0.0.1:<port>, so the request line carries the absolute URL. Each API call is a JSON
POST to /api/v1/<service>/<Method>; the server records it and answers from a per-method queue of scripted
responses, or a default. An answer may be a function of the request's body (the defaults for submissions
are: CreateCodeSubmission adds to `submissions`, which ListSubmissions lists newest first).

Datasets and models keep state as Kaggle does: a file is uploaded as StartBlobUpload (a token and a URL)
then a PUT of its bytes to that URL (through the proxy, without credentials); a Create* call names the tokens,
and the files become a version of the dataset or model instance (`datasets`, `models`), which the reads
(GetDatasetStatus, ListDatasetFiles, GetModel, GetModelInstance) answer from."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
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
    submissions: list[dict] = field(default_factory=list)  # ApiSubmission JSON, oldest first
    blobs: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # token -> (file name, bytes once PUT)
    datasets: dict[str, list[dict[str, bytes]]] = field(default_factory=dict)  # owner/slug -> versions' files
    models: dict[str, dict] = field(default_factory=dict)  # owner/slug -> its metadata
    instances: dict[str, list[dict[str, bytes]]] = field(default_factory=dict)  # owner/model/framework/variation
    logs: list[str] = field(default_factory=list)  # kernels_logs answers in turn; the last one stays
    leaked_auth: bool = False

    def __post_init__(self):
        for method, answer in self.default_answers().items():
            self.defaults.setdefault(method, (200, answer))
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
                missing = (404, {"code": 404, "message": "Not found"})
                status, answer, *delay = queue.pop(0) if queue else fake.defaults.get(method, missing)
                if delay:
                    time.sleep(delay[0])  # a server that does not answer in time
                if callable(answer):
                    answer = answer(body or {})
                    if isinstance(answer, tuple):  # (status, body): the state says no
                        status, answer = answer
                self._send(status, answer)

            def do_PUT(self):
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else b""
                path = urlparse(self.path).path
                if self.headers.get("Authorization"):
                    fake.leaked_auth = True  # upload URLs are pre-signed too
                fake.calls.append(Call(f"PUT {path}", None, dict(self.headers)))
                token = path.rsplit("/", 1)[-1]
                queue = fake.scripted.get("PUT")
                if queue:
                    status, answer = queue.pop(0)[:2]
                    return self._send(status, answer)
                if token not in fake.blobs:
                    return self._send(404, {"code": 404, "message": "upload expired"})
                if data or not self.headers.get("Content-Range", "").startswith("bytes */"):  # not a resume query
                    fake.blobs[token] = (fake.blobs[token][0], data)
                self._send(200, {})

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

    def default_answers(self) -> dict[str, Any | Callable[[dict], Any]]:
        """Happy-path answers in the API's JSON shape (camelCase; durations as "<seconds>s", times in UTC)."""
        return {
            "SaveKernel": {"ref": "/code/tester/kernel", "url": "https://www.kaggle.com/code/tester/kernel", "versionNumber": 1},
            "GetKernel": self._kernel,
            "GetKernelSessionStatus": {"status": "COMPLETE"},
            "CreateCodeSubmission": self._create_submission,
            "ListSubmissions": lambda body: {"submissions": self.submissions[::-1][: body.get("pageSize", 20)],
                                             "nextPageToken": ""},
            "GetAcceleratorQuotaStatistics": self.quota(used_h=10),
            "StartBlobUpload": self._start_upload,
            "GetDatasetStatus": self._dataset_status,
            "CreateDataset": self._create_dataset,
            "CreateDatasetVersion": self._create_dataset_version,
            "ListDatasetFiles": self._list_dataset_files,
            "GetModel": self._get_model,
            "CreateModel": self._create_model,
            "GetModelInstance": self._get_instance,
            "CreateModelInstance": self._create_instance,
            "CreateModelInstanceVersion": self._create_instance_version,
            "ListKernelSessionOutput": self._kernel_output,
        }

    # -- blobs, datasets, models: the state behind the default answers ----------------------------------------

    def _start_upload(self, body: dict) -> dict:
        token = f"blob-{len(self.blobs) + 1}"
        self.blobs[token] = (body.get("name", ""), b"")
        return {"token": token, "createUrl": f"http://localhost/upload/{token}"}

    def _files(self, tokens: list[dict]) -> dict[str, bytes]:
        return dict(self.blobs[t["token"]] for t in tokens or [] if t.get("token") in self.blobs)

    @staticmethod
    def _missing(what: str) -> tuple[int, dict]:
        return 404, {"code": 404, "message": f"{what} not found"}

    def _dataset_status(self, body: dict):
        ref = f"{body.get('ownerSlug')}/{body.get('datasetSlug')}"
        return {"status": "READY"} if ref in self.datasets else self._missing("Dataset")

    def _create_dataset(self, body: dict) -> dict:
        ref = f"{body.get('ownerSlug')}/{body.get('slug')}"
        self.datasets[ref] = [self._files(body.get("files", []))]
        return {"ref": ref, "url": f"https://www.kaggle.com/datasets/{ref}", "status": "Ok", "error": "", "invalidTags": []}

    def _create_dataset_version(self, body: dict):
        ref = f"{body.get('ownerSlug')}/{body.get('datasetSlug')}"
        if ref not in self.datasets:
            return self._missing("Dataset")
        self.datasets[ref].append(self._files(body.get("body", {}).get("files", [])))
        return {"ref": ref, "url": f"https://www.kaggle.com/datasets/{ref}", "status": "Ok", "error": "", "invalidTags": []}

    def _list_dataset_files(self, body: dict):
        ref = f"{body.get('ownerSlug')}/{body.get('datasetSlug')}"
        if ref not in self.datasets:
            return self._missing("Dataset")
        current = self.datasets[ref][-1]
        return {"datasetFiles": [{"name": n, "totalBytes": len(b), "creationDate": "2026-11-23T10:00:00.000Z"}
                                 for n, b in sorted(current.items())], "nextPageToken": ""}

    def _get_model(self, body: dict):
        ref = f"{body.get('ownerSlug')}/{body.get('modelSlug')}"
        return self.models[ref] if ref in self.models else self._missing("Model")

    def _create_model(self, body: dict) -> dict:
        ref = f"{body.get('ownerSlug')}/{body.get('slug')}"
        self.models[ref] = {"id": len(self.models) + 11, "ref": ref, "slug": body.get("slug"), "title": body.get("title"),
                            "isPrivate": body.get("isPrivate", False)}
        return {"id": self.models[ref]["id"], "ref": ref, "url": f"https://www.kaggle.com/models/{ref}", "error": ""}

    @staticmethod
    def framework(name: str) -> str:
        """MODEL_FRAMEWORK_PY_TORCH -> pytorch: the handle's spelling, as a kernel mounts it."""
        return name.removeprefix("MODEL_FRAMEWORK_").replace("_", "").lower()

    def _instance_ref(self, body: dict, framework: str) -> str:
        return f"{body.get('ownerSlug')}/{body.get('modelSlug')}/{self.framework(framework)}/{body.get('instanceSlug')}"

    def _get_instance(self, body: dict):
        ref = self._instance_ref(body, body.get("framework", ""))
        if ref not in self.instances:
            return self._missing("Model instance")
        return {"id": 7, "slug": body.get("instanceSlug"), "framework": body.get("framework"),
                "versionNumber": len(self.instances[ref]), "url": f"https://www.kaggle.com/models/{ref}"}

    def _create_instance(self, body: dict):
        inner = body.get("body", {})
        ref = self._instance_ref({**body, "instanceSlug": inner.get("instanceSlug")}, inner.get("framework", ""))
        if f"{body.get('ownerSlug')}/{body.get('modelSlug')}" not in self.models:
            return self._missing("Model")
        if ref in self.instances:
            return {"error": f"Instance {ref} already exists", "errorCode": 409}
        self.instances[ref] = [self._files(inner.get("files", []))]
        return {"id": 7, "ref": ref, "url": f"https://www.kaggle.com/models/{ref}/1", "error": ""}

    def _create_instance_version(self, body: dict):
        ref = self._instance_ref(body, body.get("framework", ""))
        if ref not in self.instances:
            return self._missing("Model instance")
        self.instances[ref].append(self._files(body.get("body", {}).get("files", [])))
        return {"id": 7, "ref": ref, "url": f"https://www.kaggle.com/models/{ref}/{len(self.instances[ref])}", "error": ""}

    def _kernel_output(self, body: dict) -> dict:
        """The files of `files` under /out/ as the latest session's output, and the log."""
        names = [p.removeprefix("/out/") for p in sorted(self.files) if p.startswith("/out/")]
        return {"files": [{"url": f"http://localhost/out/{n}", "fileName": n} for n in names],
                "log": self._log(), "nextPageToken": ""}

    def _log(self) -> str:
        """The next of `logs` (a log that grows while the run goes on); the last one stays."""
        return (self.logs.pop(0) if len(self.logs) > 1 else self.logs[0]) if self.logs else ""

    @staticmethod
    def quota(used_h: float, allowed_h: float = 30, reserved_h: float = 0) -> dict:
        """A GetAcceleratorQuotaStatistics answer: `used_h` of `allowed_h` GPU hours this week."""
        def hours(h):
            return f"{round(h * 3600)}s"
        accelerator = {"timeUsed": hours(used_h), "timeReserved": hours(reserved_h), "totalTimeAllowed": hours(allowed_h),
                       "minimumTimeAllowed": hours(allowed_h), "isPayToScaleEnabled": False, "hasEverRun": True}
        tpu = {**accelerator, "timeUsed": "0s", "timeReserved": "0s", "totalTimeAllowed": "72000s",
               "minimumTimeAllowed": "72000s"}
        return {"quotaRefreshTime": "2026-11-28T00:00:00Z", "gpuQuota": accelerator, "tpuQuota": tpu}

    @staticmethod
    def _kernel(body: dict) -> dict:
        slug = body.get("kernelSlug", "")
        return {
            "metadata": {"id": 4242, "ref": f"{body.get('userName')}/{slug}", "title": slug, "author": body.get("userName"),
                         "slug": slug, "lastRunTime": "2026-11-23T09:00:00.000Z", "language": "python",
                         "kernelType": "notebook", "isPrivate": True, "enableGpu": True, "enableInternet": False,
                         "currentVersionNumber": 3, "machineShape": "NvidiaTeslaT4"},
            "blob": {"source": "{}", "language": "python", "kernelType": "notebook", "slug": slug},
        }

    def _create_submission(self, body: dict) -> dict:
        ref = 50001 + len(self.submissions)
        self.submissions.append(self.submission(ref, body.get("submissionDescription", ""), "PENDING"))
        return {"message": f"Successfully submitted to {body.get('competitionName')}", "ref": ref}

    @staticmethod
    def submission(ref: int, description: str, status: str, public_score: str = "",
                   date: str = "2026-11-23T10:00:00.000Z") -> dict:
        return {"ref": ref, "totalBytes": 0, "date": date, "description": description, "errorDescription": "",
                "fileName": "submission.csv", "publicScore": public_score, "privateScore": "", "status": status,
                "submittedBy": "tester", "submittedByRef": "tester", "teamName": "tester",
                "url": f"/competitions/submissions/{ref}"}

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
