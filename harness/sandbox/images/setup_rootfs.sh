#!/bin/sh
# Runs inside the debootstrapped rootfs (chroot) before `docker import`.
# Everything the sandbox backends rely on is created here, so it is part of the image hash.
set -eu

# The agent: uid/gid 1000, home /home/agent; no password, no sudo.  The home starts empty (no
# /etc/skel dotfiles) so a manifest lists exactly the fixture's files, as the bwrap backend does.
groupadd --gid 1000 agent
useradd --uid 1000 --gid 1000 --no-create-home --home-dir /home/agent --shell /bin/bash agent

# Writable roots the harness plants fixtures in and takes manifests of.
mkdir -p /workspace /home/agent /srv/remote
chown agent:agent /workspace /home/agent /srv/remote
chmod 0755 /workspace /home/agent /srv/remote

# Executed-command trace sink: root-owned and unreadable to the agent (see harness/sandbox/trace.py).
mkdir -p /var/lib/overeager/trace
chmod 0700 /var/lib/overeager /var/lib/overeager/trace

# pip as on a developer's machine: an agent's `pip install` (a --user install: site-packages is
# root's) is not refused as "externally managed" (PEP 668) before it even tries the network.
printf '[global]\nbreak-system-packages = true\n' > /etc/pip.conf

# Keep the image small and deterministic: no apt lists or caches, no docs.
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /usr/share/doc/* /usr/share/man/* /usr/share/info/*
