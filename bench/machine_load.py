"""What the benchmark scripts record about the machine they ran on: the CPU's name, and
what else ran during a timed span (these machines are shared, so a comparison taken while
other processes were busy must say so); and how they run one measurement per process."""
import json
import os
import resource
import subprocess
import time


def run_json(cmd):
    """Runs one measurement process and returns the JSON object its last output line holds."""
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, or "?"."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


class MachineLoad:
    """What else ran during a span: the load average at its start, and the CPU time of every
    other process (busy time from /proc/stat less this process's and its children's)."""

    def __init__(self):
        self.load = os.getloadavg()[0]
        self.busy, self.own, self.wall = self._busy(), self._own(), time.monotonic()

    @staticmethod
    def _busy():
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:]]
        idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
        return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _own():
        total = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            u = resource.getrusage(who)
            total += u.ru_utime + u.ru_stime
        return total

    def finish(self):
        """(load average at the start, CPUs' worth of other processes' work during the span)."""
        wall = max(time.monotonic() - self.wall, 1e-9)
        others = (self._busy() - self.busy) - (self._own() - self.own)
        return self.load, max(others, 0.0) / wall
