#!/usr/bin/env python3
"""check_manifests.py — deploy/compose.yaml, deploy/nginx.conf, deploy/k8s/ and deploy/flashkernel.service, checked
without Docker, kubectl or a cluster (python3-yaml): the keys each needs, probes and health checks on /health, one
GPU per server, grace periods longer than the server's --shutdown-timeout, and the names, ports and labels that tie
the files together (nginx's upstreams are compose's services, the Service selects the Deployment's pods, the HPA's
metric is the one the adapter serves, the pods run as the image's user).
usage: check_manifests.py [SOURCE_ROOT]   (default: $FK_SOURCE_ROOT)
"""
import glob
import ipaddress
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dockerfile  # noqa: E402
from checks import check, failures, finish, flag  # noqa: E402

# After --shutdown-timeout the server takes up to a second for the last responses (docs/ARCHITECTURE.md,
# "Shutdown"); 2 s more for freeing the engine and exiting.
MARGIN = 3


def seconds(text):
    """A Compose duration ("60s", "1m30s") in seconds."""
    total = 0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s|us)", str(text)):
        total += float(number) * {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6}[unit]
    return total


def dig(obj, *keys):
    for k in keys:
        if isinstance(obj, dict):
            obj = obj.get(k)
        elif isinstance(obj, list) and isinstance(k, int) and k < len(obj):
            obj = obj[k]
        else:
            return None
    return obj


def dockerfile_uid(root):
    with open(os.path.join(root, "deploy", "Dockerfile"), encoding="utf-8") as f:
        m = re.search(r"^USER\s+(\d+)", f.read(), re.M)
    return int(m.group(1)) if m else None


def entry_flags(root):
    """The server's flags in the image's ENTRYPOINT: compose's command and Kubernetes' args come after them."""
    plan = dockerfile.plan(os.path.join(root, "deploy", "Dockerfile"), root, "/ROOT")
    return plan["entrypoint"][3:]


def nginx_conf(path):
    """What the checks need from nginx.conf: the upstream servers with their parameters, listen ports, and the
    directives of the proxying location."""
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"#[^\n]*", "", f.read())
    upstream = re.search(r"upstream\s+(\w+)\s*\{([^}]*)\}", text)
    servers = re.findall(r"^\s*server\s+(\S+)([^;]*);", upstream.group(2), re.M) if upstream else []
    directives = dict(re.findall(r"^\s*(proxy_\w+)\s+([^;]*);", text, re.M))
    return {"upstream": upstream.group(1) if upstream else None, "servers": servers,
            "listen": re.findall(r"^\s*listen\s+(\d+)\s*;", text, re.M), "directives": directives}


