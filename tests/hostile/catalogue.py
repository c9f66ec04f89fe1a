"""The hostile-input catalogue: every case the driver (hostile.py) runs.

A case is a table row: class, name, argv (with placeholders), expected exit status (0, 1, 2, or
a tuple of the statuses a documented rule allows), substrings the message must contain, and
post-conditions. Placeholders in argv and messages:

  {T}            the case's own temporary directory (the command's working directory)
  {NAME}         the path of NAME inside it; a fixture below is written there on first use
  {port}         the port of the server the case starts (HTTP Prometheus or UDP SNTP)

Every case also checks, whatever its table row says: no crash (signal, sanitizer, invariant),
no hang, every file the case prepared is unchanged (same inode, same bytes) unless listed as
`mutable`, FIFOs/devices/symlinks keep their kind, no `.NAME.seedance-*` temp file is left, a
failing run creates no file, and its message is non-empty, under 4 KB a line and readable.

Classes (the issue's "Why" list, plus the valid controls that keep the fixtures honest):
  destroy     output flags aimed at FIFOs, devices, symlinks, inputs, /dev/null
  write-fail  outputs that cannot be written (/dev/full, read-only, missing or unwritable dirs)
  hang        hangs and memory blow-ups (unbounded windows, seed ranges, /dev/zero, silent
              FIFOs, alias bombs, deep nesting, slow and endless HTTP, silent SNTP)
  bad-value   aborts on bad values (nan, inf, overflow, garbage in every numeric flag;
              directories and invalid UTF-8 as inputs and names)
  garbage     silent garbage: values and files that parse but mean nothing
  injection   HTML, terminal and credential injection through names and paths
  exit-code   exit statuses and messages: unknown commands/flags, -o json, missing inputs, caps
  control     valid inputs that must succeed with valid output
"""

import base64
import json
import os
import struct

# ----------------------------------------------------------------------------------------------
# Fixtures: small valid inputs, written into a case's directory when its argv names them.

NODES_CSV = ("sn,cpu_milli,memory_mib,gpu,model\n"
             "n0,32000,65536,2,T4\n"
             "n1,32000,65536,4,V100M32\n")
PODS_CSV = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
            "p0,1000,1024,1,500\n"
            "p1,2000,2048,1,1000\n"
            "p2,500,512,0,0\n")
PODS_FULL_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                    "creation_time,deletion_time,scheduled_time\n")
PODS_REPLAY = PODS_FULL_HEADER + "".join(
    "r%d,1000,1024,1,%d,,LS,Running,%d,%d,%d\n" % (i, 500 if i % 2 else 1000, i * 600,
                                                    i * 600 + 3600, i * 600)
    for i in range(8))
CLUSTER_YAML = """name: t
gpu_models:
  T4: {memory_mib: 15360, price_usd_per_hour: 0.35, power_w: 70}
nodes:
  - name: node-a
    numa_nodes:
      - {id: 0, cpu_milli: 32000, memory_mib: 131072}
    devices:
      - {id: gpu0, type: gpu, model: T4, capacity: {memory_mib: 15360}, binding: {numa_node: 0}}
      - {id: gpu1, type: gpu, model: T4, capacity: {memory_mib: 15360}, binding: {numa_node: 0}}
"""
CLUSTER_JSON = """{"name": "t",
 "gpu_models": {"T4": {"memory_mib": 15360, "price_usd_per_hour": 0.35, "power_w": 70}},
 "nodes": [{"name": "node-a",
            "numa_nodes": [{"id": 0, "cpu_milli": 32000, "memory_mib": 131072}],
            "devices": [{"id": "gpu0", "type": "gpu", "model": "T4",
                         "capacity": {"memory_mib": 15360}, "binding": {"numa_node": 0}}]}]}
"""


def profile_json(names=("a", "b", "c", "d"), utils=((1, 2), (50, 60), (3, 4), (5, 6)),
                 model="NVIDIA L4", pods=None, source="t", extra_node="", timestamps="[0, 1]"):
    nodes = []
    for i, (n, u) in enumerate(zip(names, utils)):
        pod = ""
        if pods and i < len(pods):
            pod = (', "pods": [{"name": %s, "namespace": "ml", "cpu_milli": 1000, '
                   '"memory_mib": 1024, "num_gpus": 1, "gpu_milli": 1000, "gpu_ids": [0]}]'
                   % pods[i])
        nodes.append('{"name": %s, "cpus": 8, "memory_mib": 65536, "gpus": [{"index": 0, '
                     '"model": %s, "memory_mib": 23034, "util_pct": [%s, %s]}]%s%s}'
                     % (n if n.startswith('"') else '"%s"' % n,
                        model if model.startswith('"') else '"%s"' % model, u[0], u[1], pod,
                        extra_node))
    return ('{"version": 1, "source": %s, "start_unix_s": 1764450000, "interval_s": 1, '
            '"timestamps_s": %s, "nodes": [%s]}\n'
            % (source if source.startswith('"') else '"%s"' % source, timestamps,
               ", ".join(nodes)))


PROFILE_JSON = profile_json()
PRICES_YAML = 'source: "test rates"\nhours_per_month: 730\ngpu_usd_per_hour:\n  L4: 1.0\n'
AZURE_CSV = ("TIMESTAMP,ContextTokens,GeneratedTokens\n"
             "2023-11-16 18:15:46.6805900,374,44\n"
             "2023-11-16 18:15:50.9951690,396,109\n"
             "2023-11-16 18:15:51.5272310,879,30\n"
             "2023-11-16 18:15:53.1000000,120,8\n")
MOONCAKE_JSONL = "".join('{"timestamp": %d, "input_length": %d, "output_length": 12, '
                         '"hash_ids": [%s]}\n' % (i * 100, 600 + i, "0, %d" % (i + 1))
                         for i in range(4))
SHAREGPT_CSV = ("num_prefill_tokens,num_decode_tokens\n"
                "120,30\n700,12\n64,200\n300,44\n")
ALLREDUCE_HEADER = (",time_stats.all_reduce.min,time_stats.all_reduce.max,"
                    "time_stats.all_reduce.mean,time_stats.all_reduce.median,"
                    "time_stats.all_reduce.std,rank,num_workers,size,collective,"
                    "devices_per_node,max_devices_per_node\n")


def allreduce_rows(rows):
    return ALLREDUCE_HEADER + "".join(
        "%d,%s,%s,%s,%s,0.001,0,%s,%s,all_reduce,%s,8\n" % (i, m, m, m, m, w, s, dpn)
        for i, (w, s, m, dpn) in enumerate(rows))


ALLREDUCE_CSV = allreduce_rows([(w, s, "%.4f" % (0.02 + w * 0.005 + s / 4e7), 8)
                                for w in (2, 4, 8)
                                for s in (2048, 65536, 1048576, 16777216)])

APPLY_YAML = """kind: Node
name: gpu-a
cpu_milli: 32000
memory_mib: 65536
num_gpus: 2
gpu_model: T4
---
kind: Pod
name: train-1
cpu_milli: 1000
num_gpu: 1
gpu_milli: 500
"""
APPLY_JSON = ('[{"kind": "Node", "name": "gpu-a", "cpu_milli": 32000, "memory_mib": 65536, '
              '"num_gpus": 2, "gpu_model": "T4"}, {"kind": "Pod", "name": "train-1", '
              '"cpu_milli": 1000, "num_gpu": 1, "gpu_milli": 500}]\n')
POLICY_YAML = """profiles:
  - name: default
    placement: bestfit
"""
SERVER_TOKEN = "hostile-token-0123456789abcdef"
JOBS_CSV = ("timestamp,duration,num_gpus,gpu_time,cluster\n"
            "2017-10-01 00:00:10,100.0,1,100.0,aa\n"
            "2017-10-01 00:00:05,50.0,8,400.0,bb\n"
            "2017-10-01 00:01:00,20.0,12,240.0,aa\n"
            "2017-10-01 00:01:00,5.0,2,10.0,bb\n")
VC_CSV = "vc,node num\naa,2\nbb,1\n"

K8S_NODES_JSON = ('{"apiVersion": "v1", "items": [{"apiVersion": "v1", "kind": "Node", '
                  '"metadata": {"name": "gpu-a", "labels": {"nvidia.com/gpu.product": "Tesla-T4", '
                  '"nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "15360"}}, '
                  '"status": {"allocatable": {"cpu": "31900m", "memory": "64Gi", '
                  '"nvidia.com/gpu": "2", "pods": "110"}}}], "kind": "List", '
                  '"metadata": {"resourceVersion": ""}}\n')
K8S_PODS_JSON = ('{"apiVersion": "v1", "items": [{"apiVersion": "v1", "kind": "Pod", '
                 '"metadata": {"name": "train-1", "namespace": "ml", '
                 '"creationTimestamp": "2026-11-30T09:00:00Z"}, "spec": {"containers": [{"name": '
                 '"c", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": '
                 '{"nvidia.com/gpu": "1"}}}], "nodeName": "gpu-a"}, "status": {"phase": '
                 '"Running"}}, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "infer-2", '
                 '"namespace": "ml", "annotations": {"gpu-fraction": "0.5"}}, "spec": '
                 '{"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}, '
                 '"status": {"phase": "Pending"}}], "kind": "List", '
                 '"metadata": {"resourceVersion": ""}}\n')

FIXTURES = {
    "nodes.csv": NODES_CSV,
    "k8s_nodes.json": K8S_NODES_JSON,
    "k8s_pods.json": K8S_PODS_JSON,
    "apply.yaml": APPLY_YAML,
    "apply.json": APPLY_JSON,
    "policy.yaml": POLICY_YAML,
    "token": SERVER_TOKEN + "\n",
    "tenant_tokens.csv": "tenant-token-0123456789abcdef,team-a,a\n",
    "pods.csv": PODS_CSV,
    "pods_replay.csv": PODS_REPLAY,
    "cluster.yaml": CLUSTER_YAML,
    "cluster.json": CLUSTER_JSON,
    "profile.json": PROFILE_JSON,
    "prices.yaml": PRICES_YAML,
    "azure.csv": AZURE_CSV,
    "mooncake.jsonl": MOONCAKE_JSONL,
    "sharegpt.csv": SHAREGPT_CSV,
    "allreduce.csv": ALLREDUCE_CSV,
    "jobs.csv": JOBS_CSV,
    "vc.csv": VC_CSV,
}

ESC = "\x1b[2J\x1b[31m"             # clear screen, red
HTML_BAD = "</script><img src=x onerror=alert(1)>"
HUGE_LINE = "x" * (2 << 20)         # a 2 MB field

# ----------------------------------------------------------------------------------------------


class Case:
    def __init__(self, cls, name, argv, exit=2, msg=(), stdin=None, files=None, setup=(),
                 out=(), mutable=(), absent=(), present=(), timeout=None, max_s=None,
                 nobody=False, server=None, env=None, stdout=None, command=None,
                 no_new_files=False):
        self.no_new_files = no_new_files
        self.cls = cls
        self.name = name
        self.argv = list(argv)
        self.exit = exit
        self.msg = list(msg)
        self.stdin = stdin
        self.files = dict(files or {})
        self.setup = list(setup)
        self.out = list(out)
        self.mutable = set(mutable)
        self.absent = list(absent)
        self.present = list(present)
        self.timeout = timeout
        self.max_s = max_s
        self.nobody = nobody
        self.server = server
        self.env = dict(env or {})
        self.stdout = stdout
        self.command = command or command_of(self.argv)
        self.id = "%s/%s" % (cls, name)


COMMANDS = {"simulate": (), "profile": (), "analyze": (), "serve-sim": (),
            "costmodel": ("check", "fit"), "model": ("run", "analyze", "plan", "quantize", "sparsify", "optimize", "ops"), "clock": ("probe", "simulate"), "bench": ("timers",),
            "version": (), "help": (), "completion": (), "server": (),
            "get": ("nodes", "pods", "pod", "queues"), "apply": (), "delete": ("pod",), "explain": (),
            "cordon": (), "uncordon": (), "node-agent": ("topology", "pin", "cache", "prewarm-wait"), "device-plugin": (),
            "submit": (), "cache": ("simulate",),
            "experiment": ("create", "list", "get", "report", "stop", "delete", "assign",
                           "events")}


def command_of(argv):
    """The (sub)command a case runs, for grouping: 'simulate churn', 'clock probe', 'top'."""
    words = [a for a in argv if isinstance(a, str)]
    i = 0
    while i < len(words) and words[i].startswith("-"):  # global flags
        i += 2 if words[i] == "--max-input-size" else 1
    if i >= len(words) or words[i] not in COMMANDS:
        return "top"
    cmd = words[i]
    subs = COMMANDS[cmd]
    if subs:
        sub = words[i + 1] if i + 1 < len(words) else ""
        return cmd + " " + sub if sub in subs else cmd
    if cmd == "simulate":
        mode = "fill"
        if "--mode" in words:
            j = words.index("--mode")
            mode = words[j + 1] if j + 1 < len(words) else ""
        return cmd + " " + mode if mode in ("fill", "churn", "replay", "jobs", "autoscale") else cmd
    return cmd


# ----------------------------------------------------------------------------------------------
# Commands that write a main output: base argv (without -o), output format of a .json -o, the
# inputs it reads (fixture names), and whether --format json exists.

SNTP_GOOD = ("sntp", "good")


class Writer:
    def __init__(self, key, argv, fmt="json", inputs=(), server=None, format_flag=True):
        self.key = key
        self.argv = argv
        self.fmt = fmt
        self.inputs = inputs
        self.server = server
        self.format_flag = format_flag


# --mode autoscale replaying a job trace (the jobs on the tenants' pooled 8-GPU nodes).
SIM_AS_TRACE = ["simulate", "-q", "--mode", "autoscale", "--trace", "{jobs.csv}", "--tenants",
                "{vc.csv}", "--seeds", "1"]
WRITERS = [
    Writer("version", ["version"]),
    Writer("simulate-fill", ["simulate", "-q", "--nodes", "{nodes.csv}", "--pods", "{pods.csv}",
                             "--policy", "bestfit", "--seeds", "1"],
           inputs=("nodes.csv", "pods.csv")),
    Writer("simulate-churn", ["simulate", "-q", "--nodes", "{cluster.yaml}", "--pods",
                              "{pods_replay.csv}", "--policy", "bestfit", "--seeds", "1",
                              "--mode", "churn", "--duration", "2", "--warmup", "0"],
           inputs=("cluster.yaml", "pods_replay.csv")),
    Writer("simulate-replay", ["simulate", "-q", "--nodes", "{nodes.csv}", "--pods",
                               "{pods_replay.csv}", "--policy", "bestfit", "--seeds", "1",
                               "--mode", "replay"],
           inputs=("nodes.csv", "pods_replay.csv")),
    Writer("simulate-autoscale", ["simulate", "-q", "--nodes", "{nodes.csv}", "--pods",
                                  "{pods_replay.csv}", "--seeds", "1", "--mode", "autoscale",
                                  "--duration", "2", "--warmup", "0"],
           inputs=("nodes.csv", "pods_replay.csv")),
    Writer("simulate-jobs", ["simulate", "-q", "--mode", "jobs", "--trace", "{jobs.csv}",
                             "--tenants", "{vc.csv}", "--policy", "all"],
           inputs=("jobs.csv", "vc.csv")),
    Writer("simulate-autoscale-trace", SIM_AS_TRACE + ["--duration", "2", "--warmup", "0"],
           inputs=("jobs.csv", "vc.csv")),
    Writer("profile", ["profile", "-q", "--duration", "1", "--interval", "0.5"], fmt="profile",
           format_flag=False),
    Writer("analyze", ["analyze", "-i", "{profile.json}", "--idle-window", "2", "--prices",
                       "{prices.yaml}"], inputs=("profile.json", "prices.yaml")),
    Writer("serve-sim", ["serve-sim", "--trace", "{azure.csv}", "--batching",
                         "continuous,static"], inputs=("azure.csv",)),
    Writer("costmodel-check", ["costmodel", "check", "--profile", "{allreduce.csv}", "--gpu",
                               "h100"], inputs=("allreduce.csv",)),
    Writer("costmodel-fit", ["costmodel", "fit", "--profile", "{allreduce.csv}", "--gpu",
                             "h100"], inputs=("allreduce.csv",)),
    Writer("clock-simulate", ["clock", "simulate", "--samples", "16", "--seeds", "1"]),
    Writer("clock-probe", ["clock", "probe", "--server", "127.0.0.1:{port}", "--samples", "2",
                           "--interval-ms", "0", "--timeout-ms", "1000"], server=SNTP_GOOD),
    Writer("bench-timers", ["bench", "timers", "--timers", "1000", "--repetitions", "1",
                            "--min-time", "0.01", "--lateness-s", "0", "--impl", "seedance"]),
    Writer("node-agent-topology", ["node-agent", "topology", "--gpu-numa", "0:0"]),
]


def destroy_and_write_cases():
    cases = []
    for w in WRITERS:
        k = w.key
        fj = ["--format", "json"] if w.format_flag else []

        def add(cls, dest, tail, **kw):
            kw.setdefault("server", w.server)
            cases.append(Case(cls, "%s/%s" % (k, dest), w.argv + tail, **kw))

        old = '{"old": "content"}\n'
        add("control", "new-file", ["-o", "{out.json}"], exit=0, out=[("out.json", w.fmt)])
        add("destroy", "replace-existing", ["-o", "{out.json}"], exit=0,
            files={"out.json": old}, mutable={"out.json"}, out=[("out.json", w.fmt)])
        add("control", "stdout-dash", ["-o", "-"] + fj, exit=0, out=[("stdout", w.fmt)])
        add("destroy", "fifo-with-reader", ["-o", "{fifo.json}"], exit=0,
            setup=[("fifo_reader", "fifo.json")], out=[("fifo:fifo.json", w.fmt)])
        add("destroy", "fifo-no-reader", ["-o", "{fifo.json}"], exit=1, msg=["fifo.json"],
            setup=[("fifo", "fifo.json")], max_s=12)
        add("destroy", "char-device", ["-o", "{null.json}"], exit=0,
            setup=[("chardev", "null.json")])
        add("destroy", "symlink", ["-o", "{link.json}"], exit=0,
            files={"target.json": old}, setup=[("symlink", "link.json", "target.json")],
            mutable={"target.json"}, out=[("target.json", w.fmt)])
        add("destroy", "symlink-dangling", ["-o", "{link.json}"], exit=0,
            setup=[("symlink", "link.json", "made.json")], out=[("made.json", w.fmt)])
        add("destroy", "symlink-to-fifo", ["-o", "{link.json}"], exit=0,
            setup=[("fifo_reader", "f.json"), ("symlink", "link.json", "f.json")],
            out=[("fifo:f.json", w.fmt)])
        add("destroy", "symlink-to-char-device", ["-o", "{link.json}"], exit=0,
            setup=[("chardev", "null"), ("symlink", "link.json", "null")])
        add("destroy", "dev-null", ["-o", "/dev/null"], exit=0, nobody=True)
        add("write-fail", "dev-full", ["-o", "/dev/full"] + fj, exit=1, msg=["/dev/full"])
        add("write-fail", "stdout-dev-full", ["-o", "-"] + fj, exit=1, stdout="/dev/full",
            msg=[("standard output", "stdout", "/dev/full")])
        add("write-fail", "missing-dir", ["-o", "{nodir/out.json}"], exit=2,
            msg=["nodir/out.json"])
        add("write-fail", "unwritable-dir", ["-o", "{ro/out.json}"], exit=1, nobody=True,
            setup=[("dir", "ro"), ("chmod", "ro", 0o555)], msg=["ro/out.json"])
        add("write-fail", "read-only-file", ["-o", "{ro.json}"], exit=1, nobody=True,
            files={"ro.json": old}, setup=[("chmod", "ro.json", 0o444)], msg=["ro.json"])
        add("write-fail", "directory", ["-o", "{outdir}"], exit=2, setup=[("dir", "outdir")],
            msg=["outdir"])
        add("write-fail", "empty-path", ["-o", ""], exit=(0, 2), msg=[("--output", "-o")],
            out=[("stdout", "text")])
        add("write-fail", "socket", ["-o", "{sock.json}"], exit=2,
            setup=[("socket", "sock.json")], msg=["sock.json"])
        add("write-fail", "proc-file", ["-o", "/proc/version"], exit=(1, 2),
            msg=["/proc/version"])
        add("write-fail", "full-disk", ["-o", "{full/out.json}"], exit=1,
            setup=[("full_fs", "full")], msg=["full/out.json"])
        add("write-fail", "full-disk-keeps-old-file", ["-o", "{full/out.json}"], exit=1,
            setup=[("full_fs", "full", ("full/out.json", old))], msg=["full/out.json"])
        add("destroy", "dev-stdout-pipe", ["-o", "/dev/stdout"] + fj, exit=0, stdout="pipe",
            out=[("stdout", w.fmt)], no_new_files=True)
        add("destroy", "dev-fd-1-pipe", ["-o", "/dev/fd/1"] + fj, exit=0, stdout="pipe",
            out=[("stdout", w.fmt)], no_new_files=True)
        add("destroy", "dev-stderr", ["-o", "/dev/stderr"], exit=0, no_new_files=True)
        add("destroy", "dash-no-stray-files", ["-o", "-"] + fj, exit=0, stdout="pipe",
            out=[("stdout", w.fmt)], no_new_files=True)
        add("destroy", "dir-symlink", ["-o", "{dl/out.json}"], exit=0,
            setup=[("dir", "real"), ("symlink", "dl", "real")], out=[("real/out.json", w.fmt)])
        add("destroy", "symlink-loop", ["-o", "{loop.json}"], exit=2,
            setup=[("symlink", "loop.json", "loop2"), ("symlink", "loop2", "loop.json")],
            msg=["loop.json"])
        if k in ("version", "analyze", "clock-simulate"):
            add("destroy", "invalid-utf8-path", ["-o", os.fsdecode(b"{T}/out\xff\xfe.json")],
                exit=0, out=[(os.fsdecode(b"out\xff\xfe.json"), w.fmt)])
            add("destroy", "name-at-name-max", ["-o", "{%s.json}" % ("n" * 250)], exit=0,
                out=[("n" * 250 + ".json", w.fmt)])
        for inp in w.inputs:
            stem = inp.replace(".", "-")
            add("destroy", "input-as-output-" + stem, ["-o", "{%s}" % inp], msg=[inp])
            add("destroy", "input-via-symlink-" + stem, ["-o", "{alias}"], msg=["alias"],
                setup=[("symlink", "alias", inp)])
            add("destroy", "input-via-hardlink-" + stem, ["-o", "{hard}"], msg=["hard"],
                setup=[("hardlink", "hard", inp)])
            add("destroy", "input-other-spelling-" + stem, ["-o", "{T}/./" + inp], msg=[inp])
    return cases


def writer_argv(key):
    """The base argv of the writer named `key` (never by position: the list grows)."""
    return next(w.argv for w in WRITERS if w.key == key)


# simulate's other outputs and the deprecated spellings must be just as safe.
SIM_FILL = writer_argv("simulate-fill")


def secondary_output_cases():
    c = []
    for flag, fmt in (("--dump-order", "csv"), ("--json", "json"), ("--report", "html")):
        f = flag.strip("-")
        c.append(Case("control", "simulate/%s-file" % f, SIM_FILL + [flag, "{o.x}"], exit=0,
                      out=[("o.x", fmt if fmt != "json" else "json")]))
        c.append(Case("destroy", "simulate/%s-fifo-with-reader" % f, SIM_FILL + [flag, "{o}"],
                      exit=0, setup=[("fifo_reader", "o")], out=[("fifo:o", fmt)]))
        c.append(Case("destroy", "simulate/%s-fifo-no-reader" % f, SIM_FILL + [flag, "{o}"],
                      exit=1, setup=[("fifo", "o")], msg=["o"], max_s=12))
        c.append(Case("destroy", "simulate/%s-char-device" % f, SIM_FILL + [flag, "{null}"],
                      exit=0, setup=[("chardev", "null")]))
        c.append(Case("destroy", "simulate/%s-is-pods-input" % f,
                      SIM_FILL + [flag, "{pods.csv}"], msg=["pods.csv"]))
        c.append(Case("destroy", "simulate/%s-is-nodes-via-symlink" % f,
                      SIM_FILL + [flag, "{l}"], setup=[("symlink", "l", "nodes.csv")],
                      msg=["l"]))
        c.append(Case("write-fail", "simulate/%s-dev-full" % f, SIM_FILL + [flag, "/dev/full"],
                      exit=1, msg=["/dev/full"]))
        c.append(Case("write-fail", "simulate/%s-missing-dir" % f,
                      SIM_FILL + [flag, "{no/x}"], exit=2, msg=["no/x"]))
    c.append(Case("destroy", "simulate/two-outputs-same-file",
                  SIM_FILL + ["-o", "{x.json}", "--dump-order", "{x.json}"], msg=["x.json"]))
    c.append(Case("destroy", "simulate/two-outputs-via-symlink",
                  SIM_FILL + ["-o", "{x.json}", "--dump-order", "{y}"], msg=[("x.json", "y")],
                  setup=[("symlink", "y", "x.json")]))
    c.append(Case("destroy", "serve-sim/json-alias-is-input",
                  ["serve-sim", "--trace", "{azure.csv}", "--json", "{azure.csv}"],
                  msg=["azure.csv"]))
    c.append(Case("destroy", "serve-sim/json-alias-fifo-no-reader",
                  ["serve-sim", "--trace", "{azure.csv}", "--json", "{f}"], exit=1,
                  setup=[("fifo", "f")], msg=["f"], max_s=12))
    c.append(Case("destroy", "analyze/output-is-prices",
                  writer_argv("analyze") + ["-o", "{prices.yaml}"], msg=["prices.yaml"]))
    c.append(Case("destroy", "costmodel-fit/output-is-eval",
                  writer_argv("costmodel-fit") + ["--eval", "{e.csv}", "-o", "{e.csv}"],
                  files={"e.csv": ALLREDUCE_CSV}, msg=["e.csv"]))
    c.append(Case("write-fail", "profile/unwritable-found-before-sampling",
                  ["profile", "-q", "--duration", "60", "--interval", "1", "-o", "{ro/p.json}"],
                  exit=1, setup=[("dir", "ro"), ("chmod", "ro", 0o555)], msg=["ro/p.json"],
                  max_s=8))
    c.append(Case("write-fail", "profile/missing-dir-found-at-once",
                  ["profile", "-q", "--duration", "60", "--interval", "1", "-o", "{no/p.json}"],
                  exit=2, msg=["no/p.json"], max_s=8))
    c.append(Case("write-fail", "profile/fifo-no-reader-at-once",
                  ["profile", "-q", "--duration", "60", "--interval", "1", "-o", "{f}"],
                  exit=1, setup=[("fifo", "f")], msg=["f"], max_s=8))
    c.append(Case("write-fail", "completion/stdout-dev-full", ["completion", "bash"], exit=1,
                  stdout="/dev/full", msg=[("standard output", "stdout")]))
    c.append(Case("write-fail", "help/stdout-dev-full", ["help", "simulate"], exit=1,
                  stdout="/dev/full", msg=[("standard output", "stdout")]))
    c.append(Case("write-fail", "simulate/table-stdout-dev-full", SIM_FILL, exit=1,
                  stdout="/dev/full", msg=[("standard output", "stdout")]))
    c.append(Case("write-fail", "analyze/table-stdout-dev-full", writer_argv("analyze"), exit=1,
                  stdout="/dev/full", msg=[("standard output", "stdout")]))
    c.append(Case("write-fail", "serve-sim/table-stdout-dev-full", writer_argv("serve-sim"), exit=1,
                  stdout="/dev/full", msg=[("standard output", "stdout")]))
    return c


