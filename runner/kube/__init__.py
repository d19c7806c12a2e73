"""A small, typed Kubernetes API client: the lowest layer of the runtime.

It knows how to authenticate (kubeconfig or in-cluster), issue REST calls,
stream watches and map group/version/kind to REST resources. It knows nothing
of watches.yaml, Ansible or reconciling.
"""