def check_compose(root):
    path = os.path.join(root, "deploy", "compose.yaml")
    with open(path, encoding="utf-8") as f:
        compose = yaml.safe_load(f)
    services = compose.get("services", {})
    fk = {name: s for name, s in services.items() if s.get("image") == "flashkernel"}
    check(len(fk) >= 2, "compose: at least two flashkernel services (one per GPU): %s" % sorted(fk))
    gpus, addresses = [], []
    for name, s in sorted(fk.items()):
        build = s.get("build") or {}
        context = os.path.normpath(os.path.join(root, "deploy", build.get("context", ".")))
        check(context == os.path.normpath(root) and build.get("dockerfile") == "deploy/Dockerfile",
              "compose %s: builds deploy/Dockerfile from the repository root" % name)
        devices = dig(s, "deploy", "resources", "reservations", "devices") or []
        if check(len(devices) == 1, "compose %s: one device request" % name):
            d = devices[0]
            check(d.get("driver") == "nvidia" and "gpu" in d.get("capabilities", []) and
                  len(d.get("device_ids", [])) == 1 and "count" not in d,
                  "compose %s: the device request is one NVIDIA GPU by id: %s" % (name, d))
            gpus += d.get("device_ids", [])
        cmd = entry_flags(root) + [str(w) for w in s.get("command", [])]
        check(flag(cmd, "--host") == "0.0.0.0", "compose %s: --host 0.0.0.0 (nginx reaches it)" % name)
        check(flag(cmd, "--device") == "cuda", "compose %s: --device cuda (no silent CPU fallback)" % name)
        check(flag(cmd, "--port") == "8080", "compose %s: --port 8080 (the image's HEALTHCHECK port)" % name)
        timeout = flag(cmd, "--shutdown-timeout")
        grace = seconds(s.get("stop_grace_period", "10s"))
        check(timeout is not None and float(timeout) + MARGIN <= grace,
              "compose %s: --shutdown-timeout %s + %d s within stop_grace_period %s s" % (name, timeout, MARGIN, grace))
        check(s.get("restart") in ("always", "unless-stopped", "on-failure"),
              "compose %s: a restart policy (a device failure exits 1): %s" % (name, s.get("restart")))
        check(any(str(v).endswith(":/models:ro") for v in s.get("volumes", [])),
              "compose %s: a model directory mounted read-only at /models" % name)
        check(dig(s, "healthcheck", "disable") is not True, "compose %s: keeps the image's HEALTHCHECK" % name)
        for net in (s.get("networks") or {}).values():
            addresses.append(ipaddress.ip_address(net["ipv4_address"]))
    check(len(set(gpus)) == len(gpus) == len(fk), "compose: each server has its own GPU: %s" % gpus)
    subnets = [ipaddress.ip_network(c["subnet"]) for n in compose.get("networks", {}).values()
               for c in dig(n, "ipam", "config") or []]
    check(len(set(addresses)) == len(fk) and all(any(a in net for net in subnets) for a in addresses),
          "compose: each server has its own fixed address in the network's subnet (nginx resolves names once)")

    nginx = services.get("nginx", {})
    check(str(nginx.get("image", "")).startswith("nginx:"), "compose: an nginx service")
    check("./nginx.conf:/etc/nginx/nginx.conf:ro" in nginx.get("volumes", []), "compose nginx: mounts ./nginx.conf")
    depends = nginx.get("depends_on") or {}
    check(set(depends) == set(fk) and all(v.get("condition") == "service_healthy" for v in depends.values()),
          "compose nginx: starts after every server is healthy: %s" % depends)
    conf = nginx_conf(os.path.join(root, "deploy", "nginx.conf"))
    listen = conf["listen"]
    check(len(listen) == 1, "nginx.conf: one listen port: %s" % listen)
    ports = [str(p) for p in nginx.get("ports", [])]
    check(listen and any(p.endswith(":" + listen[0]) for p in ports), "compose nginx: publishes port %s" % listen)
    test = " ".join(dig(nginx, "healthcheck", "test") or [])
    check(listen and ("127.0.0.1:%s/health" % listen[0]) in test, "compose nginx: health check on /health: %s" % test)

    # nginx.conf: the upstreams are the compose services, with passive health; streams unbuffered.
    names = [s for s, _ in conf["servers"]]
    check(sorted(names) == sorted("%s:8080" % n for n in fk), "nginx.conf: upstream servers %s are compose's %s"
          % (names, sorted(fk)))
    for server, params in conf["servers"]:
        check("max_fails=" in params and "fail_timeout=" in params, "nginx.conf: %s has max_fails and fail_timeout"
              % server)
    d = conf["directives"]
    check(d.get("proxy_pass") == "http://%s" % conf["upstream"], "nginx.conf: proxy_pass to the upstream")
    check(d.get("proxy_buffering") == "off", "nginx.conf: proxy_buffering off (SSE)")
    check(d.get("proxy_http_version") == "1.1", "nginx.conf: HTTP/1.1 to the servers (keepalive, streaming)")
    # Longer than the servers' SSE ping interval (15 s), or a quiet stream would be cut.
    check(seconds(d.get("proxy_read_timeout", "60s")) > 15, "nginx.conf: proxy_read_timeout above the 15 s SSE ping")
    nu = d.get("proxy_next_upstream", "").split()
    check("error" in nu and "http_503" in nu and "non_idempotent" in nu,
          "nginx.conf: proxy_next_upstream error http_503 non_idempotent (POSTs move off a dead or draining server)")


def load_k8s(root):
    """Every Kubernetes object under deploy/k8s/ (helm/ holds Helm values, not objects), by kind."""
    objects = {}
    for path in sorted(glob.glob(os.path.join(root, "deploy", "k8s", "**", "*.yaml"), recursive=True)):
        if "/helm/" in path:
            continue
        with open(path, encoding="utf-8") as f:
            for doc in yaml.safe_load_all(f):
                name = os.path.relpath(path, root)
                check(isinstance(doc, dict) and doc.get("apiVersion") and doc.get("kind") and
                      dig(doc, "metadata", "name"), "%s: apiVersion, kind and metadata.name" % name)
                objects.setdefault(doc.get("kind"), []).append(doc)
    return objects


