#!/usr/bin/env python3
"""A real Slurm cluster on loopback, built from Debian bookworm packages, for tests.

Everything the cluster needs lives under one directory DIR: configuration, spool and state
directories, logs, pid files, its own munge key and socket, a JWT key, and fake GPU device
nodes. Nothing under /etc/slurm, /etc/munge or /run/munge is read or written.

    python3 tests/slurm/slurm_cluster.py start DIR --nodes 16 --gpus 8
    python3 tests/slurm/slurm_cluster.py status DIR
    python3 tests/slurm/slurm_cluster.py env DIR      # prints `export SLURM_CONF=...`
    python3 tests/slurm/slurm_cluster.py stop DIR

or, from Python:

    with SlurmCluster("/tmp/sc", nodes=16, gpus=8) as c:
        c.run(["sbatch", "--wrap", "true"])
        c.rest("GET", "/jobs")

The harness installs nothing. It checks that the daemons and clients it needs are present and,
when they are not, names the Debian packages to install. It waits for readiness by polling,
never by sleeping a fixed time, and stops daemons by the PIDs it recorded when it started them.
"""

from __future__ import annotations

import argparse
import base64
import glob
import hashlib
import hmac
import json
import os
import pwd
import random
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Iterable, Optional

# Binary -> the Debian package that ships it.
REQUIRED_BINARIES = {
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "slurmstepd": "slurmd",
    "slurmrestd": "slurmrestd",
    "munged": "munge",
    "munge": "munge",
    "unmunge": "munge",
    "sbatch": "slurm-client",
    "scontrol": "slurm-client",
    "sinfo": "slurm-client",
    "squeue": "slurm-client",
    "scancel": "slurm-client",
}
# Plugin (file under the Slurm plugin directory) -> the Debian package that ships it.
REQUIRED_PLUGINS = {
    "auth_munge.so": "slurm-wlm-basic-plugins",
    "auth_jwt.so": "slurm-wlm-jwt-plugin",
    "rest_auth_jwt.so": "slurm-wlm-basic-plugins",
    "select_cons_tres.so": "slurm-wlm-basic-plugins",
    "gres_gpu.so": "slurm-wlm-basic-plugins",
    "proctrack_linuxproc.so": "slurm-wlm-basic-plugins",
    "task_none.so": "slurm-wlm-basic-plugins",
}
# What to apt-get install (slurm-wlm-basic-plugins comes as a dependency; the JWT plugin only as
# a Recommends, so it is named).
DEBIAN_PACKAGES = ["slurmctld", "slurmd", "slurmrestd", "slurm-client", "munge",
                   "slurm-wlm-jwt-plugin"]
PLUGIN_DIR_GLOBS = ["/usr/lib/*/slurm-wlm", "/usr/lib/slurm-wlm", "/usr/lib64/slurm",
                    "/usr/lib/slurm"]
SBIN_DIRS = ["/usr/sbin", "/sbin", "/usr/local/sbin"]

NVIDIA_MAJOR = 195          # the character-device major number of /dev/nvidiaN
UNIX_PATH_MAX = 107         # sun_path is 108 bytes including the terminating NUL
STATE_FILE = "cluster.json"


class ClusterError(RuntimeError):
    """Raised with a message meant for a person: what failed, and where to look."""


class MissingPackages(ClusterError):
    """Programs or plugins are not installed; the message names the Debian packages."""


class NeedsRoot(ClusterError):
    """Something only root can do (mknod of the fake GPU devices)."""


class RestUnavailable(ClusterError):
    """slurmrestd did not answer (connection refused, reset or timed out)."""


# ----------------------------------------------------------------------------------------------
# Small helpers


def _which(name: str) -> Optional[str]:
    path = os.environ.get("PATH", "") + os.pathsep + os.pathsep.join(SBIN_DIRS)
    return shutil.which(name, path=path)


def find_plugin_dir() -> Optional[str]:
    for pattern in PLUGIN_DIR_GLOBS:
        for d in sorted(glob.glob(pattern)):
            if os.path.isfile(os.path.join(d, "auth_munge.so")):
                return d
    return None


def check_prerequisites() -> dict[str, str]:
    """Returns {binary: path}; raises ClusterError naming the Debian packages that are missing."""
    found: dict[str, str] = {}
    missing: dict[str, set[str]] = {}
    for binary, package in REQUIRED_BINARIES.items():
        path = _which(binary)
        if path:
            found[binary] = path
        else:
            missing.setdefault(package, set()).add(binary)
    plugin_dir = find_plugin_dir()
    for plugin, package in REQUIRED_PLUGINS.items():
        if not plugin_dir or not os.path.isfile(os.path.join(plugin_dir, plugin)):
            missing.setdefault(package, set()).add("plugin " + plugin)
    if missing:
        lines = [f"  {pkg}: provides {', '.join(sorted(what))}"
                 for pkg, what in sorted(missing.items())]
        raise MissingPackages(
            "Slurm test cluster: required programs or plugins are missing:\n" + "\n".join(lines) +
            "\nInstall them with:\n  apt-get install -y " + " ".join(sorted(missing)) +
            "\n(do NOT install slurm-wlm-emulator: it replaces the daemons through alternatives)")
    found["plugin_dir"] = plugin_dir  # type: ignore[assignment]
    return found


def _tail(path: str, lines: int = 30) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"    (cannot read {path}: {e.strerror})"
    out = text.splitlines()[-lines:]
    if not out:
        return f"    ({path} is empty)"
    return "\n".join("    " + line for line in out)


def _proc_state(pid: int) -> Optional[str]:
    """The state letter from /proc/PID/stat, or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces; the state follows the last ')'.
    return data[data.rfind(")") + 2:][:1] or None


def _proc_cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def pid_alive(pid: int) -> bool:
    """True while PID is a live process (not a zombie). Reaps PID if it is our own child."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass
    state = _proc_state(pid)
    return state is not None and state not in ("Z", "X")


