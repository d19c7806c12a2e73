# The Memcached operator's image: playbook-operator (the runner) plus this project's
# Ansible content, laid out as operator-sdk's ansible-operator images are (HOME and
# WORKDIR /opt/ansible, uid 1001, entrypoint `... run --watches-file=./watches.yaml`).
#
#   make docker-build IMG=<registry>/memcached-operator:<tag>   # CONTAINER_TOOL=docker|podman
#   make docker-build-local IMG=...    # podman, no registry: a base made from Debian packages
#                                      # (hack/image/base.sh), then this file unchanged
#
# Build args:
#   PYTHON_IMAGE                 base image; pin it by digest in release builds. Anything
#                                with the same Debian release and Python minor that has
#                                python3, pip and apt will do (hack/image/base.sh makes one).
#   ANSIBLE_CORE                 "2.19" (default) or "2.18", the line operator-sdk's
#                                ansible-operator images ship: roles written for them that
#                                template numbers into strings may need 2.18 (see
#                                docs/migrating.md). hack/constraints/ansible-<line>.txt pins
#                                ansible-core and the `ansible` package built against it.
#   INSTALL_GALAXY_COLLECTIONS   "true" (default): install requirements.yml's collections
#                                from Galaxy. "false": skip it, for build hosts that cannot
#                                reach Galaxy; the `ansible` package the runner depends on
#                                already bundles kubernetes.core (6.x with 2.19, 5.x with 2.18).
ARG PYTHON_IMAGE=docker.io/library/python:3.11.14-slim-bookworm

# The runner's dependencies, read from pyproject.toml (their single source) into a file of
# their own: the layer that installs them is built again when they change, not when the
# runner's sources or another line of pyproject.toml do.
FROM ${PYTHON_IMAGE} AS dependencies
WORKDIR /src
COPY pyproject.toml ./
RUN python3 -c 'import tomllib; project = tomllib.load(open("pyproject.toml", "rb"))["project"]; print("\n".join(project["dependencies"]))' \
    > requirements.txt

# The warm launch client, compiled (runner/warm/client.c): it starts in a millisecond,
# where the Python client it stands in for takes ten or more, once per run and once per
# module a run executes. Only the binary reaches the image, not the compiler.
FROM ${PYTHON_IMAGE} AS client
# libc6-dev goes with whatever libc6 update the base image has, so it is not pinned.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc=4:12.2.0-3 libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY runner/warm/client.c ./
RUN cc -O2 -Wall -Wextra -o wire-client client.c

FROM ${PYTHON_IMAGE}

ARG ANSIBLE_CORE=2.19
ARG INSTALL_GALAXY_COLLECTIONS=true

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# tini as PID 1 reaps the orphans that killed Ansible runs leave behind.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini=0.19.0-1+b3 \
    && rm -rf /var/lib/apt/lists/*

# The runner, with the dependency ranges pyproject.toml declares (the same install CI
# makes), narrowed to one ansible-core line by its constraints file: first the
# dependencies (ansible-core, ansible, ansible-runner...), then the runner itself, which
# brings the playbook_operator.util collection and puts it on the collections path.
WORKDIR /src
COPY hack/constraints/ constraints/
COPY --from=dependencies /src/requirements.txt ./
RUN if [ ! -f "constraints/ansible-${ANSIBLE_CORE}.txt" ]; then \
        echo "ANSIBLE_CORE=${ANSIBLE_CORE}: supported lines are 2.18 and 2.19" >&2; exit 1; \
    fi \
    && pip install -c "constraints/ansible-${ANSIBLE_CORE}.txt" -r requirements.txt
COPY pyproject.toml README.md ./
COPY runner/ runner/
COPY --from=client /src/wire-client runner/warm/wire-client
RUN pip install -c "constraints/ansible-${ANSIBLE_CORE}.txt" . \
    && rm -rf /src

# Collections go to a system path, not ~/.ansible: the manager Deployment mounts an
# emptyDir on /opt/ansible/.ansible (its root filesystem is read-only), which would hide
# anything installed there.
COPY requirements.yml /opt/ansible/requirements.yml
RUN if [ "${INSTALL_GALAXY_COLLECTIONS}" = "true" ]; then \
        ansible-galaxy collection install -r /opt/ansible/requirements.yml \
            -p /usr/share/ansible/collections; \
    fi

# uid 1001, group 0 (so that OpenShift's arbitrary uids, which are in group 0, can write
# where 1001 can). The content below stays owned by root: the operator only reads it.
ENV HOME=/opt/ansible \
    ANSIBLE_ROLES_PATH=/opt/ansible/roles
RUN useradd --uid 1001 --gid 0 --home-dir /opt/ansible --no-create-home \
        --shell /usr/sbin/nologin ansible \
    && mkdir -p /opt/ansible/.ansible/tmp \
    && chown -R 1001:0 /opt/ansible/.ansible \
    && chmod -R g=u /opt/ansible/.ansible

WORKDIR /opt/ansible
COPY watches.yaml ./watches.yaml
COPY roles/ ./roles/
COPY playbooks/ ./playbooks/

USER 1001

ENTRYPOINT ["tini", "--", "playbook-operator", "run", "--watches-file=./watches.yaml"]
