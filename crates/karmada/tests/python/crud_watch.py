"""CRUD and watch through the Python `kubernetes` client, on a Deployment and a PropagationPolicy.

Usage: crud_watch.py KUBECONFIG. Prints one line per check; exits non-zero on the first failure.
"""
import sys
import threading
import time

from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
apps = client.AppsV1Api()
custom = client.CustomObjectsApi()
ns = "default"


def check(name, cond):
    print(("ok " if cond else "FAIL ") + name, flush=True)
    if not cond:
        sys.exit(1)


deployment = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "py-web", "labels": {"app": "py-web"}},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "py-web"}},
        "template": {
            "metadata": {"labels": {"app": "py-web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]},
        },
    },
}

# Start a watch first; collect events in the background.
events = []
seen_modified = threading.Event()


def watcher():
    w = watch.Watch()
    for ev in w.stream(apps.list_namespaced_deployment, ns, timeout_seconds=20):
        events.append((ev["type"], ev["object"].metadata.name, ev["object"].spec.replicas))
        if ev["type"] == "MODIFIED" and ev["object"].spec.replicas == 5:
            seen_modified.set()
            w.stop()


t = threading.Thread(target=watcher, daemon=True)
t.start()

created = apps.create_namespaced_deployment(ns, deployment)
check("deployment created with uid", bool(created.metadata.uid))
got = apps.read_namespaced_deployment("py-web", ns)
check("deployment read back", got.spec.replicas == 2)
apps.patch_namespaced_deployment_scale("py-web", ns, {"spec": {"replicas": 5}})
check("scaled through /scale", apps.read_namespaced_deployment("py-web", ns).spec.replicas == 5)
check("watch saw the change", seen_modified.wait(20))
check("watch saw ADDED first", events and events[0][0] == "ADDED")
listed = apps.list_namespaced_deployment(ns, label_selector="app=py-web")
check("list by label", [d.metadata.name for d in listed.items] == ["py-web"])
apps.delete_namespaced_deployment("py-web", ns, propagation_policy="Foreground")
# Foreground deletion finishes once the garbage collector has handled the dependents (none
# here): wait for the 404 with a deadline, as kubectl does.
deadline = time.monotonic() + 20
gone = False
while not gone and time.monotonic() < deadline:
    try:
        apps.read_namespaced_deployment("py-web", ns)
        time.sleep(0.05)
    except client.exceptions.ApiException as e:
        gone = e.status == 404
check("deployment deleted (404)", gone)

policy = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "PropagationPolicy",
    "metadata": {"name": "py-pp"},
    "spec": {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "py-web"}],
        "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}},
    },
}
group, version, plural = "policy.karmada.io", "v1alpha1", "propagationpolicies"
pp = custom.create_namespaced_custom_object(group, version, ns, plural, policy)
check("policy created", pp["metadata"]["name"] == "py-pp")
check("policy defaulted", pp["spec"]["conflictResolution"] == "Abort")
check(
    "policy permanent-id label",
    "propagationpolicy.karmada.io/permanent-id" in pp["metadata"].get("labels", {}),
)
custom.patch_namespaced_custom_object(group, version, ns, plural, "py-pp", {"spec": {"priority": 7}})
got = custom.get_namespaced_custom_object(group, version, ns, plural, "py-pp")
check("policy patched", got["spec"]["priority"] == 7)
pp_events = []
w = watch.Watch()
for ev in w.stream(custom.list_namespaced_custom_object, group, version, ns, plural, timeout_seconds=5):
    pp_events.append(ev["type"])
    w.stop()
check("policy watch replays ADDED", pp_events == ["ADDED"])
try:
    custom.create_namespaced_custom_object(
        group, version, ns, plural,
        {"apiVersion": f"{group}/{version}", "kind": "PropagationPolicy", "metadata": {"name": "bad"}, "spec": {"resourceSelectors": []}},
    )
    check("invalid policy rejected", False)
except client.exceptions.ApiException as e:
    check("invalid policy rejected with 422", e.status == 422)
custom.delete_namespaced_custom_object(group, version, ns, plural, "py-pp")
remaining = custom.list_namespaced_custom_object(group, version, ns, plural)["items"]
check("policy deleted", remaining == [])
print("python client: all checks passed")
