#!/usr/bin/env python3
"""Compiler gates for wick's CUDA kernels: what nvcc says about each kernel for sm_90.

No GPU is needed. Each listed .cu file is compiled once for sm_90 with the build's flags,
keeping the PTX and ptxas's resource report (-Xptxas -v). For every kernel (every template
instantiation) the script reads:
  - registers, spill stores/loads, stack frame and static shared memory (ptxas -v);
  - from the PTX: the global loads and stores and their widths, the loop that holds the most
    16-byte loads (the kernel's vector loop: a block between a label and a branch back to
    it), and how many 16-byte loads of that loop are issued before anything that keeps
    ptxas from moving a load earlier: a store that may alias it, an atomic, a barrier or a
    fence, or a load whose address depends on loaded data (the loads in flight per step);
and checks them against the expectations declared per kernel family in
kernels/cuda/kernel_gates.txt. Occupancy on an H100 is computed from the registers, the
shared memory and the family's block size (occupancy() below says how). A kernel that
breaks an expectation is printed with the figure and the expectation, and the script
exits 1.

  tools/kernel_gates.py [--build-dir DIR] [--keep DIR] [--report FILE] [FILE.cu...]
  tools/kernel_gates.py --from-build BUILD_LOG KEEP_DIR [--report FILE]

The second form reads a build that compiled with -Xptxas=-v --keep --keep-dir=KEEP_DIR
(tools/test.sh's nvcc build), so CI compiles each file once.

A rule's pattern names table ops by name, not by enumerator number: `{UnaryOp:relu,exp}`
becomes the alternation of those rows' positions in wick/tensor/op_kinds.h's tables (as
nvcc prints them, `(wick::UnaryOp)7`), so a row inserted early in a table cannot point a
gate at other kernels. An unknown name is an error.

  tools/kernel_gates.py --check-rules   expands every rule (a ctest: names still exist)
  tools/kernel_gates.py --self-test     shows a row planted at the head of each table moves
                                        the numbers a named pattern stands for

With --sass, SASS from cuobjdump (not part of every toolkit) is also read where it exists:
16-byte loads show as LDG.E.128 there.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# --- H100 (sm_90) limits, from NVIDIA's CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability" (9.0), and its occupancy calculator's allocation
# rules. The H200 is the same chip with more memory: the same limits.
REGS_PER_SM = 65536
REG_ALLOC_UNIT = 256          # registers are given to a warp in units of 256
MAX_REGS_PER_THREAD = 255
MAX_WARPS_PER_SM = 64         # 2048 threads
MAX_BLOCKS_PER_SM = 32
SMEM_PER_SM = 228 * 1024      # bytes, of which up to 227 KiB to one block
SMEM_RESERVED_PER_BLOCK = 1024
SMEM_ALLOC_UNIT = 128


def occupancy(regs, smem_bytes, block_threads):
    """Resident warps per SM over the 64 possible, for a kernel using `regs` registers per
    thread and `smem_bytes` of shared memory per block of `block_threads` threads: the
    fewest blocks allowed by registers (each warp takes regs * 32 rounded up to 256), by
    warps, by shared memory (plus 1 KiB the hardware reserves per block, in 128-byte units)
    and by the block limit."""
    warps = -(-block_threads // 32)
    regs_per_warp = -(-max(regs, 1) * 32 // REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    by_regs = (REGS_PER_SM // regs_per_warp) // warps
    by_warps = MAX_WARPS_PER_SM // warps
    smem = -(-(smem_bytes + SMEM_RESERVED_PER_BLOCK) // SMEM_ALLOC_UNIT) * SMEM_ALLOC_UNIT
    by_smem = SMEM_PER_SM // smem
    blocks = min(by_regs, by_warps, by_smem, MAX_BLOCKS_PER_SM)
    return blocks * warps / MAX_WARPS_PER_SM


# --- ptxas -v ---------------------------------------------------------------------------

@dataclass
class Kernel:
    mangled: str
    name: str = ""
    source: str = ""
    regs: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack: int = 0
    smem: int = 0
    loads: dict = field(default_factory=dict)    # width in bytes -> count, whole kernel
    stores: dict = field(default_factory=dict)
    loop_wide_loads: int = 0    # 16-byte loads in the vector loop
    loop_narrow_loads: int = 0  # narrower global loads in that loop
    loop_wide_stores: int = 0
    in_flight: int = 0          # 16-byte loads of that loop ptxas can issue before any waits (loads_in_flight)
    in_flight_any: int = 0      # the same, loads of any width
    sass_wide_loads: int = -1   # LDG.E.128 in SASS (-1: not read)
    mma: int = 0                # mma.sync instructions (tensor cores)
    ldmatrix: int = 0
    cp_async: dict = field(default_factory=dict)  # cp.async copies: bytes per copy -> count
    div64: int = 0              # 64-bit integer divisions and remainders, whole kernel
    loop_div: int = 0           # integer divisions and remainders (any width) inside its loops


def parse_ptxas(text, kernels):
    """Fills `kernels` from ptxas -v output. Only sm_90 compiles count (a build for several
    architectures reports each kernel once per architecture), and a "Function properties"
    block counts for the entry being compiled only (called device functions have their own)."""
    current, props = None, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for '(sm_\w+)'", line)
        if m:
            current = kernels.setdefault(m.group(1), Kernel(m.group(1))) if m.group(2) in ("sm_90", "sm_90a") else None
            props = None
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            props = current if current is not None and m.group(1) == current.mangled else None
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and props is not None:
            props.stack, props.spill_stores, props.spill_loads = map(int, m.groups())
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and current is not None:
            current.regs = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            current.smem = int(s.group(1)) if s else 0


# --- PTX ---------------------------------------------------------------------------------

TYPE_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}
MEMORY_RE = re.compile(r"^\s*(?:@!?%\w+\s+)?(ld|st)\.global((?:\.\w+)*)\s+(.*);")
LABEL_RE = re.compile(r"^(\$\w+):")
BRANCH_RE = re.compile(r"\bbra(?:\.uni)?\s+(\$\w+);")
REG_RE = re.compile(r"%[a-z]+\d+")
SYMBOL_RE = re.compile(r"^[A-Za-z_$][\w$]*;?$")
CP_ASYNC_RE = re.compile(r"\bcp\.async\.\w+\.shared\.global\s+\[[^]]*\],\s*\[[^]]*\],\s*(\d+)")
# Integer division and remainder: PTX's div/rem on .s/.u types (floating division is .f32/.f64).
# The GPU has no instruction for them: ptxas emulates a 64-bit one with a call to a division
# subroutine in SASS (dozens of instructions), a 32-bit one with an inline sequence of about
# 20. nvcc guards a 64-bit one with a test for operands that fit in 32 bits, but the div.s64
# stays in the PTX (and the call in SASS) for when they do not.
INT_DIV_RE = re.compile(r"^\s*(?:@!?%\w+\s+)?(?:div|rem)\.[su](?:16|32|64)\b")
DIV64_RE = re.compile(r"^\s*(?:@!?%\w+\s+)?(?:div|rem)\.[su]64\b")


def access_width(suffixes):
    parts = suffixes.split(".")
    vec = 1
    bits = None
    for p in parts:
        if p in ("v2", "v4", "v8"):
            vec = int(p[1:])
        m = re.fullmatch(r"[subf](8|16|32|64|128)", p)
        if m:
            bits = m.group(1)
    return vec * TYPE_BYTES.get(bits, 0)


def ptx_entries(ptx):
    """{mangled name: list of instruction lines} for every .entry in a PTX file."""
    entries = {}
    name, body, depth = None, None, 0
    for line in ptx.splitlines():
        if name is None:
            m = re.match(r"\s*(?:\.\w+\s+)*\.entry\s+([^\s(]+)", line)
            if m:
                name, body, depth = m.group(1), [], 0
            continue
        depth += line.count("{") - line.count("}")
        body.append(line)
        if depth <= 0 and "}" in line:
            entries[name] = body
            name = None
    return entries


def analyse_ptx(kernel, lines):
    for line in lines:
        kernel.mma += "mma.sync." in line
        kernel.ldmatrix += "ldmatrix.sync." in line
        m = CP_ASYNC_RE.search(line)
        if m:
            kernel.cp_async[int(m.group(1))] = kernel.cp_async.get(int(m.group(1)), 0) + 1
    labels = {}
    for i, line in enumerate(lines):
        m = LABEL_RE.match(line.strip())
        if m:
            labels[m.group(1)] = i
    loops = []  # (start, end) of each block ending in a branch back to its label
    for i, line in enumerate(lines):
        m = BRANCH_RE.search(line)
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            loops.append((labels[m.group(1)], i))
    kernel.div64 = sum(1 for line in lines if DIV64_RE.match(line))
    kernel.loop_div = sum(1 for i, line in enumerate(lines)
                          if INT_DIV_RE.match(line) and any(a <= i <= b for a, b in loops))
    # Registers holding an address into a global table of the toolkit (e.g. the 2/pi digits
    # of sinf's slow path for huge arguments, __cudart_i2opi_f): loads from them read no
    # operand and are left out of the counts.
    table = set()
    for line in lines:
        opcode, dest, sources = split_instruction(line)
        if opcode.startswith(("ld.", "st.")) or not dest:
            continue
        if (opcode.startswith("mov.") and SYMBOL_RE.match(sources.strip())) or set(REG_RE.findall(sources)) & table:
            table |= set(REG_RE.findall(dest))
    accesses = []  # (line, kind, width, registers written by a load)
    for i, line in enumerate(lines):
        m = MEMORY_RE.match(line)
        if not m:
            continue
        kind, suffixes, operands = m.groups()
        if kind == "ld" and set(REG_RE.findall(operands.split("[", 1)[-1])) & table:
            continue
        width = access_width(suffixes)
        book = kernel.loads if kind == "ld" else kernel.stores
        book[width] = book.get(width, 0) + 1
        written = set()
        if kind == "ld":
            dest = operands.split("[")[0]
            written = set(REG_RE.findall(dest))
        accesses.append((i, kind, width, written))
    best = None
    for start, end in loops:
        loads = [w for i, k, w, _ in accesses if start <= i <= end and k == "ld"]
        key = (sum(1 for w in loads if w == 16), len(loads))
        if best is None or key > best[0]:
            best = (key, start, end)
    if not best or best[0] == (0, 0):
        # No loop holds a load (a kernel whose steps are all unrolled): the whole body is
        # the region.
        best = ((0, 0), 0, len(lines) - 1)
    _, start, end = best
    inner = [a for a in accesses if start <= a[0] <= end]
    kernel.loop_wide_loads = sum(1 for _, k, w, _ in inner if k == "ld" and w == 16)
    kernel.loop_narrow_loads = sum(1 for _, k, w, _ in inner if k == "ld" and w < 16)
    kernel.loop_wide_stores = sum(1 for _, k, w, _ in inner if k == "st" and w == 16)
    loads_at = {a[0]: a for a in inner if a[1] == "ld"}
    kernel.in_flight = loads_in_flight(lines, start, end, loads_at, widths=(16,))
    kernel.in_flight_any = loads_in_flight(lines, start, end, loads_at, widths=None)


# Instructions no load may be moved above: a store to global or generic memory (it may write
# what a later load reads: nothing tells ptxas that out and in do not overlap), an atomic, a
# barrier or a fence.
ORDERING_RE = re.compile(r"^(?:@!?%\w+\s+)?(?:st\.(?!shared|local|param)|atom\.|red\.|bar\.|barrier\.|membar\.|fence\.)")


def split_instruction(line):
    """(opcode, destination, sources) of a PTX instruction line, the predicate ("@%p1")
    dropped; the destination is a register or a braced list of them ("{%rs1, %rs2}").
    Empty strings for a line that is not an instruction with operands."""
    parts = line.strip().split(None, 1)
    if parts and parts[0].startswith("@"):
        parts = parts[1].split(None, 1) if len(parts) > 1 else []
    if len(parts) < 2:
        return (parts[0] if parts else ""), "", ""
    args = parts[1]
    cut = args.index("}") + 1 if args.startswith("{") and "}" in args else args.find(",")
    if cut <= 0:
        return parts[0], "", args
    return parts[0], args[:cut], args[cut:].lstrip().removeprefix(",")


def loads_in_flight(lines, start, end, loads_at, widths):
    """Loads of the loop [start, end] (of the given widths; None: any) issued before the
    first instruction that orders memory, or before a load whose address is computed from
    loaded data. ptxas schedules the PTX again: a load may be moved above any arithmetic
    that does not feed its address, so an instruction that merely reads a loaded register
    (an unpacking mov, a conversion) does not hold the next load back; a store that may
    alias it, a barrier, or an address that waits for data does."""
    tainted, count = set(), 0
    for i in range(start, end + 1):
        text = lines[i].strip()
        parts = text.split(None, 1)
        if len(parts) < 2:
            continue
        if i in loads_at:
            _, _, width, written = loads_at[i]
            address = set(REG_RE.findall(parts[1].split("[", 1)[1])) if "[" in parts[1] else set()
            if address & tainted:
                break
            if widths is None or width in widths:
                count += 1
            tainted |= written
            continue
        if ORDERING_RE.match(text):
            break
        _, dest, sources = split_instruction(text)
        if dest and set(REG_RE.findall(sources)) & tainted:
            tainted |= set(REG_RE.findall(dest))
    return count


# --- expectations ---------------------------------------------------------------------------

@dataclass
class Rule:
    family: str
    pattern: re.Pattern
    block: int
    checks: dict
    line: int


# The enums whose values nvcc prints as numbers in kernel names, and their tables in
# wick/tensor/op_kinds.h (tools/op_list.py reads the tables).
OP_TABLES = {"UnaryOp": ("WICK_UNARY_TABLE", True), "BinaryOp": ("WICK_BINARY_OPS", False),
             "ReduceOp": ("WICK_REDUCE_TABLE", True)}


def op_numbers(op_kinds_text):
    """{enum: {name: position}} with each row's function name and enumerator as names."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import op_list
    numbers = {}
    for enum, (macro, passes_on) in OP_TABLES.items():
        table = {}
        for i, (enumerator, fn, _) in enumerate(op_list.rows(op_kinds_text, macro, passes_on)):
            table.setdefault(fn, i)
            table.setdefault(enumerator, i)
        numbers[enum] = table
    return numbers


