#!/usr/bin/env python3
"""deploy/kubernetes/ as one installable unit: renders the kustomization that
`kubectl apply -k deploy/kubernetes` installs, and the overlay overlays/extender-only, with
kubectl's built-in kustomize, and checks that the objects refer to each other correctly: names
and namespaces, no duplicates, the release's image, every ConfigMap, PersistentVolumeClaim and
ServiceAccount a pod template uses, every binding's role and subjects, selectors against pod
labels, the scheduler profile's extender Service, and the two generated ConfigMaps' contents.
Nothing is sent to a cluster (docs/kubernetes.md, "Installing").

Before rendering, the checker is run on object lists broken on purpose, and must report each of
them, so that a checker that finds nothing cannot pass.

usage: kustomize_test.py   (from any directory; SEEDANCE_SOURCE_DIR overrides the repository
       root, KUBECTL the kubectl found on PATH)
exit: 0 pass, 1 fail, 77 kubectl not found (skipped)"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys

import yaml

SKIP = 77
NAMESPACE = "seedance-system"
PART_OF = ("app.kubernetes.io/part-of", "seedance")
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
# The one image that is not Seedance's own: scheduler.yaml's upstream kube-scheduler.
KUBE_SCHEDULER_IMAGE = "registry.k8s.io/kube-scheduler:"
# Built-in roles a binding may refer to without the render holding them: a Role lives in its
# namespace (kube-system for this one), so a RoleBinding to it must be there too.
BUILTIN_ROLES = {("Role", "extension-apiserver-authentication-reader"): "kube-system"}
WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"}
DASHBOARD = "seedance-grafana-dashboard"
SCHEDULER_CONFIG = "seedance-scheduler-config"


def source_dir():
    env = os.environ.get("SEEDANCE_SOURCE_DIR")
    if env:
        return os.path.abspath(env)
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def release_version(root):
    with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"^project\(seedance VERSION ([0-9.]+)", f.read(), re.M)
    if not m:
        raise SystemExit("FAIL: no `project(seedance VERSION x.y.z` in CMakeLists.txt")
    return m.group(1)


def builtin_role(kind, name):
    if kind == "ClusterRole" and name.startswith("system:"):
        return True
    return (kind, name) in BUILTIN_ROLES


def ident(o):
    md = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
    ns = md.get("namespace")
    return f"{o.get('kind')} {ns + '/' if ns else ''}{md.get('name')}"


def pod_template(o):
    """(labels, pod spec) of a workload's pod template, or None."""
    kind, spec = o.get("kind"), o.get("spec") or {}
    if kind in WORKLOADS:
        t = spec.get("template") or {}
    elif kind == "CronJob":
        t = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
    elif kind == "Pod":
        t = o
    else:
        return None
    return ((t.get("metadata") or {}).get("labels") or {}), (t.get("spec") or {})


def selector_matches(selector, labels):
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def containers(spec):
    return (spec.get("initContainers") or []) + (spec.get("containers") or [])


def check_identity(objs, problems):
    seen = set()
    namespaces = {o["metadata"]["name"] for o in objs if o.get("kind") == "Namespace"
                  and isinstance(o.get("metadata"), dict) and o["metadata"].get("name")}
    for i, o in enumerate(objs):
        md = o.get("metadata")
        name = md.get("name") if isinstance(md, dict) else None
        fields = (("apiVersion", o.get("apiVersion")), ("kind", o.get("kind")),
                  ("metadata.name", name))
        missing = [f for f, v in fields if not isinstance(v, str) or not v]
        if missing:
            problems.append(f"object #{i} ({ident(o)}): no {', '.join(missing)}")
            continue
        kind, name, ns = o["kind"], md["name"], md.get("namespace")
        key = (kind, ns, name)
        if key in seen:
            problems.append(f"{ident(o)}: more than one object of that kind, namespace and name")
        seen.add(key)
        if (md.get("labels") or {}).get(PART_OF[0]) != PART_OF[1]:
            problems.append(f"{ident(o)}: no label {PART_OF[0]}: {PART_OF[1]}")
        if kind in CLUSTER_SCOPED:
            if ns:
                problems.append(f"{ident(o)}: {kind} is cluster-scoped but has namespace {ns}")
            continue
        want = NAMESPACE
        if kind == "RoleBinding":
            ref = o.get("roleRef") or {}
            want = BUILTIN_ROLES.get((ref.get("kind"), ref.get("name")), NAMESPACE)
        if ns != want:
            problems.append(f"{ident(o)}: namespace {ns or '(none)'}, expected {want}")
        if ns and ns != "kube-system" and ns not in namespaces:
            problems.append(f"{ident(o)}: namespace {ns} is not created by the render")