def poll_until(what: str, check: Callable[[], Any], timeout: float,
               interval: float = 0.1, max_interval: float = 1.0,
               on_timeout: Callable[[], str] = lambda: "") -> Any:
    """Calls check() until it returns something truthy; raises ClusterError after timeout seconds.

    check may raise ClusterError to give up early (a daemon died, say)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}\n{on_timeout()}")
        time.sleep(interval)
        interval = min(max_interval, interval * 1.5)


def _free_ports(count: int, low: int = 20000, high: int = 32000) -> list[int]:
    """Picks count distinct TCP ports that are free both on 127.0.0.1 and on the wildcard address.

    They come from below the kernel's ephemeral range (32768+) so outgoing connections made while
    the cluster starts do not take them."""
    chosen: list[int] = []
    held: list[socket.socket] = []
    rng = random.Random()
    tries = 0
    try:
        while len(chosen) < count:
            tries += 1
            if tries > 20000:
                raise ClusterError(f"could not find {count} free TCP ports in {low}-{high}")
            port = rng.randrange(low, high)
            if port in chosen:
                continue
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                s.close()
                continue
            held.append(s)
            chosen.append(port)
    finally:
        for s in held:
            s.close()
    return chosen


def check_secure_ancestors(path: str) -> None:
    """munged refuses to start when a directory above its socket, key or seed file can be
    written by others (without the sticky bit) or belongs to another user; say so up front."""
    me = os.geteuid()
    d = os.path.realpath(path)
    while True:
        try:
            st = os.stat(d)
        except FileNotFoundError:
            st = None
        if st is not None:
            writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            if writable and not st.st_mode & stat.S_ISVTX:
                raise ClusterError(
                    f"munged would refuse {path}: {d} is group- or world-writable without the "
                    f"sticky bit (mode {stat.S_IMODE(st.st_mode):o}); use another directory or "
                    f"chmod g-w,o-w {d} (or chmod +t)")
            if st.st_uid not in (0, me):
                raise ClusterError(
                    f"munged would refuse {path}: {d} belongs to uid {st.st_uid}, neither root "
                    f"nor this user ({me}); use a directory owned by root or by this user")
        parent = os.path.dirname(d)
        if parent == d:
            return
        d = parent


def _hostlist(prefix: str, count: int) -> str:
    return f"{prefix}1" if count == 1 else f"{prefix}[1-{count}]"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_jwt(key: bytes, username: str, lifespan: int = 3600) -> str:
    """An HS256 token in the form Slurm's auth/jwt accepts (claims: iat, exp, sun)."""
    now = int(time.time())
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = _b64url(json.dumps({"iat": now, "exp": now + lifespan, "sun": username},
                                separators=(",", ":")).encode())
    signing_input = f"{header}.{claims}".encode()
    sig = _b64url(hmac.new(key, signing_input, hashlib.sha256).digest())
    return f"{header}.{claims}.{sig}"


# ----------------------------------------------------------------------------------------------
# The cluster