def expand_op_names(pattern, numbers, where):
    """`{Enum:name,...}` in a pattern -> `(n1|n2|...)`, the rows' positions."""
    def one(m):
        enum, names = m.group(1), [n.strip() for n in m.group(2).split(",")]
        if enum not in numbers:
            raise SystemExit(f"kernel_gates: {where}: no table for {enum} (known: {', '.join(numbers)})")
        unknown = [n for n in names if n not in numbers[enum]]
        if unknown:
            raise SystemExit(f"kernel_gates: {where}: {enum} has no row named {', '.join(unknown)}")
        return "(" + "|".join(str(numbers[enum][n]) for n in names) + ")"
    return re.sub(r"\{(\w+):([\w, ]+)\}", one, pattern)


def load_rules(path, op_kinds_text=None):
    if op_kinds_text is None:
        op_kinds_text = open(os.path.join(ROOT, "wick", "tensor", "op_kinds.h")).read()
    numbers = op_numbers(op_kinds_text)
    rules = []
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            fields = shlex.split(line)
            family, block = fields[0], int(fields[2])
            pattern = expand_op_names(fields[1], numbers, f"{os.path.basename(path)} line {n}")
            checks = {}
            for item in fields[3:]:
                key, value = item.split("=", 1)
                checks[key] = float(value)
            rules.append(Rule(family, re.compile(pattern), block, checks, n))
    return rules


