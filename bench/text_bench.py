"""`make bench`'s text section: length-bucketed dynamic padding against plain padding to max_length.

Both modes train the same encoder (built locally by kit.smoke.text, from the same seed) on the same
tokenized essays, whose lengths spread with their score as real essays' do; only the batching differs. The
padding share is counted on the batches the step actually received, not predicted from the plan.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

# The CPU config stays small so the section takes seconds on 2 cores. On CUDA the encoder is BERT-base wide:
# at 384 x 6 and batch 32 an H100 step is bound by the host's launches (about 20 ms whatever the padding), which
# would measure Python, not padding; at 768 x 6 and batch 128 the step is bound by the tokens, as a DeBERTa's on
# a T4 is. CUDA warms up for a whole epoch: each padded width's first step pays for cuBLAS's and the
# allocator's first use of that shape (a bucketed first epoch runs at a fifth of its speed), which a session
# pays once, not every epoch; that epoch's rate is kept beside the others.
CONFIGS = {"cpu": dict(texts=384, hidden=64, layers=2, heads=2, batch=16, warmup_epochs=0, epochs=2),
           "cuda": dict(texts=2048, hidden=768, layers=6, heads=12, batch=128, warmup_epochs=1, epochs=2)}
POSITIONS = 512


def plain_length(lengths: np.ndarray) -> int:
    """The max_length a competitor padding everything would set: the longest text, rounded up to 64, so the
    baseline truncates nothing and pads no more than it must (a generous baseline; 512 would pad more)."""
    return int(min(-(-int(lengths.max()) // 64) * 64, POSITIONS))


def bench_text(device: torch.device, count: int | None = None, seed: int = 0) -> dict:
    from transformers import AutoTokenizer
    from transformers.utils import logging

    from kit.data.text import TextBatches, tokenize, tokenizer_key
    from kit.models.text import TextModel
    from kit.runtime.precision import Precision
    from kit.smoke.text import build_tiny_encoder, essays
    from kit.train.objectives import Regression
    from kit.train.step import train_step

    logging.disable_progress_bar()  # save_pretrained's bar for a shard of a few MB would split the table
    cfg = CONFIGS[device.type]
    count = count or cfg["texts"]
    texts, scores = essays(count, np.random.default_rng(seed))
    y = np.asarray(scores, np.float32)
    # fp16 + GradScaler is what a T4 session trains with; the CPU has no fast half precision
    precision = Precision("fp16", "cuda") if device.type == "cuda" else Precision("fp32", "cpu")
    work = Path(tempfile.mkdtemp(prefix="kit-bench-text-"))
    try:
        started = time.perf_counter()
        folder = build_tiny_encoder(texts, work / "encoder", seed=seed, max_positions=POSITIONS, hidden=cfg["hidden"],
                                    layers=cfg["layers"], heads=cfg["heads"])
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        tokens = tokenize(tokenizer, texts, POSITIONS, tokenizer_key(folder), cache_dir=work / "cache")
        pad_id, rows, lengths = tokenizer.pad_token_id, np.arange(count), tokens.lengths
        max_length = plain_length(lengths)
        task = Regression(float(y.mean()), float(y.std()), "mse", input_key="input_ids")

        def run(bucket: bool) -> dict:
            torch.manual_seed(seed)  # the head's initialisation: both modes start from the same weights
            model = TextModel(folder, outputs=1, pad_id=pad_id).to(device)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=device.type == "cuda")
            scaler = precision.grad_scaler()

            def epoch(s: int):
                return TextBatches(tokens, rows, y, cfg["batch"], shuffle=True, device=device, pad_id=pad_id, seed=s,
                                   bucket=bucket, max_length=max_length)

            def sync():
                if device.type == "cuda":
                    torch.cuda.synchronize()

            clock = time.perf_counter()
            if cfg["warmup_epochs"]:
                for e in range(cfg["warmup_epochs"]):
                    for batch in epoch(seed + 100 + e):
                        train_step(model, task, batch, opt, scaler, precision, 1.0)
            else:  # one step off the clock: the optimizer's state, the allocator
                train_step(model, task, next(iter(epoch(seed + 100))), opt, scaler, precision, 1.0)
            sync()
            warmup = time.perf_counter() - clock
            real = torch.zeros((), dtype=torch.int64, device=device)  # summed on the device: no sync per step
            slots = seen = steps = 0
            clock = time.perf_counter()
            for e in range(cfg["epochs"]):
                for batch in epoch(seed + e):
                    ids = batch["input_ids"]
                    real += ids.ne(pad_id).sum()
                    slots, seen, steps = slots + ids.numel(), seen + ids.shape[0], steps + 1
                    train_step(model, task, batch, opt, scaler, precision, 1.0)
            sync()
            seconds = time.perf_counter() - clock
            return {"padding_share": 1.0 - int(real) / max(slots, 1), "samples_per_s": seen / seconds, "samples": seen,
                    "steps": steps, "seconds": seconds, "tokens_per_batch": slots / max(steps, 1),
                    "first_epoch_samples_per_s": count * cfg["warmup_epochs"] / warmup if cfg["warmup_epochs"] else None}

        plain, bucketed = run(bucket=False), run(bucket=True)
        return {"device": device.type, "precision": precision.name, "texts": count, "batch": cfg["batch"],
                "epochs": cfg["epochs"], "warmup_epochs": cfg["warmup_epochs"], "hidden": cfg["hidden"],
                "layers": cfg["layers"], "heads": cfg["heads"],
                "max_length": max_length, "median_tokens": int(np.median(lengths)), "min_tokens": int(lengths.min()),
                "max_tokens": int(lengths.max()), "plain": plain, "bucketed": bucketed,
                "speedup": bucketed["samples_per_s"] / plain["samples_per_s"],
                "seconds": time.perf_counter() - started}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def print_text(tx: dict) -> None:
    print(f"\ntext, {tx['texts']} essays of {tx['min_tokens']}-{tx['max_tokens']} tokens (median {tx['median_tokens']}), "
          f"BERT {tx['layers']} x {tx['hidden']}, batch {tx['batch']}, {tx['precision']} on {tx['device']}")
    print(f"{'training step':<38}{'padding share':>14}{'samples/s':>11}{'vs plain':>10}")
    labels = {"plain": f"plain: padded to max_length {tx['max_length']}", "bucketed": "kit: length-bucketed, dynamic"}
    for key, label in labels.items():
        m = tx[key]
        print(f"{label:<38}{m['padding_share']:>14.1%}{m['samples_per_s']:>11.1f}"
              f"{m['samples_per_s'] / tx['plain']['samples_per_s']:>9.2f}x")
    if tx["plain"]["first_epoch_samples_per_s"]:
        a, b = tx["plain"]["first_epoch_samples_per_s"], tx["bucketed"]["first_epoch_samples_per_s"]
        print(f"first (warm-up) epoch: plain {a:.1f}, kit {b:.1f} samples/s ({b / a:.2f}x)")
    print(f"(text section {tx['seconds']:.0f} s)")
