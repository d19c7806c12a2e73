# Copyright: Playbook Operator authors
# Apache License 2.0 (see LICENSE)

"""Connecting the collection's modules to the Kubernetes API.

Modules run under the operator's own Python interpreter, so they use the
runner's small client (``runner.kube``) rather than the ``kubernetes``
package, which costs about half a second of imports per task. Auth options
and their ``K8S_AUTH_*`` environment defaults follow ``operator_sdk.util``.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile
import traceback

try:
    from runner.kube import client as kube_client
    from runner.kube import config as kube_config
    from runner.kube import errors as kube_errors
    from runner.kube import types as kube_types
except ImportError:
    # Not installed (running from a source checkout): the runner says where it lives.
    _LIB = os.environ.get("PLAYBOOK_OPERATOR_LIB")
    if _LIB and _LIB not in sys.path:
        sys.path.insert(0, _LIB)
    try:
        from runner.kube import client as kube_client
        from runner.kube import config as kube_config
        from runner.kube import errors as kube_errors
        from runner.kube import types as kube_types
    except ImportError:
        KUBE_IMPORT_ERROR = traceback.format_exc()
    else:
        KUBE_IMPORT_ERROR = None
else:
    KUBE_IMPORT_ERROR = None


AUTH_ARG_SPEC = {
    "kubeconfig": {"type": "path"},
    "context": {"type": "str"},
    "host": {"type": "str"},
    "api_key": {"type": "str", "no_log": True},
    "username": {"type": "str"},
    "password": {"type": "str", "no_log": True},
    "validate_certs": {"type": "bool", "aliases": ["verify_ssl"]},
    "ca_cert": {"type": "path", "aliases": ["ssl_ca_cert"]},
    "client_cert": {"type": "path", "aliases": ["cert_file"]},
    "client_key": {"type": "path", "aliases": ["key_file"], "no_log": False},
    "proxy": {"type": "str"},
    "persist_config": {"type": "bool"},
}

NAME_ARG_SPEC = {
    "api_version": {"type": "str", "default": "v1", "aliases": ["api", "version"]},
    "kind": {"type": "str", "required": True},
    "name": {"type": "str", "required": True},
    "namespace": {"type": "str"},
}

# option -> environment variables read when the option is not given
_ENV = {
    "kubeconfig": ("K8S_AUTH_KUBECONFIG",),
    "context": ("K8S_AUTH_CONTEXT",),
    "host": ("K8S_AUTH_HOST",),
    "api_key": ("K8S_AUTH_API_KEY",),
    "username": ("K8S_AUTH_USERNAME",),
    "password": ("K8S_AUTH_PASSWORD",),
    "validate_certs": ("K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"),
    "ca_cert": ("K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"),
    "client_cert": ("K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"),
    "client_key": ("K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"),
    "proxy": ("K8S_AUTH_PROXY",),
}


def _option(module, name):
    value = module.params.get(name)
    if value is not None:
        return value
    for env in _ENV.get(name, ()):
        if os.environ.get(env):
            raw = os.environ[env]
            if name == "validate_certs":
                return raw.lower() not in ("0", "false", "no", "off")
            return raw
    return None


def api_client(module):
    """A client for the API server the task's options (or environment) name."""
    if KUBE_IMPORT_ERROR is not None:
        module.fail_json(
            msg="Cannot import the Playbook Operator client (runner.kube); run this module "
            "with the operator's Python interpreter",
            exception=KUBE_IMPORT_ERROR,
        )
    if _option(module, "username") or _option(module, "password"):
        module.fail_json(msg="username/password authentication is not supported; use api_key")
    if _option(module, "proxy"):
        module.fail_json(msg="the proxy option is not supported")
    host, token = _option(module, "host"), _option(module, "api_key")
    kubeconfig, context = _option(module, "kubeconfig"), _option(module, "context")
    # Inline certificates in a kubeconfig become temp files: keep them in a private
    # dir that is gone once the client has loaded them.
    private = tempfile.mkdtemp(prefix="playbook-operator-")
    saved, tempfile.tempdir = tempfile.tempdir, private
    try:
        if host and token:
            config = kube_config.ClientConfig(server=host.rstrip("/"), source="module options")
        elif kubeconfig or context:
            path = kubeconfig or kube_config.default_kubeconfig_path()
            if not path:
                module.fail_json(msg="context is set but no kubeconfig was found")
            config = kube_config.from_kubeconfig(path, context=context)
        else:
            config = kube_config.load()
        overrides = {}
        if host:
            overrides["server"] = host.rstrip("/")
        if token:
            overrides["token"], overrides["token_file"] = token, None
        validate = _option(module, "validate_certs")
        if validate is not None:
            overrides["insecure"] = not validate
        for option, attr in (
            ("ca_cert", "ca_file"),
            ("client_cert", "cert_file"),
            ("client_key", "key_file"),
        ):
            value = _option(module, option)
            if value:
                overrides[attr] = value
        config = dataclasses.replace(config, **overrides)
        return kube_client.Client(config, user_agent="playbook-operator-collection")
    except (kube_errors.KubeError, OSError, ValueError) as exc:
        module.fail_json(msg=f"Failed to load the Kubernetes configuration: {exc}")
    finally:
        tempfile.tempdir = saved
        shutil.rmtree(private, ignore_errors=True)


def find_resource(module, client, api_version, kind):
    """How ``kind`` is served: by kind, else by plural, singular or short name."""
    group, _, version = api_version.rpartition("/")
    gvk = kube_types.GVK(group, version, kind)
    try:
        return client.resource(gvk)
    except kube_errors.NotFoundError:
        pass
    except kube_errors.KubeError as exc:
        module.fail_json(msg=f"Failed to discover {api_version}: {exc}")
    path = f"/apis/{api_version}" if group else f"/api/{version}"
    try:
        listing = client.request("GET", path) or {}
    except kube_errors.KubeError:
        listing = {}
    items = listing.get("resources", [])
    subresources = {}
    for item in items:
        parent, _, sub = item.get("name", "").partition("/")
        if sub:
            subresources.setdefault(parent, set()).add(sub)
    for item in items:
        name = item.get("name", "")
        names = {name, item.get("singularName")} | set(item.get("shortNames") or ())
        if "/" not in name and kind in names:
            return kube_types.Resource(
                gvk=kube_types.GVK(group, version, item["kind"]),
                plural=name,
                namespaced=bool(item.get("namespaced")),
                verbs=frozenset(item.get("verbs", [])),
                subresources=frozenset(subresources.get(name, ())),
            )
    module.fail_json(
        msg=f"Failed to find exact match for {api_version}.{kind} "
        "by [kind, name, singularName, shortNames]"
    )


def object_path(module, resource, name, namespace, subresource=""):
    """The REST path of one object; namespaced kinds need ``namespace``."""
    if resource.namespaced and not namespace:
        module.fail_json(msg=f"namespace is required for the namespaced kind {resource.gvk.kind}")
    return resource.path(
        namespace=namespace if resource.namespaced else None, name=name, subresource=subresource
    )


def api_error(exc):
    """The parts of an API failure worth returning."""
    if isinstance(exc, kube_errors.ApiError):
        return {"status": exc.status, "reason": exc.reason, "message": exc.message}
    return {"message": str(exc)}