def check_images(objs, version, problems):
    want = f"seedance:{version}"
    for o in objs:
        t = pod_template(o)
        if t is None:
            continue
        for c in containers(t[1]):
            image = c.get("image") or ""
            if image.startswith(KUBE_SCHEDULER_IMAGE):
                continue
            if image != want:
                problems.append(f"{ident(o)}: container {c.get('name')} runs image "
                                f"{image or '(none)'}, expected {want}")


def check_pod_references(objs, problems):
    by = {(o.get("kind"), (o.get("metadata") or {}).get("namespace"),
           (o.get("metadata") or {}).get("name")) for o in objs}
    for o in objs:
        t = pod_template(o)
        if t is None:
            continue
        labels, spec = t
        ns = (o.get("metadata") or {}).get("namespace")

        def need(kind, name, what, optional=False):
            if not optional and (kind, ns, name) not in by:
                problems.append(f"{ident(o)}: {what} {kind} {ns}/{name} is not in the render")

        sa = spec.get("serviceAccountName") or spec.get("serviceAccount")
        if sa:
            need("ServiceAccount", sa, "serviceAccountName names")
        volumes = spec.get("volumes") or []
        for v in volumes:
            if "configMap" in v:
                cm = v["configMap"]
                need("ConfigMap", cm.get("name"), f"volume {v.get('name')} mounts",
                     cm.get("optional", False))
            if "persistentVolumeClaim" in v:
                need("PersistentVolumeClaim", v["persistentVolumeClaim"].get("claimName"),
                     f"volume {v.get('name')} mounts")
            for src in (v.get("projected") or {}).get("sources") or []:
                if "configMap" in src:
                    need("ConfigMap", src["configMap"].get("name"),
                         f"projected volume {v.get('name')} mounts",
                         src["configMap"].get("optional", False))
        names = {v.get("name") for v in volumes}
        for c in containers(spec):
            for m in c.get("volumeMounts") or []:
                if m.get("name") not in names:
                    problems.append(f"{ident(o)}: container {c.get('name')} mounts volume "
                                    f"{m.get('name')}, which the pod does not have")
            for e in c.get("envFrom") or []:
                if "configMapRef" in e:
                    need("ConfigMap", e["configMapRef"].get("name"), "envFrom names",
                         e["configMapRef"].get("optional", False))
            for e in c.get("env") or []:
                ref = (e.get("valueFrom") or {}).get("configMapKeyRef")
                if ref:
                    need("ConfigMap", ref.get("name"), f"env {e.get('name')} reads",
                         ref.get("optional", False))
        if o.get("kind") in WORKLOADS:
            sel = (o.get("spec") or {}).get("selector")
            if not sel or not selector_matches(sel, labels):
                problems.append(f"{ident(o)}: selector {sel} does not match its pod template's "
                                f"labels {labels}")


def check_bindings(objs, problems):
    by = {(o.get("kind"), (o.get("metadata") or {}).get("namespace"),
           (o.get("metadata") or {}).get("name")) for o in objs}
    for o in objs:
        if o.get("kind") not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        ref = o.get("roleRef") or {}
        kind, name = ref.get("kind"), ref.get("name")
        if kind == "Role" and o["kind"] == "ClusterRoleBinding":
            problems.append(f"{ident(o)}: a ClusterRoleBinding cannot refer to a Role")
        ns = o["metadata"].get("namespace") if kind == "Role" else None
        if not builtin_role(kind, name) and (kind, ns, name) not in by:
            problems.append(f"{ident(o)}: roleRef {kind} {name} is not in the render")
        if not o.get("subjects"):
            problems.append(f"{ident(o)}: no subjects")
        for s in o.get("subjects") or []:
            if s.get("kind") != "ServiceAccount":
                continue
            key = ("ServiceAccount", s.get("namespace"), s.get("name"))
            if key not in by:
                problems.append(f"{ident(o)}: subject ServiceAccount "
                                f"{s.get('namespace')}/{s.get('name')} is not in the render")