# ----------------------------------------------------------------------------------------------
# Input readers: every input flag gets the same bad files.

class Reader:
    def __init__(self, key, argv, slot, flag, empty_ok=False, by_extension=False):
        self.empty_ok = empty_ok
        self.by_extension = by_extension  # the format comes from the name: no stdin controls
        self.key = key
        self.argv = argv   # with "{IN}" where the input goes
        self.slot = slot   # fixture name that {IN} replaces in control runs
        self.flag = flag


READERS = [
    Reader("simulate-nodes", ["simulate", "-q", "--nodes", "IN", "--pods", "{pods.csv}",
                              "--policy", "bestfit", "--seeds", "1"], "nodes.csv", "--nodes"),
    Reader("simulate-nodes-yaml", ["simulate", "-q", "--nodes", "IN", "--pods", "{pods.csv}",
                                   "--policy", "bestfit", "--seeds", "1"], "cluster.yaml",
           "--nodes", by_extension=True),
    Reader("simulate-nodes-json", ["simulate", "-q", "--nodes", "IN", "--pods", "{pods.csv}",
                                   "--policy", "bestfit", "--seeds", "1"], "cluster.json",
           "--nodes", by_extension=True),
    Reader("simulate-pods", ["simulate", "-q", "--nodes", "{nodes.csv}", "--pods", "IN",
                             "--policy", "bestfit", "--seeds", "1"], "pods.csv", "--pods"),
    Reader("simulate-replay-pods", ["simulate", "-q", "--nodes", "{nodes.csv}", "--pods", "IN",
                                    "--policy", "bestfit", "--seeds", "1", "--mode", "replay"],
           "pods_replay.csv", "--pods"),
    Reader("simulate-jobs-trace", ["simulate", "-q", "--mode", "jobs", "--trace", "IN",
                                   "--tenants", "{vc.csv}", "--policy", "all"], "jobs.csv",
           "--trace"),
    Reader("simulate-jobs-tenants", ["simulate", "-q", "--mode", "jobs", "--trace",
                                     "{jobs.csv}", "--tenants", "IN", "--policy", "all"],
           "vc.csv", "--tenants"),
    Reader("simulate-autoscale-trace", ["simulate", "-q", "--mode", "autoscale", "--trace", "IN",
                                        "--tenants", "{vc.csv}", "--seeds", "1"], "jobs.csv",
           "--trace"),
    Reader("simulate-autoscale-tenants", ["simulate", "-q", "--mode", "autoscale", "--trace",
                                          "{jobs.csv}", "--tenants", "IN", "--seeds", "1"],
           "vc.csv", "--tenants"),
    Reader("simulate-nodes-k8s", ["simulate", "-q", "--nodes", "IN", "--pods",
                                  "{k8s_pods.json}", "--policy", "bestfit", "--seeds", "1"],
           "k8s_nodes.json", "--nodes"),
    Reader("simulate-pods-k8s", ["simulate", "-q", "--nodes", "{k8s_nodes.json}", "--pods", "IN",
                                 "--policy", "bestfit", "--seeds", "1"], "k8s_pods.json",
           "--pods"),
    Reader("analyze-input", ["analyze", "-i", "IN"], "profile.json", "--input"),
    Reader("analyze-nodes", ["analyze", "--nodes", "IN", "--pods", "{k8s_pods.json}"],
           "k8s_nodes.json", "--nodes"),
    Reader("analyze-pods", ["analyze", "--nodes", "{k8s_nodes.json}", "--pods", "IN"],
           "k8s_pods.json", "--pods"),
    Reader("analyze-prices", ["analyze", "-i", "{profile.json}", "--prices", "IN"],
           "prices.yaml", "--prices", empty_ok=True),
    Reader("serve-sim-trace", ["serve-sim", "--trace", "IN", "--batching", "continuous"],
           "azure.csv", "--trace"),
    Reader("serve-sim-mooncake", ["serve-sim", "--trace", "IN", "--batching", "continuous"],
           "mooncake.jsonl", "--trace"),
    Reader("serve-sim-sharegpt", ["serve-sim", "--trace", "IN", "--batching", "continuous"],
           "sharegpt.csv", "--trace"),
    Reader("costmodel-check-profile", ["costmodel", "check", "--gpu", "h100", "--profile", "IN"],
           "allreduce.csv", "--profile"),
    Reader("costmodel-fit-profile", ["costmodel", "fit", "--gpu", "h100", "--profile", "IN"],
           "allreduce.csv", "--profile"),
    Reader("costmodel-fit-eval", ["costmodel", "fit", "--gpu", "h100", "--profile",
                                  "{allreduce.csv}", "--eval", "IN"], "allreduce.csv", "--eval"),
    Reader("apply-yaml", ["apply", "--dry-run", "-f", "IN"], "apply.yaml", "--filename"),
    Reader("apply-json", ["apply", "--dry-run", "-f", "IN"], "apply.json", "--filename"),
]


SLOW_READERS = ("simulate-nodes", "analyze-input", "analyze-prices", "serve-sim-trace",
                "costmodel-check-profile")


def _with(argv, value):
    return [value if a == "IN" else a for a in argv]


