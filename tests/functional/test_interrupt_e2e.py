"""Interrupting the training cell in parallel mode, as a person does in a Kaggle session: the notebook's own
kernel, cells run one by one, an interrupt while two workers train, then the cell run again."""
import multiprocessing
import os
import re
import signal
import time

import jupyter_client
import pytest
from processes import alive

from kit import files
from kit.build import execute, notebook

pytestmark = pytest.mark.e2e
PID = re.compile(r"\[worker (\d)\] worker \d/2 \(folds\) on the CPU, pid (\d+)")


class Kernel:
    """A kit-free kernel driven cell by cell; `output` collects what the cells printed."""

    def __init__(self, name: str, cwd):
        self.manager = jupyter_client.KernelManager(kernel_name=name)
        self.manager.start_kernel(cwd=str(cwd), env={**os.environ, "KIT_BATCH": "1", "PYTHONUNBUFFERED": "1"})
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=120)
        self.output = ""

    def run(self, code: str, timeout: float = 300) -> dict:
        return self.wait(self.client.execute(code), timeout)

    def wait(self, msg_id: str, timeout: float = 300, until: str = "") -> dict | None:
        """The cell's reply; or None as soon as `until` appears in the output (the cell goes on)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if until and until in self.output:
                return None
            try:
                msg = self.client.get_iopub_msg(timeout=1)
            except Exception:  # noqa: BLE001 - queue.Empty: nothing printed this second
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                self.output += msg["content"]["text"]
            elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return self.client.get_shell_msg(timeout=10)["content"]
        raise TimeoutError(f"cell did not finish in {timeout} s:\n{self.output[-3000:]}")

    def interrupt(self) -> None:
        """SIGINT to the kernel alone (as an interrupt request does), not to the process group."""
        os.kill(self.manager.provisioner.process.pid, signal.SIGINT)

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def test_an_interrupted_training_cell_leaves_no_worker_and_runs_again(tmp_path, dog_breed_data):
    cfg, folder = dog_breed_data
    params = {**cfg.parameters(smoke=True), "data_dir": str(folder), "output_dir": str(tmp_path / "out"),
              "parallel": "folds", "world_size": 2, "epochs": 400, "patience": 0, "image_size": 32}
    nb = notebook.build("cnn", params)
    files.write_text(tmp_path / "kernel.ipynb", notebook.dumps(nb))
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    training = next(i for i, source in enumerate(code) if "train_folds(" in source)
    with execute.kit_free_kernel() as name:
        kernel = Kernel(name, tmp_path)
        try:
            for source in code[:training]:
                assert kernel.run(source)["status"] == "ok", kernel.output[-3000:]
            cell = kernel.client.execute(code[training])
            assert kernel.wait(cell, until="[worker 1] fold 2/2 epoch") is None  # both workers are training
            pids = [int(pid) for _, pid in PID.findall(kernel.output)]
            assert len(pids) == 2 and all(alive(pid) for pid in pids)
            kernel.interrupt()
            reply = kernel.wait(cell)
            assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
            assert not any(alive(pid) for pid in pids), "a worker outlived the interrupted cell"

            # the cell again, with the same settings (another epochs would be another run: kit.runtime.runs) and
            # a budget already spent, which is not part of the run's fingerprint: it resumes, and stops at once
            kernel.output = ""
            assert kernel.run("time_budget_s = 1.0\nsession = start('cnn', globals())")["status"] == "ok"
            assert kernel.run(code[training])["status"] == "ok", kernel.output[-3000:]
            again = [int(pid) for _, pid in PID.findall(kernel.output)]
            assert len(again) == 2 and not set(again) & set(pids)
            assert "still running from an earlier launch" not in kernel.output
            assert "resuming after epoch" in kernel.output
        finally:
            kernel.close()


def _sleep():
    time.sleep(60)


def test_a_new_launch_stops_workers_left_running_by_an_earlier_one():
    from kit.runtime import workers

    stray = multiprocessing.get_context("spawn").Process(target=_sleep, name=f"{workers.WORKER_NAME}-1")
    other = multiprocessing.get_context("spawn").Process(target=_sleep, name="someone-else")
    stray.start()
    other.start()
    try:
        assert workers.stop_workers() == 1
        assert not stray.is_alive() and other.is_alive()
    finally:
        other.kill()
        other.join()