def check(kernel, rule):
    """The broken expectations of `kernel` under `rule`, as messages."""
    failures = []
    occ = occupancy(kernel.regs, kernel.smem + int(rule.checks.get("dynamic_smem", 0)), rule.block)
    c = rule.checks
    def need(ok, what):
        if not ok:
            failures.append(what)
    allowed = int(c.get("max_spill", 0))
    need(kernel.spill_stores <= allowed and kernel.spill_loads <= allowed,
         f"spills {kernel.spill_stores} bytes stored / {kernel.spill_loads} loaded, expected "
         + (f"<= {allowed}" if allowed else "none"))
    if "max_stack" in c:
        need(kernel.stack <= c["max_stack"], f"stack frame {kernel.stack} bytes, expected <= {int(c['max_stack'])}")
    if "min_occupancy" in c:
        need(occ + 1e-9 >= c["min_occupancy"],
             f"occupancy {occ:.0%} on an H100 ({kernel.regs} registers, {kernel.smem} bytes static shared memory, "
             f"{rule.block} threads), expected >= {c['min_occupancy']:.0%}")
    if "max_regs" in c:
        need(kernel.regs <= c["max_regs"], f"{kernel.regs} registers, expected <= {int(c['max_regs'])}")
    if "wide_loads" in c:
        need(kernel.loop_wide_loads >= c["wide_loads"],
             f"{kernel.loop_wide_loads} 16-byte loads in its vector loop, expected >= {int(c['wide_loads'])}")
    if "narrow_loads" in c:
        need(kernel.loop_narrow_loads <= c["narrow_loads"],
             f"{kernel.loop_narrow_loads} narrower global loads in its vector loop, expected <= {int(c['narrow_loads'])}")
    if "wide_stores" in c:
        need(kernel.loop_wide_stores >= c["wide_stores"] or kernel.stores.get(16, 0) >= c["wide_stores"],
             f"{kernel.stores.get(16, 0)} 16-byte stores, expected >= {int(c['wide_stores'])}")
    if c.get("tensor_cores"):
        # A tensor-core kernel: its products are mma.sync on fragments read by ldmatrix, its
        # tiles come in by 16-byte cp.async (no copy of another width, no 2-byte global load).
        need(kernel.mma > 0, "no mma.sync: its products run on the CUDA cores")
        need(kernel.ldmatrix > 0, "no ldmatrix: its fragments are not loaded from shared memory by ldmatrix")
        need(kernel.cp_async.get(16, 0) > 0 and set(kernel.cp_async) <= {16},
             f"cp.async copies by size {kernel.cp_async or 'none'}, expected 16-byte ones only")
        need(kernel.loads.get(2, 0) == 0, f"{kernel.loads.get(2, 0)} 2-byte global loads, expected none")
    if c.get("no_div64"):
        need(kernel.div64 == 0,
             f"{kernel.div64} 64-bit integer divisions or remainders (div/rem.s64/.u64 in its PTX: each a call to "
             f"a slow routine in SASS), expected none")
    if c.get("no_loop_div"):
        need(kernel.loop_div == 0,
             f"{kernel.loop_div} integer divisions or remainders (div/rem.s/.u in its PTX) inside its loops, "
             f"expected none")
    if "in_flight_any" in c:
        need(kernel.in_flight_any >= c["in_flight_any"],
             f"{kernel.in_flight_any} loads in flight (any width), expected >= {int(c['in_flight_any'])}")
    if "min_bytes_in_flight" in c:
        # Little's law: to stream at the full bandwidth B with a memory latency L, a
        # multiprocessor needs B * L / (multiprocessors) bytes in flight.
        per_sm = occ * MAX_WARPS_PER_SM * 32 * kernel.in_flight * 16
        need(per_sm >= c["min_bytes_in_flight"],
             f"{per_sm / 1024:.0f} KiB of loads in flight per multiprocessor on an H100 ({occ:.0%} occupancy, "
             f"{kernel.in_flight} 16-byte loads per thread), expected >= {c['min_bytes_in_flight'] / 1024:.0f} KiB")
    if "in_flight" in c:
        need(kernel.in_flight >= c["in_flight"],
             f"{kernel.in_flight} 16-byte loads in flight (issued before a store, barrier or dependent "
             f"address), expected >= {int(c['in_flight'])}")
    return occ, failures


