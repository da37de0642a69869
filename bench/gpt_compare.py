#!/usr/bin/env python3
"""One training step (forward, backward, AdamW) of examples/gpt's model: wick
(bench/gpt_step.cpp) against PyTorch on the same model, sizes and data. Each measurement is
its own process; the configurations alternate round by round (wick, torch, wick, ...), and
each run's row is printed (and appended to --rows-out) as soon as it ends, so a run cut short
keeps what ran. The summary gives each configuration's median step over the rounds,
tokens/s, and its time over PyTorch eager's (below 1: faster).

CPU (the default): float32, PyTorch's model from torch.nn's layers (tests/support/torch_gpt.py:
TransformerEncoderLayer blocks, tied output layer) and its default AdamW, both on
OMP_NUM_THREADS threads:

  OMP_NUM_THREADS=2 python3 bench/gpt_compare.py --wick-bin build/bench/wick_bench_gpt_step --rounds 3

GPU, GPT-2 small (--gpt2: 12 layers, 12 heads, width 768, context 1024, vocabulary 50257,
batch 8, bf16 autocast): wick eager against PyTorch eager AMP (torch.autocast bf16, the
same blocks written with F.scaled_dot_product_attention, AdamW(fused=True)) and
torch.compile of the same loss (once, in the last round); a configuration that fails
(torch.compile that does not compile, a batch that does not fit) is a row saying so, not an
error:

  python3 bench/gpt_compare.py --gpt2 --wick-bin build/bench/wick_bench_gpt_step --rounds 2 --budget 100

--wick-config NAME=FLAGS adds a wick configuration run with extra flags of
wick_bench_gpt_step (e.g. a CUDA-graphs switch), interleaved like the others.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from machine_load import MachineLoad, cpu_model

SIZES = ("batch", "block", "layers", "heads", "embd", "vocab", "steps", "warmup")
CPU_SIZES = dict(batch=32, block=128, layers=4, heads=4, embd=128, vocab=256, steps=10, warmup=2)
GPT2_SIZES = dict(batch=8, block=1024, layers=12, heads=12, embd=768, vocab=50257, steps=10, warmup=3)
GPT2_TARGET = 0.90  # issue 45: wick's step at most 0.9x PyTorch eager AMP's time
HERE = os.path.dirname(os.path.abspath(__file__))


def sdpa_gpt(torch, vocab, block, n_layer, n_head, n_embd):
    """examples/gpt's model (pre-norm blocks, GELU(tanh) MLP of 4 x width, tied output layer,
    GPT-2's initialisation) written as nanoGPT writes it: one packed q/k/v projection and
    F.scaled_dot_product_attention(is_causal=True), which takes the flash kernel for bf16."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
            self.in_proj, self.out_proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
            self.linear1, self.linear2 = nn.Linear(n_embd, 4 * n_embd), nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.in_proj(self.norm1(x)).view(b, t, 3, n_head, c // n_head).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out_proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.linear2(F.gelu(self.linear1(self.norm2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block, n_embd)
            self.h = nn.ModuleList(Block() for _ in range(n_layer))
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.lm_head.weight = self.wte.weight
            residual_std = 0.02 / (2.0 * max(n_layer, 1)) ** 0.5
            for name, p in self.named_parameters():
                if ".norm" in name or name.startswith("ln_f."):
                    continue
                if name.endswith("bias"):
                    nn.init.zeros_(p)
                else:
                    nn.init.normal_(p, 0.0, residual_std if name.endswith(("out_proj.weight", "linear2.weight")) else 0.02)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for b in self.h:
                x = b(x)
            return self.lm_head(self.ln_f(x))

        def loss(self, idx, targets):
            logits = self(idx)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    return GPT()


def torch_worker(a):
    """One configuration's steps in PyTorch; prints one JSON line like wick_bench_gpt_step's."""
    import torch

    gpu = a.device == "cuda"
    if not gpu:
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count())))
    torch.manual_seed(1)
    if a.torch_model == "nn":
        sys.path[:0] = [HERE, os.path.join(HERE, "..", "tests", "support")]
        from torch_gpt import GPT

        model = GPT(a.vocab, a.block, a.layers, a.heads, a.embd)
    else:
        model = sdpa_gpt(torch, a.vocab, a.block, a.layers, a.heads, a.embd)
    device = torch.device(a.device)
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=True if a.fused else None)
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, a.vocab, (a.batch, a.block), generator=g).to(device)
    targets = torch.randint(0, a.vocab, (a.batch, a.block), generator=g).to(device)
    loss_fn = torch.compile(model.loss) if a.compile_run else model.loss
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.autocast)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = loss_fn(idx, targets)
        loss.backward()
        opt.step()
        return loss

    began = time.perf_counter()
    for _ in range(a.warmup):
        loss = step()
    if gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    warmup_seconds = time.perf_counter() - began
    host = []
    marks = [torch.cuda.Event(enable_timing=True)] if gpu else []
    for m in marks:
        m.record()
    for _ in range(a.steps):
        start = time.perf_counter()
        loss = step()
        host.append(time.perf_counter() - start)
        if gpu:
            marks.append(torch.cuda.Event(enable_timing=True))
            marks[-1].record()
    if gpu:
        marks[-1].synchronize()
    times = [marks[i - 1].elapsed_time(marks[i]) * 1e-3 for i in range(1, len(marks))] if gpu else host
    median = sorted(times)[len(times) // 2]
    print(json.dumps({"seconds": median, "tokens_per_second": a.batch * a.block / median,
                      "host_seconds": sorted(host)[len(host) // 2],
                      "peak_bytes": torch.cuda.max_memory_allocated() if gpu else 0, "loss": loss.item(),
                      "warmup_seconds": warmup_seconds, "torch": torch.__version__}))


def run_process(cmd, timeout):
    """(the JSON of the last output line, None) or (None, why not). A run past its time is
    killed with its whole process group (torch.compile's worker processes too)."""
    began = time.monotonic()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as e:
        return None, "could not start: %s" % e
    try:
        out, err = p.communicate(timeout=max(timeout, 1))
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, "timed out after %.0f s" % (time.monotonic() - began)
    lines = out.strip().splitlines()
    if p.returncode != 0 or not lines:
        last = (err.strip().splitlines() or ["no message"])[-1]
        return None, "failed (status %d): %s" % (p.returncode, last[:200])
    try:
        return json.loads(lines[-1]), None
    except ValueError:
        return None, "no JSON line: %s" % lines[-1][:200]


def configurations(a):
    """(name, command) of each configuration, in the order a round runs them."""
    common = [x for n in SIZES for x in ("--" + n, str(getattr(a, n)))]
    wick = [a.wick_bin] + common + ["--device", a.device, "--autocast", a.autocast]
    torch = [sys.executable, os.path.abspath(__file__), "--worker"] + common + [
        "--device", a.device, "--autocast", a.autocast, "--torch-model", a.torch_model] + (["--fused"] if a.fused else [])
    configs = [("wick eager", wick)]
    for spec in a.wick_config:
        name, _, flags = spec.partition("=")
        configs.append(("wick " + name, wick + flags.split()))
    if not a.no_torch:
        configs.append(("torch eager", torch))
        if a.compile:
            configs.append(("torch.compile", torch + ["--compile-run"]))
    return configs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wick-bin", default="build/bench/wick_bench_gpt_step")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gpt2", action="store_true", help="GPT-2 small on the GPU (sizes, cuda, bf16, SDPA, fused, compile)")
    for name in SIZES:
        ap.add_argument("--" + name, type=int)
    ap.add_argument("--device", choices=("cpu", "cuda"))
    ap.add_argument("--autocast", choices=("off", "bf16", "fp16"))
    ap.add_argument("--torch-model", choices=("nn", "sdpa"), help="nn: torch.nn's layers; sdpa: nanoGPT's blocks")
    ap.add_argument("--fused", action="store_true", help="PyTorch's AdamW(fused=True)")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile of PyTorch's loss")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--wick-config", action="append", default=[], metavar="NAME=FLAGS",
                    help="another wick configuration: extra flags of wick_bench_gpt_step")
    ap.add_argument("--timeout", type=float, default=300, help="seconds for one run")
    ap.add_argument("--budget", type=float, default=0, help="seconds for everything (0: no limit): no run starts "
                    "when less is left than it took before, and each run's time limit is what is left")
    ap.add_argument("--rows-out", help="append each run's row here as it ends")
    ap.add_argument("--json-out", help="append each run's JSON line here")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--compile-run", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    preset = GPT2_SIZES if a.gpt2 else CPU_SIZES
    for name in SIZES:
        if getattr(a, name) is None:
            setattr(a, name, preset[name])
    a.device = a.device or ("cuda" if a.gpt2 else "cpu")
    a.autocast = a.autocast or ("bf16" if a.gpt2 else "off")
    a.torch_model = a.torch_model or ("sdpa" if a.device == "cuda" else "nn")
    a.fused = a.fused or a.gpt2
    a.compile = (a.compile or a.gpt2) and not a.no_compile
    if a.worker:
        torch_worker(a)
        return 0

    rows = open(a.rows_out, "a", buffering=1) if a.rows_out else None
    jsons = open(a.json_out, "a", buffering=1) if a.json_out else None

    def emit(line):
        print(line, flush=True)
        if rows:
            rows.write(line + "\n")

    load = MachineLoad()
    where = cpu_model() + ", OMP_NUM_THREADS=%s" % os.environ.get("OMP_NUM_THREADS", "unset")
    emit("# GPT %d layers, %d heads, width %d, context %d, vocabulary %d, batch %d x %d tokens on %s (%s), autocast "
         "%s; PyTorch: %s model, AdamW%s; median of %d steps after %d" % (
             a.layers, a.heads, a.embd, a.block, a.vocab, a.batch, a.block, a.device, where, a.autocast,
             a.torch_model, "(fused=True)" if a.fused else "", a.steps, a.warmup))
    emit("| round | configuration | s/step | tokens/s | host s/step | peak GiB | loss | note |")
    emit("|---|---|---|---|---|---|---|---|")
    began = time.monotonic()
    configs = configurations(a)
    results = {name: [] for name, _ in configs}
    last_took, given_up = {}, set()
    for r in range(1, a.rounds + 1):
        for name, cmd in configs:
            left = a.budget - (time.monotonic() - began) if a.budget else a.timeout
            # Compiling takes most of a minute: once, in the last round, after the eager runs
            # of every round have had their share of the budget.
            if name in given_up or (name == "torch.compile" and r != a.rounds):
                continue
            if left < max(last_took.get(name, 0), 5):
                emit("| %d | %s | - | - | - | - | - | skipped: %.0f s of the budget left |" % (r, name, max(left, 0)))
                continue
            start = time.monotonic()
            out, why = run_process(cmd, min(a.timeout, left))
            last_took[name] = time.monotonic() - start
            if out is None:
                if name == "torch.compile" or (name.startswith("wick ") and name != "wick eager"):
                    given_up.add(name)  # what fails once (it does not compile, a flag unknown) fails again
                emit("| %d | %s | - | - | - | - | - | %s |" % (r, name, why))
                continue
            results[name].append(out)
            if jsons:
                jsons.write(json.dumps(dict(out, configuration=name, round=r)) + "\n")
            note = "first %d steps %.1f s" % (a.warmup, out["warmup_seconds"]) if "warmup_seconds" in out else ""
            emit("| %d | %s | %.4f | %.0f | %.4f | %.2f | %.4f | %s |" % (
                r, name, out["seconds"], out["tokens_per_second"], out.get("host_seconds", 0),
                out.get("peak_bytes", 0) / 2**30, out.get("loss", 0), note))
    emit("")
    emit("| configuration | median s/step | tokens/s | time / torch eager | runs |")
    emit("|---|---|---|---|---|")
    base = statistics.median([o["seconds"] for o in results.get("torch eager", [])]) if results.get("torch eager") else None
    for name, outs in results.items():
        if not outs:
            emit("| %s | - | - | - | 0 |" % name)
            continue
        t = statistics.median([o["seconds"] for o in outs])
        emit("| %s | %.4f | %.0f | %s | %d |" % (name, t, a.batch * a.block / t, "%.2f" % (t / base) if base else "-",
                                                 len(outs)))
    for name, outs in results.items():
        if name.startswith("wick") and outs and base:
            ratio = statistics.median([o["seconds"] for o in outs]) / base
            verdict = (" (target <= %.2f: %s)" % (GPT2_TARGET, "met" if ratio <= GPT2_TARGET else "NOT met")
                       if a.device == "cuda" else "")
            emit("# %s / torch eager: %.2f%s" % (name, ratio, verdict))
    wick = results.get("wick eager")
    start_load, others = load.finish()
    emit("# load average at the start %.2f; other processes used %.2f CPUs during the runs" % (start_load, others))
    return 0 if wick else 1


if __name__ == "__main__":
    sys.exit(main())