def check_services(objs, problems):
    for svc in objs:
        if svc.get("kind") != "Service":
            continue
        sel = (svc.get("spec") or {}).get("selector") or {}
        ns = svc["metadata"].get("namespace")
        pods = [pod_template(o)[0] for o in objs
                if pod_template(o) is not None and o["metadata"].get("namespace") == ns]
        if sel and not any(all(labels.get(k) == v for k, v in sel.items()) for labels in pods):
            problems.append(f"{ident(svc)}: selector {sel} matches no pod template in {ns}")


def find(objs, kind, name):
    for o in objs:
        md = o.get("metadata") or {}
        if o.get("kind") == kind and md.get("name") == name and md.get("namespace") == NAMESPACE:
            return o
    return None


def check_dashboard(objs, problems):
    cm = find(objs, "ConfigMap", DASHBOARD)
    if cm is None:
        return
    if (cm["metadata"].get("labels") or {}).get("grafana_dashboard") != "1":
        problems.append(f"{ident(cm)}: no label grafana_dashboard: \"1\" (the Grafana sidecar's)")
    data = cm.get("data") or {}
    if len(data) != 1 or not next(iter(data)).endswith(".json"):
        problems.append(f"{ident(cm)}: expected one *.json key, got {sorted(data)}")
    for key, text in data.items():
        try:
            board = json.loads(text)
        except (TypeError, ValueError) as e:
            problems.append(f"{ident(cm)}: {key} is not JSON: {e}")
            continue
        panels = board.get("panels") if isinstance(board, dict) else None
        if not isinstance(panels, list) or not panels:
            problems.append(f"{ident(cm)}: {key} has no \"panels\" list")


def check_scheduler_config(objs, problems):
    cm = find(objs, "ConfigMap", SCHEDULER_CONFIG)
    if cm is None:
        return
    data = cm.get("data") or {}
    if list(data) != ["scheduler-config.yaml"]:
        problems.append(f"{ident(cm)}: expected the one key scheduler-config.yaml, "
                        f"got {sorted(data)}")
        return
    try:
        config = yaml.safe_load(data["scheduler-config.yaml"])
    except yaml.YAMLError as e:
        problems.append(f"{ident(cm)}: scheduler-config.yaml is not YAML: {e}")
        return
    if not isinstance(config, dict) or config.get("kind") != "KubeSchedulerConfiguration":
        problems.append(f"{ident(cm)}: scheduler-config.yaml is not a KubeSchedulerConfiguration")
        return
    # The extender it calls is the render's Service, on a port that Service serves.
    for e in config.get("extenders") or []:
        m = re.match(r"https?://([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.cluster\.local)?:(\d+)/",
                     e.get("urlPrefix") or "")
        if not m:
            problems.append(f"{ident(cm)}: extender urlPrefix {e.get('urlPrefix')} is not a "
                            "Service in the cluster")
            continue
        name, ns, port = m.group(1), m.group(2), int(m.group(3))
        svc = next((o for o in objs if o.get("kind") == "Service" and
                    o["metadata"].get("name") == name and o["metadata"].get("namespace") == ns),
                   None)
        if svc is None or port not in [p.get("port") for p in svc["spec"].get("ports") or []]:
            problems.append(f"{ident(cm)}: the extender {name}.{ns}.svc:{port} is not a Service "
                            "port in the render")
    # kube-scheduler's --config is the ConfigMap's key where the Deployment mounts it.
    sched = find(objs, "Deployment", "seedance-scheduler")
    if sched is None:
        problems.append("Deployment seedance-system/seedance-scheduler is not in the render")
        return
    spec = pod_template(sched)[1]
    mounted = {v["name"] for v in spec.get("volumes") or []
               if (v.get("configMap") or {}).get("name") == SCHEDULER_CONFIG}
    paths = {m["mountPath"].rstrip("/") + "/scheduler-config.yaml"
             for c in containers(spec) for m in c.get("volumeMounts") or []
             if m.get("name") in mounted}
    args = [a for c in containers(spec) for a in (c.get("command") or []) + (c.get("args") or [])]
    configs = {a.split("=", 1)[1] for a in args if a.startswith("--config=")}
    if not configs or not configs <= paths:
        problems.append(f"{ident(sched)}: --config {sorted(configs)} is not the mounted "
                        f"{SCHEDULER_CONFIG} ({sorted(paths)})")