# --- driving nvcc ---------------------------------------------------------------------------

def demangle(names):
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def compile_one(nvcc, source, flags, keep_dir, reuse=False):
    base = os.path.splitext(os.path.basename(source))[0]
    work = os.path.join(keep_dir, base)
    os.makedirs(work, exist_ok=True)
    obj = os.path.join(work, base + ".o")
    cmd = [nvcc, *flags, "-arch=sm_90", "-Xptxas", "-v", "--keep", "--keep-dir", work, "-x", "cu", "-c", source, "-o", obj]
    log_file = os.path.join(work, base + ".ptxas.log")
    if reuse and os.path.exists(log_file) and os.path.exists(obj):
        log = open(log_file).read()
    else:
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.stderr.write(run.stdout + run.stderr)
            raise SystemExit(f"kernel_gates: nvcc failed on {source}")
        log = run.stderr
        with open(log_file, "w") as f:
            f.write(log)
    ptx_files = [os.path.join(work, f) for f in os.listdir(work) if f.endswith(".ptx")]
    ptx = "".join(open(p).read() for p in ptx_files)
    return log, ptx, obj


def sass_wide_loads(obj):
    tool = shutil.which("cuobjdump")
    if not tool:
        return {}
    out = subprocess.run([tool, "-sass", obj], capture_output=True, text=True).stdout
    counts, current = {}, None
    for line in out.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            current = m.group(1)
            counts[current] = 0
        elif current and "LDG.E.128" in line:
            counts[current] += 1
    return counts


