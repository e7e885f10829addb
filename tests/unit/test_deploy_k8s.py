"""deploy/k8s: the manifests load, and their parts refer to each other (no cluster here to apply them to)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
KINDS = {"Deployment": "apps/v1", "Service": "v1", "Ingress": "networking.k8s.io/v1",
         "HorizontalPodAutoscaler": "autoscaling/v2", "PodDisruptionBudget": "policy/v1"}


@pytest.fixture(scope="module")
def manifests() -> dict[str, dict]:
    found = {}
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for document in yaml.safe_load_all(path.read_text()):
            assert document["kind"] not in found, f"two {document['kind']}s"
            assert document["apiVersion"] == KINDS[document["kind"]], path.name
            assert document["metadata"]["name"], path.name
            found[document["kind"]] = document
    assert set(found) == set(KINDS)
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
    env = {item["name"]: item["value"] for item in container["env"]}
    assert env["OMP_NUM_THREADS"] == "1"
    mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
    assert {str(Path(env["VIZCORE_CACHE_DIR"]).parent), "/tmp"} <= mounts, "the writable caches need a volume"


def test_the_autoscaler_scales_the_deployment(manifests):
    spec = manifests["HorizontalPodAutoscaler"]["spec"]
    target = spec["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", manifests["Deployment"]["metadata"]["name"])
    assert 1 <= spec["minReplicas"] <= spec["maxReplicas"]