def reader_cases():
    c = []
    binary = bytes(range(256)) * 64
    for r in READERS:
        k = r.key
        ext = os.path.splitext(r.slot)[1]

        def add(cls, name, value, **kw):
            c.append(Case(cls, "%s/%s" % (k, name), _with(r.argv, value), **kw))

        add("control", "valid", "{%s}" % r.slot, exit=0)
        if not r.by_extension:
            add("control", "stdin-dash", "-", exit=0, stdin=FIXTURES[r.slot])
            add("control", "dev-stdin", "/dev/stdin", exit=0, stdin=FIXTURES[r.slot])
            add("control", "fifo-with-writer", "{in.fifo}", exit=0,
                setup=[("fifo_feed", "in.fifo", r.slot)])
        add("exit-code", "missing-file", "{nothere%s}" % ext, msg=["nothere" + ext])
        add("bad-value", "directory", "{adir}", setup=[("dir", "adir")], msg=["adir"])
        if k in SLOW_READERS:  # the default cap (1 GiB for traces and profiles)
            add("hang", "dev-zero", "/dev/zero", msg=["/dev/zero"], timeout=60)
        else:  # the same reader under a lower cap, to keep the suite fast
            add("hang", "dev-zero", "/dev/zero", msg=["/dev/zero"])
            c[-1].argv = ["--max-input-size", "64M"] + c[-1].argv
        # The same reader serves every input: the slow cases (10 s FIFO timeout, 1 GiB of
        # zeros) run for one input of each command.
        if k in SLOW_READERS:
            add("hang", "stdin-dev-zero", "-", stdin=("path", "/dev/zero"),
                msg=[("standard input", "stdin", "-")], timeout=60)
            add("hang", "fifo-no-writer", "{in.fifo}", setup=[("fifo", "in.fifo")],
                msg=["in.fifo"], max_s=15)
            add("hang", "fifo-silent-writer", "{in.fifo}", setup=[("fifo_held", "in.fifo")],
                msg=["in.fifo"], max_s=16)
        empty = (0, 2) if r.empty_ok else 2
        add("bad-value", "empty-file", "{empty%s}" % ext, files={"empty" + ext: ""},
            msg=["empty" + ext], exit=empty)
        add("bad-value", "dev-null", "/dev/null", msg=["/dev/null"], exit=empty)
        add("bad-value", "binary-garbage", "{bin%s}" % ext, files={"bin" + ext: binary},
            msg=["bin" + ext])
        add("bad-value", "socket", "{s.sock}", setup=[("socket", "s.sock")], msg=["s.sock"])
        add("bad-value", "invalid-utf8-path", os.fsdecode(b"{T}/no\xff\xfe" + ext.encode()),
            msg=["no"])
        add("injection", "ansi-in-path", "{T}/" + ESC + "evil" + ext, msg=["evil"],
            absent=[("stderr", "\x1b")])
        add("bad-value", "trailing-slash", "{%s}/" % r.slot, msg=[r.slot])
        add("bad-value", "name-too-long", "{T}/" + "a" * 300 + ext, msg=["aaaa"])
        add("bad-value", "symlink-loop", "{loop%s}" % ext, msg=["loop" + ext],
            setup=[("symlink", "loop" + ext, "loop2"), ("symlink", "loop2", "loop" + ext)])
        add("write-fail", "read-error", "/proc/self/mem", exit=1, msg=["/proc/self/mem"])
        add("exit-code", "huge-single-line", "{long%s}" % ext, files={"long" + ext: HUGE_LINE},
            msg=["long" + ext])
        add("write-fail", "unreadable-file", "{locked%s}" % ext, nobody=True,
            files={"locked" + ext: FIXTURES[r.slot]}, setup=[("chmod", "locked" + ext, 0)],
            exit=1, msg=["locked" + ext])
        add("exit-code", "over-max-input-size", "{%s}" % r.slot,
            msg=[("--max-input-size", r.slot)])
        c[-1].argv = ["--max-input-size", "16"] + c[-1].argv
        c.append(Case("hang", "%s/truncated-at-half" % k, _with(r.argv, "{half%s}" % ext),
                      files={"half" + ext: FIXTURES[r.slot][:len(FIXTURES[r.slot]) // 2]},
                      exit=(0, 2), msg=["half" + ext]))
    return c


# ----------------------------------------------------------------------------------------------
# Numeric flags: every one gets the same bad values. The table lists each flag with a base argv
# that is valid otherwise; flags found in --help and missing here are added at run time.

SIM = ["simulate", "-q", "--nodes", "{nodes.csv}", "--pods", "{pods.csv}", "--policy", "bestfit",
       "--seeds", "1"]
SIM_CHURN = ["simulate", "-q", "--nodes", "{nodes.csv}", "--pods", "{pods_replay.csv}",
             "--policy", "bestfit", "--seeds", "1", "--mode", "churn"]
SIM_REPLAY = ["simulate", "-q", "--nodes", "{nodes.csv}", "--pods", "{pods_replay.csv}",
              "--policy", "bestfit", "--seeds", "1", "--mode", "replay"]
SIM_AUTOSCALE = ["simulate", "-q", "--nodes", "{nodes.csv}", "--pods", "{pods_replay.csv}",
                 "--seeds", "1", "--mode", "autoscale", "--duration", "2", "--warmup", "0"]
PROFILE = ["profile", "-q", "-o", "{p.json}"]
ANALYZE = ["analyze", "-i", "{profile.json}"]
SERVE = ["serve-sim", "--trace", "{azure.csv}", "--batching", "continuous"]
SERVE_SHAREGPT = ["serve-sim", "--trace", "{sharegpt.csv}", "--batching", "continuous"]
CM_FIT = ["costmodel", "fit", "--profile", "{allreduce.csv}", "--gpu", "h100"]
PROBE = ["clock", "probe", "--server", "127.0.0.1:9"]
CLOCK_SIM = ["clock", "simulate", "--seeds", "1"]
BENCH = ["bench", "timers", "--impl", "seedance"]
NA_PIN = ["node-agent", "pin", "--cgroup", "x", "--numa", "0", "--dry-run"]
# The device plugin, failing before it serves (a folder that does not exist) whatever else holds.
DP = ["device-plugin", "--fake-gpus", "2", "--plugin-dir", "{nodp}"]

# (base argv, flag, kind, negative values valid)
NUMERIC_FLAGS = [
    (SIM, "--tune", "float", False),
    (SIM_CHURN, "--load", "float", False),
    (SIM_CHURN, "--duration", "duration", False),
    (SIM_CHURN, "--warmup", "duration", True),
    (SIM_REPLAY, "--time-scale", "float", False),
    (SIM, "--jobs", "int", False),
    (SIM_AUTOSCALE, "--group-min", "float", False),
    (SIM_AUTOSCALE, "--group-max", "float", False),
    (SIM_AUTOSCALE, "--drain-below", "float", False),
    (SIM_AUTOSCALE, "--provision-min", "duration", False),
    (SIM_AUTOSCALE, "--provision-max", "duration", False),
    (SIM_AUTOSCALE, "--idle", "duration", False),
    (SIM_AUTOSCALE, "--scan-interval", "duration", False),
    (PROFILE, "--duration", "duration", False),
    (PROFILE, "--interval", "duration", False),
    (PROFILE + ["--prometheus", "http://127.0.0.1:1"], "--timeout", "duration", False),
    (ANALYZE, "--idle-util", "float", False),
    (ANALYZE, "--idle-window", "duration", False),
    (ANALYZE, "--underused-util", "float", False),
    (ANALYZE, "--drain-max-util", "float", False),
    (ANALYZE, "--target-util-cap", "float", False),
    (SERVE, "--tp", "int", False),
    (SERVE, "--rate-scale", "float", False),
    (SERVE, "--block-size", "int", False),
    (SERVE, "--max-num-seqs", "int", False),
    (SERVE, "--max-batched-tokens", "int", False),
    (SERVE + ["--preemption", "swap"], "--swap-gib", "float", False),
    (SERVE, "--static-max-len", "int", False),
    (SERVE, "--mem-util", "float", False),
    (SERVE_SHAREGPT, "--rate", "float", False),
    (SERVE_SHAREGPT, "--seed", "uint", False),
    (SERVE, "--limit", "int", False),
    (SERVE, "--prefix-cache", "int", False),
    (CM_FIT, "--roofline-exponent", "float", False),
    (CM_FIT, "--train-workers", "int", False),
    (PROBE, "--samples", "int", False),
    (PROBE, "--interval-ms", "duration", False),
    (PROBE, "--timeout-ms", "duration", False),
    (CLOCK_SIM, "--drift-ppm", "float", True),
    (CLOCK_SIM, "--jitter-us", "float", False),
    (CLOCK_SIM, "--outlier-pct", "float", False),
    (CLOCK_SIM, "--samples", "int", False),
    (CLOCK_SIM, "--poll-s", "duration", False),
    (CLOCK_SIM, "--warmup", "int", False),
    (CLOCK_SIM, "--window", "int", False),
    (BENCH, "--timers", "uint", False),
    (BENCH, "--repetitions", "int", False),
    (BENCH, "--min-time", "duration", False),
    (BENCH, "--lateness-timers", "uint", False),
    (BENCH, "--lateness-s", "duration", False),
    (BENCH, "--tick-ms", "float", False),
    (NA_PIN, "--pid", "int", False),
    (DP, "--slices-per-gpu", "int", False),
    (DP, "--fake-gpus", "int", False),
    (DP, "--fake-gpu-memory-mib", "int", False),
    (DP, "--fake-numa-nodes", "int", False),
    (DP, "--match-wait", "duration", False),
    (DP, "--health-interval", "duration", False),
]

BAD_ALWAYS = [("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"), ("infinity", "Infinity"),
              ("1e309", "1e309"), ("empty", ""), ("garbage", "abc"), ("trailing", "5x"),
              ("overflow", "99999999999999999999999")]
BAD_NONNEG = [("minus-one", "-1")]
BAD_INT = [("fraction", "1.5"), ("int64-plus-one", "9223372036854775808")]
BAD_UINT = [("fraction", "1.5"), ("uint64-plus-one", "18446744073709551616")]
BAD_DURATION = [("unit-garbage", "5mm"), ("unit-only", "h"), ("inf-unit", "infh"),
                ("nan-unit", "nanms"), ("overflow-unit", "1e309s"), ("mixed-sign", "1h-30m"),
                ("fullwidth-digit", "\uff15s")]


def numeric_cases(flags):
    c = []
    for base, flag, kind, neg_ok in flags:
        values = list(BAD_ALWAYS)
        if not neg_ok:
            values += BAD_NONNEG
        if kind == "int":
            values += BAD_INT
        elif kind == "uint":
            values += BAD_UINT
        elif kind == "duration":
            values += BAD_DURATION
            if not neg_ok:
                values += [("negative-unit", "-5m")]
        cmd = command_of(base)
        for vname, v in values:
            c.append(Case("bad-value", "%s/%s=%s" % (cmd.replace(" ", "-"), flag, vname),
                          base + [flag, v], msg=[flag]))
            # the same value through --flag=VALUE, for a sample of the values
        c.append(Case("bad-value", "%s/%s=nan-equals-form" % (cmd.replace(" ", "-"), flag),
                      base + ["%s=nan" % flag], msg=[flag]))
        c.append(Case("bad-value", "%s/%s=repeated-then-nan" % (cmd.replace(" ", "-"), flag),
                      base + [flag, "1", flag, "nan"], msg=[flag]))
    c += [Case("bad-value", "global/--max-input-size=%s" % n, ["--max-input-size", v, "version"],
               msg=["--max-input-size"])
          for n, v in (("nan", "nan"), ("zero", "0"), ("minus", "-1"), ("unit", "1Z"),
                       ("overflow", "99999999999999T"), ("empty", ""), ("garbage", "lots"))]
    return c


def parse_help_flags(help_text):
    """Numeric flags (FLOAT, INT, UINT, DURATION, SECONDS, SIZE) listed in a --help text."""
    import re
    found = []
    for line in help_text.splitlines():
        m = re.match(r"\s+(?:-\w,)?(--[\w-]+)(?:,[-\w]+)*\s+([A-Z]+)", line)
        if m and m.group(2) in ("FLOAT", "INT", "UINT", "DURATION", "SECONDS", "NUMBER",
                                "HOURS", "MS", "SIZE"):
            found.append((m.group(1), m.group(2)))
    return found


HELP_BASES = {
    "simulate": SIM_CHURN, "profile": PROFILE, "analyze": ANALYZE, "serve-sim": SERVE,
    "costmodel check": ["costmodel", "check", "--profile", "{allreduce.csv}", "--gpu", "h100"],
    "costmodel fit": CM_FIT, "clock probe": PROBE, "clock simulate": CLOCK_SIM,
    "bench timers": BENCH, "node-agent pin": NA_PIN, "device-plugin": DP,
}


def discovered_flags(binary):
    """Numeric flags in the binary's --help that the table does not list (inputs not seen)."""
    import subprocess
    if not binary:
        return []
    known = {(command_of(b).split(" fill")[0].split(" churn")[0].split(" replay")[0], f)
             for b, f, _, _ in NUMERIC_FLAGS}
    extra = []
    for cmd, base in HELP_BASES.items():
        try:
            text = subprocess.run([binary] + cmd.split() + ["--help"], capture_output=True,
                                  timeout=20, text=True, errors="replace").stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        for flag, typ in parse_help_flags(text):
            if (cmd, flag) in known or flag in ("--help",):
                continue
            kind = "uint" if "UINT" in typ else "int" if "INT" in typ else "float"
            extra.append((base, flag, kind, True))
    return extra


# ----------------------------------------------------------------------------------------------
# Hand-written cases per class.

def yaml_alias_bomb(levels=10, width=10):
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append("a%d: &a%d [%s]" % (i, i, ",".join(["*a%d" % (i - 1)] * width)))
    lines.append("name: *a%d" % (levels - 1))
    lines.append("nodes: []")
    return "\n".join(lines) + "\n"


def hang_cases():
    c = []
    H = "hang"
    for mode_argv, m in ((SIM_CHURN, "churn"), (SIM_REPLAY, "replay")):
        c.append(Case(H, "simulate-%s/duration-zero" % m, mode_argv + ["--duration", "0"],
                      exit=2 if m == "churn" else (0, 2), msg=["--duration"]))
        for v in ("1e300", "1e18", "inf", "2562047788015215h"):
            c.append(Case(H, "simulate-%s/duration-%s" % (m, v), mode_argv + ["--duration", v],
                          msg=["--duration"]))
        for v in ("1e300", "inf", "1e18"):
            c.append(Case(H, "simulate-%s/warmup-%s" % (m, v), mode_argv + ["--warmup", v],
                          msg=["--warmup"]))
    c.append(Case(H, "simulate-churn/duration-1ns", SIM_CHURN + ["--duration", "1e-12"],
                  exit=(0, 2), msg=["--duration"]))
    c.append(Case(H, "simulate-replay/time-scale-tiny", SIM_REPLAY + ["--time-scale", "1e-300",
                                                                      "-o", "{o.json}"],
                  exit=(0, 2), msg=["--time-scale"], out=[("o.json", "json")]))
    c.append(Case(H, "simulate-replay/time-scale-huge", SIM_REPLAY + ["--time-scale", "1e300",
                                                                      "-o", "{o.json}"],
                  exit=(0, 2), msg=["--time-scale"], out=[("o.json", "json")]))
    c.append(Case(H, "simulate-churn/load-tiny", SIM_CHURN + ["--load", "0.001", "--duration",
                                                              "1", "-o", "{o.json}"],
                  exit=(0, 2), out=[("o.json", "json")], msg=["--load"]))
    seeds = [("full-u64-range", "0-18446744073709551615", 2),
             ("past-u64", "18446744073709551616", 2),
             ("range-past-u64", "18446744073709551615-18446744073709551616", 2),
             ("last-two-u64", "18446744073709551614-18446744073709551615", 0),
             ("u64-max", "18446744073709551615", 0),
             ("minus-one", "-1", 2), ("reversed", "9-1", 2), ("over-cap", "1-100001", 2),
             ("empty", "", 2), ("comma-only", ",", 2), ("double-dash", "1--2", 2),
             ("three-part", "1-2-3", 2), ("nan", "nan", 2), ("letters", "a-b", 2),
             ("spaces", " 1 - 2 ", (0, 2))]
    for name, v, want in seeds:
        c.append(Case(H, "simulate-fill/seeds-%s" % name,
                      SIM[:-2] + ["--seeds", v, "-o", "{o.json}"], exit=want, msg=["--seeds"],
                      out=[("o.json", "json")]))
    for name, v, want in seeds[:8]:
        c.append(Case(H, "clock-simulate/seeds-%s" % name,
                      ["clock", "simulate", "--samples", "16", "--seeds", v, "-o", "{o.json}"],
                      exit=want, msg=["--seeds"], out=[("o.json", "json")]))
    c += [
        Case(H, "profile/interval-1us-long-duration",
             ["profile", "-q", "--duration", "300", "--interval", "1e-6", "-o", "{p.json}"],
             msg=["--interval"], max_s=10),
        Case(H, "profile/interval-1us-prometheus",
             ["profile", "-q", "--duration", "86400", "--interval", "1e-6", "--prometheus",
              "http://127.0.0.1:1", "-o", "{p.json}"], msg=["--interval"], max_s=10),
        Case(H, "profile/duration-1e300", ["profile", "-q", "--duration", "1e300", "-o",
                                           "{p.json}"], msg=["--duration"], max_s=10),
        Case(H, "profile/interval-zero", ["profile", "-q", "--interval", "0", "-o", "{p.json}"],
             msg=["--interval"], max_s=10),
        Case(H, "profile/timeout-huge", ["profile", "-q", "--prometheus", "http://127.0.0.1:1",
                                         "--timeout", "1e300", "-o", "{p.json}"],
             exit=(1, 2), msg=[("--timeout", "127.0.0.1")], max_s=10),
        Case(H, "bench-timers/tick-5e-7", BENCH + ["--tick-ms", "5e-7"], msg=["--tick-ms"]),
        Case(H, "bench-timers/tick-zero", BENCH + ["--tick-ms", "0"], msg=["--tick-ms"]),
        Case(H, "bench-timers/tick-1e-300", BENCH + ["--tick-ms", "1e-300"], msg=["--tick-ms"]),
        Case(H, "bench-timers/tick-huge", BENCH + ["--tick-ms", "1e300"], msg=["--tick-ms"]),
        Case(H, "bench-timers/timers-u64-max", BENCH + ["--timers", "18446744073709551615"],
             msg=["--timers"]),
        Case(H, "bench-timers/lateness-timers-u64-max",
             BENCH + ["--lateness-timers", "18446744073709551615"], msg=["--lateness-timers"]),
        Case(H, "bench-timers/min-time-1e300", BENCH + ["--min-time", "1e300"],
             msg=["--min-time"]),
        Case(H, "bench-timers/lateness-1e300", BENCH + ["--lateness-s", "1e300"],
             msg=["--lateness-s"]),
        Case(H, "bench-timers/repetitions-int-max", BENCH + ["--repetitions", "2147483647"],
             msg=["--repetitions"]),
        Case(H, "bench-timers/timers-zero", BENCH + ["--timers", "0"], msg=["--timers"]),
        Case(H, "serve-sim/prefix-cache-1e18-blocks", SERVE + ["--prefix-cache",
                                                               "1000000000000000000",
                                                               "-o", "{o.json}"],
             exit=(0, 2), msg=["--prefix-cache"], out=[("o.json", "json")]),
        Case(H, "serve-sim/static-max-len-2^62", ["serve-sim", "--trace", "{azure.csv}",
                                                  "--batching", "static", "--static-max-len",
                                                  "4611686018427387904", "-o", "{o.json}"],
             exit=(0, 2), msg=["--static-max-len"], out=[("o.json", "json")]),
        Case(H, "serve-sim/swap-gib-1e15", SERVE + ["--preemption", "swap", "--swap-gib",
                                                    "1e15", "-o", "{o.json}"],
             exit=(0, 2), msg=["--swap-gib"], out=[("o.json", "json")]),
        Case(H, "serve-sim/rate-1e-300", SERVE_SHAREGPT + ["--rate", "1e-300", "-o",
                                                           "{o.json}"],
             exit=(0, 2), msg=["--rate"], out=[("o.json", "json")]),
        Case(H, "serve-sim/rate-scale-1e-300", SERVE + ["--rate-scale", "1e-300", "-o",
                                                        "{o.json}"],
             exit=(0, 2), msg=["--rate-scale"], out=[("o.json", "json")]),
        Case(H, "serve-sim/rate-scale-1e300", SERVE + ["--rate-scale", "1e300", "-o",
                                                       "{o.json}"],
             exit=(0, 2), msg=["--rate-scale"], out=[("o.json", "json")]),
        Case(H, "serve-sim/one-token-budget", SERVE + ["--max-batched-tokens", "1",
                                                       "--block-size", "1", "-o", "{o.json}"],
             exit=(0, 2), out=[("o.json", "json")], msg=["--max-batched-tokens"]),
        Case(H, "serve-sim/huge-prompt", ["serve-sim", "--trace", "{big.csv}", "-o", "{o.json}"],
             files={"big.csv": "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                               "2023-11-16 18:15:46.6805900,2000000000,2000000000\n"
                               "2023-11-16 18:15:47.0000000,100,10\n"},
             exit=(0, 2), out=[("o.json", "json")], msg=["big.csv"]),
        Case(H, "simulate/jobs-100000", SIM + ["--jobs", "100000", "-o", "{o.json}"],
             exit=(0, 2), out=[("o.json", "json")], msg=["--jobs"]),
        Case(H, "clock-probe/silent-server", ["clock", "probe", "--server", "127.0.0.1:{port}",
                                              "--samples", "2", "--timeout-ms", "300"],
             server=("sntp", "silent"), exit=1, msg=["127.0.0.1"], max_s=8),
        Case(H, "clock-probe/blackhole-port", ["clock", "probe", "--server", "127.0.0.1:9",
                                               "--samples", "1", "--timeout-ms", "300"],
             exit=1, msg=["127.0.0.1"], max_s=8),
    ]
    # YAML / JSON bombs and nesting in every structured reader.
    bomb = yaml_alias_bomb()
    deep_yaml = "name: " + "[" * 100000 + "]" * 100000 + "\nnodes: []\n"
    deep_map = "".join("%sk%d:\n" % (" " * i, i) for i in range(3000))
    deep_json = "[" * 200000 + "]" * 200000
    deep_obj = '{"a":' * 100000 + "1" + "}" * 100000
    nodes_yaml = SIM[:2] + ["--pods", "{pods.csv}", "--policy", "bestfit", "--seeds", "1",
                            "--nodes"]
    for name, fname, text in (("alias-bomb", "bomb.yaml", bomb),
                              ("deep-flow-nesting", "deep.yaml", deep_yaml),
                              ("deep-block-nesting", "deepmap.yaml", deep_map),
                              ("deep-json-array", "deep.json", deep_json),
                              ("deep-json-object", "deepo.json", deep_obj)):
        c.append(Case(H, "simulate-nodes/" + name, nodes_yaml + ["{%s}" % fname],
                      files={fname: text}, msg=[fname], timeout=30))
    for name, fname, text in (("alias-bomb", "bomb.yaml", bomb.replace("nodes: []", "")),
                              ("deep-flow-nesting", "deep.yaml",
                               "source: " + "[" * 100000 + "]" * 100000 + "\n"),
                              ("deep-block-nesting", "deepmap.yaml", deep_map),
                              ("alias-in-price", "a.yaml",
                               "gpu_usd_per_hour:\n  L4: &p 1.0\n  T4: *p\n" +
                               "x: &x [" + ",".join(["*p"] * 1000) + "]\n")):
        c.append(Case(H, "analyze-prices/" + name, ANALYZE + ["--prices", "{%s}" % fname],
                      files={fname: text}, msg=[fname], timeout=30,
                      exit=2))
    for name, text in (("deep-json-array", deep_json), ("deep-json-object", deep_obj),
                       ("deep-in-series", PROFILE_JSON.replace('"util_pct": [1, 2]',
                                                               '"util_pct": [' + "[" * 100000 +
                                                               "]" * 100000 + ', 2]'))):
        c.append(Case(H, "analyze-input/" + name, ["analyze", "-i", "{deep.json}"],
                      files={"deep.json": text}, msg=["deep.json"], timeout=30))
    for key, argv in (("simulate-nodes-k8s", ["simulate", "-q", "--nodes", "{deep.json}",
                                              "--pods", "{pods.csv}"]),
                      ("analyze-nodes", ["analyze", "--nodes", "{deep.json}"])):
        for name, text in (("deep-json-array", '{"apiVersion": "v1", "kind": "List", "items": ' +
                            deep_json + '}'),
                           ("deep-json-object", '{"apiVersion": "v1", "kind": "List", "x": ' +
                            deep_obj + '}')):
            c.append(Case(H, key + "/" + name, argv, files={"deep.json": text},
                          msg=["deep.json"], timeout=30))
    c.append(Case(H, "serve-sim-trace/deep-json-line", ["serve-sim", "--trace", "{d.jsonl}"],
                  files={"d.jsonl": '{"timestamp": 0, "input_length": 10, "output_length": 1, '
                                    '"hash_ids": ' + "[" * 100000 + "]" * 100000 + "}\n"},
                  msg=["d.jsonl"], timeout=30))
    c.append(Case(H, "serve-sim-trace/million-hash-ids", ["serve-sim", "--trace", "{h.jsonl}"],
                  files={"h.jsonl": '{"timestamp": 0, "input_length": 100, "output_length": 1, '
                                    '"hash_ids": [' + ",".join(["1"] * 1000000) + "]}\n"},
                  msg=["h.jsonl"], timeout=30))
    # Network inputs: a misbehaving Prometheus.
    prom = ["profile", "-q", "--duration", "10", "--interval", "1", "--timeout", "2", "-o",
            "{p.json}", "--prometheus", "http://127.0.0.1:{port}"]
    for mode in ("drip", "drip_headers", "huge_length", "huge_length_stream", "chunked_endless",
                 "huge_chunk_size", "huge_header", "many_headers"):
        c.append(Case(H, "profile-prometheus/" + mode, prom, server=("http", mode), exit=1,
                      msg=["127.0.0.1"], max_s=15, timeout=40))
        c.append(Case(H, "profile-prometheus-live/" + mode, prom + ["--live"],
                      server=("http", mode), exit=1, msg=["127.0.0.1"], max_s=15, timeout=40))
    return c


def bad_value_cases():
    B = "bad-value"
    c = [
        Case(B, "simulate/policy-opt-nan", SIM[:-4] + ["--policy", "cas", "--seeds", "1",
                                                       "--policy-opt", "sigmoid_scale=nan"],
             msg=["sigmoid_scale"]),
        Case(B, "simulate/policy-opt-inf", SIM[:-4] + ["--policy", "cas", "--seeds", "1",
                                                       "--policy-opt", "sigmoid_scale=inf"],
             msg=["sigmoid_scale"]),
        Case(B, "simulate/policy-opt-zero", SIM[:-4] + ["--policy", "cas", "--seeds", "1",
                                                        "--policy-opt", "sigmoid_scale=0"],
             msg=["sigmoid_scale"]),
        Case(B, "simulate/policy-opt-no-equals", SIM + ["--policy-opt", "oops"],
             msg=["oops"]),
        Case(B, "simulate/policy-opt-empty-key", SIM + ["--policy-opt", "=1"],
             msg=["--policy-opt"]),
        Case(B, "simulate/policy-empty", SIM[:-4] + ["--policy", "", "--seeds", "1"],
             msg=["--policy"]),
        Case(B, "simulate/policy-commas", SIM[:-4] + ["--policy", ",,", "--seeds", "1"],
             msg=["--policy"]),
        Case(B, "simulate/policy-invalid-utf8", SIM[:-4] + ["--policy",
                                                            os.fsdecode(b"best\xfffit"),
                                                            "--seeds", "1"],
             msg=["--policy"]),
        Case(B, "simulate/mode-invalid-utf8", SIM + ["--mode", os.fsdecode(b"\xff\xfe")],
             msg=["--mode"]),
        Case(B, "simulate/autoscale-trace-with-nodes", SIM_AS_TRACE + ["--nodes", "{nodes.csv}"],
             msg=["--nodes", "--trace"]),
        Case(B, "simulate/autoscale-trace-with-load", SIM_AS_TRACE + ["--load", "0.5"],
             msg=["--load"]),
        Case(B, "simulate/autoscale-trace-partition", SIM_AS_TRACE + ["--partition", "pooled"],
             msg=["--partition"]),
        Case(B, "simulate/autoscale-trace-no-tenants", SIM_AS_TRACE[:6] + ["--seeds", "1"],
             msg=["--tenants"]),
        Case(B, "simulate/autoscale-window-without-trace", SIM_AUTOSCALE + ["--window",
                                                                           "2017-10-01,"],
             msg=["--window"]),
        Case(B, "simulate/autoscale-trace-bad-window", SIM_AS_TRACE + ["--window", "soon"],
             msg=["--window"]),
        Case(B, "simulate/autoscale-ca-policy-unknown", SIM_AUTOSCALE + ["--ca-policy", "nope"],
             msg=["--ca-policy", "nope"]),
        Case(B, "simulate/autoscale-ca-policy-empty-name", SIM_AUTOSCALE + ["--ca-policy", "/"],
             msg=["--ca-policy"]),
        Case(B, "simulate/autoscale-ca-policy-bad-opt", SIM_AUTOSCALE + [
            "--ca-policy", "most-allocated", "--policy-opt", "nope=1"], msg=["nope"]),
        Case(B, "simulate/ca-policy-not-autoscale", SIM_CHURN + ["--ca-policy",
                                                                 "most-allocated"],
             msg=["--ca-policy", "autoscale"]),
        Case(B, "simulate/churn-with-trace", SIM_CHURN + ["--trace", "{jobs.csv}"],
             msg=["--trace"]),
        Case(B, "simulate/nodes-descriptor-ext-but-csv", SIM[:2] + ["--nodes", "{n.yaml}",
                                                                    "--pods", "{pods.csv}"],
             files={"n.yaml": NODES_CSV}, msg=["n.yaml"]),
        Case(B, "analyze/policy-unknown", ANALYZE + ["--policy", "nope"], msg=["nope"]),
        Case(B, "analyze/report-unknown", ANALYZE + ["--report", "nope"], msg=["nope"]),
        Case(B, "analyze/prices-is-directory", ANALYZE + ["--prices", "{T}"],
             msg=[("--prices", "{T}")]),
        Case(B, "analyze/input-is-directory", ["analyze", "-i", "{T}"],
             msg=[("--input", "{T}")]),
        Case(B, "analyze/input-is-cwd", ["analyze", "-i", "."], msg=["."]),
        Case(B, "analyze/input-and-snapshot", ["analyze", "-i", "{profile.json}", "--nodes",
                                               "{k8s_nodes.json}"], msg=["not both"]),
        Case(B, "analyze/pods-without-nodes", ["analyze", "--pods", "{k8s_pods.json}"],
             msg=["--nodes"]),
        Case(B, "analyze/ignore-unknown-without-snapshot", ANALYZE + ["--ignore-unknown"],
             msg=["--ignore-unknown"]),
        Case(B, "simulate/k8s-pods-with-csv-nodes", ["simulate", "-q", "--nodes", "{nodes.csv}",
                                                     "--pods", "{k8s_pods.json}"],
             msg=["kubectl node snapshot"]),
        Case(B, "simulate/k8s-bad-quantity", ["simulate", "-q", "--nodes", "{kn.json}", "--pods",
                                              "{k8s_pods.json}"],
             files={"kn.json": K8S_NODES_JSON.replace('"31900m"', '"1e999"')},
             msg=["kn.json: $.items[0].status.allocatable.cpu"]),
        Case(B, "simulate/k8s-negative-quantity", ["simulate", "-q", "--nodes",
                                                   "{k8s_nodes.json}", "--pods", "{kp.json}"],
             files={"kp.json": K8S_PODS_JSON.replace('"cpu": "2"', '"cpu": "-2"')},
             msg=["kp.json: $.items[0].spec.containers[0].resources.requests.cpu", "negative"]),
        Case(B, "profile/node-name-invalid-utf8",
             ["profile", "-q", "--duration", "1", "--interval", "0.5", "--node-name",
              os.fsdecode(b"node-\xff\xfe"), "-o", "{p.json}"], exit=(0, 2),
             out=[("p.json", "profile")], msg=["--node-name"]),
        Case(B, "profile/node-name-empty",
             ["profile", "-q", "--duration", "1", "--interval", "0.5", "--node-name", "",
              "-o", "{p.json}"], exit=(0, 2), out=[("p.json", "profile")],
             msg=["--node-name"]),
        Case(B, "profile/prometheus-not-a-url", PROFILE + ["--prometheus", "prom:9090"],
             msg=["prom:9090"]),
        Case(B, "profile/prometheus-bad-port", PROFILE + ["--prometheus", "http://h:99999"],
             msg=["99999"]),
        Case(B, "profile/prometheus-port-garbage", PROFILE + ["--prometheus", "http://h:x"],
             msg=["http://h:x"]),
        Case(B, "profile/prometheus-empty", ["profile", "-q", "--duration", "1", "--interval",
                                             "0.5", "-o", "{p.json}", "--prometheus", ""],
             exit=(0, 2), msg=["--prometheus"], out=[("p.json", "profile")]),
        Case(B, "profile/prometheus-no-host", PROFILE + ["--prometheus", "http://:9090"],
             msg=["--prometheus"]),
        Case(B, "profile/prometheus-invalid-utf8",
             PROFILE + ["--prometheus", os.fsdecode(b"http://\xff\xfe:9090")], exit=(1, 2),
             msg=[("--prometheus", "prometheus")], max_s=10),
        Case(B, "serve-sim/model-unknown", SERVE + ["--model", "gpt-9"], msg=["gpt-9"]),
        Case(B, "serve-sim/gpu-unknown", SERVE + ["--gpu", "b9000"], msg=["b9000"]),
        Case(B, "serve-sim/batching-unknown", SERVE[:-2] + ["--batching", "dynamic"],
             msg=["dynamic"]),
        Case(B, "serve-sim/batching-empty", SERVE[:-2] + ["--batching", ""],
             msg=["--batching"]),
        Case(B, "serve-sim/prefix-cache-word", SERVE + ["--prefix-cache", "lots"],
             msg=["--prefix-cache"]),
        Case(B, "serve-sim/block-size-not-dividing-512",
             ["serve-sim", "--trace", "{mooncake.jsonl}", "--block-size", "24"],
             msg=["--block-size"]),
        Case(B, "serve-sim/tp-exceeds-gpus-of-model", SERVE + ["--tp", "64", "--model",
                                                               "llama-2-7b"],
             exit=(0, 2), msg=["--tp"]),
        Case(B, "serve-sim/trace-format-unknown", SERVE + ["--trace-format", "parquet"],
             msg=["parquet"]),
        Case(B, "costmodel-check/gpu-unknown", ["costmodel", "check", "--profile",
                                                "{allreduce.csv}", "--gpu", "b9000"],
             msg=["b9000"]),
        Case(B, "costmodel-fit/eval-gpu-unknown", CM_FIT + ["--eval", "{allreduce.csv}",
                                                            "--eval-gpu", "b9000"],
             msg=["b9000"]),
        Case(B, "costmodel-fit/train-workers-none-match", CM_FIT + ["--train-workers", "3"],
             msg=["--train-workers"]),
        Case(B, "costmodel-check/gpu-invalid-utf8",
             ["costmodel", "check", "--profile", "{allreduce.csv}", "--gpu",
              os.fsdecode(b"h\xff100")], msg=["--gpu"]),
        Case(B, "clock-probe/server-empty", ["clock", "probe", "--server", ""],
             msg=["--server"]),
        Case(B, "clock-probe/server-bad-port", ["clock", "probe", "--server", "127.0.0.1:70000"],
             msg=["70000"]),
        Case(B, "clock-probe/server-port-garbage", ["clock", "probe", "--server",
                                                    "127.0.0.1:ntp!"], msg=["ntp!"]),
        Case(B, "clock-probe/server-ipv6-unclosed", ["clock", "probe", "--server", "[::1:123"],
             msg=["[::1:123"]),
        Case(B, "clock-probe/server-invalid-utf8",
             ["clock", "probe", "--server", os.fsdecode(b"\xff\xfe.invalid"), "--samples", "1",
              "--timeout-ms", "200"], exit=(1, 2), msg=[("--server", ".invalid")], max_s=10),
        Case(B, "clock-simulate/warmup-exceeds-samples", CLOCK_SIM + ["--samples", "8",
                                                                      "--warmup", "100"],
             msg=["--warmup"]),
        Case(B, "bench-timers/impl-unknown", BENCH[:2] + ["--impl", "nope"], msg=["nope"]),
        Case(B, "bench-timers/impl-empty", BENCH[:2] + ["--impl", ""], msg=["--impl"]),
        Case(B, "version/format-unknown", ["version", "--format", "pdf"], msg=["pdf"]),
        Case(B, "version/format-invalid-utf8", ["version", "--format", os.fsdecode(b"\xff")],
             msg=["--format"]),
    ]
    return c


def _prices(body):
    return ANALYZE + ["--prices", "{pr.yaml}", "-o", "{o.json}"], {"pr.yaml": body}


def garbage_cases():
    G = "garbage"
    c = []

    def analyze_profile(name, text, want=2, msg=("p.json",), out=True, extra=()):
        c.append(Case(G, "analyze-input/" + name,
                      ["analyze", "-i", "{p.json}", "--idle-window", "2", "-o", "{o.json}"]
                      + list(extra), files={"p.json": text}, exit=want, msg=list(msg),
                      out=[("o.json", "json")] if out else []))

    analyze_profile("util-1e308", profile_json(utils=((1e308, 2), (50, 60), (3, 4), (5, 6))),
                    msg=["p.json", "$.nodes[0].gpus[0].util_pct[0]"])
    analyze_profile("util-minus-50", profile_json(utils=((-50, 2), (50, 60), (3, 4), (5, 6))),
                    msg=["p.json", "$.nodes[0].gpus[0].util_pct[0]"])
    analyze_profile("util-100.5", profile_json(utils=((100.5, 2), (50, 60), (3, 4), (5, 6))),
                    msg=["p.json", "$.nodes[0].gpus[0].util_pct[0]"])
    analyze_profile("util-1e400", profile_json(utils=(("1e400", 2), (50, 60), (3, 4), (5, 6))),
                    msg=["p.json", "$.nodes[0].gpus[0].util_pct[0]"])
    analyze_profile("util-NaN-literal", profile_json(utils=(("NaN", 2), (50, 60), (3, 4),
                                                            (5, 6))), msg=["p.json"])
    analyze_profile("util-Infinity-literal", profile_json(utils=(("Infinity", 2), (50, 60),
                                                                 (3, 4), (5, 6))),
                    msg=["p.json"])
    analyze_profile("zero-samples", profile_json(utils=(), names=(), timestamps="[]")
                    .replace('"nodes": []', '"nodes": [{"name": "a", "gpus": [{"index": 0, '
                                                '"model": "NVIDIA L4", "util_pct": []}]}]'),
                    msg=["p.json"])
    analyze_profile("no-nodes", profile_json(names=(), utils=()), msg=["p.json"])
    analyze_profile("timestamps-decreasing", profile_json(timestamps="[1, 0]"),
                    msg=["p.json", "$.timestamps_s"])
    analyze_profile("timestamps-equal", profile_json(timestamps="[0, 0]"),
                    msg=["p.json", "$.timestamps_s"])
    analyze_profile("series-too-short", profile_json().replace('"util_pct": [1, 2]',
                                                               '"util_pct": [1]'),
                    msg=["p.json", "$.nodes[0].gpus[0].util_pct"])
    analyze_profile("version-2", PROFILE_JSON.replace('"version": 1', '"version": 2'),
                    msg=["p.json", "version"])
    analyze_profile("version-missing", PROFILE_JSON.replace('"version": 1, ', ''),
                    msg=["p.json", "version"])
    analyze_profile("duplicate-node-names", profile_json(names=("a", "a", "c", "d")),
                    msg=["p.json", "$.nodes[1]"])
    analyze_profile("duplicate-key", PROFILE_JSON.replace('"version": 1,',
                                                          '"version": 1, "version": 1,'),
                    want=(0, 2), msg=["p.json"])
    analyze_profile("interval-negative", PROFILE_JSON.replace('"interval_s": 1',
                                                              '"interval_s": -1'),
                    msg=["p.json", "interval_s"])
    analyze_profile("interval-zero", PROFILE_JSON.replace('"interval_s": 1', '"interval_s": 0'),
                    want=(0, 2), msg=["p.json", "interval_s"])
    analyze_profile("memory-negative", PROFILE_JSON.replace('"memory_mib": 65536',
                                                            '"memory_mib": -1', 1),
                    msg=["p.json", "memory_mib"])
    analyze_profile("cpus-1e300", PROFILE_JSON.replace('"cpus": 8', '"cpus": 1e300', 1),
                    msg=["p.json", "cpus"])
    analyze_profile("gpu-index-gap", PROFILE_JSON.replace('"index": 0', '"index": 5', 1),
                    msg=["p.json", "index"])
    analyze_profile("pod-on-missing-gpu",
                    profile_json(pods=['"p"']).replace('"gpu_ids": [0]', '"gpu_ids": [7]'),
                    msg=["p.json", "gpu_ids"])
    analyze_profile("pod-gpu-milli-2000",
                    profile_json(pods=['"p"']).replace('"gpu_milli": 1000', '"gpu_milli": 2000'),
                    msg=["p.json", "gpu_milli"])
    analyze_profile("pod-num-gpus-negative",
                    profile_json(pods=['"p"']).replace('"num_gpus": 1', '"num_gpus": -1'),
                    msg=["p.json", "num_gpus"])
    analyze_profile("util-string", PROFILE_JSON.replace('[1, 2]', '["1", 2]'),
                    msg=["p.json", "$.nodes[0].gpus[0].util_pct[0]"])
    analyze_profile("trailing-garbage", PROFILE_JSON + "}}", msg=["p.json"])
    analyze_profile("top-level-array", "[1, 2, 3]", msg=["p.json"])
    analyze_profile("bom", "\ufeff" + PROFILE_JSON, want=(0, 2), msg=["p.json"])
    analyze_profile("source-invalid-utf8", os.fsdecode(
        PROFILE_JSON.replace('"source": "t"', '"source": "t\xff"').encode("latin-1")),
        want=(0, 2), msg=["p.json"])
    analyze_profile("name-invalid-utf8-bytes", os.fsdecode(
        profile_json(names=("a\xff\xfe", "b", "c", "d")).encode("latin-1")), want=(0, 2),
        msg=["p.json"])
    analyze_profile("name-lone-surrogate-escape", profile_json(names=('"a\\ud800"', "b", "c",
                                                                      "d")),
                    want=(0, 2), msg=["p.json"])
    analyze_profile("name-empty", profile_json(names=('""', "b", "c", "d")), msg=["p.json",
                                                                                   "$.nodes[0]"])
    # Prices: every non-finite, negative or meaningless value is refused with its line.
    for name, body, line in (
            ("inf", "gpu_usd_per_hour:\n  L4: .inf\n", 2),
            ("minus-inf", "gpu_usd_per_hour:\n  L4: -.inf\n", 2),
            ("nan", "gpu_usd_per_hour:\n  L4: .nan\n", 2),
            ("negative", "gpu_usd_per_hour:\n  L4: -1\n", 2),
            ("huge", "gpu_usd_per_hour:\n  L4: 1e400\n", 2),
            ("string", "gpu_usd_per_hour:\n  L4: cheap\n", 2),
            ("list", "gpu_usd_per_hour:\n  L4: [1, 2]\n", 2),
            ("hours-zero", "hours_per_month: 0\ngpu_usd_per_hour:\n  L4: 1\n", 1),
            ("hours-negative", "hours_per_month: -730\n", 1),
            ("hours-inf", "hours_per_month: .inf\n", 1),
            ("hours-over-month", "hours_per_month: 745\n", 1),
            ("duplicate-model", "gpu_usd_per_hour:\n  L4: 1\n  L4: 2\n", 3),
            ("unknown-key", "gpu_usd_per_hr:\n  L4: 1\n", 1),
            ("top-level-list", "- 1\n- 2\n", 0),
            ("tab-indent", "gpu_usd_per_hour:\n\tL4: 1\n", 2),
            ("empty-model-name", "gpu_usd_per_hour:\n  \"\": 1\n", 2)):
        argv, files = _prices(body)
        c.append(Case(G, "analyze-prices/" + name, argv, files=files,
                      msg=["pr.yaml:%d" % line] if line else ["pr.yaml"]))
    for name, body in (("source-invalid-utf8", b'source: "neg\xff\xfe rates"\n'),
                       ("source-control-chars", b'source: "\\e[2J\\e[31mrates\\a"\n'),
                       ("source-huge", b"source: " + b"s" * 100000 + b"\n")):
        c.append(Case(G, "analyze-prices/" + name, ANALYZE + ["--prices", "{pr.yaml}"],
                      files={"pr.yaml": body}, exit=(0, 2), msg=["pr.yaml"],
                      absent=[("stdout", "\x1b"), ("stdout", "\x07")]))
        c.append(Case(G, "analyze-prices/%s-json" % name, ANALYZE + ["--prices", "{pr.yaml}",
                                                                     "-o", "{o.json}"],
                      files={"pr.yaml": body}, exit=(0, 2), msg=["pr.yaml"],
                      out=[("o.json", "json")]))
    c.append(Case(G, "analyze-prices/empty-file", ANALYZE + ["--prices", "{pr.yaml}", "-o",
                                                             "{o.json}"],
                  files={"pr.yaml": ""}, exit=(0, 2), msg=["pr.yaml"],
                  out=[("o.json", "json")]))
    # Cluster descriptors.
    def nodes_file(name, fname, text, want=2, msg=None):
        c.append(Case(G, "simulate-nodes/" + name, SIM[:2] + ["--nodes", "{%s}" % fname,
                                                             "--pods", "{pods.csv}", "--policy",
                                                             "bestfit", "--seeds", "1", "-o",
                                                             "{o.json}"],
                      files={fname: text}, exit=want, msg=msg or [fname],
                      out=[("o.json", "json")]))

    nodes_file("csv-no-gpus", "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,0,\n"
               "n1,32000,65536,0,\n")
    nodes_file("csv-64-gpu-models", "n.csv", "sn,cpu_milli,memory_mib,gpu,model\n" +
               "".join("n%d,32000,65536,1,M%d\n" % (i, i) for i in range(64)))
    nodes_file("csv-duplicate-names", "n.csv", "sn,cpu_milli,memory_mib,gpu,model\n"
               "n0,32000,65536,2,T4\nn0,32000,65536,2,T4\n", msg=["n.csv:3"])
    nodes_file("csv-gpu-minus-one", "n.csv", "sn,cpu_milli,memory_mib,gpu,model\n"
               "n0,32000,65536,-1,T4\n", msg=["n.csv:2"])
    nodes_file("csv-gpu-overflow", "n.csv", "sn,cpu_milli,memory_mib,gpu,model\n"
               "n0,32000,65536,99999999999999999999,T4\n", msg=["n.csv:2"])
    nodes_file("csv-gpu-huge", "n.csv", "sn,cpu_milli,memory_mib,gpu,model\n"
               "n0,32000,65536,1000000000,T4\n", msg=["n.csv:2"])
    nodes_file("csv-cpu-nan", "n.csv", "sn,cpu_milli,memory_mib,gpu,model\n"
               "n0,nan,65536,2,T4\n", msg=["n.csv:2"])
    nodes_file("csv-header-only", "n.csv", "sn,cpu_milli,memory_mib,gpu,model\n",
               msg=["n.csv"])
    nodes_file("csv-nul-byte", "n.csv", "sn,cpu_milli,memory_mib,gpu,model\n"
               "n0,320\x0000,65536,2,T4\n", msg=["n.csv:2"])
    nodes_file("csv-crlf", "n.csv", NODES_CSV.replace("\n", "\r\n"), want=0)
    nodes_file("csv-bom", "n.csv", "\ufeff" + NODES_CSV, want=0)
    nodes_file("csv-unknown-model", "n.csv", "sn,cpu_milli,memory_mib,gpu,model\n"
               "n0,32000,65536,2,B9000\n", want=(0, 2))
    nodes_file("csv-name-invalid-utf8", "n.csv", os.fsdecode(
        b"sn,cpu_milli,memory_mib,gpu,model\nn\xff0,32000,65536,2,T4\n"), want=(0, 2))
    nodes_file("csv-huge-line", "n.csv", "sn,cpu_milli,memory_mib,gpu,model\n"
               "n0,%s,65536,2,T4\n" % ("9" * (2 << 20)), msg=["n.csv:2"])
    nodes_file("yaml-no-nodes", "c.yaml", "name: x\nnodes: []\n")
    nodes_file("yaml-no-gpus", "c.yaml", "nodes:\n  - name: a\n    numa_nodes:\n"
               "      - {id: 0, cpu_milli: 1000, memory_mib: 1024}\n")
    nodes_file("yaml-duplicate-node", "c.yaml", CLUSTER_YAML + CLUSTER_YAML.split("nodes:\n")[1],
               msg=["c.yaml"])
    nodes_file("yaml-gpu-milli-negative", "c.yaml",
               CLUSTER_YAML.replace("capacity: {memory_mib: 15360}",
                                    "capacity: {memory_mib: 15360, gpu_milli: -5}", 1),
               msg=["c.yaml:9", "gpu_milli"])
    nodes_file("yaml-price-inf", "c.yaml", CLUSTER_YAML.replace("price_usd_per_hour: 0.35",
                                                                "price_usd_per_hour: .inf"),
               msg=["c.yaml:3", "price_usd_per_hour"])
    nodes_file("yaml-price-nan", "c.yaml", CLUSTER_YAML.replace("price_usd_per_hour: 0.35",
                                                                "price_usd_per_hour: .nan"),
               msg=["c.yaml:3", "price_usd_per_hour"])
    nodes_file("yaml-price-negative", "c.yaml",
               CLUSTER_YAML.replace("price_usd_per_hour: 0.35", "price_usd_per_hour: -1"),
               msg=["c.yaml:3", "price_usd_per_hour"])
    nodes_file("yaml-power-huge", "c.yaml", CLUSTER_YAML.replace("power_w: 70", "power_w: 1e400"),
               msg=["c.yaml:3", "power_w"])
    nodes_file("yaml-memory-overflow", "c.yaml",
               CLUSTER_YAML.replace("memory_mib: 131072", "memory_mib: 99999999999999999999999"),
               msg=["c.yaml:7", "memory_mib"])
    nodes_file("yaml-17-gpus", "c.yaml", CLUSTER_YAML + "".join(
        "      - {id: g%d, type: gpu, model: T4, capacity: {memory_mib: 15360}}\n" % i
        for i in range(15)), msg=["c.yaml"])
    nodes_file("yaml-unknown-key", "c.yaml", CLUSTER_YAML.replace("nodes:", "nodez:"),
               msg=["c.yaml:4", "nodez"])
    nodes_file("yaml-duplicate-key", "c.yaml", CLUSTER_YAML.replace("name: t\n",
                                                                    "name: t\nname: u\n"),
               msg=["c.yaml:2"])
    nodes_file("yaml-name-invalid-utf8", "c.yaml", os.fsdecode(
        CLUSTER_YAML.replace("node-a", "node-\xff").encode("latin-1")), want=(0, 2))
    nodes_file("yaml-tab-indent", "c.yaml", CLUSTER_YAML.replace("  - name", "\t- name"),
               msg=["c.yaml"])
    nodes_file("yaml-64-models", "c.yaml", "gpu_models:\n" + "".join(
        "  M%d: {memory_mib: 1024, price_usd_per_hour: 1, power_w: 1}\n" % i for i in range(64))
        + "nodes:\n" + "".join(
            "  - name: n%d\n    numa_nodes: [{id: 0, cpu_milli: 1000, memory_mib: 1024}]\n"
            "    devices: [{id: g, type: gpu, model: M%d, capacity: {memory_mib: 1024}}]\n"
            % (i, i) for i in range(64)), msg=["c.yaml"])
    nodes_file("json-nan-literal", "c.json", CLUSTER_JSON.replace("0.35", "NaN"),
               msg=["c.json"])
    nodes_file("json-1e400", "c.json", CLUSTER_JSON.replace("0.35", "1e400"), msg=["c.json"])
    nodes_file("json-duplicate-key", "c.json", CLUSTER_JSON.replace('"name": "t",',
                                                                    '"name": "t", "name": "u",'),
               msg=["c.json"])
    nodes_file("json-string-for-int", "c.json", CLUSTER_JSON.replace('"cpu_milli": 32000',
                                                                     '"cpu_milli": "32000"'),
               msg=["c.json", "cpu_milli"])
    # Pods and replays.
    def pods_file(name, text, want=2, msg=None, mode=None, warn=None):
        argv = SIM[:2] + ["--nodes", "{nodes.csv}", "--pods", "{p.csv}", "--policy", "bestfit",
                          "--seeds", "1", "-o", "{o.json}"]
        if mode:
            argv += ["--mode", mode]
        c.append(Case(G, "simulate-%s-pods/%s" % (mode or "fill", name), argv,
                      files={"p.csv": text}, exit=want, msg=msg or ["p.csv"],
                      out=[("o.json", "json")],
                      present=[("stderr", warn)] if warn else []))

    H = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
    pods_file("gpu-milli-1001", H + "p0,1000,1024,1,1001\n", msg=["p.csv:2", "gpu_milli"])
    pods_file("sharing-pod-two-gpus", H + "p0,1000,1024,2,500\n", msg=["p.csv:2"])
    pods_file("num-gpu-overflow", H + "p0,1000,1024,99999999999999999999,1000\n",
              msg=["p.csv:2", "num_gpu"])
    pods_file("num-gpu-1e9", H + "p0,1000,1024,1000000000,1000\n", want=(0, 2),
              msg=["p.csv:2", "num_gpu"])
    pods_file("cpu-nan", H + "p0,nan,1024,1,1000\n", msg=["p.csv:2", "cpu_milli"])
    pods_file("cpu-inf", H + "p0,inf,1024,1,1000\n", msg=["p.csv:2", "cpu_milli"])
    pods_file("header-only", H, msg=["p.csv"])
    pods_file("unknown-gpu-spec", PODS_FULL_HEADER + "p0,1000,1024,1,1000,H800,LS,Running,0,"
              "100,0\np1,1000,1024,1,500,,LS,Running,0,100,0\n", want=0, warn="H800")
    pods_file("duplicate-names", H + "p0,1000,1024,1,500\np0,1000,1024,1,500\n", want=(0, 2),
              msg=["p.csv:3"])
    pods_file("wrong-field-count", H + "p0,1000,1024\n", msg=["p.csv:2"])
    pods_file("qos-unknown", PODS_FULL_HEADER + "p0,1000,1024,1,1000,,Platinum,Running,0,100,0\n",
              want=(0, 2), msg=["p.csv:2", "qos"])
    pods_file("all-same-creation-time", PODS_FULL_HEADER + "".join(
        "r%d,1000,1024,1,1000,,LS,Running,100,200,100\n" % i for i in range(5)),
        mode="replay", msg=["p.csv"])
    pods_file("deletion-before-creation", PODS_FULL_HEADER +
              "r0,1000,1024,1,1000,,LS,Running,100,50,100\n"
              "r1,1000,1024,1,1000,,LS,Running,200,500,200\n", mode="replay",
              msg=["p.csv:2", "deletion_time"])
    pods_file("creation-negative", PODS_FULL_HEADER +
              "r0,1000,1024,1,1000,,LS,Running,-100,50,0\n"
              "r1,1000,1024,1,1000,,LS,Running,200,500,200\n", mode="replay",
              want=(0, 2), msg=["p.csv:2", "creation_time"])
    pods_file("creation-1e300", PODS_FULL_HEADER +
              "r0,1000,1024,1,1000,,LS,Running,0,50,0\n"
              "r1,1000,1024,1,1000,,LS,Running,1e300,1e301,0\n", mode="replay",
              msg=["p.csv:3", "creation_time"])
    pods_file("creation-nan", PODS_FULL_HEADER +
              "r0,1000,1024,1,1000,,LS,Running,0,50,0\n"
              "r1,1000,1024,1,1000,,LS,Running,nan,100,0\n", mode="replay",
              msg=["p.csv:3", "creation_time"])
    pods_file("no-creation-column", PODS_CSV, mode="replay", want=(0, 2), msg=["p.csv"])
    pods_file("single-pod", PODS_FULL_HEADER + "r0,1000,1024,1,1000,,LS,Running,0,50,0\n",
              mode="replay", msg=["p.csv"], want=(0, 2))
    pods_file("churn-all-same-creation", PODS_FULL_HEADER + "".join(
        "r%d,1000,1024,1,1000,,LS,Running,100,100,100\n" % i for i in range(5)),
        mode="churn", msg=["p.csv"], want=(0, 2))
    # LLM traces: dates, orders and token counts.
    def trace(name, fname, text, want=2, msg=None, extra=()):
        c.append(Case(G, "serve-sim-trace/" + name, ["serve-sim", "--trace", "{%s}" % fname,
                                                     "-o", "{o.json}"] + list(extra),
                      files={fname: text}, exit=want, msg=msg or [fname],
                      out=[("o.json", "json")]))

    AH = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    for name, ts, want in (("feb-31", "2023-02-31 10:00:00", 2),
                           ("feb-29-non-leap", "2023-02-29 10:00:00", 2),
                           ("month-13", "2023-13-01 10:00:00", 2),
                           ("hour-25", "2023-11-16 25:00:00", 2),
                           ("minute-61", "2023-11-16 10:61:00", 2),
                           ("day-zero", "2023-11-00 10:00:00", 2),
                           ("year-garbage", "20x3-11-16 10:00:00", 2),
                           ("fraction-garbage", "2023-11-16 10:00:00.12ab", 2),
                           ("feb-29-leap-ok", "2024-02-29 10:00:00", 0)):
        trace("azure-" + name, "a.csv", AH + ts + ",100,10\n", want=want,
              msg=["a.csv:2", "TIMESTAMP"])
    trace("azure-out-of-order", "a.csv", AH + "2023-11-16 18:15:50,100,10\n"
          "2023-11-16 18:15:46,100,10\n", msg=["a.csv:3", "TIMESTAMP"])
    trace("azure-zero-prompt", "a.csv", AH + "2023-11-16 18:15:50,0,10\n",
          msg=["a.csv:2", "ContextTokens"])
    trace("azure-negative-output", "a.csv", AH + "2023-11-16 18:15:50,10,-1\n",
          msg=["a.csv:2", "GeneratedTokens"])
    trace("azure-token-overflow", "a.csv", AH + "2023-11-16 18:15:50,99999999999999999999,1\n",
          msg=["a.csv:2", "ContextTokens"])
    trace("azure-header-only", "a.csv", AH, msg=["a.csv"])
    trace("azure-crlf", "a.csv", AZURE_CSV.replace("\n", "\r\n"), want=0)
    trace("azure-bom", "a.csv", "\ufeff" + AZURE_CSV, want=0)
    trace("azure-huge-line", "a.csv", AH + "2023-11-16 18:15:50," + "9" * (2 << 20) + ",1\n",
          msg=["a.csv:2"])
    trace("mooncake-broken-json", "m.jsonl", '{"timestamp": 0, "input_length": 10,\n',
          msg=["m.jsonl:1"])
    trace("mooncake-too-many-hash-ids", "m.jsonl", '{"timestamp": 0, "input_length": 10, '
          '"output_length": 1, "hash_ids": [1, 2, 3]}\n', msg=["m.jsonl:1", "hash_ids"])
    trace("mooncake-timestamp-nan", "m.jsonl", '{"timestamp": NaN, "input_length": 10, '
          '"output_length": 1, "hash_ids": [1]}\n', msg=["m.jsonl:1"])
    trace("mooncake-timestamp-1e400", "m.jsonl", '{"timestamp": 1e400, "input_length": 10, '
          '"output_length": 1, "hash_ids": [1]}\n', msg=["m.jsonl:1"])
    trace("mooncake-timestamp-negative", "m.jsonl", '{"timestamp": -5, "input_length": 10, '
          '"output_length": 1, "hash_ids": [1]}\n', want=(0, 2), msg=["m.jsonl:1"])
    trace("mooncake-length-string", "m.jsonl", '{"timestamp": 0, "input_length": "10", '
          '"output_length": 1, "hash_ids": [1]}\n', msg=["m.jsonl:1", "input_length"])
    trace("mooncake-hash-id-huge", "m.jsonl", '{"timestamp": 0, "input_length": 10, '
          '"output_length": 1, "hash_ids": [1e300]}\n', msg=["m.jsonl:1", "hash_ids"])
    trace("mooncake-hash-id-negative", "m.jsonl", '{"timestamp": 0, "input_length": 10, '
          '"output_length": 1, "hash_ids": [-1]}\n', want=(0, 2), msg=["m.jsonl:1"])
    trace("sharegpt-zero-decode", "s.csv", "num_prefill_tokens,num_decode_tokens\n10,0\n",
          msg=["s.csv:2", "num_decode_tokens"])
    trace("sharegpt-float-tokens", "s.csv", "num_prefill_tokens,num_decode_tokens\n10.5,3\n",
          msg=["s.csv:2", "num_prefill_tokens"])
    trace("one-request", "a.csv", AH + "2023-11-16 18:15:50,100,10\n", want=0)
    trace("all-one-timestamp", "a.csv", AH + "2023-11-16 18:15:50,100,10\n" * 50, want=0)
    # Cost-model profiles.
    def cm(name, text, want=2, msg=None, sub="check"):
        c.append(Case(G, "costmodel-%s/%s" % (sub, name),
                      ["costmodel", sub, "--profile", "{c.csv}", "--gpu", "h100", "-o",
                       "{o.json}"], files={"c.csv": text}, exit=want, msg=msg or ["c.csv"],
                      out=[("o.json", "json")]))

    for sub in ("check", "fit"):
        cm("only-inter-node-rows", allreduce_rows([(8, 2048, "0.1", 1), (16, 4096, "0.2", 1)]),
           sub=sub)
        cm("median-zero", allreduce_rows([(2, 2048, "0", 8), (4, 2048, "0.1", 8)]),
           want=(0, 2), sub=sub, msg=["c.csv:2"])
        cm("median-negative", allreduce_rows([(2, 2048, "-1", 8)]), sub=sub,
           msg=["c.csv:2", "median"])
        cm("median-nan", allreduce_rows([(2, 2048, "nan", 8)]), sub=sub,
           msg=["c.csv:2", "median"])
        cm("median-inf", allreduce_rows([(2, 2048, "inf", 8)]), sub=sub,
           msg=["c.csv:2", "median"])
        cm("workers-zero", allreduce_rows([(0, 2048, "0.1", 8)]), sub=sub,
           msg=["c.csv:2", "num_workers"])
        cm("header-only", ALLREDUCE_HEADER, sub=sub)
        cm("no-known-columns", "a,b,c\n1,2,3\n", sub=sub)
    return c


def injection_cases():
    I = "injection"
    c = []
    # HTML reports: the raw hostile string must never appear in the page.
    for where, prof in (
            ("node-name", profile_json(names=(HTML_BAD.replace('"', "'"), "b", "c", "d"))),
            ("gpu-model", profile_json(model="NVIDIA " + HTML_BAD.replace('"', "'"))),
            ("pod-name", profile_json(pods=['"%s"' % HTML_BAD.replace('"', "'")])),
            ("source", profile_json(source='"%s"' % HTML_BAD.replace('"', "'"))),
            ("comment-open", profile_json(names=("<!--<script>", "b", "c", "d"))),
            ("attribute-quote", profile_json(names=('"x\\" onmouseover=\\"alert(1)"', "b", "c",
                                                    "d"))),
            ("u2028", profile_json(names=('"a\\u2028b</script>"', "b", "c", "d"))),
    ):
        c.append(Case(I, "analyze-html/" + where,
                      ["analyze", "-i", "{p.json}", "--idle-window", "2", "--format", "html",
                       "-o", "{r.html}"], files={"p.json": prof}, exit=0,
                      out=[("r.html", "html")],
                      absent=[("r.html", "<img src=x onerror"), ("r.html", "</script><img"),
                              ("r.html", "<!--<script>"), ("r.html", '" onmouseover="')]))
    c.append(Case(I, "analyze-html/prices-source",
                  ["analyze", "-i", "{profile.json}", "--idle-window", "2", "--prices",
                   "{pr.yaml}", "--format", "html", "-o", "{r.html}"],
                  files={"pr.yaml": "source: \"%s\"\n" % HTML_BAD.replace('"', "'")}, exit=0,
                  out=[("r.html", "html")], absent=[("r.html", "<img src=x onerror")]))
    c.append(Case(I, "simulate-html/node-and-pod-names",
                  SIM[:2] + ["--nodes", "{n.csv}", "--pods", "{p.csv}", "--policy", "bestfit",
                             "--seeds", "1", "--format", "html", "-o", "{r.html}"],
                  files={"n.csv": "sn,cpu_milli,memory_mib,gpu,model\n%s,32000,65536,2,T4\n"
                                  % HTML_BAD.replace(",", ";"),
                         "p.csv": "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                  "%s,1000,1024,1,500\n" % HTML_BAD.replace(",", ";")},
                  exit=0, out=[("r.html", "html")], absent=[("r.html", "<img src=x onerror")]))
    c.append(Case(I, "simulate-html/policy-opt-value",
                  SIM[:-4] + ["--policy", "cas", "--seeds", "1", "--policy-opt",
                              "x=" + HTML_BAD, "--format", "html", "-o", "{r.html}"],
                  exit=2, msg=["--policy-opt"], absent=[("stderr", "\x1b")]))
    # Terminal: control characters in names from inputs never reach stdout/stderr raw.
    no_esc = [("stdout", "\x1b"), ("stderr", "\x1b"), ("stdout", "\x07"), ("stderr", "\x07"),
              ("stdout", "\xc2\x9b".encode("latin-1")), ("stderr", "\xc2\x9b".encode("latin-1"))]
    EV = ESC + "evil\x07\u009b2J"
    c.append(Case(I, "analyze-text/node-name-ansi",
                  ["analyze", "-i", "{p.json}", "--idle-window", "2"],
                  files={"p.json": profile_json(names=(json_str(EV), "b", "c", "d"))},
                  exit=0, out=[("stdout", "text")], absent=no_esc))
    c.append(Case(I, "analyze-text/pod-name-ansi",
                  ["analyze", "-i", "{p.json}", "--idle-window", "2"],
                  files={"p.json": profile_json(pods=[json_str(EV)])},
                  exit=0, out=[("stdout", "text")], absent=no_esc))
    c.append(Case(I, "analyze-text/model-ansi",
                  ["analyze", "-i", "{p.json}", "--idle-window", "2"],
                  files={"p.json": profile_json(model=json_str("NVIDIA " + EV))},
                  exit=0, out=[("stdout", "text")], absent=no_esc))
    c.append(Case(I, "analyze-text/duplicate-ansi-name-error",
                  ["analyze", "-i", "{p.json}"],
                  files={"p.json": profile_json(names=(json_str(EV), json_str(EV), "c", "d"))},
                  exit=2, msg=["p.json"], absent=no_esc))
    c.append(Case(I, "simulate/pod-name-ansi-unknown-spec",
                  SIM[:2] + ["--nodes", "{nodes.csv}", "--pods", "{p.csv}", "--policy",
                             "bestfit", "--seeds", "1"],
                  files={"p.csv": PODS_FULL_HEADER + EV + ",1000,1024,1,1000,H800,LS,Running,0,"
                                  "100,0\np1,1000,1024,1,500,,LS,Running,0,100,0\n"},
                  exit=(0, 2), msg=["p.csv"], absent=no_esc))
    c.append(Case(I, "simulate/node-name-ansi-error",
                  SIM[:2] + ["--nodes", "{n.csv}", "--pods", "{pods.csv}"],
                  files={"n.csv": "sn,cpu_milli,memory_mib,gpu,model\n" + EV +
                                  ",lots,65536,2,T4\n"},
                  exit=2, msg=["n.csv:2"], absent=no_esc))
    c.append(Case(I, "simulate/model-ansi",
                  SIM[:2] + ["--nodes", "{n.csv}", "--pods", "{pods.csv}", "--policy",
                             "bestfit", "--seeds", "1"],
                  files={"n.csv": "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2," + EV +
                                  "\n"},
                  exit=(0, 2), msg=["n.csv"], absent=no_esc))
    c.append(Case(I, "simulate/yaml-node-name-ansi",
                  SIM[:2] + ["--nodes", "{c.yaml}", "--pods", "{pods.csv}", "--policy",
                             "bestfit", "--seeds", "1"],
                  files={"c.yaml": CLUSTER_YAML.replace("name: node-a",
                                                        'name: "\\e[2J\\e[31mevil\\a"')},
                  exit=(0, 2), msg=["c.yaml"], absent=no_esc))
    c.append(Case(I, "simulate/yaml-bad-type-ansi-error",
                  SIM[:2] + ["--nodes", "{c.yaml}", "--pods", "{pods.csv}"],
                  files={"c.yaml": CLUSTER_YAML.replace("type: gpu", 'type: "\\e[2Jtpu"', 1)},
                  exit=2, msg=["c.yaml:9"], absent=no_esc))
    c.append(Case(I, "serve-sim/trace-field-ansi",
                  ["serve-sim", "--trace", "{a.csv}"],
                  files={"a.csv": "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                  "2023-11-16 18:15:50," + EV + ",1\n"},
                  exit=2, msg=["a.csv:2"], absent=no_esc))
    c.append(Case(I, "costmodel/column-ansi",
                  ["costmodel", "check", "--gpu", "h100", "--profile", "{c.csv}"],
                  files={"c.csv": ALLREDUCE_HEADER + "0,1,1,1," + EV +
                                  ",0,0,2,2048,all_reduce,8,8\n"},
                  exit=2, msg=["c.csv:2"], absent=no_esc))
    c.append(Case(I, "profile/node-name-ansi",
                  ["profile", "--duration", "1", "--interval", "0.5", "--node-name", EV, "-o",
                   "{p.json}"], exit=(0, 2), out=[("p.json", "profile")], absent=no_esc,
                  msg=["--node-name"]))
    c.append(Case(I, "profile-prometheus/node-name-ansi",
                  ["profile", "-q", "--duration", "3", "--interval", "1", "--timeout", "3",
                   "-o", "{p.json}", "--prometheus", "http://127.0.0.1:{port}"],
                  server=("http", "ansi_name"), exit=(0, 1), out=[("p.json", "profile")],
                  absent=no_esc, msg=["127.0.0.1"]))
    c.append(Case(I, "profile-prometheus/credentials-not-printed",
                  ["profile", "-q", "--duration", "3", "--timeout", "2", "-o", "{p.json}",
                   "--prometheus", "http://admin:s3cr3t-pw@127.0.0.1:{port}"],
                  server=("http", "http500"), exit=(1, 2), absent=[("stderr", "s3cr3t-pw")],
                  msg=["127.0.0.1"]))
    c.append(Case(I, "profile-prometheus/credentials-not-in-profile",
                  ["profile", "-q", "--duration", "3", "--timeout", "2", "-o", "{p.json}",
                   "--prometheus", "http://admin:s3cr3t-pw@127.0.0.1:{port}"],
                  server=("http", "valid"), exit=(0, 1, 2),
                  absent=[("stderr", "s3cr3t-pw"), ("p.json", "s3cr3t-pw")],
                  msg=["127.0.0.1"]))
    c.append(Case(I, "profile-prometheus/credentials-refused-port",
                  ["profile", "-q", "--duration", "3", "--timeout", "2", "-o", "{p.json}",
                   "--prometheus", "http://admin:s3cr3t-pw@127.0.0.1:1"], exit=(1, 2),
                  absent=[("stderr", "s3cr3t-pw")], msg=["127.0.0.1"]))
    c.append(Case(I, "clock-probe/kiss-of-death-ansi",
                  ["clock", "probe", "--server", "127.0.0.1:{port}", "--samples", "1",
                   "--timeout-ms", "500"], server=("sntp", "kod_ansi"), exit=1,
                  msg=["127.0.0.1"], absent=no_esc))
    c.append(Case(I, "clock-probe/server-name-ansi",
                  ["clock", "probe", "--server", EV + ".invalid", "--samples", "1",
                   "--timeout-ms", "200"], exit=(1, 2), msg=["evil"], absent=no_esc, max_s=10))
    for w in WRITERS:  # required flags given, so the unknown flag is what gets reported
        c.append(Case(I, "%s/unknown-flag-ansi" % w.key, w.argv + ["-o", "{x.json}", "--" + EV],
                      msg=["evil"], absent=no_esc, server=w.server))
    for cmd in (["completion", "bash"], ["help", "simulate"]):
        c.append(Case(I, "%s/unknown-flag-ansi" % "-".join(cmd), cmd + ["--" + EV],
                      msg=["evil"], absent=no_esc))
    c.append(Case(I, "top/unknown-command-ansi", [EV], msg=["evil"], absent=no_esc))
    c.append(Case(I, "help/unknown-topic-ansi", ["help", EV], msg=["evil"], absent=no_esc))
    c.append(Case(I, "version/format-ansi", ["version", "--format", EV], msg=["evil"],
                  absent=no_esc))
    return c


def json_str(s):
    import json
    return json.dumps(s)


def exit_code_cases():
    E = "exit-code"
    c = []
    for typo, right in (("simulat", "simulate"), ("profil", "profile"), ("analyse", "analyze"),
                        ("serve_sim", "serve-sim"), ("costmodle", "costmodel"),
                        ("clokc", "clock"), ("bnech", "bench"), ("verison", "version"),
                        ("hlep", "help"), ("completions", "completion")):
        c.append(Case(E, "top/typo-" + typo, [typo], msg=["did you mean", right, typo]))
    for parent, typo, right in (("costmodel", "chek", "check"), ("costmodel", "fitt", "fit"),
                                ("clock", "prob", "probe"), ("clock", "simulat", "simulate"),
                                ("bench", "timer", "timers")):
        c.append(Case(E, "%s/typo-%s" % (parent, typo), [parent, typo], msg=[typo, right]))
    c += [Case(E, "top/unknown-command", ["foo"], msg=["foo"]),
          Case(E, "top/no-command", [], msg=[("seedance", "command")]),
          Case(E, "top/empty-command", [""], msg=[("command", "seedance")]),
          Case(E, "top/huge-command", ["x" * 100000], msg=["x"]),
          Case(E, "top/unknown-global-flag", ["--verbose-max"], msg=["--verbose-max"]),
          Case(E, "costmodel/no-subcommand", ["costmodel"], msg=[("check", "subcommand")]),
          Case(E, "clock/no-subcommand", ["clock"], msg=[("probe", "subcommand")]),
          Case(E, "bench/no-subcommand", ["bench"], msg=[("timers", "subcommand")])]
    for cmd, typo, right in ((["simulate"], "--tnue", "--tune"),
                             (writer_argv("analyze"), "--idle-utl", "--idle-util"),
                             (["serve-sim"], "--tarce", "--trace"),
                             (["profile"], "--duratoin", "--duration"),
                             (["costmodel", "check"], "--gpuu", "--gpu"),
                             (["costmodel", "fit"], "--roofline-exp", "--roofline-exponent"),
                             (["clock", "probe"], "--servre", "--server"),
                             (["clock", "simulate"], "--sample", "--samples"),
                             (["bench", "timers"], "--timer", "--timers"),
                             (["version"], "--fromat", "--format")):
        c.append(Case(E, "%s/unknown-flag%s" % (command_of(cmd).replace(" ", "-"), typo),
                      cmd + [typo, "1"], msg=[typo, right]))
    for w in WRITERS:
        for fmt in ("json", "csv", "html", "yaml", "table"):
            c.append(Case(E, "%s/-o-%s-refused" % (w.key, fmt), w.argv + ["-o", fmt],
                          msg=["--format"], server=w.server))
        if w.format_flag:
            c.append(Case(E, "%s/format-unknown" % w.key, w.argv + ["--format", "pdf"],
                          msg=["pdf"], server=w.server))
            c.append(Case(E, "%s/format-empty" % w.key, w.argv + ["--format", ""],
                          msg=["--format"], server=w.server))
        c.append(Case(E, "%s/extra-positional" % w.key, w.argv + ["-o", "{x.json}", "stray"],
                      msg=["stray"], server=w.server))
        if w.format_flag:
            c.append(Case(E, "%s/huge-flag-value" % w.key,
                          w.argv + ["-o", "{x.json}", "--format", "j" * 100000],
                          msg=["--format"], server=w.server))
    c += [
        Case(E, "serve-sim/missing-trace", ["serve-sim"], msg=["--trace"]),
        Case(E, "analyze/missing-input", ["analyze"], msg=["--input"]),
        Case(E, "profile/missing-output", ["profile", "--duration", "1"], msg=["--output"]),
        Case(E, "costmodel-check/missing-gpu", ["costmodel", "check", "--profile",
                                                "{allreduce.csv}"], msg=["--gpu"]),
        Case(E, "costmodel-check/missing-profile", ["costmodel", "check", "--gpu", "h100"],
             msg=["--profile"]),
        Case(E, "clock-probe/missing-server", ["clock", "probe"], msg=["--server"]),
        Case(E, "simulate/nodes-without-pods", ["simulate", "--nodes", "{nodes.csv}"],
             msg=["--pods"]),
        Case(E, "simulate/unknown-policy", SIM[:-4] + ["--policy", "nope"], msg=["nope"]),
        Case(E, "simulate/unknown-policy-typo", SIM[:-4] + ["--policy", "bestfti"],
             msg=["bestfti", "bestfit"]),
        Case(E, "simulate/unknown-mode", SIM + ["--mode", "sideways"], msg=["--mode"]),
        Case(E, "simulate/huge-policy", SIM[:-4] + ["--policy", "p" * 100000], msg=["--policy"]),
        Case(E, "simulate/huge-seeds", SIM[:-2] + ["--seeds", "9" * 100000], msg=["--seeds"]),
        Case(E, "simulate/cas-sigmoid-zero-names-option", SIM[:-4] +
             ["--policy", "cas", "--seeds", "1", "--policy-opt", "sigmoid_scale=0"],
             msg=["sigmoid_scale"]),
        Case(E, "simulate/unknown-cas-option", SIM[:-4] +
             ["--policy", "cas", "--seeds", "1", "--policy-opt", "nope=1"], msg=["nope"]),
        Case(E, "simulate/dump-order-outside-fill", SIM_CHURN + ["--dump-order", "{o.csv}"],
             msg=["--dump-order"]),
        Case(E, "simulate/rng-reference-outside-fill", SIM_CHURN + ["--rng", "reference"],
             msg=["--rng"]),
        Case(E, "simulate/unknown-topology", SIM + ["--topology", "dgx2"], msg=["--topology"]),
        Case(E, "simulate/empty-topology", SIM + ["--topology", ""], msg=["--topology"]),
        Case(E, "simulate/unknown-gpu-choice", SIM + ["--gpu-choice", "fastest"],
             msg=["--gpu-choice"]),
        Case(E, "help/unknown-topic", ["help", "nosuch"], msg=["nosuch"]),
        Case(E, "help/unknown-subtopic", ["help", "clock", "nosuch"], msg=["nosuch"]),
        Case(E, "completion/unknown-shell", ["completion", "fish"], msg=["fish"]),
        Case(E, "completion/no-shell", ["completion"], msg=[("shell", "bash")]),
        Case(E, "version/extra-word", ["version", "extra"], msg=["extra"]),
        Case(E, "global/max-input-size-too-small",
             ["--max-input-size", "64", "simulate", "-q", "--nodes", "{nodes.csv}", "--pods",
              "{pods.csv}"], msg=["nodes.csv"]),
        Case(E, "clock-probe/connection-refused-exit-1",
             ["clock", "probe", "--server", "127.0.0.1:1", "--samples", "1",
              "--timeout-ms", "300"], exit=1, msg=["127.0.0.1"], max_s=8),
        Case(E, "clock-probe/unresolvable-host",
             ["clock", "probe", "--server", "no-such-host.invalid", "--samples", "1",
              "--timeout-ms", "300"], exit=(1, 2), msg=["no-such-host.invalid"], max_s=15),
        Case(E, "profile/prometheus-refused-exit-1",
             ["profile", "-q", "--duration", "2", "--timeout", "1", "--prometheus",
              "http://127.0.0.1:1", "-o", "{p.json}"], exit=1, msg=["127.0.0.1"], max_s=8),
    ]
    # Network replies that are well-formed HTTP but not what was asked for: exit 1, never abort.
    prom = ["profile", "-q", "--duration", "5", "--interval", "1", "--timeout", "3", "-o",
            "{p.json}", "--prometheus", "http://127.0.0.1:{port}"]
    for mode in ("status5", "status_error", "data_null", "result_string", "wrong_types",
                 "bad_points", "array_top", "http500", "http500_huge", "not_json", "deep_json",
                 "deep_object", "empty_body", "redirect", "redirect_loop", "negative_length",
                 "short_body", "close", "garbage", "invalid_utf8"):
        c.append(Case(E, "profile-prometheus/" + mode, prom, server=("http", mode), exit=1,
                      msg=["127.0.0.1"], max_s=15, timeout=30))
    for mode in ("huge_value", "negative_value"):
        c.append(Case("garbage", "profile-prometheus/" + mode, prom, server=("http", mode),
                      exit=(0, 1), msg=["127.0.0.1"], out=[("p.json", "profile")], max_s=15))
    c.append(Case("control", "profile-prometheus/valid", prom, server=("http", "valid"), exit=0,
                  out=[("p.json", "profile")], max_s=15))
    # SNTP replies: impossible timestamps are rejected and the next reply is used.
    probe = ["clock", "probe", "--server", "127.0.0.1:{port}", "--samples", "2",
             "--interval-ms", "0", "--timeout-ms", "500", "-o", "{o.json}"]
    c.append(Case("control", "clock-probe/good-server", probe, server=("sntp", "good"), exit=0,
                  out=[("o.json", "json")]))
    c.append(Case("garbage", "clock-probe/bad-then-good-reply", probe,
                  server=("sntp", "bad_then_good"), exit=0, out=[("o.json", "json")]))
    c.append(Case("garbage", "clock-probe/flood-then-good-reply", probe,
                  server=("sntp", "flood_then_good"), exit=0, out=[("o.json", "json")]))
    for mode in ("tx_before_rx", "zero_tx", "zero_rx", "kod", "version7", "mode3", "stratum16",
                 "leap3", "stale_origin", "negative_delay", "short", "long", "odd_length"):
        c.append(Case("garbage", "clock-probe/" + mode, probe, server=("sntp", mode), exit=1,
                      msg=["127.0.0.1"], max_s=10))
    c.append(Case("garbage", "clock-probe/far-future", probe, server=("sntp", "far_future"),
                  exit=(0, 1), msg=["127.0.0.1"], out=[("o.json", "json")], max_s=10))
    return c


def control_cases():
    C = "control"
    return [
        Case(C, "version/table", ["version"], exit=0, out=[("stdout", "text")]),
        Case(C, "version/json", ["version", "--format", "json"], exit=0,
             out=[("stdout", "json")]),
        Case(C, "help/top", ["help"], exit=0, out=[("stdout", "text")]),
        Case(C, "help/simulate", ["help", "simulate"], exit=0, out=[("stdout", "text")],
             present=[("stdout", "Exit status")]),
        Case(C, "help/costmodel-check", ["help", "costmodel", "check"], exit=0,
             out=[("stdout", "text")]),
        Case(C, "completion/bash", ["completion", "bash"], exit=0, out=[("stdout", "text")]),
        Case(C, "completion/zsh", ["completion", "zsh"], exit=0, out=[("stdout", "text")]),
        Case(C, "simulate/html", SIM + ["--format", "html", "-o", "{r.html}"], exit=0,
             out=[("r.html", "html")]),
        Case(C, "simulate/yaml-descriptor", SIM[:2] + ["--nodes", "{cluster.yaml}", "--pods",
                                                       "{pods.csv}", "--policy", "bestfit",
                                                       "--seeds", "1", "-o", "{o.json}"],
             exit=0, out=[("o.json", "json")]),
        Case(C, "simulate/json-descriptor", SIM[:2] + ["--nodes", "{cluster.json}", "--pods",
                                                       "{pods.csv}", "--policy", "bestfit",
                                                       "--seeds", "1", "-o", "{o.json}"],
             exit=0, out=[("o.json", "json")]),
        Case(C, "analyze/html", ANALYZE + ["--idle-window", "2", "--format", "html", "-o",
                                           "{r.html}"], exit=0, out=[("r.html", "html")]),
        Case(C, "serve-sim/mooncake", ["serve-sim", "--trace", "{mooncake.jsonl}", "-o",
                                       "{o.json}"], exit=0, out=[("o.json", "json")]),
        Case(C, "serve-sim/sharegpt", SERVE_SHAREGPT + ["-o", "{o.json}"], exit=0,
             out=[("o.json", "json")]),
        Case(C, "costmodel-fit/eval", CM_FIT + ["--eval", "{allreduce.csv}", "-o", "{o.json}"],
             exit=0, out=[("o.json", "json")]),
        Case(C, "simulate/dump-order-csv", SIM + ["--dump-order", "{d.csv}"], exit=0,
             out=[("d.csv", "csv")]),
        Case(C, "simulate/topology-json", SIM + ["--topology", "mixed", "-o", "{o.json}"], exit=0,
             out=[("o.json", "json")]),
        Case(C, "simulate/topology-index-csv", SIM + ["--topology", "pcie-tree", "--gpu-choice",
                                                      "index", "-o", "{o.csv}"], exit=0,
             out=[("o.csv", "csv")]),
    ]


# Mutants: each reader's valid input with one field or number replaced by a hostile token,
# chosen by a fixed seed. No row was written for them: they are the "inputs not seen". Each must
# exit 0 (with a valid output) or 2 (an input error), never crash, hang or exit 1.
CSV_TOKENS = ["nan", "-1", "1e309", "", "99999999999999999999", "-0", "1e-320", ESC + "x",
              "\udcff", '"', "9" * 5000, "0x10", " 1", "+5", "1_000", "inf", "\x00", "1,2"]
JSON_TOKENS = ["NaN", "-1", "1e309", "null", '"x"', "[]", "{}", "1e-320", "-0",
               "99999999999999999999", "true", '"\\u001b[2J"', "1e308", "-1e308",
               "[" * 5000 + "]" * 5000, '"\\ud800"']


def _mutate(text, rnd):
    import re
    if text.lstrip().startswith(("{", "[")) or "\n  " in text or text.startswith(("name:",
                                                                                   "source:")):
        spans = [m.span() for m in re.finditer(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)]
        a, b = spans[rnd.randrange(len(spans))]
        return text[:a] + rnd.choice(JSON_TOKENS) + text[b:]
    lines = text.split("\n")
    r = rnd.randrange(1, max(2, len([l for l in lines if l])))
    fields = lines[r].split(",")
    fields[rnd.randrange(len(fields))] = rnd.choice(CSV_TOKENS)
    lines[r] = ",".join(fields)
    return "\n".join(lines)


def mutant_cases(per_reader=12):
    import random
    c = []
    for r in READERS:
        rnd = random.Random("seedance-hostile-" + r.key)
        ext = os.path.splitext(r.slot)[1]
        for i in range(per_reader):
            text = _mutate(FIXTURES[r.slot], rnd)
            writes = r.argv[0] != "apply"  # apply --dry-run writes no report
            c.append(Case("garbage", "%s/mutant-%d" % (r.key, i),
                          _with(r.argv, "{m%s}" % ext) + (["-o", "{o.json}"] if writes else []),
                          files={"m" + ext: text}, exit=(0, 2), msg=["m" + ext],
                          out=[("o.json", "json")] if writes else []))
    return c


# ----------------------------------------------------------------------------------------------
# The live scheduler (issue 12): `seedance server`'s flags and inputs, which must all be refused
# before it serves (a server that starts runs until SIGTERM), and the client commands against
# hostile HTTP servers and against the real server (("seedance", mode): the binary under test,
# started by the driver; {uid:NAME} is the UID of its pod NAME, p-fits bound or p-huge pending).

SRV = ["server", "-q", "--listen", "127.0.0.1:0", "--state", "{T}/st"]
IDLE_MODES = ("drip", "drip_headers", "huge_length", "huge_chunk_size", "huge_length_stream",
              "chunked_endless")
CLIENTS = [
    ("get-pods", ["get", "pods"]),
    ("get-nodes", ["get", "nodes"]),
    ("get-pod", ["get", "pod", "some-uid"]),
    ("get-queues", ["get", "queues"]),
    ("apply", ["apply", "-f", "{apply.yaml}"]),
    ("delete", ["delete", "pod", "some-uid"]),
    ("explain", ["explain", "some-uid"]),
    ("cordon", ["cordon", "n0"]),
    ("uncordon", ["uncordon", "n0"]),
]


def _client(argv, port="{port}", timeout="3"):
    return argv + ["--server", "http://127.0.0.1:%s" % port, "--timeout", timeout]


def server_flag_cases():
    B, E, H, G, D, I = "bad-value", "exit-code", "hang", "garbage", "destroy", "injection"
    c = []
    for name, v in (("garbage", "garbage"), ("port-overflow", "127.0.0.1:99999"),
                    ("port-negative", "127.0.0.1:-1"), ("empty", ""), ("no-port", "127.0.0.1:"),
                    ("v6-unclosed", "[::1:80"), ("port-text", "127.0.0.1:http"),
                    ("ansi", ESC + "host:1")):
        c.append(Case(B, "server/listen-" + name, SRV[:3] + [v] + SRV[4:], msg=["--listen"],
                      absent=[("stderr", "\x1b")]))
    tok = "t" * 20
    for name, text, want in (
            ("short-token", "short,team-a,a\n", "field 'token'"),
            ("two-fields", tok + ",team-a\n", "expected TOKEN,TENANT"),
            ("bad-tenant", tok + ",Team A,a\n", "field 'tenant'"),
            ("bad-namespace", tok + ",team-a,A_B\n", "field 'namespaces'"),
            ("namespace-twice", tok + ",team-a,a\n" + "u" * 20 + ",team-b,a\n",
             "already belongs"),
            ("token-twice", tok + ",team-a,a\n" + tok + ",team-b,b\n", "the same token"),
            ("only-comments", "# nothing\n", "no tenants"),
            ("ansi", tok + "," + ESC + ",a\n", "field 'tenant'")):
        c.append(Case(B, "server/tenant-tokens-" + name, SRV + ["--tenant-tokens", "{tt.csv}"],
                      files={"tt.csv": text}, msg=["tt.csv:", want],
                      absent=[("stderr", "\x1b"), ("stderr", tok)]))
    c.append(Case(E, "server/listen-not-local", SRV[:3] + ["192.0.2.1:7070"] + SRV[4:],
                  exit=1, msg=["192.0.2.1"], max_s=10))
    for flag in ("--max-body", "--max-connections", "--rate-limit", "--assume-timeout", "--seed",
                 "--aging"):
        for name, v in (("nan", "nan"), ("minus", "-1"), ("overflow", "1e999"), ("text", "lots"),
                        ("empty", "")):
            c.append(Case(B, "server/%s=%s" % (flag[2:], name), SRV + [flag, v], msg=[flag]))
    c.append(Case(B, "server/max-connections-zero", SRV + ["--max-connections", "0"],
                  msg=["--max-connections"]))
    c.append(Case(B, "server/assume-timeout-zero", SRV + ["--assume-timeout", "0"],
                  msg=["--assume-timeout"]))
    c.append(Case(B, "server/aging-over-a-year", SRV + ["--aging", "367d"], msg=["--aging"]))
    c.append(Case(B, "server/placement-unknown", SRV + ["--placement", "nope"],
                  msg=["--placement"]))
    # fgd cannot place without its target workload: refused at start, not pod by pod.
    c.append(Case(B, "server/placement-fgd-without-oracle", SRV + ["--placement", "fgd"],
                  msg=["--placement fgd", "--oracle-pods"]))
    c.append(Case(E, "server/no-state", ["server", "--listen", "127.0.0.1:0"], msg=["--state"]))
    # --store (docs/ha.md): sqlite://DIR or etcd://HOST:PORT[,...]; --etcd-prefix, --lease-ttl.
    st = SRV[:4]
    etcd_down = st + ["--store", "etcd://127.0.0.1:1"]
    c.append(Case(E, "server/store-and-state", SRV + ["--store", "etcd://127.0.0.1:1"],
                  msg=["--store", "--state"]))
    for name, v in (("scheme", "ftp://x"), ("empty", ""), ("etcd-no-endpoint", "etcd://"),
                    ("etcd-no-port", "etcd://host"), ("etcd-port-overflow", "etcd://h:70000"),
                    ("etcd-port-zero", "etcd://h:0"), ("etcd-trailing-comma", "etcd://a:1,"),
                    ("etcd-space", "etcd://h st:1"), ("etcd-ansi", "etcd://" + ESC + ":1"),
                    ("sqlite-no-dir", "sqlite://")):
        c.append(Case(B, "server/store-" + name, st + ["--store", v], msg=["--store"],
                      absent=[("stderr", "\x1b")]))
    c.append(Case(B, "server/store-sqlite-is-a-file", st + ["--store", "sqlite://{nodes.csv}"],
                  exit=(1, 2), msg=["nodes.csv"]))
    c.append(Case(E, "server/store-etcd-unreachable", etcd_down, exit=1, msg=["127.0.0.1:1"],
                  max_s=15))
    for name, v in (("no-slash", "seedance"), ("no-trailing-slash", "/seedance"), ("empty", ""),
                    ("space", "/a b/"), ("ansi", "/" + ESC + "/")):
        c.append(Case(B, "server/etcd-prefix-" + name, etcd_down + ["--etcd-prefix", v],
                      msg=["--etcd-prefix"], absent=[("stderr", "\x1b")]))
    for name, v in (("nan", "nan"), ("minus", "-1"), ("overflow", "1e999"), ("text", "lots"),
                    ("empty", ""), ("below-etcd-minimum", "1s"), ("over-an-hour", "2h")):
        c.append(Case(B, "server/lease-ttl=" + name, etcd_down + ["--lease-ttl", v],
                      msg=["--lease-ttl"]))
    c.append(Case(E, "server/unknown-flag", SRV + ["--bogus"], msg=["--bogus"]))
    c.append(Case(E, "server/stray-argument", SRV + ["stray"], msg=["stray"]))
    # --state that cannot be a state directory.
    c.append(Case(B, "server/state-is-a-file", SRV[:5] + ["{nodes.csv}"], exit=(1, 2),
                  msg=["nodes.csv"]))
    c.append(Case(B, "server/state-dev-null", SRV[:5] + ["/dev/null"], exit=(1, 2),
                  msg=["/dev/null"]))
    c.append(Case("write-fail", "server/state-unwritable-dir", SRV[:5] + ["{ro}/st"], exit=1,
                  setup=[("dir", "ro"), ("chmod", "ro", 0o555)], nobody=True, msg=["ro"]))
    c.append(Case(B, "server/state-foreign-db", SRV[:5] + ["{fdb}"], exit=(1, 2),
                  files={"fdb/state.db": "SQLite format 3\0" + "x" * 200}, msg=["state.db"]))
    # Inputs: --nodes, --policy, --token-file, --tls-*, --oracle-pods.
    for flag, good in (("--nodes", "nodes.csv"), ("--policy", "policy.yaml"),
                       ("--token-file", "token"), ("--oracle-pods", "pods.csv"),
                       ("--tenant-tokens", "tenant_tokens.csv"),
                       ("--kube-token-file", "token")):
        f = flag[2:]
        pre = ["--kube-api", "http://127.0.0.1:1"] if flag == "--kube-token-file" else []
        c += [
            Case(E, "server/%s-missing" % f, SRV + pre + [flag, "{nothere}"], msg=["nothere"]),
            Case(B, "server/%s-directory" % f, SRV + pre + [flag, "{adir}"], setup=[("dir", "adir")],
                 msg=["adir"]),
            Case(H, "server/%s-dev-zero" % f, ["--max-input-size", "64M"] + SRV + pre +
                 [flag, "/dev/zero"], msg=["/dev/zero"]),
            Case(H, "server/%s-fifo-no-writer" % f, SRV + pre + [flag, "{in.fifo}"],
                 setup=[("fifo", "in.fifo")], msg=["in.fifo"], max_s=15),
            Case(B, "server/%s-binary" % f, SRV + pre + [flag, "{garbage.bin}"],
                 files={"garbage.bin": bytes(range(256)) * 8}, msg=["garbage.bin"]),
            Case(B, "server/%s-empty" % f, SRV + pre + [flag, "{empty}"], files={"empty": ""},
                 msg=["empty"]),
            Case(I, "server/%s-ansi-path" % f, SRV + pre + [flag, "{T}/" + ESC + "evil"],
                 msg=["evil"], absent=[("stderr", "\x1b")]),
            Case(E, "server/%s-over-max-input-size" % f, ["--max-input-size", "8"] + SRV + pre +
                 [flag, "{%s}" % good], msg=[good]),
        ]
    c += [
        Case(B, "server/kube-api-not-a-url", SRV + ["--kube-api", "ftp://x"], msg=["--kube-api"]),
        Case(B, "server/kube-api-and-in-cluster", SRV + ["--kube-api", "http://127.0.0.1:1",
                                                         "--kube-in-cluster"],
             msg=["--kube-in-cluster"]),
        Case(B, "server/kube-token-without-api", SRV + ["--kube-token-file", "{token}"],
             msg=["--kube-api"]),
        Case(E, "server/kube-in-cluster-outside-a-pod", SRV + ["--kube-in-cluster"], exit=(1, 2),
             env={"KUBERNETES_SERVICE_HOST": "", "KUBERNETES_SERVICE_PORT": ""},
             msg=["KUBERNETES_SERVICE_HOST"]),
        Case(G, "server/kube-token-too-short", SRV + ["--kube-api", "http://127.0.0.1:1",
                                                      "--kube-token-file", "{t}"],
             files={"t": "abc\n"}, msg=["--kube-token-file"], absent=[("stderr", "abc")]),
        Case(G, "server/token-too-short", SRV + ["--token-file", "{t}"], files={"t": "abc\n"},
             msg=["--token-file"], absent=[("stderr", "abc")]),
        Case(G, "server/token-blank-line", SRV + ["--token-file", "{t}"],
             files={"t": "\n" + SERVER_TOKEN + "\n"}, msg=["--token-file"],
             absent=[("stderr", SERVER_TOKEN)]),
        Case(G, "server/tls-cert-without-key", SRV + ["--tls-cert", "{token}"],
             msg=["--tls"], absent=[("stderr", SERVER_TOKEN)]),
        Case(G, "server/tls-garbage-pem", SRV + ["--tls-cert", "{c.pem}", "--tls-key", "{k.pem}"],
             files={"c.pem": "-----BEGIN CERTIFICATE-----\nnope\n", "k.pem": "garbage\n"},
             exit=(1, 2), msg=["--tls"]),
        Case(G, "server/nodes-bad-number", SRV + ["--nodes", "{n.csv}"],
             files={"n.csv": NODES_CSV.replace("32000", "nan", 1)}, msg=["n.csv:2"]),
        Case(G, "server/nodes-duplicate-name", SRV + ["--nodes", "{n.csv}"],
             files={"n.csv": NODES_CSV + "n0,1000,1024,0,\n"}, msg=["n0"]),
        Case(G, "server/policy-unknown-placement", SRV + ["--policy", "{p.yaml}"],
             files={"p.yaml": POLICY_YAML.replace("bestfit", "nope")},
             msg=["p.yaml:3:5: $.profiles[0].placement: unknown key"]),
        Case(G, "server/policy-stray-comma", SRV + ["--policy", "{p.yaml}"],
             files={"p.yaml": "profiles: [a]\n,\n"}, msg=["p.yaml"]),
        Case(H, "server/policy-alias-bomb", SRV + ["--policy", "{p.yaml}"],
             files={"p.yaml": yaml_alias_bomb()}, msg=["p.yaml"]),
        Case(H, "server/nodes-alias-bomb", SRV + ["--nodes", "{b.yaml}"],
             files={"b.yaml": yaml_alias_bomb()}, msg=["b.yaml"]),
        Case(H, "server/nodes-deep-json", SRV + ["--nodes", "{d.json}"],
             files={"d.json": "[" * 200000 + "]" * 200000}, msg=["d.json"]),
    ]
    # --ready-file is an output: refused before anything starts when it cannot be written safely.
    c += [
        Case(D, "server/ready-file-is-input", SRV + ["--nodes", "{nodes.csv}", "--ready-file",
                                                     "{nodes.csv}"], msg=["--ready-file"]),
        Case(D, "server/ready-file-links-to-input",
             SRV + ["--nodes", "{nodes.csv}", "--ready-file", "{ln}"],
             setup=[("symlink", "ln", "nodes.csv")], msg=["--ready-file"]),
        Case(D, "server/ready-file-fifo-no-reader", SRV + ["--ready-file", "{o}"],
             setup=[("fifo", "o")], exit=1, msg=["o"], max_s=12, mutable=("o",)),
        Case(D, "server/ready-file-directory", SRV + ["--ready-file", "{adir}"],
             setup=[("dir", "adir")], exit=(1, 2), msg=["adir"]),
        Case("write-fail", "server/ready-file-missing-dir", SRV + ["--ready-file", "{no/r}"],
             msg=["no/r"]),
    ]
    return c


def client_cases():
    B, E, H, G, D, I = "bad-value", "exit-code", "hang", "garbage", "destroy", "injection"
    c = []
    # Usage errors, before any request.
    c += [
        Case(E, "get/no-what", ["get"], msg=["nodes"]),
        Case(E, "get/unknown-what", ["get", "gpus"], msg=["gpus"]),
        Case(E, "get-pod/no-uid", ["get", "pod"], msg=["UID"]),
        Case(E, "delete/no-what", ["delete"], msg=["pod"]),
        Case(E, "delete-pod/no-uid", ["delete", "pod"], msg=["UID"]),
        Case(E, "explain/no-uid", ["explain"], msg=["UID"]),
        Case(E, "cordon/no-node", ["cordon"], msg=["NODE"]),
        Case(E, "apply/no-file", ["apply"], msg=["-f"]),
        Case(E, "get-pods/unknown-flag", ["get", "pods", "--bogus"], msg=["--bogus"]),
        Case(B, "get-pods/phase-unknown", ["get", "pods", "--phase", "Running"],
             msg=["--phase"]),
        Case(B, "get-pods/format-unknown", ["get", "pods", "--format", "pdf"], msg=["--format"]),
    ]
    for key, argv in CLIENTS:
        for name, url in (("garbage", "nope"), ("ftp", "ftp://127.0.0.1:21"),
                          ("port-overflow", "http://127.0.0.1:99999"),
                          ("v6-unclosed", "http://[::1"),
                          ("ansi", "http://" + ESC + "evil:1")):
            c.append(Case(B, "%s/server-%s" % (key, name), argv + ["--server", url],
                          msg=["--server"], absent=[("stderr", "\x1b")]))
        for name, v in (("nan", "nan"), ("zero", "0"), ("minus", "-1"), ("inf", "inf"),
                        ("text", "soon")):
            c.append(Case(B, "%s/timeout-%s" % (key, name),
                          argv + ["--server", "http://127.0.0.1:9", "--timeout", v],
                          msg=["--timeout"]))
        c.append(Case(E, "%s/refused" % key, _client(argv, port="1"), exit=1, msg=["127.0.0.1"],
                      max_s=10))
        c.append(Case(E, "%s/token-file-missing" % key,
                      _client(argv, port="1") + ["--token-file", "{nothere}"], msg=["nothere"]))
        if key not in ("get-pods", "apply"):  # one token reader: two commands suffice
            continue
        # The one token reader (base::ReadBearerToken): the token is the first line.
        c.append(Case(G, "%s/token-blank-line" % key,
                      _client(argv, port="1") + ["--token-file", "{t}"],
                      files={"t": "\n" + SERVER_TOKEN + "\n"}, msg=["--token-file", "first line"],
                      absent=[("stderr", SERVER_TOKEN)]))
        c.append(Case(H, "%s/token-file-fifo" % key,
                      _client(argv, port="1") + ["--token-file", "{in.fifo}"],
                      setup=[("fifo", "in.fifo")], msg=["in.fifo"], max_s=15))
    # Hostile HTTP servers: every failure is exit 1 (or 2 for a 4xx) within the deadline, naming
    # the server, with nothing of the reply's control characters on the terminal.
    modes = ("drip", "drip_headers", "huge_length", "huge_length_stream", "chunked_endless",
             "huge_chunk_size", "http500", "http500_huge", "not_json", "deep_json",
             "deep_object", "empty_body", "redirect", "redirect_loop", "negative_length",
             "short_body", "close", "garbage", "huge_header", "many_headers", "array_top",
             "wrong_types", "valid", "ansi_name")
    for key, argv in CLIENTS:
        for mode in modes if key in ("get-pods", "apply") else modes[:8] + (
                "garbage", "close", "empty_body", "array_top", "valid", "not_json"):
            c.append(Case(H if mode in IDLE_MODES else G, "%s/http-%s" % (key, mode),
                          _client(argv), server=("http", mode), exit=(1, 2), msg=["127.0.0.1"],
                          max_s=12, absent=[("stderr", "\x1b")]))
    # Against the real server.
    live = ("seedance", "plain")
    auth = ("seedance", "auth")
    c += [
        Case("control", "get-pods/live-json", _client(["get", "pods", "-o", "json"], timeout="20"),
             server=live, exit=0, out=[("stdout", "json-object")]),
        Case("control", "get-nodes/live-file", _client(["get", "nodes", "-o", "{o.json}"],
                                                       timeout="20"),
             server=live, exit=0, out=[("o.json", "json-object")]),
        Case("control", "explain/live-pending", _client(["explain", "{uid:p-huge}"],
                                                        timeout="20"),
             server=live, exit=0, out=[("stdout", "text")]),
        Case("control", "apply/live", _client(["apply", "-f", "{apply.yaml}"], timeout="20"),
             server=live, exit=0, out=[("stdout", "text")]),
        Case(E, "get-pod/live-unknown", _client(["get", "pod", "no-such-uid"], timeout="20"),
             server=live, exit=2, msg=["no-such-uid"]),
        Case(E, "delete-pod/live-unknown", _client(["delete", "pod", "no-such-uid"],
                                                   timeout="20"),
             server=live, exit=2, msg=["no-such-uid"]),
        Case(E, "cordon/live-unknown-node", _client(["cordon", "no-such-node"], timeout="20"),
             server=live, exit=2, msg=["no-such-node"]),
        Case(I, "explain/live-ansi-uid", _client(["explain", ESC + "evil"], timeout="20"),
             server=live, exit=2, msg=["evil"], absent=[("stderr", "\x1b")]),
        Case(I, "apply/live-ansi-name", _client(["apply", "-f", "{a.yaml}"], timeout="20"),
             files={"a.yaml": APPLY_YAML.replace("train-1", "'" + ESC + "evil'")},
             server=live, exit=2, msg=["a.yaml"], absent=[("stderr", "\x1b")]),
        Case(I, "get-pods/live-html-label", _client(["apply", "-f", "{a.yaml}"], timeout="20"),
             files={"a.yaml": APPLY_YAML + "labels: {x: '" + HTML_BAD + "'}\n"},
             server=live, exit=(0, 2), msg=["a.yaml"]),
        Case(E, "apply/live-no-token", _client(["apply", "-f", "{apply.yaml}"], timeout="20"),
             server=auth, exit=2, msg=["token"]),
        Case(E, "cordon/live-wrong-token", _client(["cordon", "n0", "--token-file", "{t}"],
                                                   timeout="20"),
             files={"t": "wrong-token-0123456789\n"}, server=auth, exit=2, msg=["token"],
             absent=[("stderr", "wrong-token-0123456789")]),
        Case("control", "cordon/live-token", _client(["cordon", "n0", "--token-file", "{token}"],
                                                     timeout="20"),
             server=auth, exit=0, absent=[("stderr", SERVER_TOKEN), ("stdout", SERVER_TOKEN)]),
        Case("control", "get-nodes/live-no-token-reads", _client(["get", "nodes"], timeout="20"),
             server=auth, exit=0, out=[("stdout", "text")]),
    ]
    # -o FILE of get: the output rules of every writer (docs/cli.md).
    getp = _client(["get", "pods"], timeout="20")
    c += [
        Case(D, "get-pods/o-is-token-file", getp + ["--token-file", "{token}", "-o", "{token}"],
             server=live, msg=["-o"]),
        Case(D, "get-pods/o-fifo-no-reader", getp + ["-o", "{o}"], setup=[("fifo", "o")],
             server=live, exit=1, msg=["o"], max_s=12, mutable=("o",)),
        Case(D, "get-pods/o-chardev", getp + ["-o", "{dev}"], setup=[("chardev", "dev")],
             server=live, exit=0, mutable=("dev",)),
        Case(D, "get-pods/o-symlink", getp + ["-o", "{ln}", "--format", "json"],
             files={"target.json": "{}"}, setup=[("symlink", "ln", "target.json")],
             server=live, exit=0, mutable=("target.json",), out=[("target.json", "json-object")]),
        Case(D, "get-pods/o-directory", getp + ["-o", "{adir}"], setup=[("dir", "adir")],
             server=live, exit=(1, 2), msg=["adir"]),
        Case("write-fail", "get-pods/o-dev-full", getp + ["-o", "/dev/full"], server=live,
             exit=1, msg=["/dev/full"]),
        Case("write-fail", "get-pods/o-missing-dir", getp + ["-o", "{no/o.json}"], server=live,
             msg=["no/o.json"]),
    ]
    return c


# node-agent: a fake v1 cpuset mount at "cg" (relative: the case's directory is the working
# directory) and a fake sysfs with two NUMA nodes and two NVIDIA GPUs, so that every refusal below
# is the same on any machine. Real pins are not run here: the cases run as nobody, and a real
# cgroup is made only by node_agent_test (as root).
NA_MOUNTINFO = "34 23 0:31 / cg rw,relatime - cgroup cgroup rw,cpuset\n"
NA_SYS = {
    "sys/devices/system/node/node0/cpulist": "0-3\n",
    "sys/devices/system/node/node1/cpulist": "4-7\n",
    "sys/bus/pci/devices/0000:3b:00.0/class": "0x030200\n",
    "sys/bus/pci/devices/0000:3b:00.0/vendor": "0x10de\n",
    "sys/bus/pci/devices/0000:3b:00.0/numa_node": "0\n",
    "sys/bus/pci/devices/0000:af:00.0/class": "0x030200\n",
    "sys/bus/pci/devices/0000:af:00.0/vendor": "0x10de\n",
    "sys/bus/pci/devices/0000:af:00.0/numa_node": "1\n",
}
NA_FILES = dict(NA_SYS, mountinfo=NA_MOUNTINFO)
NA_FAKE = ["--mountinfo", "{mountinfo}", "--sys-root", "{sys}"]
NA_SYS_ONLY = ["--sys-root", "{sys}"]


def node_agent_cases():
    c = []
    B, E, I, C = "bad-value", "exit-code", "injection", "control"

    def pin(name, args, cls=B, exit=2, msg=(), setup=(), files=None, fake=NA_FAKE, **kw):
        c.append(Case(cls, "node-agent-pin/" + name, ["node-agent", "pin"] + fake + args,
                      exit=exit, msg=msg, setup=[("dir", "cg")] + list(setup),
                      files=dict(NA_FILES, **(files or {})), **kw))

    for flag in ("--gpus", "--numa"):
        for vname, v in (("garbage", "abc"), ("descending", "3-1"), ("empty", ""),
                         ("negative", "-1"), ("above-max", "8192"), ("fraction", "1.5"),
                         ("overflow", "99999999999999999999"), ("empty-item", "0,,1"),
                         ("nan", "nan"), ("hex", "0x1")):
            pin("%s=%s" % (flag, vname), ["--cgroup", "p", flag, v], msg=[flag])
    for vname, v in (("no-colon", "0"), ("garbage", "a:b"), ("gpu-twice", "0:0,0:1"),
                     ("empty", ""), ("gpu-too-big", "1024:0"), ("negative", "0:-1"),
                     ("three-fields", "0:0:0")):
        pin("--gpu-numa=" + vname, ["--cgroup", "p", "--numa", "0", "--gpu-numa", v],
            msg=["--gpu-numa"])
        c.append(Case(B, "node-agent-topology/--gpu-numa=" + vname,
                      ["node-agent", "topology", "--gpu-numa", v], msg=["--gpu-numa"]))
    pin("numa-node-absent", ["--cgroup", "p", "--numa", "7"], msg=["NUMA node 7"])
    pin("gpu-absent", ["--cgroup", "p", "--gpus", "2"], msg=["GPU 2"])
    pin("gpu-numa-to-absent-node", ["--cgroup", "p", "--gpus", "0", "--gpu-numa", "0:9"],
        msg=["NUMA node 9"])
    # Paths: '..', the root, missing, not a directory, out of the hierarchy, off cgroupfs.
    pin("cgroup-dotdot", ["--cgroup", "../etc", "--numa", "0"], msg=["'..'"])
    pin("cgroup-dotdot-inner", ["--cgroup", "a/../../etc", "--numa", "0"], msg=["'..'"])
    pin("cgroup-dotdot-absolute", ["--cgroup", "/sys/fs/cgroup/cpuset/../../../etc", "--numa",
                                   "0"], msg=["'..'"])
    pin("cgroup-root", ["--cgroup", "/", "--numa", "0"], msg=["root"])
    pin("cgroup-root-dot", ["--cgroup", "./.", "--numa", "0"], msg=["root"])
    pin("cgroup-empty", ["--cgroup", "", "--numa", "0"], msg=["empty"])
    pin("cgroup-missing", ["--cgroup", "kubepods/nope", "--numa", "0"], msg=["kubepods/nope"])
    pin("cgroup-etc-passwd", ["--cgroup", "/etc/passwd", "--numa", "0"], msg=["/etc/passwd"])
    pin("cgroup-fifo", ["--cgroup", "f", "--numa", "0"], setup=[("fifo", "cg/f")],
        msg=["not a cgroup directory"], max_s=12)
    pin("cgroup-chardev", ["--cgroup", "dev", "--numa", "0"], setup=[("chardev", "cg/dev")],
        msg=["not a cgroup directory"])
    pin("cgroup-regular-file", ["--cgroup", "file", "--numa", "0"],
        files={"cg/file": "x\n"}, msg=["not a cgroup directory"])
    pin("cgroup-symlink-out", ["--cgroup", "esc", "--numa", "0"],
        setup=[("dir", "outside"), ("symlink", "cg/esc", "../outside")],
        msg=["outside the hierarchy"])
    pin("cgroup-not-cgroupfs", ["--cgroup", "plain", "--numa", "0", "--dry-run"],
        setup=[("dir", "cg/plain")], msg=["not on a cgroup file system"])
    pin("cgroup-ansi", ["--cgroup", ESC + "x", "--numa", "0"], cls=I, msg=["x"],
        absent=[("stderr", "\x1b")])
    pin("cgroup-invalid-utf8", ["--cgroup", os.fsdecode(b"p\xff\xfe"), "--numa", "0"], msg=["p"])
    # Usage.
    c += [
        Case(E, "node-agent/no-subcommand", ["node-agent"], msg=["topology"]),
        Case(E, "node-agent/unknown-subcommand", ["node-agent", "pni"], msg=["pin"]),
        Case(E, "node-agent-pin/unknown-flag", ["node-agent", "pin", "--cgrop", "x"],
             msg=["--cgroup"]),
        Case(E, "node-agent-pin/missing-cgroup", ["node-agent", "pin", "--numa", "0"],
             msg=["--cgroup"]),
        Case(E, "node-agent-pin/neither-gpus-nor-numa", ["node-agent", "pin", "--cgroup", "x"],
             msg=["--gpus"]),
        Case(E, "node-agent-pin/gpus-and-numa", ["node-agent", "pin", "--cgroup", "x", "--gpus",
                                                 "0", "--numa", "0"], msg=["not both"]),
        Case(E, "node-agent-pin/o-json", NA_PIN + ["-o", "json"], msg=["--format"]),
    ]
    # --mountinfo and --sys-root inputs.
    pin("mountinfo-missing", ["--cgroup", "p", "--numa", "0", "--mountinfo", "{nope}"], cls=E,
        msg=["nope"], fake=NA_SYS_ONLY)
    pin("mountinfo-directory", ["--cgroup", "p", "--numa", "0", "--mountinfo", "{cg}"], cls=E,
        msg=["cg"], fake=NA_SYS_ONLY)
    pin("mountinfo-dev-zero", ["--cgroup", "p", "--numa", "0", "--mountinfo", "/dev/zero"],
        cls="hang", msg=["/dev/zero"], fake=NA_SYS_ONLY)
    pin("mountinfo-silent-fifo", ["--cgroup", "p", "--numa", "0", "--mountinfo", "{mf}"],
        cls="hang", setup=[("fifo", "mf")], msg=["mf"], max_s=12, fake=NA_SYS_ONLY)
    pin("mountinfo-garbage", ["--cgroup", "p", "--numa", "0", "--mountinfo", "{mg}"], cls="garbage",
        files={"mg": "not a mountinfo line\n"}, msg=["mg':1"], fake=NA_SYS_ONLY)
    pin("mountinfo-binary", ["--cgroup", "p", "--numa", "0", "--mountinfo", "{mb}"], cls="garbage",
        files={"mb": "\x00\xff\x1b[2J" * 64}, msg=["mb"], absent=[("stderr", "\x1b")],
        fake=NA_SYS_ONLY)
    pin("mountinfo-no-cpuset", ["--cgroup", "p", "--numa", "0", "--mountinfo", "{mc}"],
        cls="garbage", exit=1,
        files={"mc": "32 23 0:29 / cgcpu rw,relatime - cgroup cgroup rw,cpu\n"},
        msg=["no cpuset controller"], fake=NA_SYS_ONLY)
    pin("mountinfo-is-output", ["--cgroup", "p", "--numa", "0", "-o", "{mountinfo}"],
        cls="destroy", msg=["mountinfo"])
    c += [
        Case(E, "node-agent-topology/sys-root-missing",
             ["node-agent", "topology", "--sys-root", "{nosys}"], msg=["nosys"]),
        Case("garbage", "node-agent-topology/cpulist-garbage",
             ["node-agent", "topology", "--sys-root", "{sys}"],
             files={"sys/devices/system/node/node0/cpulist": "0-x\n"}, msg=["cpulist"]),
        Case("garbage", "node-agent-topology/cpulist-descending",
             ["node-agent", "topology", "--sys-root", "{sys}"],
             files={"sys/devices/system/node/node0/cpulist": "7-0\n"}, msg=["descending"]),
        Case("hang", "node-agent-topology/cpulist-fifo",
             ["node-agent", "topology", "--sys-root", "{sys}"],
             setup=[("dir", "sys/devices/system/node/node0"),
                    ("fifo", "sys/devices/system/node/node0/cpulist")],
             msg=["cpulist"], max_s=12),
        Case("hang", "node-agent-topology/numa-node-fifo",
             ["node-agent", "topology", "--sys-root", "{sys}"],
             files={k: v for k, v in NA_SYS.items() if not k.endswith("3b:00.0/numa_node")},
             setup=[("fifo", "sys/bus/pci/devices/0000:3b:00.0/numa_node")],
             exit=0, out=[("stdout", "text")], present=[("stdout", "unknown")]),
    ]
    # Controls: the fake machine and this one.
    c += [
        Case(C, "node-agent-topology/fake-json",
             ["node-agent", "topology"] + NA_FAKE + ["--format", "json"], files=NA_FILES,
             setup=[("dir", "cg")], exit=0, out=[("stdout", "json")],
             present=[("stdout", "0000:af:00.0")]),
        Case(C, "node-agent-topology/table", ["node-agent", "topology"], exit=0,
             out=[("stdout", "text")], present=[("stdout", "numa_node")]),
        Case(C, "node-agent-topology/json", ["node-agent", "topology", "--format", "json"],
             exit=0, out=[("stdout", "json")]),
        Case(C, "help/node-agent-pin", ["help", "node-agent", "pin"], exit=0,
             out=[("stdout", "text")], present=[("stdout", "Exit status")]),
    ]
    return c


# device-plugin: every case ends before the plugin would serve (it runs until a signal
# otherwise). "dp" is a device-plugin folder made for the case.
def device_plugin_cases():
    B, E, C = "bad-value", "exit-code", "control"
    DPD = ["device-plugin", "--fake-gpus", "2", "--plugin-dir", "{dp}"]
    sock = "dp/seedance-gpu-count.sock"
    c = [
        Case(E, "device-plugin/folder-missing", DP, exit=1, msg=["nodp", "does not exist"]),
        # No --fake-gpus: NVML's GPUs, absent on a machine without a driver (exit 1 either way:
        # no GPUs, or the folder that does not exist).
        Case(E, "device-plugin/no-gpus-or-no-folder", ["device-plugin", "--plugin-dir", "{nodp}"],
             exit=1),
        Case(E, "device-plugin/unknown-flag", DP + ["--slices", "2"], msg=["--slices"]),
        Case(B, "device-plugin/--device-nodes=bogus", DP + ["--device-nodes", "sometimes"],
             msg=["--device-nodes"]),
        Case(B, "device-plugin/numa-above-gpus", DP + ["--fake-numa-nodes", "3"],
             msg=["NUMA"]),
        Case(B, "device-plugin/fake-gpus-above-max", DP + ["--fake-gpus", "17"],
             msg=["--fake-gpus"]),
        Case(B, "device-plugin/kube-api-and-in-cluster",
             DP + ["--kube-api", "http://127.0.0.1:1", "--kube-in-cluster"], msg=["--kube-api"]),
        Case(B, "device-plugin/token-without-kube-api", DP + ["--kube-token-file", "{tok}"],
             msg=["--kube-api"], files={"tok": "0123456789abcdef0123\n"}),
        Case(B, "device-plugin/kube-api-not-http", DP + ["--kube-api", "ftp://10.0.0.1"],
             msg=["ftp://10.0.0.1"]),
        Case(B, "device-plugin/kube-api-token-file-missing",
             DP + ["--kube-api", "http://127.0.0.1:1", "--kube-token-file", "{notok}"],
             msg=["notok"]),
        Case(B, "device-plugin/socket-path-too-long",
             ["device-plugin", "--fake-gpus", "2", "--plugin-dir", "/" + "d" * 120],
             msg=["longer than"]),
        Case(B, "device-plugin/kubelet-socket-too-long",
             DP + ["--kubelet-socket", "/" + "k" * 120], msg=["longer than"]),
    ]
    for vname, v in (("no-slash", "gpu"), ("empty-domain", "/gpu"), ("empty-name", "seedance.io/"),
                     ("two-slashes", "a/b/c"), ("kubernetes-io", "kubernetes.io/gpu"),
                     ("upper-domain", "Seedance.io/gpu"), ("space", "seedance.io/g pu"),
                     ("empty", ""), ("newline", "seedance.io/gpu\nx")):
        c.append(Case(B, "device-plugin/--resource=" + vname, DPD + ["--resource", v],
                      msg=["resource name"], setup=[("dir", "dp")]))
    # Whatever sits where the plugin's socket goes, if it is not a socket, is left alone.
    c += [
        Case(C, "device-plugin/regular-file-at-socket", DPD, exit=1, msg=["not a socket"],
             setup=[("dir", "dp"), ("file", sock, "mine\n")]),
        Case(C, "device-plugin/fifo-at-socket", DPD, exit=1, msg=["not a socket"],
             setup=[("dir", "dp"), ("fifo", sock)]),
        Case(C, "device-plugin/device-at-socket", DPD, exit=1, msg=["not a socket"],
             setup=[("dir", "dp"), ("chardev", sock)]),
        Case(C, "device-plugin/folder-is-a-file", ["device-plugin", "--fake-gpus", "2",
                                                   "--plugin-dir", "{dpfile}"],
             exit=1, msg=["does not exist"], files={"dpfile": "x\n"}),
    ]
    return c


def live_scheduler_cases():
    return server_flag_cases() + client_cases()


def jwt_token(exp, user="root"):
    """A token shaped as Slurm's (HS256 header, exp and sun claims) with a signature no one made."""
    def b64(text):
        return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()
    return ".".join((b64('{"alg":"HS256","typ":"JWT"}'),
                     b64('{"exp":%d,"iat":1,"sun":"%s"}' % (exp, user)), b64("signature")))


FED_OK = ("members:\n  - name: a\n    url: \"http://127.0.0.1:9\"\n"
          "    prices: {gpu_hour: {default: 1}}\n")


# The Slurm backend's flags (server --backend slurm) and `seedance submit`: every case ends before
# anything would be served or submitted. Port 9 (discard) on loopback has no slurmrestd.
def slurm_cases():
    B, E = "bad-value", "exit-code"
    SL = SRV + ["--backend", "slurm"]
    URL = ["--slurm-url", "http://127.0.0.1:9"]
    TOK = ["--slurm-token-file", "{jwt}"]
    jwt = {"jwt": "SLURM_JWT=" + "x" * 40 + "\n"}
    SUB = ["submit", "--server", "http://127.0.0.1:9", "--timeout", "3", "--gpus", "1"]
    script = {"job.sh": "#!/bin/bash\ntrue\n"}
    c = [
        Case(B, "server/backend-unknown", SRV + ["--backend", "yarn"], msg=["--backend"]),
        Case(B, "server/backend-kubernetes-without-api", SRV + ["--backend", "kubernetes"],
             msg=["--backend kubernetes", "--kube-api"]),
        Case(B, "server/cluster-not-a-label", SRV + ["--cluster", "EU_1"], msg=["--cluster"]),
        Case(B, "server/cluster-escape", SRV + ["--cluster", "eu\x1b[31m"], msg=["--cluster"],
             absent=[("stderr", "\x1b[31m")]),
        Case(B, "server/cluster-empty", SRV + ["--cluster", ""], msg=["--cluster"]),
        Case(B, "server/slurm-without-url", SL, msg=["--slurm-url"]),
        Case(B, "server/slurm-url-without-backend", SRV + URL, msg=["--slurm-url"]),
        Case(B, "server/slurm-url-not-http", SL + ["--slurm-url", "ftp://h:1"] + TOK, files=jwt,
             msg=["--slurm-url"]),
        Case(B, "server/slurm-url-with-path", SL + ["--slurm-url", "http://h:1/slurm"] + TOK,
             files=jwt, msg=["--slurm-url"]),
        Case(B, "server/slurm-no-token", SL + URL, msg=["--slurm-token-file"]),
        Case(B, "server/slurm-token-empty", SL + URL + TOK, files={"jwt": "\n"},
             msg=["jwt", "no token"]),
        Case(B, "server/slurm-token-blank-line", SL + URL + TOK,
             files={"jwt": "\nSLURM_JWT=" + "x" * 40 + "\n"},
             msg=["--slurm-token-file", "jwt", "first line"], absent=[("stderr", "x" * 40)]),
        Case(B, "server/slurm-token-prefix-only", SL + URL + TOK, files={"jwt": "SLURM_JWT=\n"},
             msg=["jwt", "no token after SLURM_JWT="]),
        Case(E, "server/slurm-token-missing", SL + URL + ["--slurm-token-file", "{T}/nope"],
             exit=(1, 2), msg=["nope"]),
        Case(B, "server/slurm-with-kube", SL + URL + TOK + ["--kube-api", "https://10.0.0.1"],
             files=jwt, msg=["--kube-api"]),
        Case(B, "server/slurm-api-bad", SL + URL + TOK + ["--slurm-api", "../x"], files=jwt,
             msg=["--slurm-api"]),
        Case(B, "server/slurm-requeue-unknown", SL + URL + TOK + ["--slurm-requeue", "maybe"],
             files=jwt, msg=["--slurm-requeue"]),
        Case(E, "server/slurmrestd-unreachable", SL + URL + TOK, files=jwt, exit=1,
             msg=["cannot reach slurmrestd"], max_s=20),
        # A federation front (docs/federation.md): every case ends before anything is served.
        Case(E, "server/federation-missing", SRV + ["--federation", "{T}/nope.yaml"],
             exit=(1, 2), msg=["nope.yaml"]),
        Case(B, "server/federation-bad-price", SRV + ["--federation", "{m.yaml}"],
             files={"m.yaml": "members:\n  - name: a\n    url: \"http://127.0.0.1:9\"\n"
                              "    prices: {gpu_hour: {default: -1}}\n"},
             msg=["m.yaml:4:", "$.members[0].prices.gpu_hour.default"]),
        Case(B, "server/federation-no-members", SRV + ["--federation", "{m.yaml}"],
             files={"m.yaml": "members: []\n"}, msg=["m.yaml", "$.members"]),
        Case(B, "server/federation-with-nodes", SRV + ["--federation", "{m.yaml}", "--nodes",
                                                       "{cluster.yaml}"],
             files={"m.yaml": FED_OK}, msg=["--federation", "--nodes"]),
        Case(B, "server/federation-with-slurm", SRV + ["--federation", "{m.yaml}", "--backend",
                                                       "slurm"] + URL + TOK,
             files=dict(jwt, **{"m.yaml": FED_OK}), msg=["--federation", "--backend"]),
        Case(B, "server/federation-policy-unknown", SRV + ["--federation", "{m.yaml}",
                                                           "--federation-policy", "cheapest"],
             files={"m.yaml": FED_OK}, msg=["--federation-policy"]),
        Case(B, "server/federation-refresh-zero", SRV + ["--federation", "{m.yaml}",
                                                         "--federation-refresh", "0"],
             files={"m.yaml": FED_OK}, msg=["--federation-refresh"]),
        Case(E, "server/federation-token-missing", SRV + ["--federation", "{m.yaml}"],
             files={"m.yaml": FED_OK.replace("    prices", "    token_file: nope\n    prices")},
             exit=(1, 2), msg=["member a", "nope"]),
        Case(B, "server/federation-member-url-escape", SRV + ["--federation", "{m.yaml}"],
             files={"m.yaml": FED_OK.replace("127.0.0.1:9", "127.0.0.1:9\x1b[31m")},
             msg=["m.yaml", "url"], absent=[("stderr", "\x1b[31m")]),
        Case(E, "submit/no-script", SUB, msg=["script"]),
        Case(E, "submit/script-missing", SUB + ["--", "{T}/nope.sh"], exit=(1, 2),
             msg=["nope.sh"]),
        Case(B, "submit/not-a-script", SUB + ["--", "{job.txt}"], files={"job.txt": "true\n"},
             msg=["job.txt:1:", "#!"]),
        Case(B, "submit/bad-name", SUB + ["--name", "Bad_Name", "--", "{job.sh}"], files=script,
             msg=["$.name"]),
        Case(B, "submit/gpu-milli-zero", SUB + ["--gpu-milli", "0", "--", "{job.sh}"],
             files=script, msg=["--gpu-milli"]),
        Case(E, "submit/server-unreachable", SUB + ["--", "{job.sh}"], files=script, exit=1,
             max_s=10),
    ]
    # A slurmrestd that turns the token down (its 22.05 form, a 500, or a 401): the error names
    # the token file and says why when the token shows it (issue 44).
    fake = ["--slurm-url", "http://127.0.0.1:{port}"]
    for mode in ("slurm_refused", "slurm_401"):
        for name, token, says in (("expired", jwt_token(exp=1000000000), "expired at"),
                                  ("not-jwt", "x" * 40, "not a JWT")):
            c.append(Case(E, "server/%s-token-%s" % (mode.replace("_", "-"), name),
                          SL + fake + TOK, files={"jwt": "SLURM_JWT=" + token + "\n"},
                          server=("http", mode), exit=1, msg=[says, "jwt"], max_s=20))
    c.append(Case(E, "server/slurm-refused-token-valid", SL + fake + TOK,
                  files={"jwt": jwt_token(exp=4102444800) + "\n"}, server=("http", "slurm_refused"),
                  exit=1, msg=["slurmctld", "jwt", "has not passed"], max_s=20))
    for flag in ("--slurm-node-poll", "--slurm-job-poll", "--slurm-submitters"):
        for name, v in (("nan", "nan"), ("minus", "-1"), ("zero", "0"), ("text", "lots")):
            c.append(Case(B, "server/%s=%s" % (flag[2:], name), SL + URL + TOK + [flag, v],
                          files=jwt, msg=[flag]))
    for flag in ("--gpus", "--wait", "--time-limit", "--cpu-milli"):
        for name, v in (("nan", "nan"), ("minus", "-1"), ("overflow", "1e999")):
            c.append(Case(B, "submit/%s=%s" % (flag[2:], name), SUB + [flag, v, "--", "{job.sh}"],
                          files=script, msg=[flag]))
    return c


def deployment_cases():
    """seedance server --deployments FILE: each bad file is refused (exit 2) naming the file and
    the JSON path, before any state is opened."""
    B, E = "bad-value", "exit-code"
    good = {"name": "web", "pod": {"cpu_milli": 1000},
            "autoscale": {"mode": "hpa", "metrics": [
                {"name": "rps", "query": "sum(rate(r[1m]))", "target_per_replica": 10}]}}

    def file(deployment=None, top=None):
        doc = {"prometheus": "http://127.0.0.1:9", "deployments": [deployment or good]}
        doc.update(top or {})
        return {"d.json": json.dumps(doc)}

    def dep(**over):
        d = json.loads(json.dumps(good))
        for k, v in over.items():
            if k.startswith("a_"):
                d["autoscale"][k[2:]] = v
            else:
                d[k] = v
        return d

    D = SRV + ["--deployments", "{d.json}"]
    c = [
        Case(E, "server/deployments-missing", SRV + ["--deployments", "{T}/nope.json"],
             exit=(1, 2), msg=["nope.json"]),
        Case(B, "server/deployments-not-json", D, files={"d.json": "{\n"},
             msg=["d.json:2:", "not JSON"]),
        Case(B, "server/deployments-deep", D, files={"d.json": "[" * 5000},
             msg=["d.json", "nested deeper"]),
        Case(B, "server/deployments-no-prometheus", D,
             files={"d.json": json.dumps({"deployments": [good]})}, msg=["$.prometheus"]),
        Case(B, "server/deployments-prometheus-bad-url", D,
             files=file(top={"prometheus": "http://h:99999"}), msg=["$.prometheus", "port"]),
        Case(B, "server/deployments-empty", D, files=file(top={"deployments": []}),
             msg=["$.deployments"]),
        Case(B, "server/deployments-unknown-field", D, files=file(dep(replica=3)),
             msg=["$.deployments[0].replica", "unknown key"]),
        Case(B, "server/deployments-mode", D, files=file(dep(a_mode="fast")),
             msg=["$.deployments[0].autoscale.mode"]),
        Case(B, "server/deployments-no-metric", D, files=file(dep(a_metrics=[])),
             msg=["$.deployments[0].autoscale.metrics"]),
        Case(B, "server/deployments-pod-name", D, files=file(dep(pod={"name": "x"})),
             msg=["$.deployments[0].pod.name"]),
        Case(B, "server/deployments-pod-bad", D, files=file(dep(pod={"gpu_milli": 5000})),
             msg=["$.deployments[0].pod"]),
        Case(B, "server/deployments-min-over-max", D,
             files=file(dep(a_min_replicas=9, a_max_replicas=3)),
             msg=["$.deployments[0].autoscale"]),
        Case(B, "server/deployments-name-bad", D, files=file(dep(name="Bad_Name")),
             msg=["$.deployments[0].pod"]),
        Case(B, "server/deployments-period-mode", D, files=file(dep(period="fast")),
             msg=["$.deployments[0].period"]),
        Case(B, "server/deployments-period-bounds", D,
             files=file(dep(period="adaptive", min_period_s=40, max_period_s=10)),
             msg=["$.deployments[0].min_period_s"]),
    ]
    c.append(Case(B, "server/deployments-period_s=overflow", D,
                  files={"d.json": json.dumps({"prometheus": "http://127.0.0.1:9",
                                               "deployments": [good]}).replace(
                      '"name": "web"', '"name": "web", "period_s": 1e999')},
                  msg=["d.json", "1e999"]))
    for field, values in (("period_s", ("0", "-1", '"x"')),
                          ("replicas", ("-1", "1.5", "1e12"))):
        for v in values:
            c.append(Case(B, "server/deployments-%s=%s" % (field, v.strip('"')), D,
                          files={"d.json": json.dumps({"prometheus": "http://127.0.0.1:9",
                                                       "deployments": [good]}).replace(
                              '"name": "web"', '"name": "web", "%s": %s' % (field, v))},
                          msg=["$.deployments[0].%s" % field]))
    for field, v in (("max_replicas", "100000"), ("tolerance", '"x"'),
                     ("min_replicas", "0")):
        d = json.dumps(good).replace('"mode": "hpa"', '"mode": "hpa", "%s": %s' % (field, v))
        c.append(Case(B, "server/deployments-autoscale-%s=%s" % (field, v.strip('"')), D,
                      files={"d.json": '{"prometheus": "http://127.0.0.1:9", "deployments": [%s]}'
                             % d},
                      msg=["$.deployments[0].autoscale"]))
    return c


def node_group_cases():
    """seedance server --node-groups FILE: each bad file is refused (exit 2) naming the file and
    the JSON path, before any state is opened."""
    B, E = "bad-value", "exit-code"
    node = {"cpu_milli": 32000, "memory_mib": 131072, "num_gpus": 4, "gpu_model": "A100"}
    good = {"name": "gpu", "min_size": 0, "max_size": 3, "node": node}

    def file(group=None, top=None, groups=None):
        doc = {"groups": groups if groups is not None else [group or good]}
        doc.update(top or {})
        return {"g.json": json.dumps(doc)}

    def grp(**over):
        g = json.loads(json.dumps(good))
        g.update(over)
        return g

    G = SRV + ["--node-groups", "{g.json}"]
    cmd = {"kind": "command", "resume_program": "/bin/true", "suspend_program": "/bin/true"}
    c = [
        Case(E, "server/node-groups-missing", SRV + ["--node-groups", "{T}/nope.json"],
             exit=(1, 2), msg=["nope.json"]),
        Case(B, "server/node-groups-not-json", G, files={"g.json": "{\n"},
             msg=["g.json:2:", "not JSON"]),
        Case(B, "server/node-groups-deep", G, files={"g.json": "[" * 5000},
             msg=["g.json", "nested deeper"]),
        Case(B, "server/node-groups-empty", G, files=file(groups=[]), msg=["$.groups"]),
        Case(B, "server/node-groups-not-list", G, files={"g.json": '{"groups": {}}'},
             msg=["$.groups"]),
        Case(B, "server/node-groups-unknown-field", G, files=file(top={"scan_interval": 1}),
             msg=["$.scan_interval", "unknown key"]),
        Case(B, "server/node-groups-group-unknown-field", G, files=file(grp(max=3)),
             msg=["$.groups[0].max", "unknown key"]),
        Case(B, "server/node-groups-no-node", G, files=file({"name": "g", "max_size": 1}),
             msg=["$.groups[0].node", "required"]),
        Case(B, "server/node-groups-node-bad", G, files=file(grp(node={"cpu_milli": 1000})),
             msg=["$.groups[0].node"]),
        Case(B, "server/node-groups-node-model", G,
             files=file(grp(node={"cpu_milli": 1, "memory_mib": 1, "num_gpus": 2})),
             msg=["$.groups[0].node"]),
        Case(B, "server/node-groups-node-cordoned", G,
             files=file(grp(node=dict(node, cordoned=True))), msg=["$.groups[0].node.cordoned"]),
        Case(B, "server/node-groups-with-kube", G + ["--kube-api", "http://127.0.0.1:9"],
             files=file(), msg=["--node-groups", "--kube-api"]),
        Case(B, "server/node-groups-slurm-simulated", G + ["--backend", "slurm", "--slurm-url",
                                                          "http://127.0.0.1:9"],
             files=file(), msg=["--node-groups", "kind command"]),
        Case(B, "server/node-groups-node-tainted", G,
             files=file(grp(node=dict(node, taints=[{"key": "k", "effect": "NoSchedule"}]))),
             msg=["$.groups[0].node.taints", "tolerations"]),
        Case(B, "server/node-groups-node-label", G,
             files=file(grp(node=dict(node, labels={"seedance.io/node-group": "other"}))),
             msg=["$.groups[0].node.labels"]),
        Case(B, "server/node-groups-min-over-max", G, files=file(grp(min_size=4)),
             msg=["$.groups[0].max_size", "min_size (4)"]),
        Case(B, "server/node-groups-name", G, files=file(grp(name="GPU_1")),
             msg=["$.groups[0].name"]),
        Case(B, "server/node-groups-name-twice", G, files=file(groups=[good, good]),
             msg=["$.groups[1].name", "clashes"]),
        Case(B, "server/node-groups-name-prefix", G, files=file(groups=[good, grp(name="gpu-1")]),
             msg=["$.groups[1].name", "clashes"]),
        Case(B, "server/node-groups-expander", G, files=file(top={"expander": "random"}),
             msg=["$.expander", "ca-least-waste"]),
        Case(B, "server/node-groups-provisioner-kind", G,
             files=file(top={"provisioner": {"kind": "cloud"}}), msg=["$.provisioner.kind"]),
        Case(B, "server/node-groups-command-no-program", G,
             files=file(top={"provisioner": {"kind": "command"}}),
             msg=["$.provisioner.resume_program"]),
        Case(B, "server/node-groups-command-relative", G,
             files=file(top={"provisioner": dict(cmd, suspend_program="bin/true")}),
             msg=["$.provisioner.suspend_program", "absolute"]),
        Case(B, "server/node-groups-command-delay", G,
             files=file(top={"provisioner": dict(cmd, delay_s=1)}), msg=["$.provisioner.delay_s"]),
        Case(B, "server/node-groups-prescale-not-bool", G, files=file(top={"prescale": "yes"}),
             msg=["$.prescale", "true or false"]),
        Case(B, "server/node-groups-headroom-not-bool", G,
             files=file(top={"drain_keeps_headroom": 1}), msg=["$.drain_keeps_headroom"]),
        Case(B, "server/node-groups-simulated-estimate", G,
             files=file(top={"provisioner": {"kind": "simulated", "provision_estimate_s": 60}}),
             msg=["$.provisioner.provision_estimate_s"]),
        Case(B, "server/node-groups-command-estimate", G,
             files=file(top={"provisioner": dict(cmd, provision_estimate_s=-1)}),
             msg=["$.provisioner.provision_estimate_s"]),
        Case(B, "server/node-groups-simulated-program", G,
             files=file(top={"provisioner": {"resume_program": "/bin/true"}}),
             msg=["$.provisioner.resume_program"]),
    ]
    for field, values in (("scan_interval_s", ("0", "-1", "1e999", '"x"', "1e9")),
                          ("scale_down_unneeded_s", ("-1", '"x"')),
                          ("provision_timeout_s", ("0", "-5")),
                          ("backoff_s", ("-1",)),
                          ("max_nodes_per_scale_up", ("0", "1.5")),
                          ("balance_tolerance", ("2", "-0.1")),
                          ("scale_down_utilization_threshold", ("1.5", "-0.5", '"half"')),
                          ("max_drains_per_scan", ("0", "-3", "2.5"))):
        for v in values:
            text = json.dumps({"groups": [good]}).replace('{"groups"', '{"%s": %s, "groups"'
                                                          % (field, v))
            c.append(Case(B, "server/node-groups-%s=%s" % (field, v.strip('"')), G,
                          files={"g.json": text},
                          msg=["g.json", "1e999" if v == "1e999" else "$.%s" % field]))
    for field, values in (("min_size", (-1, 0.5)), ("max_size", (1000000, "3"))):
        for v in values:
            c.append(Case(B, "server/node-groups-%s=%s" % (field, v), G,
                          files=file(grp(**{field: v})), msg=["$.groups[0].%s" % field]))
    c.append(Case(B, "server/node-groups-delay-past-timeout", G,
                  files=file(top={"provision_timeout_s": 60,
                                  "provisioner": {"kind": "simulated", "delay_s": 60}}),
                  msg=["$.provisioner.delay_s", "provision_timeout_s"]))
    c.append(Case(B, "server/node-groups-default-delay-past-timeout", G,
                  files=file(top={"provision_timeout_s": 100}),
                  msg=["$.provisioner.delay_s", "provision_timeout_s (100)"]))
    for v in ("-1", "1e9"):
        c.append(Case(B, "server/node-groups-delay_s=%s" % v, G,
                      files=file(top={"provisioner": {"kind": "simulated",
                                                      "delay_s": float(v)}}),
                      msg=["$.provisioner.delay_s"]))
    return c


# ----------------------------------------------------------------------------------------------
# ONNX models, written with a minimal protobuf encoder (onnx.proto's field numbers) so that the
# suite needs nothing beyond Python's standard library.

def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num, value):
    """One protobuf field: an int is a varint, bytes/str/list-of-parts length-delimited."""
    if isinstance(value, int):
        return _varint(num << 3) + _varint(value)
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, (list, tuple)):
        value = b"".join(value)
    return _varint((num << 3) | 2) + _varint(len(value)) + value


def _value_info(name, elem=1, dims=(1, 2)):
    shape = [_field(1, [_field(1, d)]) for d in dims]
    tensor_type = [_field(1, elem), _field(2, shape)]
    return [_field(1, name), _field(2, [_field(1, tensor_type)])]


def _tensor(name, dims, elem=1, raw=None, external=None):
    parts = [_field(1, d) for d in dims] + [_field(2, elem), _field(8, name)]
    if raw is not None:
        parts.append(_field(9, raw))
    if external is not None:
        parts += [_field(13, [_field(1, k), _field(2, v)]) for k, v in external]
        parts.append(_field(14, 1))
    return parts


def _node(op, inputs, outputs, name):
    return [_field(1, i) for i in inputs] + [_field(2, o) for o in outputs] + [
        _field(3, name), _field(4, op)]


def onnx_model(nodes, inputs, outputs, inits=(), opset=13):
    graph = ([_field(1, n) for n in nodes] + [_field(2, "g")] + [_field(5, t) for t in inits] +
             [_field(11, v) for v in inputs] + [_field(12, v) for v in outputs])
    return b"".join([_field(1, 8), _field(8, [_field(1, ""), _field(2, opset)]), _field(7, graph)])


GOOD_MODEL = onnx_model(
    [_node("MatMul", ["x", "W"], ["h"], "mm"), _node("Relu", ["h"], ["y"], "relu")],
    [_value_info("x")], [_value_info("y")], [_tensor("W", (2, 2), raw=bytes(16))])
FIXTURES["model.onnx"] = GOOD_MODEL
GOOD_PLAN = '{"schema_version": "model-plan/v1", "layers": [{"node": "mm", "format": "int8"}]}\n'
FIXTURES["plan.json"] = GOOD_PLAN
# The model commands' numeric flags (--seed, --samples, --budget-sqnr-db, ...) get the bad-value
# cases of every numeric flag (discovered_flags).
HELP_BASES.update({
    "model run": ["model", "run", "{model.onnx}", "-o", "{T}/out"],
    "model analyze": ["model", "analyze", "{model.onnx}"],
    "model plan": ["model", "plan", "{model.onnx}"],
    "model quantize": ["model", "quantize", "{model.onnx}", "--plan", "{plan.json}", "-o",
                       "{T}/q.onnx"],
    "model sparsify": ["model", "sparsify", "{model.onnx}", "-o", "{T}/s.onnx"],
    "model optimize": ["model", "optimize", "{model.onnx}", "-o", "{T}/o.onnx"],
})
# A model with a layer 2:4 pruning can take: MatMul x [1, 4] by W [4, 2] (weights 1..8).
SPARSE_MODEL = onnx_model(
    [_node("MatMul", ["x", "W"], ["h"], "mm"), _node("Relu", ["h"], ["y"], "relu")],
    [_value_info("x", dims=(1, 4))], [_value_info("y")],
    [_tensor("W", (4, 2), raw=b"".join(struct.pack("<f", v) for v in range(1, 9)))])


def quantize_cases():
    """seedance model quantize and run --plan: bad plans name the file and the JSON path; the
    written model never replaces an input."""
    B, E, C, D, W = "bad-value", "exit-code", "control", "destroy", "write-fail"
    Q = ["model", "quantize", "{m.onnx}", "--plan", "{p.json}", "-o"]
    ok = {"m.onnx": GOOD_MODEL, "p.json": GOOD_PLAN}

    def plan(name, text, msg):
        return Case(B, "model/quantize-" + name, Q + ["{T}/q.onnx"], msg=["p.json"] + msg,
                    files={"m.onnx": GOOD_MODEL, "p.json": text})

    return [
        Case(C, "model/quantize-ok", Q + ["{T}/q.onnx"], exit=0, files=ok,
             present=[("stdout", "1 weights quantized")]),
        Case(E, "model/quantize-no-plan", ["model", "quantize", "{m.onnx}", "-o", "{T}/q.onnx"],
             files=ok, msg=["--plan"]),
        Case(E, "model/quantize-no-output", Q[:-1], files=ok, msg=["--output"]),
        plan("not-json", "{\"layers\": [", [":1:", "not JSON"]),
        plan("not-a-layer", '{"layers": [{"node": "relu", "format": "int8"}]}',
             ["relu", "not a layer"]),
        plan("bad-format", '{"layers": [{"node": "mm", "format": "int3"}]}',
             ["$.layers[0].format", "int3"]),
        plan("layers-not-array", '{"layers": 7}', ["$.layers", "array"]),
        Case(D, "model/quantize-output-is-model", Q + ["{m.onnx}"], files=ok, msg=["m.onnx"]),
        Case(D, "model/quantize-output-is-plan", Q + ["{p.json}"], files=ok, msg=["p.json"]),
        Case(W, "model/quantize-dev-full", Q + ["/dev/full"], exit=1, files=ok,
             msg=["/dev/full"]),
        Case(W, "model/quantize-missing-dir", Q + ["{T}/nodir/q.onnx"], exit=2, files=ok,
             msg=["nodir/q.onnx"]),
        Case(B, "model/run-plan-not-a-layer",
             ["model", "run", "{m.onnx}", "--plan", "{p.json}", "-o", "{T}/out"],
             files={"m.onnx": GOOD_MODEL, "p.json": '{"layers": [{"node": "x", "format": "fp16"}]}'},
             msg=["\"x\"", "not a layer"]),
    ]


SERVING_PLAN = ('{"schema_version": "model-plan/v1", "gpu": "H100", "layers": ['
                '{"node": "layers.0.self_attn.q_proj", "format": "fp8-e4m3", "bytes": 20},'
                '{"node": "layers.0.mlp.up_proj", "format": "int8", "bytes": 20}],'
                ' "measured_sqnr_db": 38.5}\n')


def precision_plan_cases():
    """serve-sim --precision-plan and model plan --emit-pod: a bad plan exits 2 naming the file
    (and the JSON path); the pod manifest never replaces an input or the plan."""
    B, C, D, W = "bad-value", "control", "destroy", "write-fail"
    P = SERVE + ["--gpu", "h100", "--precision-plan", "{p.json}"]
    ok = {"p.json": SERVING_PLAN}

    def bad(name, text, msg):
        return Case(B, "serve-sim/precision-plan-" + name, P, files={"p.json": text},
                    msg=["p.json"] + msg)

    PLAN = ["model", "plan", "{m.onnx}", "--samples", "1"]
    model = {"m.onnx": GOOD_MODEL}
    return [
        Case(C, "serve-sim/precision-plan-ok", P, exit=0, files=ok,
             present=[("stdout", "precision plan"), ("stdout", "ffn int8")]),
        bad("not-json", '{"layers": [', [":1:", "not JSON"]),
        bad("bad-format", '{"layers": [{"node": "mlp", "format": "int3"}]}',
            ["$.layers[0].format", "int3"]),
        bad("layers-not-array", '{"layers": 7}', ["$.layers", "array"]),
        bad("sqnr-not-number", '{"layers": [], "measured_sqnr_db": "40"}',
            ["$.measured_sqnr_db"]),
        Case(B, "serve-sim/precision-plan-missing", SERVE + ["--precision-plan", "{T}/none.json"],
             msg=["none.json"]),
        Case(B, "serve-sim/precision-plan-gpu-lacks-fp8",
             SERVE + ["--gpu", "a100-80g", "--precision-plan", "{p.json}"], files=ok,
             msg=["p.json", "fp8"]),
        Case(D, "serve-sim/precision-plan-is-output", P + ["-o", "{p.json}"], files=ok,
             msg=["p.json"]),
        Case(C, "model/plan-emit-pod-ok", PLAN + ["-o", "{T}/p.json", "--emit-pod", "{pod.yaml}"],
             exit=0, files=model, out=[("pod.yaml", "json-object")]),
        Case(D, "model/plan-emit-pod-is-model", PLAN + ["--emit-pod", "{m.onnx}"], files=model,
             msg=["m.onnx"]),
        Case(D, "model/plan-emit-pod-is-plan",
             PLAN + ["-o", "{p.json}", "--emit-pod", "{p.json}"], files=model, msg=["p.json"]),
        Case(W, "model/plan-emit-pod-dev-full", PLAN + ["-o", "{T}/p.json", "--emit-pod",
                                                        "/dev/full"], exit=1, files=model,
             msg=["/dev/full"]),
    ]


def analyze_html_cases():
    """seedance model analyze --format html: node names are untrusted; a <script> or an
    attribute-closing quote in one comes out escaped, on stdout and in -o FILE."""
    I = "injection"
    bad = ['<script>alert(1)</script>', HTML_BAD, '"x" onmouseover="alert(1)"']
    model = onnx_model(
        [_node("MatMul", ["x", "W"], ["h"], bad[0]), _node("MatMul", ["h", "V"], ["k"], bad[1]),
         _node("MatMul", ["k", "U"], ["y"], bad[2])],
        [_value_info("x")], [_value_info("y")],
        [_tensor(w, (2, 2), raw=struct.pack("<4f", 0.5, -1.25, 2.0, 0.75)) for w in "WVU"])
    absent = ["<script", "<img src=x onerror", '" onmouseover="']
    A = ["model", "analyze", "{m.onnx}", "--samples", "2", "--format", "html"]
    return [
        Case(I, "model/analyze-html-node-name-file", A + ["-o", "{r.html}"], exit=0,
             files={"m.onnx": model}, out=[("r.html", "html")],
             absent=[("r.html", a) for a in absent]),
        Case(I, "model/analyze-html-node-name-stdout", A, exit=0, files={"m.onnx": model},
             out=[("stdout", "html")], absent=[("stdout", a) for a in absent]),
    ]


def sparsify_cases():
    """seedance model sparsify: a layer that cannot be pruned is exit 2 naming the file, the
    layer and the reason; neither the pruned model nor the report replaces an input."""
    B, E, C, D, W = "bad-value", "exit-code", "control", "destroy", "write-fail"
    S = ["model", "sparsify", "{m.onnx}", "--samples", "1", "-o"]
    ok = {"m.onnx": SPARSE_MODEL}
    return [
        Case(C, "model/sparsify-ok", S + ["{T}/s.onnx"], exit=0, files=ok,
             present=[("stdout", "stored 2:4 in 17")]),
        Case(E, "model/sparsify-no-output", S[:-1], files=ok, msg=["--output"]),
        Case(B, "model/sparsify-nothing-eligible", S + ["{T}/s.onnx"],
             files={"m.onnx": GOOD_MODEL}, msg=["m.onnx", "no layer can be pruned 2:4",
                                                "not a multiple of 4"]),
        Case(B, "model/sparsify-not-a-layer", S + ["{T}/s.onnx", "--layers", "relu"], files=ok,
             msg=["m.onnx", "\"relu\"", "not a layer"]),
        Case(B, "model/sparsify-empty-layer-name", S + ["{T}/s.onnx", "--layers", "mm,"],
             files=ok, msg=["--layers"]),
        Case(D, "model/sparsify-output-is-model", S + ["{m.onnx}"], files=ok, msg=["m.onnx"]),
        Case(D, "model/sparsify-report-is-model", S + ["{T}/s.onnx", "--report", "{m.onnx}"],
             files=ok, msg=["m.onnx"]),
        Case(W, "model/sparsify-dev-full", S + ["/dev/full"], exit=1, files=ok,
             msg=["/dev/full"]),
        Case(W, "model/sparsify-report-dev-full", S + ["{T}/s.onnx", "--report", "/dev/full"],
             exit=1, files=ok, msg=["/dev/full"]),
    ]


def _microsoft_model(op, name):
    """x -> com.microsoft `op` -> y, importing the domain at version 1."""
    node = _node(op, ["x"], ["y"], name) + [_field(7, "com.microsoft")]
    graph = ([_field(1, node), _field(2, "g"), _field(11, _value_info("x")),
              _field(12, _value_info("y"))])
    return b"".join([_field(1, 8), _field(8, [_field(1, ""), _field(2, 17)]),
                     _field(8, [_field(1, "com.microsoft"), _field(2, 1)]), _field(7, graph)])


def optimize_cases():
    """seedance model optimize: a bad device or model is exit 2 naming it; the rewritten model
    never replaces its input; an operator of onnxruntime's domain the executor does not run is
    refused by name, one it runs is run."""
    B, E, C, D, W = "bad-value", "exit-code", "control", "destroy", "write-fail"
    O = ["model", "optimize", "{m.onnx}", "-o"]
    ok = {"m.onnx": GOOD_MODEL}
    return [
        Case(C, "model/optimize-ok", O + ["{T}/o.onnx"], exit=0, files=ok,
             present=[("stdout", "nodes ->")]),
        Case(E, "model/optimize-no-output", O[:-1], files=ok, msg=["--output"]),
        Case(B, "model/optimize-unknown-device", O + ["{T}/o.onnx", "--device", "tpu"],
             files=ok, msg=["--device", "tpu"]),
        Case(B, "model/optimize-npu-device", O + ["{T}/o.onnx", "--device", "Ascend910B"],
             files=ok, msg=["--device", "Ascend910B", "NVIDIA"]),
        Case(B, "model/optimize-truncated", O + ["{T}/o.onnx"],
             files={"m.onnx": GOOD_MODEL[: len(GOOD_MODEL) // 2]},
             msg=["m.onnx", "not an ONNX model"]),
        Case(D, "model/optimize-output-is-model", O + ["{m.onnx}"], files=ok, msg=["m.onnx"]),
        Case(W, "model/optimize-dev-full", O + ["/dev/full"], exit=1, files=ok,
             msg=["/dev/full"]),
        Case(B, "model/microsoft-op-not-run", ["model", "run", "{m.onnx}", "-o", "{T}/out"],
             files={"m.onnx": _microsoft_model("QuickGelu", "qg")},
             msg=["m.onnx", "qg", "com.microsoft.QuickGelu"]),
        Case(C, "model/microsoft-gelu-runs", ["model", "run", "{m.onnx}", "-o", "{T}/out"],
             exit=0, files={"m.onnx": _microsoft_model("Gelu", "gelu")},
             present=[("stdout", "out/output_0.pb")]),
    ]


def model_cases():
    """seedance model run: bad models are exit 2 naming the node and the reason, never a crash."""
    B, E, G, C = "bad-value", "exit-code", "garbage", "control"
    RUN = ["model", "run", "{m.onnx}", "-o", "{T}/out"]

    def case(cls, name, model, msg, exit=2, extra=()):
        return Case(cls, "model/" + name, RUN + list(extra), exit=exit, msg=msg,
                    files={"m.onnx": model})

    vi = _value_info
    return [
        Case(C, "model/run-ok", RUN, exit=0, files={"m.onnx": GOOD_MODEL},
             present=[("stdout", "out/output_0.pb")]),
        case(B, "truncated", GOOD_MODEL[: len(GOOD_MODEL) // 2], ["m.onnx", "not an ONNX model"]),
        case(B, "not-protobuf", b"\xff" * 64, ["m.onnx", "not an ONNX model"]),
        case(B, "no-graph", _field(1, 8), ["m.onnx", "no graph"]),
        case(B, "wrong-types", onnx_model([_node("Add", ["x", "i"], ["y"], "add")],
                                          [vi("x"), vi("i", elem=7)], [vi("y")]),
             ["m.onnx", "add"]),
        case(B, "cycle", onnx_model([_node("Relu", ["b"], ["a"], "first"),
                                     _node("Relu", ["a"], ["b"], "second")],
                                    [vi("x")], [vi("b")]), ["m.onnx", "first"]),
        case(B, "missing-initializer", onnx_model([_node("MatMul", ["x", "W"], ["y"], "mm")],
                                                  [vi("x")], [vi("y")]), ["m.onnx", "W"]),
        case(B, "opset-99", onnx_model([_node("Relu", ["x"], ["y"], "relu")], [vi("x")],
                                       [vi("y")], opset=99), ["m.onnx", "99"]),
        case(B, "unknown-op", onnx_model([_node("FooBar", ["x"], ["y"], "foo")], [vi("x")],
                                         [vi("y")]), ["m.onnx", "FooBar"]),
        case(B, "unclaimed-op", onnx_model([_node("NonZero", ["x"], ["y"], "nz")], [vi("x")],
                                           [vi("y", elem=7, dims=(2, 2))]),
             ["m.onnx", "nz", "NonZero"]),
        case(B, "huge-dims", onnx_model([_node("Add", ["x", "W"], ["y"], "add")], [vi("x")],
                                        [vi("y")], [_tensor("W", (1 << 40, 1 << 20))]),
             ["m.onnx", "W"]),
        case(B, "initializer-2GB", onnx_model(
            [_node("Identity", ["W"], ["y"], "id")], [vi("x")], [vi("y", dims=(1 << 29,))],
            [_tensor("W", (1 << 29,), raw=bytes(4))]), ["m.onnx", "W", "limit"]),
        case(B, "raw-data-short", onnx_model([_node("Add", ["x", "W"], ["y"], "add")],
                                             [vi("x")], [vi("y")],
                                             [_tensor("W", (1, 2), raw=b"\0\0\0")]),
             ["m.onnx", "W", "raw_data"]),
        case(G, "external-data-escapes", onnx_model(
            [_node("Add", ["x", "W"], ["y"], "add")], [vi("x")], [vi("y")],
            [_tensor("W", (1, 2), external=[("location", "../../etc/passwd")])]),
             ["m.onnx", "W"]),
        case(B, "dynamic-dim-without-shape", onnx_model(
            [_node("Relu", ["x"], ["y"], "relu")],
            [[_field(1, "x"), _field(2, [_field(1, [_field(1, 1), _field(2, [
                _field(1, [_field(2, "batch")]), _field(1, [_field(1, 2)])])])])]], [vi("y")]),
             ["x", "--shape"]),
        Case(E, "model/missing-file", ["model", "run", "{T}/nope.onnx", "-o", "{T}/out"],
             exit=(1, 2), msg=["nope.onnx"]),
        Case(E, "model/output-is-a-file", ["model", "run", "{m.onnx}", "-o", "{m.onnx}"],
             files={"m.onnx": GOOD_MODEL}, msg=["--output", "not a folder"]),
        Case(E, "model/no-output", ["model", "run", "{m.onnx}"], files={"m.onnx": GOOD_MODEL},
             msg=["--output"]),
        Case(E, "model/shape-not-an-input", RUN + ["--shape", "z=1x2"],
             files={"m.onnx": GOOD_MODEL}, msg=["--shape", "z"]),
    ] + quantize_cases() + precision_plan_cases() + sparsify_cases() + optimize_cases() + \
        analyze_html_cases() + [
        Case(B, "model/inputs-mistyped", RUN + ["--inputs", "{T}/in"],
             files={"m.onnx": GOOD_MODEL, "in/x.pb": b"".join(_tensor("x", (1, 2), elem=7,
                                                                       raw=bytes(16)))},
             msg=["x", "int64", "float"]),
    ]


TRAIN_CSV = "a,b,label\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n2,1,0\n4,3,1\n"


def train_cases():
    """seedance train (one rank, no mpirun: Open MPI's singleton): bad data and flags exit 2
    naming the file, line and column or the flag; a missing file exits 1; never a hang."""
    B, E, C = "bad-value", "exit-code", "control"
    T = ["train", "--data", "{d.csv}", "--steps", "5"]
    # The cases that reach MPI_Init run as the MPI tests do (src/train/CMakeLists.txt): hwloc
    # skips PCI discovery (~13 s under ASan) and LeakSanitizer is off (Open MPI's plugins keep
    # allocations to exit by design); flag and data errors are found before MPI starts.
    mpi = {"HWLOC_COMPONENTS": "-pci", "ASAN_OPTIONS": "detect_leaks=0"}

    def bad(name, text, msg, extra=()):
        extra = list(extra) if "--batch" in extra else list(extra) + ["--batch", "2"]
        return Case(B, "train/" + name, T + extra, files={"d.csv": text}, msg=msg)

    return [
        Case(C, "train/ok", T + ["--batch", "2", "--format", "json"], exit=0, env=mpi,
             files={"d.csv": TRAIN_CSV},
             present=[("stdout", '"train_loss"'), ("stdout", '"bytes_sent_per_rank"')]),
        Case(E, "train/no-data", ["train"], msg=["--data"]),
        Case(E, "train/missing-file", ["train", "--data", "{T}/nope.csv"], exit=1,
             msg=["nope.csv"]),
        bad("bad-cell", TRAIN_CSV.replace("3,4,1", "3,x,1"), ["d.csv:3", "field 'b'", "finite"]),
        bad("short-row", TRAIN_CSV.replace("3,4,1", "3,4"), ["d.csv:3", "row has 2 fields"]),
        bad("empty", "", ["d.csv:1", "empty file"]),
        bad("header-only", "a,b,label\n", ["d.csv", "no data rows"]),
        bad("fraction-label", TRAIN_CSV.replace("3,4,1", "3,4,0.5"), ["d.csv:3", "label"]),
        bad("one-class", "a,label\n1,0\n2,0\n3,0\n", ["d.csv", "one class"]),
        bad("label-column", TRAIN_CSV, ["--label-column 9"], extra=["--label-column", "9"]),
        bad("batch-too-big", TRAIN_CSV, ["--batch 50", "training rows"],
            extra=["--batch", "50"]),
        bad("model-width", TRAIN_CSV, ["mlp:0", "1..65536"], extra=["--model", "mlp:0"]),
        bad("model-name", TRAIN_CSV, ["--model", "softmax"], extra=["--model", "cnn"]),
        bad("lr-nan", TRAIN_CSV, ["--lr"], extra=["--lr", "nan"]),
        Case(B, "train/world-size", T + ["--batch", "2", "--world-size", "3"], env=mpi,
             files={"d.csv": TRAIN_CSV}, msg=["--world-size is 3"]),
    ]


# A small ARC .lis trace, zstd-compressed (`zstd -19`), for `cache simulate`'s decompression cases.
LIS_TEXT = "10 3 0 1\n20 1 0 2\n10 2 0 3\n30 4 0 4\n"
LIS_ZST = bytes.fromhex("28b52ffd0468cd000042420507d03de4007c2b06e8b987e07947d85967d099470100"
                        "c3f31076")


def cache_cases():
    """`seedance cache simulate` (docs/cache.md): --sizes and --policy items, trace formats,
    compressed traces cut short, and the output convention (FIFOs, -o naming the trace)."""
    import bz2
    import gzip
    c = []
    B, D, E, C, W = "bad-value", "destroy", "exit-code", "control", "write-fail"
    files = {"t.lis": LIS_TEXT}
    base = ["cache", "simulate", "--trace", "{t.lis}", "--policy", "lru,arc"]

    def case(cls, name, argv, exit=2, msg=(), extra_files=None, **kw):
        c.append(Case(cls, "cache-simulate/" + name, argv, exit=exit, msg=msg,
                      files=dict(files, **(extra_files or {})), **kw))

    case(C, "table", base + ["--sizes", "2,50%"], exit=0)
    case(C, "csv-file", base + ["--sizes", "0.5", "-o", "{o.csv}"], exit=0,
         out=[("o.csv", "csv")])
    case(C, "zstd-trace", ["cache", "simulate", "--trace", "{z.lis.zst}", "--policy", "all",
                           "--sizes", "1,4", "-o", "{o.csv}"], exit=0,
         extra_files={"z.lis.zst": LIS_ZST}, out=[("o.csv", "csv")])
    for vname, v, want in (("unknown-unit", "2,12XB", "item 2 '12XB': unknown unit"),
                           ("zero", "0", "item 1 '0'"),
                           ("nan", "nan", "item 1 'nan'"),
                           ("negative", "-5", "item 1 '-5'"),
                           ("exponent", "1e3", "item 1 '1e3'"),
                           ("fraction-above-one", "1.5", "(0, 1]"),
                           ("zero-percent", "0%", "(0, 100]"),
                           ("percent-above-100", "101%", "(0, 100]"),
                           ("empty", "", "--sizes"),
                           ("empty-item", "1,,2", "item 2"),
                           ("overflow", "99999999999999999999999", "too large"),
                           ("bytes-without-sizes", "128MiB", "--object-sizes on"),
                           ("fraction-under-one-object", "0.01", "under 1")):
        case(B, "--sizes=" + vname, base + ["--sizes", v], msg=["--sizes", want])
    case(B, "--policy=unknown", ["cache", "simulate", "--trace", "{t.lis}", "--policy",
                                 "lru,nope", "--sizes", "2"], msg=["--policy: item 2 'nope'"])
    case(B, "--trace-format=unknown", base + ["--sizes", "2", "--trace-format", "parquet"],
         msg=["--trace-format", "tencent-photo"])
    case(B, "--object-sizes-on-without-sizes", base + ["--sizes", "2", "--object-sizes", "on"],
         msg=["--object-sizes on", "lis"])
    case(E, "format-not-in-name", ["cache", "simulate", "--trace", "{t.bin}", "--policy", "lru",
                                   "--sizes", "2"], extra_files={"t.bin": LIS_TEXT},
         msg=["--trace-format", "t.bin"])
    case(E, "missing-trace", ["cache", "simulate", "--trace", "{T}/nope.lis", "--policy", "lru",
                              "--sizes", "2"], exit=(1, 2), msg=["nope.lis"])
    case(E, "no-trace", ["cache", "simulate", "--policy", "lru", "--sizes", "2"],
         msg=["--trace"])
    case(B, "bad-lis-line", ["cache", "simulate", "--trace", "{b.lis}", "--policy", "lru",
                             "--sizes", "2"], extra_files={"b.lis": "10 3 0 1\n10 x 0 2\n"},
         msg=["b.lis:2", "n_blocks"])
    case(B, "lis-run-too-long", ["cache", "simulate", "--trace", "{b.lis}", "--policy", "lru",
                                 "--sizes", "2"], extra_files={"b.lis": "0 99999999999 0 1\n"},
         msg=["b.lis:1", "n_blocks"])
    case(B, "vscsi-garbage", ["cache", "simulate", "--trace", "{g.vscsi}", "--policy", "lru",
                              "--sizes", "2"], extra_files={"g.vscsi": bytes(range(256)) * 4},
         msg=["g.vscsi: record 1"])
    for codec, packed in (("zstd", LIS_ZST),
                          ("gzip", gzip.compress(LIS_TEXT.encode())),
                          ("bzip2", bz2.compress(LIS_TEXT.encode()))):
        case(B, "truncated-%s-trace" % codec,
             ["cache", "simulate", "--trace", "{cut.lis}", "--policy", "lru", "--sizes", "2"],
             extra_files={"cut.lis": packed[: len(packed) - 6]},
             msg=["cut.lis", "corrupt %s stream" % codec])
    case(D, "output-is-trace", base + ["--sizes", "2", "-o", "{t.lis}"],
         msg=["refusing to overwrite an input"])
    case(D, "fifo-no-reader", base + ["--sizes", "2", "-o", "{fifo.csv}"], exit=1,
         setup=[("fifo", "fifo.csv")], msg=["fifo.csv"], max_s=12)
    case(D, "fifo-with-reader", base + ["--sizes", "2", "-o", "{fifo.csv}"], exit=0,
         setup=[("fifo_reader", "fifo.csv")], out=[("fifo:fifo.csv", "csv")])
    case(W, "dev-full", base + ["--sizes", "2", "-o", "/dev/full"], exit=1, msg=["/dev/full"])
    return c


EXPERIMENT_JSON = ('{"control": "a", "variants": [{"name": "a", "weight": 1}, '
                   '{"name": "b", "weight": 1}], "metrics": [{"name": "latency_ms", '
                   '"direction": "decrease"}]}')


def experiment_cases():
    """`seedance experiment` (docs/experiments.md): definitions and event files checked before
    any request, names, a server that is not there, -o naming the input."""
    c = []
    B, D, E = "bad-value", "destroy", "exit-code"
    nowhere = ["--server", "http://127.0.0.1:1", "--timeout", "5s"]

    def case(cls, name, argv, exit=2, msg=(), files=None, **kw):
        c.append(Case(cls, "experiment/" + name, ["experiment"] + argv, exit=exit, msg=msg,
                      files=dict({"e.json": EXPERIMENT_JSON}, **(files or {})), **kw))

    case(B, "not-json", ["create", "x", "-f", "{b.json}"] + nowhere,
         files={"b.json": "{control: a"}, msg=["b.json", "not JSON"])
    case(B, "control-not-a-variant", ["create", "x", "-f", "{b.json}"] + nowhere,
         files={"b.json": EXPERIMENT_JSON.replace('"control": "a"', '"control": "z"')},
         msg=["b.json: $.control: must name one of the variants"])
    case(B, "weight-zero", ["create", "x", "-f", "{b.json}"] + nowhere,
         files={"b.json": EXPERIMENT_JSON.replace('"weight": 1}]', '"weight": 0}]')},
         msg=["b.json: $.variants[1].weight"])
    case(B, "unknown-key", ["create", "x", "-f", "{b.json}"] + nowhere,
         files={"b.json": EXPERIMENT_JSON[:-1] + ', "colour": 1}'}, msg=["unknown key"])
    case(B, "escape-in-variant", ["create", "x", "-f", "{b.json}"] + nowhere,
         files={"b.json": EXPERIMENT_JSON.replace('"name": "b"', '"name": "\\u001b[2J"')},
         msg=["$.variants[1].name"])
    case(B, "bad-name", ["create", "Bad_Name", "-f", "{e.json}"] + nowhere,
         msg=["DNS-1123 label"])
    case(B, "name-with-escape", ["report", ESC] + nowhere, msg=["DNS-1123 label"])
    case(B, "events-not-array", ["events", "x", "-f", "{v.json}"] + nowhere,
         files={"v.json": '{"events": 5}'}, msg=["v.json: $.events: must be an array"])
    case(B, "batch-zero", ["events", "x", "-f", "{e.json}", "--batch", "0"] + nowhere,
         msg=["--batch"])
    case(E, "missing-file", ["create", "x", "-f", "{T}/nope.json"] + nowhere, exit=(1, 2),
         msg=["nope.json"])
    case(E, "no-server", ["report", "x"] + nowhere, exit=1, msg=["127.0.0.1:1"])
    case(E, "no-subcommand", [], msg=["experiment: say what to do"])
    case(D, "output-is-input", ["create", "x", "-f", "{e.json}", "-o", "{e.json}"] + nowhere,
         msg=["refusing to overwrite an input"])
    return c


def node_agent_cache_cases():
    """`seedance node-agent cache` and `prewarm-wait` (docs/cache.md): every flag checked before
    anything starts, no credential or escape sequence echoed, a pod UID checked before waiting."""
    c = []
    B, E = "bad-value", "exit-code"
    base = ["node-agent", "cache", "--server", "http://127.0.0.1:1", "--node", "n1",
            "--cache-dir", "{T}/c"]

    def case(cls, name, argv, exit=2, msg=(), **kw):
        c.append(Case(cls, "node-agent-cache/" + name, argv, exit=exit, msg=msg, **kw))

    for flag, value, want in (("--cache-size", "12XB", "expected a size"),
                              ("--cache-size", "0", "[1, "),
                              ("--max-concurrent", "0", "[1, 256]"),
                              ("--max-bandwidth", "-5", "expected a size"),
                              ("--parallel-pods", "65", "[1, 64]"),
                              ("--stall-timeout", "0", "[0.1, 3600]"),
                              ("--watch-timeout", "nan", "--watch-timeout")):
        argv = base + ["--cache-size", "1G", flag, value] if flag != "--cache-size" else \
            base + [flag, value]
        case(B, flag.lstrip("-") + "=" + value, argv, msg=[flag, want])
    case(B, "policy-the-cache-cannot-run", base + ["--cache-size", "1G", "--policy", "belady"],
         msg=["belady", "lru, fifo, lru2"])
    case(B, "node-with-escape", ["node-agent", "cache", "--server", "http://127.0.0.1:1",
                                 "--node", ESC, "--cache-dir", "{T}/c", "--cache-size", "1G"],
         msg=["--node", "DNS-1123"])
    case(B, "credentials-in-url", ["node-agent", "cache", "--server",
                                   "http://u:hunter2secret@127.0.0.1:1", "--node", "n1",
                                   "--cache-dir", "{T}/c", "--cache-size", "1G"],
         msg=["<redacted>", "--token-file"])
    case(E, "cache-dir-is-a-file", ["node-agent", "cache", "--server", "http://127.0.0.1:1",
                                    "--node", "n1", "--cache-dir", "{f.txt}", "--cache-size",
                                    "1G"], exit=1, files={"f.txt": "x"}, msg=["f.txt"])
    case(E, "no-node", ["node-agent", "cache", "--cache-dir", "{T}/c", "--cache-size", "1G"],
         msg=["--node"])
    case(B, "wait-bad-uid", ["node-agent", "prewarm-wait", "--server", "http://127.0.0.1:1",
                             "--pod", "not-a-uid!"], msg=["a pod UID is"])
    case(E, "wait-no-pod", ["node-agent", "prewarm-wait"], msg=["--pod UID is required"])
    case(E, "wait-no-server", ["node-agent", "prewarm-wait", "--server", "http://127.0.0.1:1",
                               "--pod", "0123abcd", "--timeout", "1s"], exit=1,
         msg=["cannot reach http://127.0.0.1:1"])
    return c


def build(binary=None):
    cases = []
    cases += destroy_and_write_cases()
    cases += secondary_output_cases()
    cases += reader_cases()
    cases += numeric_cases(NUMERIC_FLAGS + discovered_flags(binary))
    cases += hang_cases()
    cases += bad_value_cases()
    cases += garbage_cases()
    cases += injection_cases()
    cases += exit_code_cases()
    cases += control_cases()
    cases += mutant_cases()
    cases += live_scheduler_cases()
    cases += node_agent_cases()
    cases += device_plugin_cases()
    cases += slurm_cases()
    cases += deployment_cases()
    cases += node_group_cases()
    cases += model_cases()
    cases += train_cases()
    cases += cache_cases()
    cases += experiment_cases()
    cases += node_agent_cache_cases()
    return cases