def build_flags(build_dir):
    """The include and define flags the build passes nvcc (from its compile_commands.json,
    else wick's own layout)."""
    cc = os.path.join(build_dir, "compile_commands.json") if build_dir else None
    if cc and os.path.exists(cc):
        for entry in json.load(open(cc)):
            if entry["file"].endswith(".cu"):
                args = shlex.split(entry["command"])
                # After the compiler (a launcher such as ccache may come first).
                first = next((i + 1 for i, a in enumerate(args) if os.path.basename(a) == "nvcc"), 1)
                keep, skip = [], False
                for a in args[first:]:
                    if skip:
                        skip = False
                        continue
                    if a in ("-o", "-c", "-x"):
                        skip = True
                        continue
                    if a.endswith(".cu") or a.startswith("--generate-code") or a.startswith("-gencode") or a.startswith("-arch"):
                        continue
                    keep.append(a)
                return keep
    # <wick/layer/...> and "kernels/..." both resolve from the source root.
    return ["-I" + ROOT, "-O3", "-DNDEBUG", "--expt-relaxed-constexpr", "--extended-lambda", "-std=c++20", "-Xcompiler=-fopenmp"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sources", nargs="*")
    ap.add_argument("--rules", default=os.path.join(ROOT, "kernels", "cuda", "kernel_gates.txt"))
    ap.add_argument("--build-dir", help="a configured nvcc build (-DWICK_CUDA=ON) whose flags to use")
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--keep", help="folder for the PTX and objects (default: a temporary one)")
    ap.add_argument("--reuse", action="store_true",
                    help="use the ptxas log and PTX a previous run left in --keep instead of compiling again")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="nvcc processes at once")
    ap.add_argument("--report", help="write every kernel's figures to this file")
    ap.add_argument("--sass", action="store_true", help="also count LDG.E.128 with cuobjdump where it exists")
    ap.add_argument("--from-build", nargs=2, metavar=("BUILD_LOG", "KEEP_DIR"),
                    help="read a build's output (compiled with -Xptxas=-v --keep --keep-dir=KEEP_DIR) instead of "
                         "compiling again: ptxas's lines from BUILD_LOG, the sm_90 PTX from KEEP_DIR")
    ap.add_argument("--check-rules", action="store_true", help="expand every rule's op names, compile nothing")
    ap.add_argument("--self-test", action="store_true",
                    help="show that a row planted at the head of each table moves what a named pattern matches")
    args = ap.parse_args()
    if args.self_test:
        return self_test(args.rules)
    rules = load_rules(args.rules)
    if args.check_rules:
        named = sum(1 for line in open(args.rules) if re.search(r"\{\w+:[\w, ]+\}", line.split("#", 1)[0]))
        print(f"kernel_gates: {len(rules)} rules, {named} naming table ops, every name found")
        return 0
    kernels = {}
    sources = args.sources or sorted(
        os.path.join(ROOT, "kernels", "cuda", f) for f in os.listdir(os.path.join(ROOT, "kernels", "cuda"))
        if f.endswith(".cu"))
    keep = args.keep or tempfile.mkdtemp(prefix="wick-gates-")
    flags = build_flags(args.build_dir)
    inputs = []
    objects = []
    if args.from_build:
        log_file, keep_dir = args.from_build
        ptx_files = sorted(f for f in os.listdir(keep_dir) if f.endswith(".ptx") and "compute_90" in f)
        if not ptx_files:
            raise SystemExit(f"kernel_gates: no compute_90 PTX in {keep_dir}")
        log = open(log_file, errors="replace").read()
        for f in ptx_files:
            inputs.append((log, open(os.path.join(keep_dir, f)).read(), f.split(".")[0] + ".cu"))
    else:
        # The largest files first, so that a long compile does not start last.
        order = sorted(sources, key=lambda f: -os.path.getsize(f))
        with concurrent.futures.ThreadPoolExecutor(max(args.jobs, 1)) as pool:
            done = dict(zip(order, pool.map(lambda f: compile_one(args.nvcc, f, flags, keep, args.reuse), order)))
        for src in sources:
            log, ptx, obj = done[src]
            inputs.append((log, ptx, os.path.basename(src)))
            objects.append(obj)
    for log, ptx, src in inputs:
        found = {}
        parse_ptxas(log, found)
        entries = ptx_entries(ptx)
        if args.from_build:
            # One log for every file: keep the kernels of this file's PTX.
            missing = [m for m in entries if m not in found]
            if missing:
                raise SystemExit(f"kernel_gates: ptxas said nothing about {len(missing)} kernels of {src} in the build "
                                 f"log (a cached compile?), e.g. {missing[0]}: run without --from-build")
            found = {m: found[m] for m in entries}
        for mangled, k in found.items():
            k.source = src
            if mangled in entries:
                analyse_ptx(k, entries[mangled])
        kernels.update(found)
    if args.sass:
        for obj in objects:
            for mangled, n in sass_wide_loads(obj).items():
                if mangled in kernels:
                    kernels[mangled].sass_wide_loads = n
    names = demangle(list(kernels))
    for mangled, k in kernels.items():
        k.name = names[mangled]

    failures, rows, unmatched, used = 0, [], 0, set()
    for k in sorted(kernels.values(), key=lambda k: (k.source, k.name)):
        rule = next((r for r in rules if r.pattern.search(k.name)), None)
        if rule is not None:
            used.add(rule.line)
        if rule is None:
            unmatched += 1
            problems = [] if k.spill_stores == 0 and k.spill_loads == 0 else [
                f"spills {k.spill_stores} bytes stored / {k.spill_loads} loaded, expected none"]
            occ, family = float("nan"), "-"
        else:
            occ, problems = check(k, rule)
            family = rule.family
        rows.append((k, family, occ, problems))
        for p in problems:
            failures += 1
            print(f"GATE FAILED [{family}] {k.name} ({k.source}): {p}")
    # Over every kernel file, a rule that no kernel reaches (its pattern names what was renamed,
    # or an earlier rule takes all its kernels) checks nothing: that is a failure too.
    if not args.sources:
        for r in rules:
            if r.line not in used:
                failures += 1
                print(f"GATE FAILED [{r.family}] the rule of {os.path.basename(args.rules)} line {r.line} "
                      f"matches no kernel: it checks nothing (pattern {r.pattern.pattern})")
    if args.report:
        with open(args.report, "w") as f:
            f.write("family\tregs\tspill\tstack\tsmem\toccupancy\tloop_ld16\tloop_ld_narrow\tin_flight\tloads\tstores\tsass_ldg128\tdiv64\tloop_div\tkernel\n")
            for k, family, occ, _ in rows:
                f.write(f"{family}\t{k.regs}\t{k.spill_stores + k.spill_loads}\t{k.stack}\t{k.smem}\t{occ:.2f}\t"
                        f"{k.loop_wide_loads}\t{k.loop_narrow_loads}\t{k.in_flight}\t{dict(sorted(k.loads.items()))}\t"
                        f"{dict(sorted(k.stores.items()))}\t{k.sass_wide_loads}\t{k.div64}\t{k.loop_div}\t{k.name}\n")
    print(f"kernel_gates: {len(kernels)} kernels from {len(inputs)} files, {len(kernels) - unmatched} under a family "
          f"rule, {failures} broken expectation(s)")
    return 1 if failures else 0