def check(objs, version):
    """Every problem with a rendered object list, as sentences; [] when there is none."""
    problems = []
    check_identity(objs, problems)
    if problems:  # the other checks index metadata.name
        return problems
    check_images(objs, version, problems)
    check_pod_references(objs, problems)
    check_bindings(objs, problems)
    check_services(objs, problems)
    check_dashboard(objs, problems)
    check_scheduler_config(objs, problems)
    return problems


# --- the checker's own test: a small valid list, then each way of breaking it ------------------

def sample(version):
    def md(name, ns=NAMESPACE, **extra):
        m = {"name": name, "labels": {PART_OF[0]: PART_OF[1]}, **extra}
        if ns:
            m["namespace"] = ns
        return m
    pod = {"metadata": {"labels": {"app": "x"}},
           "spec": {"serviceAccountName": "x",
                    "containers": [{"name": "x", "image": f"seedance:{version}",
                                    "volumeMounts": [{"name": "c", "mountPath": "/c"}]}],
                    "volumes": [{"name": "c", "configMap": {"name": "x"}}]}}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": md(NAMESPACE, ns=None)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": md("x")},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md("x"), "data": {"a": "b"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": md("x", ns=None), "rules": []},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": md("x", ns=None),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "x"},
         "subjects": [{"kind": "ServiceAccount", "name": "x", "namespace": NAMESPACE}]},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": md("x"),
         "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": pod}},
        {"apiVersion": "v1", "kind": "Service", "metadata": md("x"),
         "spec": {"selector": {"app": "x"}, "ports": [{"port": 7070}]}},
    ]


def deployment(objs):
    return next(o for o in objs if o["kind"] == "Deployment")


def breakages():
    """(what, how to break the sample, a phrase the checker's report must contain)."""
    def set_(path, value):
        def f(objs):
            o = deployment(objs)
            for k in path[:-1]:
                o = o[k] if not isinstance(o, list) else o[int(k)]
            o[path[-1]] = value
        return f

    def kind_(kind, f):
        return lambda objs: f(next(o for o in objs if o["kind"] == kind))

    return [
        ("a Deployment mounting a missing ConfigMap",
         set_(["spec", "template", "spec", "volumes", "0", "configMap", "name"], "gone"),
         "mounts ConfigMap seedance-system/gone is not in the render"),
        ("a Deployment naming a missing ServiceAccount",
         set_(["spec", "template", "spec", "serviceAccountName"], "gone"),
         "ServiceAccount seedance-system/gone is not in the render"),
        ("the :latest image",
         set_(["spec", "template", "spec", "containers", "0", "image"], "seedance:latest"),
         "runs image seedance:latest"),
        ("a selector that misses the pod's labels",
         set_(["spec", "selector"], {"matchLabels": {"app": "y"}}), "does not match"),
        ("a Deployment in another namespace",
         set_(["metadata", "namespace"], "default"), "namespace default, expected"),
        ("a ClusterRole with a namespace",
         kind_("ClusterRole", lambda o: o["metadata"].update(namespace=NAMESPACE)),
         "cluster-scoped but has namespace"),
        ("a binding to a missing ClusterRole",
         kind_("ClusterRoleBinding", lambda o: o["roleRef"].update(name="gone")),
         "roleRef ClusterRole gone is not in the render"),
        ("a binding to a missing ServiceAccount",
         kind_("ClusterRoleBinding", lambda o: o["subjects"][0].update(name="gone")),
         "subject ServiceAccount seedance-system/gone is not in the render"),
        ("a duplicate object", lambda objs: objs.append(copy.deepcopy(objs[1])),
         "more than one object"),
        ("an object without a name", lambda objs: objs[2]["metadata"].pop("name"),
         "no metadata.name"),
        ("an object without the part-of label", lambda objs: objs[2]["metadata"].pop("labels"),
         "no label app.kubernetes.io/part-of"),
        ("a Service selecting no pod",
         kind_("Service", lambda o: o["spec"].update(selector={"app": "y"})),
         "matches no pod template"),
    ]


