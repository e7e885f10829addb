"""deploy/k8s: the manifests load, and their parts refer to each other (no cluster here to apply them to)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
KINDS = {"Deployment": "apps/v1", "Service": "v1", "Ingress": "networking.k8s.io/v1",
         "HorizontalPodAutoscaler": "autoscaling/v2", "PodDisruptionBudget": "policy/v1",
         "NetworkPolicy": "networking.k8s.io/v1"}
APP, ROOMS = "vizcore", "vizcore-rooms"  # the app's pods; the rooms' store (rooms.yaml)


def _load() -> dict[tuple[str, str], dict]:
    found = {}
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for document in yaml.safe_load_all(path.read_text()):
            key = (document["kind"], document["metadata"]["name"])
            assert key not in found, f"two {key}"
            assert document["apiVersion"] == KINDS[document["kind"]], path.name
            found[key] = document
    return found


@pytest.fixture(scope="module")
def manifests() -> dict[str, dict]:
    """The app's manifests by kind."""
    found = {kind: document for (kind, name), document in _load().items() if name == APP}
    assert set(found) == set(KINDS) - {"NetworkPolicy"}
    return found


@pytest.fixture(scope="module")
def rooms() -> dict[str, dict]:
    """The rooms' store by kind."""
    found = {kind: document for (kind, name), document in _load().items() if name == ROOMS}
    assert set(found) == {"Deployment", "Service", "NetworkPolicy"}
    return found


def test_kustomization_lists_every_manifest():
    listed = yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def test_the_service_and_the_budget_select_the_deployments_pods(manifests):
    deployment = manifests["Deployment"]["spec"]
    labels = deployment["template"]["metadata"]["labels"]
    for selector in (deployment["selector"]["matchLabels"], manifests["Service"]["spec"]["selector"],
                     manifests["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"]):
        assert selector.items() <= labels.items()


def test_the_ingress_reaches_the_service_port_that_reaches_the_apps_port(manifests):
    container = manifests["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    service = manifests["Service"]
    backend = manifests["Ingress"]["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == service["metadata"]["name"]
    port = next(p for p in service["spec"]["ports"] if p["name"] == backend["port"]["name"])
    container_port = next(p for p in container["ports"] if p["name"] == port["targetPort"])
    args = container["args"]
    assert args[args.index("--server.port") + 1] == str(container_port["containerPort"])
    assert args[args.index("--server.address") + 1] == "0.0.0.0", "a pod must answer on its own address"


def test_sessions_are_sticky_by_cookie_and_websockets_stay_open(manifests):
    notes = manifests["Ingress"]["metadata"]["annotations"]
    prefix = "nginx.ingress.kubernetes.io/"
    assert notes[prefix + "affinity"] == "cookie"
    assert notes[prefix + "session-cookie-change-on-failure"] == "true"
    assert all(int(notes[prefix + name]) >= 3600 for name in ("proxy-read-timeout", "proxy-send-timeout"))
    assert all(isinstance(value, str) for value in notes.values()), "annotation values must be strings"
    assert manifests["Service"]["spec"].get("sessionAffinity", "None") == "None"


def test_pods_are_probed_on_streamlits_health_and_sized(manifests):
    pod = manifests["Deployment"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/_stcore/health", "port": "http"}, probe
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    assert "memory" in container["resources"]["limits"]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["OMP_NUM_THREADS"] == "1"
    results = next(item for item in container["env"] if item["name"] == "VIZCORE_RESULTS")  # one shared database
    assert results["valueFrom"]["secretKeyRef"] == {"name": "vizcore-results", "key": "url"}
    mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
    assert {str(Path(env["VIZCORE_CACHE_DIR"]).parent), "/tmp"} <= mounts, "the writable caches need a volume"


def test_the_autoscaler_scales_the_deployment(manifests):
    spec = manifests["HorizontalPodAutoscaler"]["spec"]
    target = spec["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", manifests["Deployment"]["metadata"]["name"])
    assert 1 <= spec["minReplicas"] <= spec["maxReplicas"]


def test_every_app_pod_opens_the_one_rooms_store_and_only_they_reach_it(manifests, rooms):
    container = manifests["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    address = urlsplit({item["name"]: item.get("value") for item in container["env"]}["VIZCORE_ROOMS"])
    service, store = rooms["Service"], rooms["Deployment"]["spec"]
    assert (address.scheme, address.hostname) == ("redis", service["metadata"]["name"])
    port = next(p for p in service["spec"]["ports"] if p["port"] == address.port)
    store_container = store["template"]["spec"]["containers"][0]
    assert any(p["name"] == port["targetPort"] and p["containerPort"] == 6379 for p in store_container["ports"])
    pods = store["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pods.items()
    assert store["replicas"] == 1, "two stores would be two sets of rooms"
    app_pods = manifests["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert not manifests["Service"]["spec"]["selector"].items() <= pods.items(), "the app's Service reaches the store"
    policy = rooms["NetworkPolicy"]["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= pods.items()
    assert [rule["podSelector"]["matchLabels"] for rule in policy["ingress"][0]["from"]] == [
        {"app.kubernetes.io/name": app_pods["app.kubernetes.io/name"]}]
    args = store_container["args"]
    assert args[args.index("--save") + 1] == "" and args[args.index("--appendonly") + 1] == "no"