def self_test(rules_path):
    """A row planted at the head of each op table shifts every later row's number: a rule
    naming ops must match the shifted numbers (and not the old ones), or it would gate other
    kernels than the ones it names."""
    text = open(os.path.join(ROOT, "wick", "tensor", "op_kinds.h")).read()
    for enum, (macro, passes_on) in OP_TABLES.items():
        row = "X(Y, Planted, planted_op, Formula, _) " if passes_on else "X(Planted, planted_op, Both, None) "
        planted = re.sub(r"(^#define " + macro + r"\(.*?\))", lambda m: m.group(1) + " " + row, text, count=1,
                         flags=re.M)
        before, after = op_numbers(text)[enum], op_numbers(planted)[enum]
        if any(after[name] != n + 1 for name, n in before.items()):
            print(f"kernel_gates: a row planted at the head of {macro} did not move every row by one", file=sys.stderr)
            return 1
        # Every rule naming this enum's ops now stands for the moved numbers.
        for old, new in zip(load_rules(rules_path, text), load_rules(rules_path, planted)):
            if "{" + enum + ":" in open(rules_path).read().split("\n")[old.line - 1] and old.pattern == new.pattern:
                print(f"kernel_gates: rule line {old.line} matches the same numbers with a row planted in {macro}",
                      file=sys.stderr)
                return 1
    named = sum(1 for line in open(rules_path) if re.search(r"\{\w+:[\w, ]+\}", line.split("#", 1)[0]))
    print(f"kernel_gates: a row planted at the head of each of {len(OP_TABLES)} tables moves every row's number, "
          f"and the {named} rules naming table ops follow their rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