class SlurmCluster:
    """A Slurm cluster of `nodes` emulated nodes with `gpus` fake GPUs each, all under `root`.

    Daemons: one munged, one slurmctld, one slurmd per node (slurmd -N nodeK), one slurmrestd
    (run as an unprivileged user, since slurmrestd refuses root). All listen on loopback ports
    picked at start. GPU i on every node has its own GRES type g<i>, so `--gres=gpu:g2:1` asks
    for exactly GPU 2.
    """

    def __init__(self, root: str, nodes: int = 16, gpus: int = 8, cpus_per_node: int = 32,
                 memory_mb: int = 256000, shards_per_gpu: int = 4, rest: bool = True,
                 rest_user: Optional[str] = None, start_timeout: float = 120.0,
                 slurmd_timeout: int = 30, cred_expire: int = 10,
                 extra_conf: Optional[list[str]] = None, verbose: bool = False):
        if nodes < 1 or gpus < 0:
            raise ValueError("nodes must be >= 1 and gpus >= 0")
        if gpus > 64:
            raise ValueError("gpus must be <= 64")
        self.root = os.path.abspath(root)
        self.nodes = nodes
        self.gpus = gpus
        self.cpus_per_node = cpus_per_node
        self.memory_mb = memory_mb
        self.shards_per_gpu = shards_per_gpu if gpus > 0 else 0
        self.rest_enabled = rest
        self.rest_user = rest_user
        self.start_timeout = start_timeout
        self.slurmd_timeout = slurmd_timeout
        # Slurm holds a requeued job back for cred_expire + 1 seconds (default 120).
        self.cred_expire = max(5, cred_expire)
        # Lines appended to slurm.conf (e.g. "PriorityType=priority/multifactor").
        self.extra_conf = list(extra_conf or [])
        self.verbose = verbose
        self.state: dict[str, Any] = {}
        self._procs: dict[str, subprocess.Popen] = {}
        self._bins: dict[str, str] = {}
        self._deadline = 0.0
        self._tokens: dict[str, tuple[str, float]] = {}

    @property
    def bins(self) -> dict[str, str]:
        """Paths of the Slurm and munge programs (checked on first use)."""
        if not self._bins:
            self._bins = check_prerequisites()
        return self._bins

    # -- paths ---------------------------------------------------------------------------------

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    @property
    def conf(self) -> str:
        return self.path("etc", "slurm.conf")

    @property
    def munge_socket(self) -> str:
        return self.path("munge", "munge.socket")

    @property
    def jwt_key_path(self) -> str:
        return self.path("etc", "jwt_hs256.key")

    def node_name(self, k: int) -> str:
        if not 1 <= k <= self.nodes:
            raise ValueError(f"node index {k} is outside 1..{self.nodes}")
        return f"node{k}"

    def node_names(self) -> list[str]:
        return [f"node{k}" for k in range(1, self.nodes + 1)]

    def env(self, extra: Optional[dict[str, str]] = None) -> dict[str, str]:
        """The environment for Slurm client commands aimed at this cluster."""
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("SLURM_") or k.startswith("SBATCH_") or k.startswith("SQUEUE_"):
                del e[k]
        e["SLURM_CONF"] = self.conf
        e["PATH"] = e.get("PATH", "/usr/bin:/bin") + os.pathsep + os.pathsep.join(SBIN_DIRS)
        if extra:
            e.update(extra)
        return e

    # -- running client commands ----------------------------------------------------------------

    def run(self, args: list[str], check: bool = True, timeout: float = 60.0,
            input: Optional[str] = None, env: Optional[dict[str, str]] = None
            ) -> subprocess.CompletedProcess:
        """Runs a Slurm client command (sbatch, squeue, scontrol...) against this cluster."""
        try:
            cp = subprocess.run(args, env=self.env(env), capture_output=True, text=True,
                                timeout=timeout, input=input)
        except subprocess.TimeoutExpired as e:
            raise ClusterError(f"{' '.join(args)} did not finish within {timeout:.0f}s") from e
        except FileNotFoundError as e:
            raise ClusterError(f"{args[0]} is not installed (package slurm-client)") from e
        if check and cp.returncode != 0:
            raise ClusterError(f"{' '.join(args)} exited with {cp.returncode}:\n"
                               f"stdout: {cp.stdout.strip()}\nstderr: {cp.stderr.strip()}")
        return cp

    def token(self, username: Optional[str] = None, lifespan: int = 3600) -> str:
        """A JWT for slurmrestd, made by `scontrol token` (the controller signs it)."""
        args = ["scontrol", "token", f"lifespan={lifespan}"]
        if username:
            args.append(f"username={username}")
        out = self.run(args).stdout.strip()
        m = re.search(r"SLURM_JWT=(\S+)", out)
        if not m:
            raise ClusterError(f"scontrol token printed no token: {out!r}")
        return m.group(1)

    def local_token(self, username: str = "root", lifespan: int = 3600) -> str:
        """A JWT signed here with the cluster's key, without asking slurmctld."""
        with open(self.jwt_key_path, "rb") as f:
            return make_jwt(f.read(), username, lifespan)

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.state['ports']['slurmrestd']}"

    @property
    def api_version(self) -> str:
        """The newest openapi/v0.0.X plugin slurmrestd offers here, e.g. 'v0.0.38'."""
        return self.state.get("openapi", {}).get("slurm", "v0.0.38")

    def rest(self, method: str, path: str, body: Any = None, user: Optional[str] = None,
             token: Optional[str] = None, timeout: float = 30.0, prefix: bool = True
             ) -> tuple[int, Any]:
        """Calls slurmrestd. path is relative to /slurm/<api_version> unless prefix=False.

        Returns (HTTP status, decoded JSON or the raw text if it is not JSON)."""
        if not self.state.get("ports", {}).get("slurmrestd"):
            raise ClusterError("slurmrestd is not part of this cluster (started with rest=False)")
        user = user or pwd.getpwuid(os.getuid()).pw_name
        if token is None:
            token = self._cached_token(user)
        url = self.rest_url + (f"/slurm/{self.api_version}" if prefix else "") + path
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method, headers={
            "X-SLURM-USER-NAME": user, "X-SLURM-USER-TOKEN": token,
            "Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise RestUnavailable(f"slurmrestd did not answer {method} {url}: {reason}") from e
        text = raw.decode("utf-8", "replace")
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def _cached_token(self, user: str) -> str:
        tok, made = self._tokens.get(user, ("", 0.0))
        if not tok or time.time() - made > 1800:   # tokens are made to last an hour
            tok = self.token(user)
            self._tokens[user] = (tok, time.time())
        return tok

    # -- state file ------------------------------------------------------------------------------

    def _save_state(self) -> None:
        tmp = self.path(STATE_FILE + ".tmp")
        with open(tmp, "w") as f:
            json.dump(self.state, f, indent=2, sort_keys=True)
        os.replace(tmp, self.path(STATE_FILE))

    @classmethod
    def load(cls, root: str) -> "SlurmCluster":
        """A handle on a cluster started earlier (perhaps by another process) under root."""
        root = os.path.abspath(root)
        try:
            with open(os.path.join(root, STATE_FILE)) as f:
                state = json.load(f)
        except FileNotFoundError:
            raise ClusterError(f"{root} holds no Slurm test cluster ({STATE_FILE} is missing)")
        c = cls(root, nodes=state["nodes"], gpus=state["gpus"],
                cpus_per_node=state.get("cpus_per_node", 32),
                memory_mb=state.get("memory_mb", 256000),
                shards_per_gpu=state.get("shards_per_gpu", 0), rest=bool(state.get("rest")),
                rest_user=state.get("rest_user"), slurmd_timeout=state.get("slurmd_timeout", 30),
                cred_expire=state.get("cred_expire", 10), extra_conf=state.get("extra_conf"))
        c.state = state
        return c

    # -- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> "SlurmCluster":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> "SlurmCluster":
        """Starts munged, slurmctld, the slurmds and slurmrestd; returns once all answer."""
        self._deadline = time.monotonic() + self.start_timeout
        self._bins = check_prerequisites()
        if len(self.munge_socket) > UNIX_PATH_MAX:
            raise ClusterError(f"directory {self.root} is too long: the munge socket path "
                               f"{self.munge_socket} would exceed {UNIX_PATH_MAX} bytes")
        if os.path.exists(self.path(STATE_FILE)):
            old = SlurmCluster.load(self.root)
            alive = old.alive_daemons()
            if alive:
                raise ClusterError(f"a cluster is already running under {self.root} "
                                   f"({', '.join(sorted(alive))}); stop it first")
        try:
            self._prepare()
            self._start_munged()
            self._start_slurmctld()
            self._start_slurmds()
            if self.rest_enabled:
                self._start_slurmrestd()
        except BaseException:
            try:
                self.stop()
            except Exception as e:  # the start error matters more than a failed cleanup
                print(f"warning: cleanup after failed start: {e}", file=sys.stderr)
            raise
        return self

    # Preparing DIR

    def _prepare(self) -> None:
        uid = os.getuid()
        me = pwd.getpwuid(uid).pw_name
        check_secure_ancestors(self.root)
        os.makedirs(self.root, exist_ok=True)
        # slurmrestd runs as another user and must be able to reach DIR/etc/slurm.conf.
        os.chmod(self.root, 0o755)
        # A fresh cluster every start: job IDs restart at 1, so old job output goes too. The
        # previous run's logs are kept in log.prev.
        for sub in ("spool", "state", "run", "jobs", "log.prev"):
            shutil.rmtree(self.path(sub), ignore_errors=True)
        if os.path.isdir(self.path("log")):
            os.rename(self.path("log"), self.path("log.prev"))
        for sub in ("etc", "log", "run", "state", "spool", "dev", "munge", "jobs"):
            os.makedirs(self.path(sub), exist_ok=True)
        os.chmod(self.path("etc"), 0o755)
        os.chmod(self.path("munge"), 0o755)   # clients (and slurmrestd) reach the socket here
        os.chmod(self.path("state"), 0o700)
        os.chmod(self.path("jobs"), 0o1777)   # job output from any user
        for k in range(1, self.nodes + 1):
            os.makedirs(self.path("spool", f"node{k}"), exist_ok=True)
        for f in (self.munge_socket, self.munge_socket + ".lock"):
            if os.path.lexists(f):
                os.unlink(f)

        self._make_gpu_devices()

        key = self.path("munge", "munge.key")
        if not os.path.exists(key):
            with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
                f.write(os.urandom(1024))
        os.chmod(key, 0o600)
        if not os.path.exists(self.jwt_key_path):
            with open(os.open(self.jwt_key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600),
                      "wb") as f:
                f.write(os.urandom(64))
        os.chmod(self.jwt_key_path, 0o600)

        if self.rest_enabled:
            self.rest_user = self._pick_rest_user()
        names = ["slurmctld"] + self.node_names() + (["slurmrestd"] if self.rest_enabled else [])
        ports = dict(zip(names, _free_ports(len(names))))
        self.state = {
            "root": self.root, "nodes": self.nodes, "gpus": self.gpus,
            "cpus_per_node": self.cpus_per_node, "memory_mb": self.memory_mb,
            "shards_per_gpu": self.shards_per_gpu, "rest": self.rest_enabled,
            "rest_user": self.rest_user, "slurmd_timeout": self.slurmd_timeout,
            "cred_expire": self.cred_expire, "extra_conf": self.extra_conf,
            "slurm_user": me, "ports": ports, "pids": {}, "version": self._slurm_version(),
        }
        self._write_configs()
        self._save_state()

    def _slurm_version(self) -> str:
        cp = subprocess.run([self.bins["slurmctld"], "-V"], capture_output=True, text=True)
        return (cp.stdout or cp.stderr).strip()

    def _make_gpu_devices(self) -> None:
        """DIR/dev/nvidiaN: character devices 195:N. Slurm drops GPUs whose File= is not one."""
        for i in range(self.gpus):
            dev = self.path("dev", f"nvidia{i}")
            want = os.makedev(NVIDIA_MAJOR, i)
            try:
                st = os.lstat(dev)
                if stat.S_ISCHR(st.st_mode) and st.st_rdev == want:
                    continue
                os.unlink(dev)
            except FileNotFoundError:
                pass
            try:
                # 0600: on a machine with the NVIDIA driver 195:N is the real GPU N. Slurm only
                # stat()s the file.
                os.mknod(dev, 0o600 | stat.S_IFCHR, want)
            except PermissionError:
                raise NeedsRoot(
                    f"cannot create the fake GPU device {dev} (mknod c {NVIDIA_MAJOR} {i}): "
                    "that needs root (CAP_MKNOD). Run as root, or create the device nodes "
                    f"beforehand as root: mknod {dev} c {NVIDIA_MAJOR} {i}")

    def _pick_rest_user(self) -> Optional[str]:
        """slurmrestd refuses to run as root: as root, run it as an unprivileged user."""
        if os.getuid() != 0:
            return None   # already unprivileged: run it as ourselves
        for name in ([self.rest_user] if self.rest_user else ["seedance-slurm", "nobody"]):
            try:
                pw = pwd.getpwnam(name)
            except KeyError:
                if self.rest_user:
                    raise ClusterError(f"rest_user {name!r} does not exist")
                continue
            if pw.pw_uid == 0:
                raise ClusterError(f"rest_user {name!r} is root; slurmrestd refuses to run as root")
            return name
        raise ClusterError("no unprivileged user to run slurmrestd as (tried seedance-slurm, "
                           "nobody); create one, e.g. useradd --system seedance-slurm")

    def _write_configs(self) -> None:
        s = self.state
        p = s["ports"]
        user = s["slurm_user"]
        gres_types = ["gpu"] + (["shard"] if self.shards_per_gpu else [])
        node_gres = [f"gpu:g{i}:1" for i in range(self.gpus)]
        if self.shards_per_gpu:
            node_gres.append(f"shard:{self.shards_per_gpu * self.gpus}")
        lines = [
            "# Written by tests/slurm/slurm_cluster.py; regenerated on every start.",
            "ClusterName=seedance-test",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={p['slurmctld']}",
            # slurmd (and slurmrestd, by its argument) bind 127.0.0.1, not every address.
            # slurmctld 22.05 binds 0.0.0.0 all the same.
            "CommunicationParameters=NoInAddrAny",
            f"SlurmUser={user}",
            f"SlurmdUser={user}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket},cred_expire={self.cred_expire}",
            "AuthAltTypes=auth/jwt",
            f"AuthAltParameters=jwt_key={self.jwt_key_path}",
            f"StateSaveLocation={self.path('state')}",
            f"SlurmdSpoolDir={self.path('spool', '%n')}",
            f"SlurmctldPidFile={self.path('run', 'slurmctld.pid')}",
            f"SlurmdPidFile={self.path('run', 'slurmd-%n.pid')}",
            f"SlurmctldLogFile={self.path('log', 'slurmctld.log')}",
            f"SlurmdLogFile={self.path('log', 'slurmd-%n.log')}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            f"PluginDir={self.bins['plugin_dir']}",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            # Without a default a job is given all of a node's memory, and so the whole node.
            "DefMemPerCPU=1024",
            f"GresTypes={','.join(gres_types)}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "MailProg=/bin/true",
            "SwitchType=switch/none",
            # The emulated nodes claim more CPUs and memory than this machine has.
            "SlurmdParameters=config_overrides",
            "ReturnToService=2",
            f"SlurmdTimeout={self.slurmd_timeout}",
            "SlurmctldTimeout=30",
            "InactiveLimit=0",
            "KillWait=5",
            "MinJobAge=300",
            "MaxJobCount=100000",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0",
            "MessageTimeout=30",
            "TCPTimeout=5",
        ]
        for k in range(1, self.nodes + 1):
            name = f"node{k}"
            gres = f" Gres={','.join(node_gres)}" if node_gres else ""
            lines.append(f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 "
                         f"Port={p[name]} CPUs={self.cpus_per_node} "
                         f"RealMemory={self.memory_mb}{gres} State=UNKNOWN")
        lines.append(f"PartitionName=gpu Nodes={_hostlist('node', self.nodes)} Default=YES "
                     "MaxTime=INFINITE State=UP OverSubscribe=NO")
        if self.extra_conf:
            lines.append("# extra_conf")
            lines.extend(self.extra_conf)
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.chmod(self.conf, 0o644)

        gres_lines = ["# Written by tests/slurm/slurm_cluster.py. Each GPU has its own Type, so a",
                      "# job can name GPU i with --gres=gpu:g<i>:1."]
        allnodes = _hostlist("node", self.nodes)
        for i in range(self.gpus):
            gres_lines.append(f"NodeName={allnodes} Name=gpu Type=g{i} "
                              f"File={self.path('dev', f'nvidia{i}')}")
        for i in range(self.gpus if self.shards_per_gpu else 0):
            gres_lines.append(f"NodeName={allnodes} Name=shard Count={self.shards_per_gpu} "
                              f"File={self.path('dev', f'nvidia{i}')}")
        with open(self.path("etc", "gres.conf"), "w") as f:
            f.write("\n".join(gres_lines) + "\n")
        os.chmod(self.path("etc", "gres.conf"), 0o644)
        with open(self.path("etc", "cgroup.conf"), "w") as f:
            f.write("# unused: TaskPlugin=task/none, ProctrackType=proctrack/linuxproc\n")

    # Starting daemons

    def _spawn(self, name: str, argv: list[str], env_extra: Optional[dict[str, str]] = None,
               user: Optional[str] = None) -> subprocess.Popen:
        out = open(self.path("log", f"{name}.out"), "ab")
        kwargs: dict[str, Any] = {}
        if user is not None:
            pw = pwd.getpwnam(user)
            kwargs.update(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
        env = self.env(env_extra)
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=env, cwd=self.root,
                                    start_new_session=True, close_fds=True, **kwargs)
        finally:
            out.close()
        self._procs[name] = proc
        self.state["pids"][name] = {"pid": proc.pid, "exe": os.path.basename(argv[0]),
                                    "argv": argv}
        self._save_state()
        if self.verbose:
            print(f"started {name} pid {proc.pid}: {' '.join(argv)}", file=sys.stderr)
        return proc

    def _died(self, name: str, logs: Iterable[str]) -> ClusterError:
        proc = self._procs.get(name)
        rc = proc.poll() if proc else None
        parts = [f"{name} exited (status {rc}) while the cluster was starting"]
        for log in logs:
            parts.append(f"  last lines of {log}:\n{_tail(log)}")
        return ClusterError("\n".join(parts))

    def _start_munged(self) -> None:
        key = self.path("munge", "munge.key")
        argv = [self.bins["munged"], "--foreground", f"--socket={self.munge_socket}",
                f"--key-file={key}", f"--pid-file={self.path('munge', 'munged.pid')}",
                f"--log-file={self.path('log', 'munged.log')}",
                f"--seed-file={self.path('munge', 'munged.seed')}", "--num-threads=4"]
        self._spawn("munged", argv)
        logs = [self.path("log", "munged.out"), self.path("log", "munged.log")]

        def ready() -> bool:
            if not self._proc_alive("munged"):
                raise self._died("munged", logs)
            if not os.path.exists(self.munge_socket):
                return False
            enc = subprocess.run([self.bins["munge"], "-n", "-S", self.munge_socket],
                                 capture_output=True)
            if enc.returncode != 0:
                return False
            dec = subprocess.run([self.bins["unmunge"], "-S", self.munge_socket],
                                 input=enc.stdout, capture_output=True)
            return dec.returncode == 0

        poll_until("munged to answer on " + self.munge_socket, ready, self._remaining(),
                   on_timeout=lambda: "\n".join(_tail(l) for l in logs))

    def _remaining(self) -> float:
        """Seconds left of the overall start deadline (start_timeout)."""
        return max(1.0, self._deadline - time.monotonic())

    def _start_slurmctld(self) -> None:
        argv = [self.bins["slurmctld"], "-D", "-i", "-f", self.conf]
        self._spawn("slurmctld", argv)
        logs = [self.path("log", "slurmctld.out"), self.path("log", "slurmctld.log")]

        def ready() -> bool:
            if not self._proc_alive("slurmctld"):
                raise self._died("slurmctld", logs)
            cp = self.run(["scontrol", "ping"], check=False, timeout=15)
            return cp.returncode == 0 and "UP" in cp.stdout

        poll_until("`scontrol ping` to report slurmctld UP", ready, self._remaining(),
                   on_timeout=lambda: "\n".join(_tail(l) for l in logs))

    def _slurmd_argv(self, name: str) -> list[str]:
        return [self.bins["slurmd"], "-D", "-N", name, "-f", self.conf]

    def _start_slurmds(self) -> None:
        for name in self.node_names():
            self._spawn(name, self._slurmd_argv(name))
        self.wait_nodes(self.node_names(), ("idle",), timeout=self._remaining())

    # Flags that make a node unusable even though its base state looks fine.
    BAD_NODE_FLAGS = frozenset({"down", "drain", "draining", "drained", "fail", "failing",
                                "not_responding", "future", "power_down", "powered_down",
                                "powering_down", "reboot_requested", "reboot_issued"})

    def node_states(self) -> dict[str, str]:
        """{node name: slurmctld's state, lower case, e.g. 'idle', 'mixed',
        'down+not_responding', 'idle+drain'} from `scontrol show node -o`."""
        cp = self.run(["scontrol", "show", "node", "-o"], check=False, timeout=15)
        states: dict[str, str] = {}
        if cp.returncode == 0:
            for line in cp.stdout.splitlines():
                name = re.search(r"\bNodeName=(\S+)", line)
                state = re.search(r"\bState=(\S+)", line)
                if name and state:
                    states[name.group(1)] = state.group(1).lower()
        return states

    @classmethod
    def state_matches(cls, state: str, wanted: Iterable[str]) -> bool:
        """Whether a node_states() value is one of wanted. A wanted flag ('down', 'drain')
        matches wherever it appears ('mixed+down'); a wanted base state ('idle') matches only
        without flags that make the node unusable ('idle+not_responding' is not idle)."""
        tokens = state.split("+") if state else []
        if not tokens:
            return False
        for w in wanted:
            if w in cls.BAD_NODE_FLAGS:
                if w in tokens:
                    return True
            elif tokens[0] == w and not cls.BAD_NODE_FLAGS.intersection(tokens[1:]):
                return True
        return False

    def wait_nodes(self, names: list[str], states: tuple[str, ...], timeout: float = 60.0,
                   check_daemons: bool = True) -> dict[str, str]:
        """Polls slurmctld until every node in names is in one of states (see state_matches),
        e.g. wait_nodes(["node3"], ("down",)) or (..., ("idle", "mixed"))."""
        last: dict[str, str] = {}

        def ready() -> bool:
            nonlocal last
            if check_daemons:
                for n in names:
                    if n in self.state["pids"] and not self._proc_alive(n):
                        raise self._died(n, [self.path("log", f"{n}.out"),
                                             self.path("log", f"slurmd-{n}.log")])
            last = self.node_states()
            return all(self.state_matches(last.get(n, ""), states) for n in names)

        def explain() -> str:
            bad = {n: last.get(n, "missing") for n in names
                   if not self.state_matches(last.get(n, ""), states)}
            first = next(iter(bad), None)
            msg = f"  nodes not yet {'/'.join(states)}: {bad}"
            if first:
                msg += (f"\n  last lines of slurmd-{first}.log:\n"
                        f"{_tail(self.path('log', f'slurmd-{first}.log'))}")
            msg += f"\n  last lines of slurmctld.log:\n{_tail(self.path('log', 'slurmctld.log'))}"
            return msg

        poll_until(f"nodes {_short(names)} to be {'/'.join(states)} in slurmctld", ready,
                   timeout, on_timeout=explain)
        return last

    def _detect_openapi(self, user: Optional[str]) -> dict[str, Any]:
        """Runs `slurmrestd -s list` (as the rest user) and records the openapi plugins offered."""
        env = {"SLURM_JWT": "daemon"}
        cp = subprocess.run([self.bins["slurmrestd"], "-f", self.conf, "-s", "list"],
                            env=self.env(env), capture_output=True, text=True, timeout=30,
                            **self._user_kwargs(user))
        text = cp.stdout + cp.stderr
        plugins = sorted(set(re.findall(r"openapi/(?:db)?v\d+\.\d+\.\d+", text)))
        cp2 = subprocess.run([self.bins["slurmrestd"], "-f", self.conf, "-a", "list"],
                             env=self.env(env), capture_output=True, text=True, timeout=30,
                             **self._user_kwargs(user))
        auths = sorted(set(re.findall(r"rest_auth/\w+", cp2.stdout + cp2.stderr)))
        slurm = [p.split("/")[1] for p in plugins if p.startswith("openapi/v")]
        if not slurm:
            raise ClusterError("`slurmrestd -s list` offered no openapi/v0.0.X plugin:\n" + text)
        newest = max(slurm, key=lambda v: tuple(int(x) for x in v[1:].split(".")))
        return {"plugins": plugins, "auth_plugins": auths, "slurm": newest}

    @staticmethod
    def _user_kwargs(user: Optional[str]) -> dict[str, Any]:
        if user is None:
            return {}
        pw = pwd.getpwnam(user)
        return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}

    def _start_slurmrestd(self) -> None:
        user = self.rest_user
        info = self._detect_openapi(user)
        self.state["openapi"] = info
        # Only the openapi/v0.0.X plugins: the openapi/dbv0.0.X ones talk to slurmdbd, which
        # this cluster does not run.
        load = ",".join(p for p in info["plugins"] if p.startswith("openapi/v"))
        listen = f"127.0.0.1:{self.state['ports']['slurmrestd']}"
        argv = [self.bins["slurmrestd"], "-f", self.conf, "-a", "rest_auth/jwt", "-s", load,
                listen]
        self._spawn("slurmrestd", argv, env_extra={"SLURM_JWT": "daemon"}, user=user)
        logs = [self.path("log", "slurmrestd.out")]
        token = self.token(pwd.getpwuid(os.getuid()).pw_name)

        def ready() -> bool:
            if not self._proc_alive("slurmrestd"):
                raise self._died("slurmrestd", logs)
            try:
                status, body = self.rest("GET", "/ping", token=token, timeout=5)
            except RestUnavailable:
                return False
            if status != 200 or not isinstance(body, dict):
                return False
            pings = body.get("pings") or []
            return any(str(p.get("ping", "")).upper() == "UP" for p in pings)

        poll_until(f"slurmrestd to answer GET /slurm/{self.api_version}/ping on {listen}",
                   ready, self._remaining(),
                   on_timeout=lambda: "\n".join(_tail(l) for l in logs))
        self._save_state()

    # Process bookkeeping

    def _proc_alive(self, name: str) -> bool:
        proc = self._procs.get(name)
        if proc is not None:
            return proc.poll() is None
        info = self.state.get("pids", {}).get(name)
        if not info:
            return False
        return self._pid_matches(info) and pid_alive(info["pid"])

    def _pid_matches(self, info: dict[str, Any]) -> bool:
        """Guards against PID reuse: the process must still be the daemon we started here."""
        cmd = _proc_cmdline(info["pid"])
        if not cmd:
            return False
        if os.path.basename(cmd[0]) != info["exe"]:
            return False
        return any(self.root in a for a in cmd)

    def alive_daemons(self) -> list[str]:
        return [n for n in self.state.get("pids", {}) if self._proc_alive(n)]

    def _signal(self, name: str, sig: int) -> bool:
        info = self.state.get("pids", {}).get(name)
        if not info or not self._proc_alive(name):
            return False
        try:
            os.kill(info["pid"], sig)
        except ProcessLookupError:
            return False
        return True

    def _wait_exit(self, names: list[str], timeout: float) -> list[str]:
        """Waits for the named daemons to exit; returns those still alive after timeout."""
        deadline = time.monotonic() + timeout
        interval = 0.05
        while True:
            alive = [n for n in names if self._proc_alive(n)]
            if not alive or time.monotonic() >= deadline:
                return alive
            time.sleep(interval)
            interval = min(0.5, interval * 1.5)

    def _stop_group(self, names: list[str], grace: float) -> None:
        names = [n for n in names if self._signal(n, signal.SIGTERM)]
        stubborn = self._wait_exit(names, grace)
        for n in stubborn:
            self._signal(n, signal.SIGKILL)
        still = self._wait_exit(stubborn, 10.0)
        if still:
            raise ClusterError(f"daemons did not exit even after SIGKILL: {still}")

    def stop(self, grace: float = 15.0) -> None:
        """Stops every daemon started under root; safe to call when nothing is running."""
        if not self.state:
            if not os.path.exists(self.path(STATE_FILE)):
                return
            self.state = SlurmCluster.load(self.root).state
        pids = self.state.get("pids", {})
        nodes = [n for n in pids if re.fullmatch(r"node\d+", n)]
        if self._proc_alive("slurmctld") and nodes and any(self._proc_alive(n) for n in nodes):
            self._cancel_all_jobs()
        stepds = self._find_stepds()
        self._stop_group(nodes, grace)
        self._stop_group(["slurmctld"], grace)
        self._stop_group(["slurmrestd"], grace)
        self._stop_group(["munged"], grace)
        self._kill_stray(stepds + self._find_stepds(), grace)
        for proc in self._procs.values():
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        self._procs.clear()
        self.state["pids"] = {}
        if os.path.isdir(self.root) and os.path.exists(self.path(STATE_FILE)):
            self._save_state()

    def _cancel_all_jobs(self) -> None:
        cp = self.run(["squeue", "-h", "-o", "%i"], check=False, timeout=15)
        ids = cp.stdout.split() if cp.returncode == 0 else []
        if not ids:
            return
        self.run(["scancel"] + ids, check=False, timeout=30)

        def gone() -> bool:
            cp = self.run(["squeue", "-h", "-t", "all", "-o", "%T"], check=False, timeout=15)
            if cp.returncode != 0:
                return True
            return not any(s in ("RUNNING", "COMPLETING", "PENDING", "CONFIGURING")
                           for s in cp.stdout.split())

        try:
            poll_until("cancelled jobs to finish", gone, 30.0)
        except ClusterError:
            pass   # the slurmstepd sweep below handles what is left

    def _find_stepds(self, node: Optional[str] = None) -> list[int]:
        """slurmstepd processes of this cluster (or of one node): found by the step sockets they
        hold under DIR/spool/<node>/, since their command line does not name DIR."""
        spool = self.path("spool", node) if node else self.path("spool")
        spool += os.sep
        inodes: set[str] = set()
        try:
            with open("/proc/net/unix") as f:
                for line in f.readlines()[1:]:
                    parts = line.split()
                    if len(parts) >= 8 and parts[7].startswith(spool):
                        inodes.add(parts[6])
        except OSError:
            return []
        if not inodes:
            return []
        pids: list[int] = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            cmd = _proc_cmdline(int(d))
            if not cmd or not cmd[0].startswith("slurmstepd"):
                continue
            try:
                for fd in os.listdir(f"/proc/{d}/fd"):
                    link = os.readlink(f"/proc/{d}/fd/{fd}")
                    if link.startswith("socket:[") and link[8:-1] in inodes:
                        pids.append(int(d))
                        break
            except OSError:
                continue
        return pids

    @staticmethod
    def _with_descendants(pids: list[int]) -> list[int]:
        """pids and every process below them (the job scripts a slurmstepd runs)."""
        children: dict[int, list[int]] = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat", "rb") as f:
                    data = f.read().decode("utf-8", "replace")
                ppid = int(data[data.rfind(")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(d))
        out: list[int] = []
        todo = list(pids)
        while todo:
            p = todo.pop()
            if p in out:
                continue
            out.append(p)
            todo.extend(children.get(p, []))
        return out

    @classmethod
    def _kill_stray(cls, pids: list[int], grace: float, sig: int = signal.SIGTERM) -> None:
        """Signals the slurmstepds in pids and their job processes; SIGKILL after grace."""
        pids = sorted(p for p in set(cls._with_descendants(pids)) if pid_alive(p))
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        for p in pids:
            if pid_alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    # Node loss

    def kill_node(self, k: int, with_steps: bool = True) -> None:
        """SIGKILLs node k's slurmd and waits until it is gone: the node is lost.

        With with_steps (the default) the node's slurmstepd processes and the jobs they run are
        SIGKILLed too, as when a machine dies; restart_node(k) then reports a reboot. With
        with_steps=False they keep running, as on a node whose slurmd alone crashed (stop()
        sweeps them up). slurmctld marks the node DOWN (not responding) some time after
        SlurmdTimeout seconds (29 s with SlurmdTimeout=10 here) and requeues its jobs."""
        name = self.node_name(k)
        steps = self._with_descendants(self._find_stepds(name)) if with_steps else []
        if not self._signal(name, signal.SIGKILL):
            raise ClusterError(f"slurmd for {name} is not running")
        self.state.setdefault("lost_steps", {})[name] = with_steps
        self._save_state()
        for p in steps:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._wait_exit([name], 10.0):
            raise ClusterError(f"slurmd for {name} survived SIGKILL")
        deadline = time.monotonic() + 10.0
        while any(pid_alive(p) for p in steps):
            if time.monotonic() >= deadline:
                raise ClusterError(f"job processes on {name} survived SIGKILL: "
                                   f"{[p for p in steps if pid_alive(p)]}")
            time.sleep(0.05)

    def restart_node(self, k: int, rebooted: Optional[bool] = None, timeout: float = 60.0
                     ) -> None:
        """Starts node k's slurmd again and waits until slurmctld sees it usable.

        rebooted (default: whether the last kill_node(k) killed the node's jobs too) means the
        machine is taken to have died and come back: if slurmctld has not yet marked the node
        DOWN, it is set DOWN first (`scontrol update State=DOWN`, so its jobs are requeued or
        end NODE_FAIL as after SlurmdTimeout), and slurmd starts with -b (report a reboot).
        This is needed because all emulated nodes share this machine's boot time: slurmctld
        takes a quick slurmd restart for a slurmd restart on a live machine, keeps the jobs
        it thought were there RUNNING, and - their processes being gone - for ever.
        ReturnToService=2 returns the node to service when it registers."""
        name = self.node_name(k)
        if self._proc_alive(name):
            raise ClusterError(f"slurmd for {name} is already running; kill_node({k}) first")
        lost = self.state.setdefault("lost_steps", {})
        if rebooted is None:
            rebooted = bool(lost.get(name))
        if rebooted and not self.state_matches(self.node_states().get(name, ""), ("down",)):
            self.run(["scontrol", "update", f"NodeName={name}", "State=DOWN",
                      "Reason=harness: node lost"])
            self.wait_nodes([name], ("down",), timeout=30, check_daemons=False)
        lost.pop(name, None)
        self._spawn(name, self._slurmd_argv(name) + (["-b"] if rebooted else []))
        self.wait_nodes([name], ("idle", "allocated", "mixed", "completing"), timeout=timeout)

    # Status

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"root": self.root, "daemons": {}}
        for name, info in sorted(self.state.get("pids", {}).items()):
            out["daemons"][name] = {"pid": info["pid"],
                                    "alive": self._proc_alive(name)}
        out["ports"] = self.state.get("ports", {})
        out["openapi"] = self.state.get("openapi", {})
        out["version"] = self.state.get("version")
        if self._proc_alive("slurmctld"):
            out["nodes"] = self.node_states()
        return out


def _short(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]}..{names[-1]} ({len(names)})"


# ----------------------------------------------------------------------------------------------
# CLI


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("start", help="start a cluster under DIR and return once it is ready")
    st.add_argument("dir")
    st.add_argument("--nodes", type=int, default=16)
    st.add_argument("--gpus", type=int, default=8)
    st.add_argument("--cpus", type=int, default=32, help="CPUs each emulated node claims")
    st.add_argument("--memory-mb", type=int, default=256000)
    st.add_argument("--shards-per-gpu", type=int, default=4, help="0 disables gres/shard")
    st.add_argument("--no-rest", action="store_true", help="do not start slurmrestd")
    st.add_argument("--rest-user", help="user to run slurmrestd as (default seedance-slurm, "
                                        "else nobody)")
    st.add_argument("--timeout", type=float, default=120.0, help="overall start deadline (s)")
    st.add_argument("--slurmd-timeout", type=int, default=30,
                    help="seconds before slurmctld marks a silent node DOWN")
    st.add_argument("--cred-expire", type=int, default=10,
                    help="job credential lifetime; a requeued job waits this long + 1s")
    st.add_argument("--conf", action="append", default=[], metavar="LINE",
                    help="a line to append to slurm.conf (repeatable)")
    st.add_argument("-v", "--verbose", action="store_true")
    sub.add_parser("check", help="check that the Debian packages needed are installed")
    for name, help_ in (("stop", "stop the cluster under DIR (idempotent)"),
                        ("status", "print the daemons, ports and node states as JSON"),
                        ("env", "print shell exports for using the cluster's clients")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("dir")
    for name, help_ in (("kill-node", "SIGKILL node K's slurmd and its jobs' processes"),
                        ("restart-node", "start node K's slurmd again")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("dir")
        p.add_argument("k", type=int)
        if name == "kill-node":
            p.add_argument("--keep-steps", action="store_true",
                           help="leave the node's slurmstepd processes and jobs running")
        else:
            p.add_argument("--rebooted", action="store_true",
                           help="slurmd -b: report a reboot (the default after kill-node "
                                "without --keep-steps)")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "check":
            found = check_prerequisites()
            print(f"all present (plugins in {found['plugin_dir']}); packages: "
                  + " ".join(DEBIAN_PACKAGES))
            return 0
        if args.cmd == "start":
            t0 = time.monotonic()
            c = SlurmCluster(args.dir, nodes=args.nodes, gpus=args.gpus, cpus_per_node=args.cpus,
                             memory_mb=args.memory_mb, shards_per_gpu=args.shards_per_gpu,
                             rest=not args.no_rest, rest_user=args.rest_user,
                             start_timeout=args.timeout, slurmd_timeout=args.slurmd_timeout,
                             cred_expire=args.cred_expire, extra_conf=args.conf,
                             verbose=args.verbose)
            c.start()
            print(f"cluster ready under {c.root} in {time.monotonic() - t0:.1f}s: "
                  f"{c.nodes} nodes x {c.gpus} GPUs; {c.state['version']}")
            print(f"export SLURM_CONF={c.conf}")
            if c.rest_enabled:
                print(f"slurmrestd: {c.rest_url}/slurm/{c.api_version}/ "
                      f"(as user {c.rest_user or 'self'}; plugins "
                      f"{', '.join(c.state['openapi']['plugins'])})")
            return 0
        if args.cmd == "stop":
            root = os.path.abspath(args.dir)
            if not os.path.exists(os.path.join(root, STATE_FILE)):
                print(f"no cluster under {root}; nothing to stop")
                return 0
            SlurmCluster.load(root).stop()
            print(f"stopped the cluster under {root}")
            return 0
        c = SlurmCluster.load(args.dir)
        if args.cmd == "status":
            s = c.status()
            print(json.dumps(s, indent=2, sort_keys=True))
            return 0 if s["daemons"] and all(d["alive"] for d in s["daemons"].values()) else 1
        if args.cmd == "env":
            print(f"export SLURM_CONF={c.conf}")
            return 0
        if args.cmd == "kill-node":
            c.kill_node(args.k, with_steps=not args.keep_steps)
            return 0
        if args.cmd == "restart-node":
            c.restart_node(args.k, rebooted=True if args.rebooted else None)
            return 0
    except (ClusterError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
