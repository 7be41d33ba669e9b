"""Own a local Ray node and leave nothing of it behind; run as a script by `toolshift.agents.ray_executor`.

The driver starts this script in a session of its own with a pipe on its stdin. It starts a head node with
`ray start --head` (or, with `--address`, a node that joins that head), so every process of the node, the
dashboard and runtime-env agents and the workers included, belongs to this session; it prints
`ready <address>` (the head's) and waits. When the pipe closes (the driver finished, or died in any way:
SIGTERM, SIGINT, SIGKILL) it stops every other process of its session, SIGTERM first and SIGKILL after a
grace, removes the node's temp folder and exits. Only the standard library is imported: it starts fast and
holds a few MB while it waits. Two of them, a head and a node joining it, make a two-node cluster on one
machine (each node with its own CPUs and resources): the tests' and bench/'s cluster.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRACE_SECONDS = 3.0
"""How long the cluster's processes get to exit on SIGTERM before they are killed."""


START_ATTEMPTS = 3
"""`ray start` tries: a port free when chosen can be taken by the time Ray binds it (another process, or
Ray's own random choice for a component we do not pin), so a port clash is retried with new ports."""


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports: every socket stays bound until all are chosen, so the kernel cannot hand
    the same ephemeral port out twice (two sequential bind-and-close calls can, and once did: the GCS and
    the dashboard agent were both given 49335)."""
    with contextlib.ExitStack() as held:
        ports = []
        for _ in range(count):
            s = held.enter_context(socket.socket())
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
        return ports


def session_members() -> list[int]:
    """Every other live process of this process's session."""
    me, session = os.getpid(), os.getsid(0)
    if Path("/proc").is_dir():
        pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    else:  # macOS and other Unixes without /proc
        listing = subprocess.run(["ps", "-A", "-o", "pid="], capture_output=True, text=True, check=False)
        pids = [int(p) for p in listing.stdout.split()]
    members = []
    for pid in pids:
        if pid == me:
            continue
        with contextlib.suppress(OSError):
            if os.getsid(pid) == session and not _zombie(pid):
                members.append(pid)
    return members


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def stop_session(grace: float = GRACE_SECONDS) -> None:
    """SIGTERM every other process of the session, then SIGKILL whatever is left after `grace` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        members = session_members()
        for pid in members:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 10 * grace)
        while members and time.monotonic() < deadline:
            time.sleep(0.05)
            members = session_members()
        if not members:
            return


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-cpus", type=int, default=None)
    parser.add_argument("--address", default=None, help="join the head at this address (default: be a head)")
    parser.add_argument("--resources", default=None, help="the node's custom resources, as JSON")
    args = parser.parse_args()
    if os.getsid(0) != os.getpid():
        os.setsid()  # normally done by the driver (start_new_session); never share a session with it
    temp_dir = tempfile.mkdtemp(prefix="ts-ray-")  # short: Ray's socket paths live under it

    def stop(*_: object) -> None:
        stop_session()
        shutil.rmtree(temp_dir, ignore_errors=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for attempt in range(1, START_ATTEMPTS + 1):
        port, agent_port = free_ports(2)
        command = [sys.executable, "-m", "ray.scripts.scripts", "start", "--node-ip-address=127.0.0.1",
                   f"--dashboard-agent-listen-port={agent_port}", "--disable-usage-stats",
                   f"--temp-dir={temp_dir}"]  # fmt: skip
        if args.address is None:
            command += ["--head", f"--port={port}", "--include-dashboard=false"]
        else:
            command.append(f"--address={args.address}")
        if args.num_cpus is not None:
            command.append(f"--num-cpus={args.num_cpus}")
        if args.resources is not None:
            command.append(f"--resources={args.resources}")
        started = subprocess.run(
            command, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL
        )
        if started.returncode == 0:
            break
        output = (started.stderr or started.stdout).strip()
        if attempt < START_ATTEMPTS and "port" in output.lower():
            stop_session()  # whatever the failed start left running, before trying new ports
            continue
        tail = " | ".join(output.splitlines()[-3:])
        print(f"failed ray start exited {started.returncode}: {tail}", flush=True)
        stop()
    print(f"ready {args.address or f'127.0.0.1:{port}'}", flush=True)
    with contextlib.suppress(OSError):
        sys.stdin.buffer.read()  # returns at EOF: the driver closed the pipe or died
    stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
