"""`albert-lab app`: the browser workbench (streamlit run app/main.py)."""

from __future__ import annotations

import argparse
import sys

from albert_lab.cli.arguments import whole_number
from albert_lab.cli.common import command
from albert_lab.errors import AlbertLabError
from albert_lab.fields import ascii_int


def _app_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=whole_number, default=8501)
    p.epilog = "Other options go to `streamlit run`, e.g. albert-lab app --server.headless true"


def _server_port(port: int, streamlit_args: list[str]) -> tuple[int, list[str]]:
    """The port the server will listen on: `--server.port N` (or `=N`) passed through to
    streamlit wins over --port, as it would in `streamlit run`; the rest of the options."""
    rest, i = [], 0
    while i < len(streamlit_args):
        arg = streamlit_args[i]
        if arg == "--server.port" and i + 1 < len(streamlit_args):
            value, i = streamlit_args[i + 1], i + 2
        elif arg.startswith("--server.port="):
            value, i = arg.split("=", 1)[1], i + 1
        else:
            rest.append(arg)
            i += 1
            continue
        port = ascii_int(value)
        if port is None:
            raise AlbertLabError(f"--server.port: {value[:40]!r} is not a port number")
    return port, rest


def _in_use(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed server's TIME_WAIT is no obstacle
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def check_port_free(port: int) -> None:
    if not 0 < port < 65536:
        raise AlbertLabError(f"--port: {port} is not a port number (1-65535)")
    if _in_use(port):
        free = next((p for p in range(port + 1, min(port + 50, 65536)) if not _in_use(p)), None)
        raise AlbertLabError(f"port {port} is in use (another program, or ALBERT Lab already running there: "
                             f"http://localhost:{port}); start on another with --port {free or 'N'}")


@command("app", "start the workbench in the browser (streamlit run app/main.py)")(_app_arguments)
def cmd_app(args: argparse.Namespace) -> int:
    import os

    from albert_lab.paths import PROJECT_ROOT, allowed_roots, cache_dir, data_dir

    entry = PROJECT_ROOT / "app" / "main.py"
    if not entry.is_file():
        raise AlbertLabError(f"{entry} not found: run from a checkout of ALBERT Lab")
    allowed_roots(), cache_dir(), data_dir()  # every folder the environment names, checked: one line now, not on every page
    port, rest = _server_port(args.port, list(getattr(args, "streamlit_args", [])))
    check_port_free(port)  # before the address is printed (it was printed, then Streamlit's 'not available')
    print(f"ALBERT Lab: http://localhost:{port}", file=sys.stderr)
    # exec: this process becomes the server, so signals (Ctrl-C, SIGTERM) reach it; app.shell.serve
    # is `streamlit run` with the model code importing in the background as the server starts
    os.chdir(PROJECT_ROOT)
    command = [sys.executable, "-m", "app.shell.serve", "run", str(entry), "--server.port", str(port), *rest]
    os.execve(sys.executable, command, {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})
    return 0  # not reached
