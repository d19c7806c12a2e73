# Copyright: Playbook Operator authors
# Apache License 2.0 (see LICENSE)

"""Connection options shared by the modules that talk to the Kubernetes API."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file.
      - Defaults to C(K8S_AUTH_KUBECONFIG), then C(KUBECONFIG), then C(~/.kube/config),
        then the in-cluster service account. Playbook Operator sets C(K8S_AUTH_KUBECONFIG)
        for every run.
    type: path
  context:
    description:
      - The kubeconfig context to use. Defaults to C(K8S_AUTH_CONTEXT), then the current context.
    type: str
  host:
    description:
      - URL of the API server. With I(api_key), no kubeconfig is read.
      - Defaults to C(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - A bearer token. Defaults to C(K8S_AUTH_API_KEY).
    type: str
  username:
    description:
      - Accepted for compatibility with C(operator_sdk.util); basic authentication is not
        supported and fails the task.
    type: str
  password:
    description:
      - Accepted for compatibility with C(operator_sdk.util); basic authentication is not
        supported and fails the task.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's certificate. Defaults to C(K8S_AUTH_VERIFY_SSL).
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA bundle for the API server. Defaults to C(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate. Defaults to C(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the client certificate's key. Defaults to C(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  proxy:
    description:
      - Accepted for compatibility with C(operator_sdk.util); an HTTP proxy is not
        supported and fails the task.
    type: str
  persist_config:
    description:
      - Accepted for compatibility with C(operator_sdk.util); ignored.
    type: bool
notes:
  - The modules use Playbook Operator's own small Kubernetes client (C(runner.kube)) instead of
    the C(kubernetes) Python package, which takes about half a second to import per task.
"""

    NAME = r"""
options:
  api_version:
    description:
      - The API version of the object, C(group/version) or C(version) for core kinds.
    type: str
    default: v1
    aliases: [api, version]
  kind:
    description:
      - The kind of the object. Its plural, singular or short name is accepted too.
    type: str
    required: true
  name:
    description:
      - The name of the object.
    type: str
    required: true
  namespace:
    description:
      - The namespace of the object; required for namespaced kinds.
    type: str
"""
