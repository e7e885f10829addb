"""Serving the app to many: N replicas behind nginx on one machine (``python -m deploy.replicas``) and a
Kubernetes Deployment, Service and Ingress for a cluster (``deploy/k8s/``); the plan is docs/SCALE.md."""