def check_probe(container, kind, port):
    probe = container.get(kind) or {}
    check(dig(probe, "httpGet", "path") == "/health" and dig(probe, "httpGet", "port") in ("http", port),
          "Deployment: %s is GET /health on the server's port: %s" % (kind, probe))
    return probe


def check_k8s(root):
    objects = load_k8s(root)
    for kind in ("Deployment", "Service", "PersistentVolumeClaim", "ServiceMonitor", "HorizontalPodAutoscaler"):
        check(len(objects.get(kind, [])) == 1, "k8s: one %s (found %d)" % (kind, len(objects.get(kind, []))))
    if failures:
        return
    dep, svc, pvc = objects["Deployment"][0], objects["Service"][0], objects["PersistentVolumeClaim"][0]
    sm, hpa = objects["ServiceMonitor"][0], objects["HorizontalPodAutoscaler"][0]
    pod = dig(dep, "spec", "template")
    labels = dig(pod, "metadata", "labels") or {}
    selector = dig(dep, "spec", "selector", "matchLabels") or {}
    check(selector and selector.items() <= labels.items(), "Deployment: the selector matches the pod labels")
    containers = dig(pod, "spec", "containers") or []
    if not check(len(containers) == 1, "Deployment: one container"):
        return
    c = containers[0]
    check("command" not in c, "Deployment: no command (it would replace the image's ENTRYPOINT, tini included)")
    args = entry_flags(root) + [str(a) for a in c.get("args", [])]
    port = int(flag(args, "--port") or 0)
    check(flag(args, "--host") == "0.0.0.0", "Deployment: --host 0.0.0.0")
    check(flag(args, "--device") == "cuda", "Deployment: --device cuda")
    check(any(p.get("containerPort") == port and p.get("name") == "http" for p in c.get("ports", [])),
          "Deployment: containerPort %d named http" % port)
    check(str(dig(c, "resources", "limits", "nvidia.com/gpu")) == "1", "Deployment: limits nvidia.com/gpu: 1")
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        check_probe(c, kind, port)
    check(dig(c, "readinessProbe", "failureThreshold") == 1,
          "Deployment: readiness fails at the first 503, so a draining pod leaves the endpoints at once")
    pre = dig(c, "lifecycle", "preStop", "exec", "command") or []
    check(len(pre) == 2 and pre[0] == "sleep" and str(pre[1]).isdigit(), "Deployment: preStop sleeps: %s" % pre)
    sleep = int(pre[1]) if len(pre) == 2 and str(pre[1]).isdigit() else 0
    timeout = flag(args, "--shutdown-timeout")
    grace = dig(pod, "spec", "terminationGracePeriodSeconds") or 30
    check(timeout is not None and sleep + float(timeout) + MARGIN <= grace,
          "Deployment: preStop %d s + --shutdown-timeout %s + %d s within terminationGracePeriodSeconds %d"
          % (sleep, timeout, MARGIN, grace))
    sc = dig(pod, "spec", "securityContext") or {}
    check(sc.get("runAsNonRoot") is True and sc.get("runAsUser") == dockerfile_uid(root),
          "Deployment: runAsNonRoot as the image's USER %s: %s" % (dockerfile_uid(root), sc))
    model = flag(args, "--model")
    mounts = {m.get("mountPath"): m for m in c.get("volumeMounts", [])}
    check(model in mounts and mounts[model].get("readOnly") is True, "Deployment: --model %s is a read-only mount"
          % model)
    volumes = {v.get("name"): v for v in dig(pod, "spec", "volumes") or []}
    claim = dig(volumes.get(dig(mounts.get(model), "name")), "persistentVolumeClaim", "claimName")
    check(claim == dig(pvc, "metadata", "name"), "Deployment: the model volume is the PVC %s" % claim)
    check(set(dig(pvc, "spec", "accessModes") or []) & {"ReadWriteMany", "ReadOnlyMany"},
          "PVC: mountable on several nodes (ReadWriteMany or ReadOnlyMany)")
    ann = dig(pod, "metadata", "annotations") or {}
    check(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == str(port) and
          ann.get("prometheus.io/path") == "/metrics", "Deployment: prometheus.io scrape annotations for /metrics")

    svc_selector = dig(svc, "spec", "selector") or {}
    check(svc_selector and svc_selector.items() <= labels.items(), "Service: selects the Deployment's pods")
    svc_ports = dig(svc, "spec", "ports") or []
    check(any(p.get("targetPort") in ("http", port) and p.get("name") for p in svc_ports),
          "Service: a named port to the server's port")
    svc_labels = dig(svc, "metadata", "labels") or {}
    check((dig(sm, "spec", "selector", "matchLabels") or {}).items() <= svc_labels.items() and svc_labels,
          "ServiceMonitor: selects the Service")
    endpoints = dig(sm, "spec", "endpoints") or []
    check(any(e.get("port") in [p.get("name") for p in svc_ports] and e.get("path") == "/metrics"
              for e in endpoints), "ServiceMonitor: scrapes /metrics on the Service's port")

    # The HPA scales the Deployment on the metric the adapter makes of vllm:num_requests_waiting.
    check(hpa.get("apiVersion") == "autoscaling/v2", "HPA: autoscaling/v2")
    target = dig(hpa, "spec", "scaleTargetRef") or {}
    check(target.get("kind") == "Deployment" and target.get("name") == dig(dep, "metadata", "name"),
          "HPA: scales the Deployment")
    check(1 <= (dig(hpa, "spec", "minReplicas") or 0) <= (dig(hpa, "spec", "maxReplicas") or 0),
          "HPA: 1 <= minReplicas <= maxReplicas")
    metric = dig(hpa, "spec", "metrics", 0)
    with open(os.path.join(root, "deploy", "k8s", "helm", "prometheus-adapter-values.yaml"), encoding="utf-8") as f:
        adapter = yaml.safe_load(f)
    rules = dig(adapter, "rules", "custom") or []
    served = {dig(r, "name", "as"): r for r in rules}
    name = dig(metric, "pods", "metric", "name")
    check(dig(metric, "type") == "Pods" and name in served, "HPA: a Pods metric the adapter serves: %s" % name)
    rule = served.get(name, {})
    check("vllm:num_requests_waiting" in rule.get("seriesQuery", "") and
          re.fullmatch(dig(rule, "name", "matches") or "$^", "vllm:num_requests_waiting"),
          "adapter: %s is vllm:num_requests_waiting" % name)
    check(dig(rule, "resources", "overrides", "pod", "resource") == "pod",
          "adapter: the series map to pods (per-pod average)")
    with open(os.path.join(root, "server", "metrics.c"), encoding="utf-8") as f:
        check("vllm:num_requests_waiting" in f.read(), "the server exports vllm:num_requests_waiting")


