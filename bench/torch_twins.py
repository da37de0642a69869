"""PyTorch's twins of wick's GPU and CPU benchmark cases (bench/torch_compare.py): for each op
a wick case's label names (op=... dtype=... shape=...), a maker that builds the same work
in PyTorch, and the timers that run it as wick's cases are run (CUDA events around batches
of calls; the host cost of a small op by wall clock)."""
import statistics
import time


def gpt_parameter_shapes(layers, width, vocab, block):
    """examples/gpt's parameters in named_parameters() order (bench/cuda_optim.cpp): wte, wpe,
    per block in_proj, out_proj, linear1, linear2 (weights and biases) and two LayerNorms,
    then ln_f; lm_head is tied to wte."""
    c = width
    shapes = [(vocab, c), (block, c)]
    for _ in range(layers):
        shapes += [(3 * c, c), (3 * c,), (c, c), (c,), (4 * c, c), (4 * c,), (c, 4 * c), (c,), (c,), (c,), (c,), (c,)]
    return shapes + [(c,), (c,)]


def torch_cases(device):
    """What PyTorch runs for each wick op: fn(case, torch) -> a zero-argument callable. A
    case's `layout` field (CPU elementwise) is rebuilt as wick's benchmark builds it:
    "transposed" transposes both inputs, "mixed" only the second."""

    def inputs(case, torch, count):
        g = torch.Generator(device=device).manual_seed(0)
        dtype = getattr(torch, case.dtype)
        xs = [torch.randn(case.shape, device=device, generator=g).to(dtype) for _ in range(count)]
        layout = case.fields.get("layout", "contiguous")
        return [x.t() if (layout == "transposed" or (layout == "mixed" and i == 1)) else x
                for i, x in enumerate(xs)]

    def copy(case, torch):
        src, dst = inputs(case, torch, 2)
        return lambda: dst.copy_(src)

    def binary(fn):
        def make(case, torch):
            a, b = inputs(case, torch, 2)
            return lambda: fn(torch, a, b)
        return make

    def unary(fn):
        def make(case, torch):
            (x,) = inputs(case, torch, 1)
            return lambda: fn(torch, x)
        return make

    def bias_add(case, torch):
        """x [rows, width] + b [width]: a transformer's bias add."""
        (x,) = inputs(case, torch, 1)
        g = torch.Generator(device=device).manual_seed(1)
        b = torch.randn(case.shape[-1], device=device, generator=g).to(x.dtype)
        return lambda: x + b

    def matmul(case, torch):
        m, n, k = case.shape
        dtype = getattr(torch, case.dtype)
        g = torch.Generator(device=device).manual_seed(0)
        a = torch.randn(m, k, device=device, generator=g).to(dtype)
        b = torch.randn(k, n, device=device, generator=g).to(dtype)
        return lambda: torch.matmul(a, b)

    def layer_norm_fwdbwd(case, torch):
        """F.layer_norm over the last dim with weight and bias, then the gradients of x,
        weight and bias (bench/cuda_norm.cpp times wick's forward + backward the same way)."""
        dtype = getattr(torch, case.dtype)
        g = torch.Generator(device=device).manual_seed(0)
        width = case.shape[-1]
        x, dy = [torch.randn(case.shape, device=device, generator=g).to(dtype) for _ in range(2)]
        w, b = [torch.randn(width, device=device, generator=g).to(dtype).requires_grad_() for _ in range(2)]
        x.requires_grad_()

        def fn():
            y = torch.nn.functional.layer_norm(x, (width,), w, b)
            torch.autograd.grad(y, (x, w, b), dy)
        return fn

    def layer_norm_fwd(case, torch):
        """The forward alone, as inference runs it."""
        dtype = getattr(torch, case.dtype)
        g = torch.Generator(device=device).manual_seed(0)
        width = case.shape[-1]
        x = torch.randn(case.shape, device=device, generator=g).to(dtype)
        w, b = [torch.randn(width, device=device, generator=g).to(dtype) for _ in range(2)]

        def fn():
            with torch.no_grad():
                torch.nn.functional.layer_norm(x, (width,), w, b)
        return fn

    def layer_norm_bwd(case, torch):
        """The gradients of x, weight and bias from one saved forward (kept by retain_graph)."""
        dtype = getattr(torch, case.dtype)
        g = torch.Generator(device=device).manual_seed(0)
        width = case.shape[-1]
        x, dy = [torch.randn(case.shape, device=device, generator=g).to(dtype) for _ in range(2)]
        w, b = [torch.randn(width, device=device, generator=g).to(dtype).requires_grad_() for _ in range(2)]
        x.requires_grad_()
        y = torch.nn.functional.layer_norm(x, (width,), w, b)
        return lambda: torch.autograd.grad(y, (x, w, b), dy, retain_graph=True)

    def adamw_step(case, torch):
        """torch.optim.AdamW(fused=True) over GPT-2's parameter shapes (bench/cuda_optim.cpp),
        gradients set, the state made by one step first."""
        f = case.fields
        shapes = gpt_parameter_shapes(int(f["layers"]), int(f["width"]), int(f["vocab"]), int(f["block"]))
        g = torch.Generator(device=device).manual_seed(0)
        params = []
        for shape in shapes:
            p = torch.randn(shape, device=device, generator=g).requires_grad_()
            p.grad = torch.randn(shape, device=device, generator=g)
            params.append(p)
        opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, fused=True if device != "cpu" else None)
        opt.step()
        return opt.step

    def cross_entropy(backward):
        """F.cross_entropy of [N, V] logits with class-index targets (Mean), then with
        `backward` the gradient of the logits (bench/cuda_loss.cpp times wick the same way)."""
        def make(case, torch):
            dtype = getattr(torch, case.dtype)
            g = torch.Generator(device=device).manual_seed(0)
            rows, classes = case.shape
            x = torch.randn(case.shape, device=device, generator=g).to(dtype)
            t = torch.randint(0, classes, (rows,), device=device, generator=g)
            if not backward:
                def forward():
                    with torch.no_grad():
                        torch.nn.functional.cross_entropy(x, t)
                return forward
            x.requires_grad_()
            return lambda: torch.autograd.grad(torch.nn.functional.cross_entropy(x, t), (x,))
        return make

    def sdpa(backend):
        """F.scaled_dot_product_attention on [B, H, T, d] inputs with one backend (FLASH_ATTENTION
        or CUDNN_ATTENTION); the fwdbwd ops also take the gradients of q, k and v."""
        def make(case, torch):
            from torch.nn.attention import SDPBackend, sdpa_kernel
            dtype = getattr(torch, case.dtype)
            g = torch.Generator(device=device).manual_seed(0)
            q, k, v, dout = [torch.randn(case.shape, device=device, generator=g).to(dtype) for _ in range(4)]
            causal, backward = case.op.endswith("_causal"), case.op.startswith("sdpa_fwdbwd")
            if backward:
                for x in (q, k, v):
                    x.requires_grad_()
            chosen = getattr(SDPBackend, backend)

            def fn():
                with sdpa_kernel(chosen):
                    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    if backward:
                        torch.autograd.grad(out, (q, k, v), dout)
            return fn
        return make

    return {
        "sdpa_flash": sdpa("FLASH_ATTENTION"),
        "sdpa_cudnn": sdpa("CUDNN_ATTENTION"),
        "copy": copy,
        "add": binary(lambda t, a, b: a + b),
        "bias_add": bias_add,
        "mul": binary(lambda t, a, b: a * b),
        "gelu": unary(lambda t, x: t.nn.functional.gelu(x)),
        "sum_rows": unary(lambda t, x: x.sum(dim=-1)),
        "sum_cols": unary(lambda t, x: x.sum(dim=0)),
        "sum_all": unary(lambda t, x: x.sum()),
        "softmax": unary(lambda t, x: t.softmax(x, dim=-1)),
        "var_rows": unary(lambda t, x: x.var(dim=-1)),
        "var_cols": unary(lambda t, x: x.var(dim=0)),
        "logsumexp_rows": unary(lambda t, x: t.logsumexp(x, dim=-1)),
        "amax_rows": unary(lambda t, x: x.amax(dim=-1)),
        "amax_cols": unary(lambda t, x: x.amax(dim=0)),
        "argmax_rows": unary(lambda t, x: x.argmax(dim=-1)),
        "matmul": matmul,
        "layer_norm_fwdbwd": layer_norm_fwdbwd,
        "layer_norm_fwd": layer_norm_fwd,
        "layer_norm_bwd": layer_norm_bwd,
        "adamw_step": adamw_step,
        "cross_entropy_fwdbwd": cross_entropy(True),
        "cross_entropy": cross_entropy(False),
    }


def torch_gpu_seconds(torch, fn, batch, samples=15, max_seconds=1.5):
    """Median over `samples` batches (at least 15, at most max_seconds of them) of the mean
    GPU time per call. Callers pass the number of batches wick's case ran, so that both
    sides run for as long: a GPU under sustained tensor-core load lowers its clock to stay
    within its power limit (an H200: a bfloat16 4096^3 product took 173 us in the first
    15 batches and 202 us at the median of 3 s, with PyTorch's own calls), and a short
    PyTorch run against a long wick one compares the clocks, not the code."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    began = time.perf_counter()
    while len(times) < max(samples, 15) and (len(times) < 15 or time.perf_counter() - began < max_seconds):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3 / batch)
    return statistics.median(times)


def torch_host_seconds(torch, calls=256, samples=40):
    """Host time of eager `a + b` on 1024 floats, call to return, median over batches."""
    a = torch.randn(1024, device="cuda")
    b = torch.randn(1024, device="cuda")
    for _ in range(100):
        c = a + b
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        for _ in range(calls):
            c = a + b
        t1 = time.perf_counter()
        times.append((t1 - t0) / calls)
        torch.cuda.synchronize()
    del c
    return statistics.median(times)
