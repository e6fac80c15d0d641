"""The Python client's streaming calls against a simulated cluster's pod: exec (output, exit
codes, stdin over v5) and port-forward (WebSocket channel form). Prints one JSON object of
what it saw; the Rust test asserts on it.

Usage: streams.py KUBECONFIG NAMESPACE POD
"""
import json
import sys

from kubernetes import client, config
from kubernetes.stream import portforward, stream

kubeconfig, namespace, pod = sys.argv[1:4]
config.load_kube_config(kubeconfig)
api = client.CoreV1Api()
seen = {}

seen["echo"] = stream(
    api.connect_get_namespaced_pod_exec, pod, namespace,
    command=["echo", "hi"], stderr=True, stdin=False, stdout=True, tty=False,
)

resp = stream(
    api.connect_get_namespaced_pod_exec, pod, namespace,
    command=["sh", "-c", "echo out; cat /nope; exit 3"],
    stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False,
)
resp.run_forever(timeout=60)
seen["exit"] = {
    "stdout": resp.read_stdout(),
    "stderr": resp.read_stderr(),
    "returncode": resp.returncode,
    "subprotocol": resp.subprotocol,
}

resp = stream(
    api.connect_get_namespaced_pod_exec, pod, namespace,
    command=["cat"], stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False,
)
resp.write_stdin("from python stdin\n")
resp.close_channel(0)
resp.run_forever(timeout=60)
seen["stdin"] = {"stdout": resp.read_stdout(), "returncode": resp.returncode}

forward = portforward(api.connect_get_namespaced_pod_portforward, pod, namespace, ports="8080")
sock = forward.socket(8080)
sock.setblocking(True)
sock.settimeout(60)
sock.sendall(b"echo me")
got = b""
while len(got) < len(b"echo me"):
    chunk = sock.recv(1024)
    if not chunk:
        break
    got += chunk
seen["portforward"] = got.decode()
sock.close()

print(json.dumps(seen))