def check_systemd(root):
    unit = {}
    with open(os.path.join(root, "deploy", "flashkernel.service"), encoding="utf-8") as f:
        for line in f:
            if "=" in line and not line.startswith(("#", ";", "[")):
                key, _, value = line.strip().partition("=")
                unit.setdefault(key, []).append(value)
    one = {k: v[-1] for k, v in unit.items()}
    check(one.get("Restart") == "on-failure", "unit: Restart=on-failure")
    check(one.get("User") not in (None, "root", "0"), "unit: a dedicated User=: %s" % one.get("User"))
    start = one.get("ExecStart", "").split()
    check(start[:1] == ["/opt/flashkernel/bin/flashkernel-server"],
          "unit: ExecStart is the server docker-build-steps.sh installs into /opt/flashkernel")
    timeout = flag(start, "--shutdown-timeout")
    stop = seconds(one.get("TimeoutStopSec", "90s").rstrip("s") + "s")
    check(timeout is not None and float(timeout) + MARGIN <= stop,
          "unit: --shutdown-timeout %s + %d s within TimeoutStopSec %s" % (timeout, MARGIN, stop))
    check(one.get("KillSignal", "SIGTERM") == "SIGTERM", "unit: stops with SIGTERM (the server drains)")
    # Options that would cut the server off from /dev/nvidia*.
    for key, bad in (("PrivateDevices", ("yes", "true", "1", "on")), ("DevicePolicy", None),
                     ("DeviceAllow", None), ("ProtectClock", ("yes", "true", "1", "on")),
                     ("ProcSubset", ("pid",))):
        value = one.get(key)
        check(value is None or (bad is not None and value not in bad),
              "unit: %s=%s would hide the GPU's devices" % (key, value))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.environ["FK_SOURCE_ROOT"]
    check_compose(root)
    check_k8s(root)
    check_systemd(root)


if __name__ == "__main__":
    main()
    finish("check_manifests")