def self_check(version):
    good = check(sample(version), version)
    if good:
        return ["the checker rejects a valid object list: " + "; ".join(good)]
    failures = []
    for what, breakage, phrase in breakages():
        objs = sample(version)
        breakage(objs)
        report = check(objs, version)
        if not any(phrase in p for p in report):
            failures.append(f"the checker missed {what} (expected {phrase!r}, got {report})")
    return failures


# --- the renders -----------------------------------------------------------------------------

def render(kubectl, root, rel):
    r = subprocess.run([kubectl, "kustomize", os.path.join(root, rel)], capture_output=True,
                       text=True, timeout=120, check=False)
    if r.returncode != 0:
        raise AssertionError(f"`kubectl kustomize {rel}` exited {r.returncode}:\n{r.stderr}")
    return [d for d in yaml.safe_load_all(r.stdout) if d is not None]


def names(objs, kind):
    return {o["metadata"]["name"] for o in objs if o.get("kind") == kind}


def expect(objs, rel, present, absent):
    problems = []
    for kind, name in present:
        if find(objs, kind, name) is None:
            problems.append(f"{rel}: no {kind} {NAMESPACE}/{name}")
    for kind, name in absent:
        if name is None and names(objs, kind):
            problems.append(f"{rel}: has {kind} {sorted(names(objs, kind))}, expected none")
        elif name is not None and find(objs, kind, name) is not None:
            problems.append(f"{rel}: has {kind} {NAMESPACE}/{name}, expected none")
    return problems


def main():
    root = source_dir()
    version = release_version(root)
    failures = self_check(version)
    if failures:
        for f in failures:
            print("FAIL:", f)
        return 1
    print(f"ok: the checker passes a valid object list and reports each of "
          f"{len(breakages())} broken ones")

    kubectl = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not kubectl or not os.access(kubectl, os.X_OK):
        print("kubectl not found: skipping (the renders need kubectl's built-in kustomize)")
        return SKIP
    v = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True,
                       timeout=60, check=False)
    print(f"using {kubectl}: " + " / ".join(v.stdout.split("\n")[:2]).strip())

    full_rel = "deploy/kubernetes"
    overlay_rel = "deploy/kubernetes/overlays/extender-only"
    failures = []
    try:
        full = render(kubectl, root, full_rel)
        overlay = render(kubectl, root, overlay_rel)
    except (AssertionError, subprocess.TimeoutExpired, yaml.YAMLError) as e:
        print("FAIL:", e)
        return 1
    core = [("Deployment", "seedance-extender"), ("Service", "seedance-extender"),
            ("Deployment", "seedance-scheduler"), ("ConfigMap", SCHEDULER_CONFIG)]
    for rel, objs, present, absent in (
            (full_rel, full, core + [("DaemonSet", "seedance-device-plugin"),
                                     ("ConfigMap", DASHBOARD)], []),
            (overlay_rel, overlay, core, [("DaemonSet", None), ("ConfigMap", DASHBOARD),
                                          ("ServiceAccount", "seedance-device-plugin")])):
        problems = [f"{rel}: {p}" for p in check(objs, version)] + expect(objs, rel, present,
                                                                         absent)
        failures += problems
        kinds = sorted({o.get("kind") for o in objs})
        print(f"{'ok' if not problems else 'FAIL'}: {rel}: {len(objs)} objects "
              f"({', '.join(kinds)})" + ("" if problems else f", images seedance:{version}"))

    # The checker on the real render: without the scheduler's ConfigMap it must complain.
    broken = [o for o in full if not (o.get("kind") == "ConfigMap" and
                                      o["metadata"].get("name") == SCHEDULER_CONFIG)]
    if not any(f"ConfigMap {NAMESPACE}/{SCHEDULER_CONFIG} is not in the render" in p
               for p in check(broken, version)):
        failures.append(f"{full_rel} without {SCHEDULER_CONFIG}: the checker did not notice")
    else:
        print(f"ok: {full_rel} without ConfigMap {SCHEDULER_CONFIG} is reported")

    for f in failures:
        print("FAIL:", f)
    print("PASS" if not failures else f"FAIL: {len(failures)} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
