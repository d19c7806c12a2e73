# The Memcached operator's image: playbook-operator (the runner) plus this project's
# Ansible content, laid out as operator-sdk's ansible-operator images are (HOME and
# WORKDIR /opt/ansible, uid 1001, entrypoint `... run --watches-file=./watches.yaml`).
#
#   make docker-build IMG=<registry>/memcached-operator:<tag>   # CONTAINER_TOOL=docker|podman
#   make docker-build-local IMG=...    # podman, no registry: a base made from Debian packages
#                                      # (hack/image/base.sh), then this file unchanged
#
# Build args:
#   PYTHON_IMAGE                 base image: Debian 13 (trixie) with Python 3.13 by default;
#                                pin it by digest in release builds. Anything Debian-based
#                                with python3 (3.12 or later for ansible-core 2.20 and 2.21),
#                                pip and apt will do (hack/image/base.sh makes one).
#   ANSIBLE_CORE                 "2.21" (default, the newest line, as `make venv`'s), "2.20",
#                                or "2.19" (end-of-life, the last that runs on Python 3.11);
#                                see docs/migrating.md for what each changes for roles.
#                                hack/constraints/ansible-<line>.txt pins ansible-core and
#                                the `ansible` package built against it.
#   INSTALL_GALAXY_COLLECTIONS   "true" (default): install requirements.yml's collections
#                                from Galaxy. "false": skip it, for build hosts that cannot
#                                reach Galaxy; the `ansible` package the runner depends on
#                                already bundles kubernetes.core (6.x on every line).
ARG PYTHON_IMAGE=docker.io/library/python:3.13-slim-trixie

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
# Not pinned: the packages are the base image's Debian release's (PYTHON_IMAGE picks it),
# and libc6-dev goes with whatever libc6 update the base image has.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY runner/warm/client.c ./
RUN cc -O2 -Wall -Wextra -o wire-client client.c

FROM ${PYTHON_IMAGE}

ARG ANSIBLE_CORE=2.21
ARG INSTALL_GALAXY_COLLECTIONS=true

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# tini as PID 1 reaps the orphans that killed Ansible runs leave behind. Not pinned: the
# base image's Debian release (PYTHON_IMAGE) decides its build.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/*

# The runner, with the dependency ranges pyproject.toml declares (the same install CI
# makes), narrowed to one ansible-core line by its constraints file: first the
# dependencies (ansible-core, ansible, ansible-runner...), then the runner itself, which
# brings the playbook_operator.util collection and puts it on the collections path.
WORKDIR /src
COPY hack/constraints/ constraints/
COPY --from=dependencies /src/requirements.txt ./
RUN if [ ! -f "constraints/ansible-${ANSIBLE_CORE}.txt" ]; then \
        echo "ANSIBLE_CORE=${ANSIBLE_CORE}: supported lines are 2.19, 2.20 and 2.21" >&2; exit 1; \
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
